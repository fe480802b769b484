import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag.cli import main
from rag.config import Settings, load_settings
from rag.errors import IngestError
from rag.ingest.formats import parse_document
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
from rag.types import Document

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "ingest.db"))
    yield s
    s.close()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nThe guide says hello.\n")
    return root


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text("root:x:0:0 the secret password is hunter2\n")
    return path


def _reasons(report: object) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in report.skipped}  # type: ignore[attr-defined]


def test_ingest_paths_symlink_leaving_the_folder_is_skipped_and_listed(
    store: SqliteStore, docs: Path, secret: Path, settings: Settings
) -> None:
    (docs / "passwd.txt").symlink_to(secret)
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)
    assert "outside" in _reasons(report)["passwd.txt"]
    assert "passwd" not in store.document_hashes()


def test_ingest_paths_symlinked_folder_leaving_the_folder_is_skipped_and_listed(
    store: SqliteStore, docs: Path, secret: Path, settings: Settings
) -> None:
    (docs / "etc").symlink_to(secret.parent, target_is_directory=True)
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)
    assert "outside" in _reasons(report)["etc"]


def test_ingest_paths_symlink_given_directly_leaving_its_folder_is_skipped(
    store: SqliteStore, docs: Path, secret: Path, settings: Settings
) -> None:
    (docs / "passwd.txt").symlink_to(secret)
    report = ingest_paths(store, [docs / "passwd.txt"], settings=settings)
    assert report.added == () and "outside" in _reasons(report)["passwd.txt"]


def test_ingest_paths_follow_links_reads_a_link_leaving_the_folder(
    store: SqliteStore, docs: Path, secret: Path, settings: Settings
) -> None:
    (docs / "passwd.txt").symlink_to(secret)
    report = ingest_paths(store, [docs], settings=settings, follow_links=True)
    assert set(report.added) == {"guide", "passwd"}


def test_ingest_paths_symlink_inside_the_folder_is_read(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    (docs / "sub").mkdir()
    (docs / "sub" / "alias.md").symlink_to(docs / "guide.md")
    report = ingest_paths(store, [docs], settings=settings)
    assert set(report.added) == {"guide", "sub-alias"} and report.skipped == ()


def test_ingest_paths_symlink_loop_is_walked_once(store: SqliteStore, docs: Path, settings: Settings) -> None:
    (docs / "loop").symlink_to(docs, target_is_directory=True)
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)


def test_ingest_paths_dangling_link_fifo_and_socket_are_skipped_and_listed(
    store: SqliteStore, docs: Path, tmp_path: Path, settings: Settings
) -> None:
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    os.mkfifo(docs / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    short = Path(f"/tmp/rag-sock-{os.getpid()}")
    short.mkdir(exist_ok=True)
    sock.bind(str(short / "s.md"))
    (docs / "s.md").symlink_to(short / "s.md")
    try:
        report = ingest_paths(store, [docs, short], settings=settings, follow_links=True)
    finally:
        sock.close()
        (short / "s.md").unlink()
        short.rmdir()
    reasons = _reasons(report)
    assert "dangling" in reasons["gone.md"]
    assert "FIFO" in reasons["pipe.md"]
    assert "socket" in reasons["s.md"]
    assert report.added == ("guide",)


def test_ingest_paths_fifo_given_directly_never_blocks(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    fifo = docs / "some.md"
    os.mkfifo(fifo)
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(ingest_paths(store, [fifo], settings=settings)))
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock the reader so the test run can end
        with open(fifo, "wb"):
            pass
        worker.join()
        pytest.fail("ingest of a FIFO blocked")
    assert "FIFO" in _reasons(result[0])["some.md"]


def test_cli_ingest_skipped_name_with_a_newline_cannot_forge_a_line(docs: Path, tmp_path: Path) -> None:
    (docs / "x\nFAKE: 999 added.bin").write_bytes(b"junk")
    result = CliRunner().invoke(main, ["ingest", str(docs)], env={"RAG_DB": str(tmp_path / "cli.db")})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not any(line.startswith("FAKE") for line in lines)
    assert any("x\\nFAKE: 999 added.bin" in line for line in lines)


def _doc(tmp_path: Path, front: str, access: tuple[str, ...] = ()) -> Document:
    return parse_document(
        f"---\n{front}\n---\n# Pay\n\nOvertime is paid monthly.\n".encode(),
        tmp_path / "pay.md",
        root=tmp_path,
        access=access,
    )


@pytest.mark.parametrize("front", ["Access: [hr]", "ACCESS: [hr]", "audience: [hr]", "Audience: hr"])
def test_parse_document_access_key_in_any_case_or_as_audience_is_honoured(tmp_path: Path, front: str) -> None:
    assert _doc(tmp_path, front).access == ("hr",)


def test_parse_document_other_keys_are_read_in_any_case(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "Title: Pay rules\nDOC_ID: pay-rules\nUpdated: 2026-01-02")
    assert (doc.title, doc.doc_id, str(doc.updated_at)) == ("Pay rules", "pay-rules", "2026-01-02")


def test_parse_document_access_and_audience_disagreeing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="audience"):
        _doc(tmp_path, "access: [hr]\naudience: [finance]")


@pytest.mark.parametrize("front", ["access: []", "access:", "access: [hr]", "access: [finance, hr]"])
def test_parse_document_file_access_cannot_widen_the_folder_access(tmp_path: Path, front: str) -> None:
    with pytest.raises(IngestError, match="--access"):
        _doc(tmp_path, front, access=("finance",))


def test_parse_document_file_access_may_narrow_the_folder_access(tmp_path: Path) -> None:
    assert _doc(tmp_path, "access: [hr]", access=("finance", "hr")).access == ("hr",)


def test_ingest_paths_file_widening_its_folder_access_is_skipped_not_public(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    (tmp_path / "pay.md").write_text("---\naccess: []\n---\n# Pay\n\nOvertime is paid monthly.\n")
    report = ingest_paths(store, [tmp_path / "pay.md"], settings=settings, access=("finance",))
    assert report.added == () and "--access" in report.skipped[0].reason


def test_ingest_paths_later_file_claiming_a_stored_id_is_refused_naming_both(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    (tmp_path / "hr").mkdir()
    (tmp_path / "public").mkdir()
    first = tmp_path / "hr" / "pay.md"
    first.write_text("---\ndoc_id: pay\naccess: [hr]\n---\n# Pay\n\nBand four earns 92000.\n")
    other = tmp_path / "public" / "salaries.md"
    other.write_text("---\ndoc_id: pay\n---\n# Pay\n\nEveryone earns a lot.\n")
    ingest_paths(store, [tmp_path / "hr"], settings=settings)
    report = ingest_paths(store, [tmp_path / "public"], settings=settings)
    assert report.updated == () and report.added == ()
    reason = _reasons(report)["salaries.md"]
    assert str(first) in reason and "--replace" in reason and report.skipped[0].path == str(other)
    kept = store.get_document("pay")
    assert kept.access == ("hr",) and "92000" in kept.text


def test_ingest_paths_replace_gives_a_stored_id_to_another_file(
    store: SqliteStore, tmp_path: Path, settings: Settings
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.md").write_text("---\ndoc_id: same\n---\nFirst.")
    (tmp_path / "b" / "y.md").write_text("---\ndoc_id: same\n---\nSecond.")
    ingest_paths(store, [tmp_path / "a"], settings=settings)
    report = ingest_paths(store, [tmp_path / "b"], settings=settings, replace_ids=True)
    assert report.updated == ("same",) and store.get_document("same").text.strip() == "Second."


def test_ingest_paths_moved_file_keeps_its_id(store: SqliteStore, tmp_path: Path, settings: Settings) -> None:
    old = tmp_path / "old.md"
    old.write_text("---\ndoc_id: same\n---\nText.")
    ingest_paths(store, [old], settings=settings)
    new = tmp_path / "new.md"
    old.rename(new)
    report = ingest_paths(store, [new], settings=settings)
    assert report.updated == ("same",) and report.skipped == ()


@pytest.mark.parametrize(("db", "said"), [("/dev/null", "character device"), ("DIR", "directory")])
def test_cli_database_path_that_is_no_file_says_so(docs: Path, tmp_path: Path, db: str, said: str) -> None:
    db = str(tmp_path) if db == "DIR" else db
    for args in (["ingest", str(docs)], ["ask", "How is the guide?"], ["chunk", "guide#c00"]):
        result = CliRunner().invoke(main, args, env={"RAG_DB": db})
        assert result.exit_code == 1, (args, result.output)
        assert said in result.output and "rollback" not in result.output, (args, result.output)
        assert "Traceback" not in result.output


def _docx_bomb(path: Path, expanded: int) -> None:
    """A DOCX-shaped zip whose document part expands to `expanded` bytes of zeros-like XML."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            block = b"<w:t>a</w:t>" * 100_000
            for _ in range(expanded // len(block)):
                part.write(block)


def test_ingest_paths_archive_expanding_past_its_budget_is_skipped_before_parsing(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    from rag.ingest.formats import MAX_UNCOMPRESSED_BYTES

    _docx_bomb(docs / "bomb.docx", MAX_UNCOMPRESSED_BYTES + 2_000_000)
    assert (docs / "bomb.docx").stat().st_size < MAX_UNCOMPRESSED_BYTES // 50
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)
    assert "uncompressed" in _reasons(report)["bomb.docx"]


def test_ingest_paths_document_over_the_chunk_budget_is_skipped(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    (docs / "long.md").write_text("\n\n".join(f"# Part {i}\n\nPart {i} has its own text." for i in range(40)))
    report = ingest_paths(store, [docs], settings=settings.model_copy(update={"ingest_max_chunks": 5}))
    assert report.added == ("guide",) and "more than 5 chunks" in _reasons(report)["long.md"]
    assert "long" not in store.document_hashes()


def test_chunk_document_stops_at_its_budget() -> None:
    from rag.ingest.chunking import chunk_document

    text = "\n\n".join(f"# Part {i}\n\nPart {i} has its own text." for i in range(400))
    doc = Document(doc_id="long", title="Long", text=text, source_path="long.md", content_hash="h")
    assert len(chunk_document(doc)) == 400
    assert len(chunk_document(doc, max_chunks=6)) == 6


def test_ingest_paths_archive_budget_follows_settings(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    _docx_bomb(docs / "bomb.docx", 3_000_000)
    report = ingest_paths(store, [docs], settings=settings.model_copy(update={"ingest_max_expanded_mb": 2}))
    assert "over the 2.0 MB limit" in _reasons(report)["bomb.docx"]


def _lying_docx(path: Path, declared: int, actual: int) -> None:
    """A zip whose directory declares `declared` bytes for a member that inflates to `actual`."""
    import zipfile
    import zlib

    payload = b"<w:t>a</w:t>" * (actual // 12)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", payload[:declared])
    raw = bytearray(path.read_bytes())
    # swap the member's deflated bytes for the long payload's, keeping the sizes it declares
    info = zipfile.ZipFile(path).getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    big = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = big.compress(payload) + big.flush()
    raw[start : start + info.compress_size] = body[: info.compress_size]
    path.write_bytes(bytes(raw))


def test_ingest_paths_archive_inflating_past_what_it_declares_is_unreadable(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    _lying_docx(docs / "liar.docx", declared=1_000, actual=50_000_000)
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)
    assert "unreadable DOCX" in _reasons(report)["liar.docx"]


def _many_page_pdf(path: Path, pages: int) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    with path.open("wb") as f:
        writer.write(f)


def test_ingest_paths_pdf_over_the_page_budget_is_skipped_before_any_page_is_read(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    import time

    _many_page_pdf(docs / "manual.pdf", 3_000)
    started = time.monotonic()
    report = ingest_paths(store, [docs], settings=settings.model_copy(update={"ingest_max_pdf_pages": 2_000}))
    assert time.monotonic() - started < 20
    assert report.added == ("guide",)
    assert "3,000 pages, over the limit of 2,000" in _reasons(report)["manual.pdf"]


def test_parse_pdf_page_budget_reads_the_declared_count_first(tmp_path: Path) -> None:
    from pypdf import PdfReader

    from rag.ingest.parsed import Limits
    from rag.ingest.pdf import _check_pages

    _many_page_pdf(tmp_path / "m.pdf", 30)
    reader = PdfReader(tmp_path / "m.pdf")
    with pytest.raises(IngestError, match="30 pages"):
        _check_pages(reader, "m.pdf", 10)
    assert reader.flattened_pages is None  # the page tree was not walked
    _check_pages(reader, "m.pdf", 30)
    assert Limits().pdf_pages == settings_default("ingest_max_pdf_pages")


def test_parse_pdf_text_budget_stops_extraction(tmp_path: Path) -> None:
    from rag.ingest.parsed import Limits
    from rag.ingest.pdf import parse_pdf

    sample = (FIXTURES / "formats" / "handbook.pdf").read_bytes()
    with pytest.raises(IngestError, match="M characters by page 1,"):
        parse_pdf(sample, "sample.pdf", Limits(expanded_bytes=10))
    assert parse_pdf(sample, "sample.pdf").text


def settings_default(name: str) -> object:
    return Settings.model_fields[name].default


def test_ingest_limits_defaults_match_the_settings() -> None:
    from rag.ingest.indexer import ingest_limits
    from rag.ingest.parsed import Limits

    assert ingest_limits(load_settings()) == Limits()


def test_ingest_paths_folder_nested_too_deep_is_skipped_and_listed(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    from rag.ingest.walk import MAX_DEPTH

    deep = docs
    for _ in range(600):  # a walk that recursed per level without a bound hit Python's recursion limit
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("# Bottom\n\nThe bottom of the tree.\n")
    report = ingest_paths(store, [docs], settings=settings)
    assert report.added == ("guide",)
    (skip,) = report.skipped
    assert f"nested more than {MAX_DEPTH} deep" in skip.reason
    assert Path(skip.path).relative_to(docs).parts == ("d",) * (MAX_DEPTH + 1)


def test_get_document_without_text_reads_its_metadata_only(
    store: SqliteStore, docs: Path, settings: Settings
) -> None:
    ingest_paths(store, [docs], settings=settings)
    bare = store.get_document("guide", text=False)
    assert bare.text == "" and bare.title == "Guide" and bare.content_hash
    assert "hello" in store.get_document("guide").text
