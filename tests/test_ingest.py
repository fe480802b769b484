import json
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag.cli import main
from rag.config import Settings, load_settings
from rag.errors import IngestError
from rag.ingest.formats import derive_doc_id, parse_document
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

ADMIN = """---
title: Admin guide
updated: 2026-05-12
url: https://docs.example.com/admin
---
# Admin guide

Administrators manage the workspace.

## Limits

The maximum upload size is 250 MB. Larger files are rejected.
"""


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "ingest.db"))
    yield s
    s.close()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guides").mkdir(parents=True)
    (root / "admin.md").write_text(ADMIN)
    (root / "guides" / "Getting Started.txt").write_text("Create a project first.\nThen invite people.\n")
    (root / "page.html").write_text(
        "<html><head><title>Release notes</title><style>p{}</style></head>"
        "<body><h1>Release notes</h1><h2>Version 2</h2><p>Faster <b>search</b>.</p>"
        "<ul><li>Dark mode</li><li>Exports</li></ul></body></html>"
    )
    (root / ".hidden.md").write_text("never ingested")
    (root / "image.png").write_bytes(b"\x89PNG")
    return root


def _parse(raw: bytes, name: str = "x.md") -> object:
    return parse_document(raw, Path("/r") / name, root=Path("/r"))


def test_parse_document_front_matter_sets_provenance_and_body_excludes_it() -> None:
    doc = parse_document(ADMIN.encode(), Path("/r/admin.md"), root=Path("/r"))
    assert (doc.doc_id, doc.title, doc.url, doc.updated_at) == (
        "admin",
        "Admin guide",
        "https://docs.example.com/admin",
        date(2026, 5, 12),
    )
    assert doc.text.startswith("# Admin guide\n") and "---" not in doc.text


def test_parse_document_front_matter_doc_id_overrides_path() -> None:
    doc = parse_document(b"---\ndoc_id: doc-010\n---\nBody.", Path("/r/a.md"), root=Path("/r"))
    assert doc.doc_id == "doc-010"


def test_parse_document_without_front_matter_title_from_first_heading_else_file_name() -> None:
    assert parse_document(b"Intro.\n## Setup\nText.", Path("/r/a.md"), root=Path("/r")).title == "Setup"
    assert parse_document(b"Just text.", Path("/r/my_notes-v2.txt"), root=Path("/r")).title == "my notes v2"


def test_parse_document_crlf_newlines_normalised() -> None:
    assert (
        parse_document(b"One.\r\nTwo.\rThree.", Path("/r/a.txt"), root=Path("/r")).text
        == "One.\nTwo.\nThree."
    )


def test_parse_document_html_keeps_headings_and_drops_scripts() -> None:
    raw = b"<title>T</title><script>evil()</script><h2>Part &amp; whole</h2><p>Text<br>more</p>"
    doc = parse_document(raw, Path("/r/p.html"), root=Path("/r"))
    assert doc.title == "T"
    assert doc.text == "## Part & whole\n\nText\nmore\n"


def test_parse_document_html_table_rows_name_their_headers_and_menus_are_dropped() -> None:
    raw = (
        b"<nav>Home | Fees</nav><h1>Boat hire</h1><table><tr><th>Boat</th><th>Price</th></tr>"
        b"<tr><td>Kayak</td><td>$30 per hour</td></tr></table><footer>(c) 2026 | Privacy</footer>"
    )
    doc = parse_document(raw, Path("/r/boats.html"), root=Path("/r"))
    assert doc.text == "# Boat hire\n\n- Boat: Kayak; Price: $30 per hour\n"


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://docs.example/a", "https://docs.example/a"),
        ("/handbook/a", "/handbook/a"),
        ("javascript:alert(1)", ""),
        ("data:text/html,<script>x</script>", ""),
        ("//evil.example/a", ""),
    ],
)
def test_parse_document_keeps_only_web_or_site_relative_urls(url: str, kept: str) -> None:
    raw = f"---\ntitle: T\nurl: '{url}'\n---\nBody text.\n".encode()
    assert parse_document(raw, Path("/r/a.md"), root=Path("/r")).url == kept


def test_parse_document_html_title_falls_back_to_first_h1() -> None:
    doc = parse_document(b"<h1>Main</h1><p>x</p>", Path("/r/p.htm"), root=Path("/r"))
    assert doc.title == "Main"


@pytest.mark.parametrize(
    ("raw", "name", "reason"),
    [
        (b"ab\x00cd", "a.txt", "binary"),
        (bytes(range(128, 256)) * 3, "a.md", "no other text encoding reads it"),
        (b"  \n\t", "a.md", "empty"),
        (b"---\ntitle: x\n---\n \n", "a.md", "no text after front matter"),
        (b"<html><script>x</script></html>", "a.html", "HTML has no text"),
        (b"---\ntitle: [unclosed\n---\nBody", "a.md", "YAML"),
        (b"---\nupdated: last week\n---\nBody", "a.md", "YYYY-MM-DD"),
        (b"---\n- a list\n---\nBody", "a.md", "mapping"),
    ],
)
def test_parse_document_unreadable_input_raises_ingest_error_with_reason(
    raw: bytes, name: str, reason: str
) -> None:
    with pytest.raises(IngestError, match=reason) as info:
        _parse(raw, name)
    assert info.value.path.endswith(name)


def test_derive_doc_id_is_slug_of_relative_path_without_extension() -> None:
    assert derive_doc_id(Path("/r/guides/Getting Started.txt"), Path("/r")) == "guides-getting-started"
    assert derive_doc_id(Path("/elsewhere/A.md"), Path("/r")) == "a"


def test_ingest_paths_folder_adds_supported_files_recursively(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    report = ingest_paths(store, [corpus], settings=settings)
    assert sorted(report.added) == ["admin", "guides-getting-started", "page"]
    assert [(Path(s.path).name, s.reason.split(" (")[0]) for s in report.skipped] == [
        ("image.png", "unsupported file type '.png'")
    ]
    assert report.chunks_written == store.stats().chunks > 0
    chunks = store.document_chunks("admin")
    assert [c.section for c in chunks] == ["", "Limits"]
    doc = store.get_document("admin")
    assert all(doc.text[c.start_char : c.end_char] == c.text for c in chunks)


def test_ingest_paths_second_run_unchanged_writes_nothing(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    ingest_paths(store, [corpus], settings=settings)
    before = store.get_document("admin")
    report = ingest_paths(store, [corpus], settings=settings)
    assert (report.added, report.updated, report.unchanged, report.chunks_written) == ((), (), 3, 0)
    assert store.get_document("admin") == before


def test_ingest_paths_changed_file_replaces_its_chunks(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    ingest_paths(store, [corpus], settings=settings)
    (corpus / "admin.md").write_text(ADMIN.replace("250 MB", "500 MB"))
    report = ingest_paths(store, [corpus], settings=settings)
    assert report.updated == ("admin",) and report.unchanged == 2
    texts = " ".join(c.text for c in store.document_chunks("admin"))
    assert "500 MB" in texts and "250 MB" not in texts


def test_ingest_paths_chunk_size_change_rechunks_unchanged_files(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    ingest_paths(store, [corpus], settings=settings)
    report = ingest_paths(store, [corpus], settings=load_settings(chunk_max_tokens=50, chunk_min_tokens=20))
    assert len(report.updated) == 3


def test_ingest_paths_prune_removes_documents_whose_files_are_gone(
    store: SqliteStore, corpus: Path, settings: Settings, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.md").write_text("Kept elsewhere.")
    ingest_paths(store, [corpus, other], settings=settings)
    (corpus / "page.html").unlink()
    (other / "keep.md").unlink()
    without_prune = ingest_paths(store, [corpus], settings=settings)
    assert without_prune.pruned == () and "page" in store.document_hashes()
    report = ingest_paths(store, [corpus], settings=settings, prune=True)
    assert report.pruned == ("page",)
    assert set(store.document_hashes()) == {"admin", "guides-getting-started", "keep"}


def test_ingest_paths_bad_files_reported_and_rest_ingested(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    (corpus / "binary.txt").write_bytes(b"\x00\x01\x02")
    (corpus / "latin1.md").write_bytes(b"Caf\xe9 menu")  # read as Windows-1252, and said so
    (corpus / "noise.md").write_bytes(bytes(range(128, 256)) * 3)
    (corpus / "blank.md").write_text("\n\n")
    report = ingest_paths(store, [corpus], settings=settings)
    assert {Path(s.path).name: s.reason.split(" ")[0] for s in report.skipped} == {
        "binary.txt": "binary",
        "noise.md": "not",
        "blank.md": "empty",
        "image.png": "unsupported",
    }
    assert len(report.added) == 4
    assert [(Path(p).name, e) for p, e in report.encodings] == [("latin1.md", "cp1252")]


def test_ingest_paths_file_turned_bad_keeps_stored_version(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    ingest_paths(store, [corpus], settings=settings)
    (corpus / "admin.md").write_bytes(b"\xff\xfe broken")
    report = ingest_paths(store, [corpus], settings=settings, prune=True)
    assert [Path(s.path).name for s in report.skipped] == ["admin.md", "image.png"] and report.pruned == ()
    assert store.get_document("admin").title == "Admin guide"


def test_ingest_paths_duplicate_doc_id_in_one_run_skips_the_second(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    (tmp_path / "a.md").write_text("---\ndoc_id: same\n---\nFirst.")
    (tmp_path / "b.md").write_text("---\ndoc_id: same\n---\nSecond.")
    report = ingest_paths(store, [tmp_path / "a.md", tmp_path / "b.md"], settings=settings)
    assert report.added == ("same",)
    assert "already used" in report.skipped[0].reason


def test_ingest_paths_front_matter_doc_id_change_removes_old_id(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "a.md"
    path.write_text("Text.")
    ingest_paths(store, [path], settings=settings)
    path.write_text("---\ndoc_id: renamed\n---\nText.")
    report = ingest_paths(store, [path], settings=settings)
    assert report.added == ("renamed",) and report.pruned == ("a",)
    assert set(store.document_hashes()) == {"renamed"}


def test_ingest_paths_reports_progress_per_file(store: SqliteStore, corpus: Path, settings: Settings) -> None:
    calls: list[tuple[int, int]] = []
    ingest_paths(
        store, [corpus], settings=settings, progress=lambda done, total, _: calls.append((done, total))
    )
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]


class _Embedder:
    name = "fake"
    model = "fake-embed"
    background = False  # embeds during the ingest, as Voyage's does
    max_inputs = 1000
    max_tokens = 100_000

    def count_tokens(self, text: str) -> int:
        return len(text)

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("provider down")
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 1.0]


def test_ingest_paths_with_embedder_stores_one_vector_per_chunk(
    store: SqliteStore, corpus: Path, settings: Settings
) -> None:
    report = ingest_paths(store, [corpus], settings=settings, embedder=_Embedder())
    assert report.embedded == store.stats().embeddings == store.stats().chunks


def test_ingest_paths_embedder_failure_warns_and_continues_without_vectors(
    store: SqliteStore, corpus: Path, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = _Embedder(fail=True)
    report = ingest_paths(store, [corpus], settings=settings, embedder=embedder)
    assert len(report.added) == 3 and report.embedded == 0 and embedder.calls == 1
    assert report.embed_missing == store.stats().chunks > 0
    assert "were not embedded: provider down" in caplog.text


def test_cli_ingest_then_chunk_prints_summary_and_provenance(corpus: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(main, ["ingest", str(corpus)])
    assert first.exit_code == 0, first.output
    assert "3 added, 0 updated, 0 unchanged, 1 skipped" in first.output
    assert "image.png: unsupported file type '.png'" in first.output
    second = runner.invoke(main, ["ingest", str(corpus), "--json"])
    assert json.loads(second.output)["unchanged"] == 3
    shown = runner.invoke(main, ["chunk", "admin#c01"])
    assert shown.exit_code == 0
    assert "Admin guide > Limits" in shown.output and "updated: 2026-05-12" in shown.output
    assert "The maximum upload size is 250 MB." in shown.output
    as_json = json.loads(runner.invoke(main, ["chunk", "admin#c01", "--json"]).output)
    assert as_json["section"] == "Limits"


def test_cli_chunk_unknown_id_fails_with_message_naming_the_database(corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(corpus)]).exit_code == 0
    result = runner.invoke(main, ["chunk", "nope#c00"])
    assert result.exit_code == 1
    assert f"unknown chunk 'nope#c00' in {tmp_path / 'rag.db'}" in result.output


def test_cli_chunk_without_database_says_so_and_creates_none(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["chunk", "nope#c00"])
    assert result.exit_code == 1
    assert f"no database at {tmp_path / 'rag.db'}" in result.output and "rag ingest" in result.output
    assert not (tmp_path / "rag.db").exists()


def test_ingest_paths_while_other_threads_retrieve_never_fails(tmp_path: Path, settings: Settings) -> None:
    import threading

    from rag.answer.rerank import LexicalReranker
    from rag.answer.retrieve import retrieve

    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(40):
        (docs / f"d{i}.md").write_text(f"## Part {i}\n\nShared words about uploads number {i}. " * 8)
    store = SqliteStore(str(tmp_path / "busy.db"))
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                retrieve("shared uploads", store=store, reranker=LexicalReranker())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        report = ingest_paths(store, [docs], settings=settings)
    finally:
        done.set()
        for t in readers:
            t.join(timeout=30)
    assert errors == [] and len(report.added) == 40
    store.close()


def test_ingest_paths_same_name_in_two_formats_keeps_both_documents(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe Markdown guide.")
    (docs / "guide.txt").write_text("The plain text guide.")
    report = ingest_paths(store, [docs], settings=settings)
    assert sorted(report.added) == ["guide", "guide-txt"] and report.skipped == ()
    (docs / "guide.txt").write_text("The plain text guide, edited.")
    again = ingest_paths(store, [docs], settings=settings)
    assert again.updated == ("guide-txt",) and again.unchanged == 1
    assert store.get_document("guide").text.startswith("# Guide")
