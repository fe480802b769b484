"""reStructuredText, PDF and DOCX: parsing, chunk offsets and pages, skipped-file reasons, and each
format through ingest -> ask (offline) -> citation -> chunk endpoint -> the cited span."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answer.pipeline import build_pipeline
from rag.api import create_app
from rag.config import Settings, load_settings
from rag.errors import IngestError
from rag.ingest.chunking import chunk_document
from rag.ingest.formats import ParsedFile, read_document
from rag.ingest.indexer import ingest_paths
from rag.ingest.rst import looks_like_rst
from rag.language.text import code_spans, split_sentences
from rag.store import SqliteStore, Store, open_store
from rag.types import Chunk

FORMATS = Path(__file__).resolve().parent.parent / "fixtures" / "formats"


def _read(name: str, root: Path = FORMATS) -> ParsedFile:
    path = root / name
    return read_document(path.read_bytes(), path, root=root)


def _chunks(parsed: ParsedFile, max_tokens: int = 220) -> list[Chunk]:
    return chunk_document(
        parsed.document, min_tokens=max_tokens // 2, max_tokens=max_tokens, layout=parsed.layout
    )


def _assert_offsets_exact(parsed: ParsedFile, chunks: list[Chunk]) -> None:
    last = 0
    for chunk in chunks:
        assert parsed.document.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.start_char >= last and chunk.text == chunk.text.strip()
        last = chunk.end_char


# --- reStructuredText ---------------------------------------------------------------------------


def test_read_document_rst_keeps_source_text_and_takes_title_and_sections_from_docutils() -> None:
    parsed = _read("sessions.rst")
    assert parsed.document.text == (FORMATS / "sessions.rst").read_text()
    assert parsed.document.title == "Sessions in Orbit"
    chunks = _chunks(parsed, max_tokens=120)
    _assert_offsets_exact(parsed, chunks)
    sections = [c.section for c in chunks]
    assert "Settings > ORBIT_SESSION_TIMEOUT" in sections and "Checking a session" in sections
    # heading lines and their adornments are in no chunk; the markup-only ".. setting::" region neither
    assert not any("=====" in c.text or "-----" in c.text or ".. setting::" in c.text for c in chunks)


def test_read_document_rst_code_ranges_cover_literal_blocks_doctests_and_code_directives() -> None:
    parsed = _read("sessions.rst")
    assert parsed.layout is not None and parsed.layout.code is not None
    text = parsed.document.text
    code = [text[s:e] for s, e in parsed.layout.code]
    assert any(c.startswith("ORBIT_SESSION_TIMEOUT = 3600") for c in code)
    assert any(">>> session = request.session" in c and "$ orbit sessions" in c for c in code)
    assert not any("number of seconds a session stays valid" in c for c in code)


def test_chunks_of_rst_expose_their_code_to_code_spans_of_the_chunk_text_alone() -> None:
    parsed = _read("sessions.rst")
    assert parsed.layout is not None and parsed.layout.code is not None
    text = parsed.document.text
    for chunk in _chunks(parsed, max_tokens=120):
        found = {chunk.text[s:e] for s, e in code_spans(chunk.text)}
        for s, e in parsed.layout.code:
            if chunk.start_char <= s and e <= chunk.end_char:
                assert text[s:e] in found


def test_field_list_lines_are_sentences_of_their_own() -> None:
    chunk = next(c for c in _chunks(_read("sessions.rst")) if c.section.endswith("ORBIT_SESSION_TIMEOUT"))
    sentences = split_sentences(chunk.text)
    assert sentences[:2] == [":Default: ``1800``", ":Type: integer"]


def test_txt_file_written_in_rst_is_read_as_rst_with_its_title() -> None:
    parsed = _read("caching.txt")
    assert parsed.document.title == "Response caching"
    assert [c.section for c in _chunks(parsed)] == ["", "Cache lifetime"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ((FORMATS / "caching.txt").read_text(), True),
        ("Title\n=====\n\nSome text.\n\nPart two\n--------\n\nMore.\n", True),
        ("Intro.\n\n.. note:: Careful.\n\nSee :ref:`setup`.\n", True),
        ("Plain notes about the trip.\nWe left at 9:00 and came back late.\n", False),
        ("Use ``make`` to build.\n", False),
        ("# Heading\n\nMarkdown with `code` and a [link](x).\n", False),
    ],
)
def test_looks_like_rst_needs_two_kinds_of_markup(text: str, expected: bool) -> None:
    assert looks_like_rst(text) is expected


def test_plain_txt_keeps_file_name_title_only_when_it_has_no_heading(tmp_path: Path) -> None:
    (tmp_path / "trip_notes.txt").write_text("We left at nine.\nWe came back late.\n")
    assert _read("trip_notes.txt", tmp_path).document.title == "trip notes"


# --- PDF and DOCX -------------------------------------------------------------------------------


def test_read_document_pdf_keeps_the_page_of_every_chunk_and_the_metadata_title() -> None:
    parsed = _read("handbook.pdf")
    assert parsed.document.title == "Field Office Handbook"
    chunks = _chunks(parsed, max_tokens=30)
    _assert_offsets_exact(parsed, chunks)
    pages = {c.page for c in chunks}
    assert pages == {1, 2}
    page_two = [c for c in chunks if c.page == 2]
    assert any("within 14 days" in c.text for c in page_two)
    assert not any("Approval requests" in c.text for c in page_two)


def test_read_document_pdf_heading_lines_become_sections_and_never_run_into_the_next_sentence() -> None:
    parsed = _read("handbook.pdf")
    assert "Equipment returns" in split_sentences(parsed.document.text)
    chunks = _chunks(parsed, max_tokens=40)
    assert [(c.page, c.section) for c in chunks][0] == (1, "Travel approvals")
    assert {c.section for c in chunks if c.page == 2} == {"Equipment returns"}
    # the title line is provenance, in no chunk
    assert not any(c.text.startswith("Field Office Handbook") for c in chunks)


def test_read_document_docx_headings_lists_and_tables_become_markdown_like_text() -> None:
    parsed = _read("safety.docx")
    doc = parsed.document
    assert doc.title == "Laboratory Safety Guide"
    assert "# Protective equipment" in doc.text and "- Lab coats are buttoned." in doc.text
    assert "\n\n- Room: Wet lab A; Capacity: 12 people\n- Room: Clean room; Capacity: 4 people\n" in doc.text
    chunks = _chunks(parsed, max_tokens=40)
    _assert_offsets_exact(parsed, chunks)
    assert {c.section for c in chunks} == {"Protective equipment", "Waste disposal"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "formats.db"))
    yield s
    s.close()


def test_ingest_folder_reports_broken_pdf_and_docx_and_unsupported_files_with_reasons(
    store: SqliteStore, tmp_path: Path
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    shutil.copy(FORMATS / "sessions.rst", root / "sessions.rst")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj <<\ngarbage")
    (root / "truncated.pdf").write_bytes((FORMATS / "handbook.pdf").read_bytes()[:300])
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (root / "notes.doc").write_bytes(b"\xd0\xcf\x11\xe0")
    (root / "conf.py").write_text("project = 'x'\n")
    report = ingest_paths(store, [root], settings=load_settings())
    assert report.added == ("sessions",)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(reasons) == {"broken.pdf", "truncated.pdf", "broken.docx", "notes.doc", "conf.py"}
    assert reasons["broken.pdf"].startswith(("unreadable PDF", "PDF has no extractable text"))
    assert reasons["truncated.pdf"].startswith(("unreadable PDF", "PDF has no extractable text"))
    assert reasons["broken.docx"].startswith("unreadable DOCX")
    assert reasons["notes.doc"].startswith("unsupported file type '.doc'")


def test_ingest_pdf_without_text_is_skipped_with_reason(store: SqliteStore, tmp_path: Path) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    writer.add_blank_page(612, 792)
    (tmp_path / "scans").mkdir()
    writer.write(tmp_path / "scans" / "scan.pdf")
    report = ingest_paths(store, [tmp_path / "scans"], settings=load_settings())
    assert [s.reason for s in report.skipped] == ["PDF has no extractable text (2 pages; scanned images?)"]


def _encrypted(user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(FORMATS / "handbook.pdf"))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_read_document_pdf_with_a_user_password_is_refused_and_one_without_is_read(tmp_path: Path) -> None:
    (tmp_path / "locked.pdf").write_bytes(_encrypted("secret"))
    (tmp_path / "open.pdf").write_bytes(_encrypted(""))
    with pytest.raises(IngestError, match="encrypted PDF"):
        _read("locked.pdf", tmp_path)
    assert _read("open.pdf", tmp_path).document.title == "Field Office Handbook"


# --- each format end to end ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def formats_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Store]]:
    db = str(tmp_path_factory.mktemp("formats") / "formats.db")
    settings: Settings = load_settings(db=db, mock=True)
    store = open_store(settings)
    try:
        report = ingest_paths(store, [FORMATS], settings=settings)
        assert report.skipped == () and len(report.added) == 4
        pipeline = build_pipeline(settings, store=store)
        with TestClient(create_app(settings, pipeline=pipeline)) as client:
            yield client, store
    finally:
        store.close()


@pytest.mark.parametrize(
    ("question", "doc_id", "page", "words"),
    [
        ("How long can borrowed survey equipment be kept after a project ends?", "handbook", 2, "14 days"),
        ("Where is solvent waste collected?", "safety", None, "red containers"),
        ("When does the nightly cleanup job run?", "sessions", None, "02:00"),
    ],
)
def test_each_format_ask_cites_a_span_the_chunk_endpoint_serves_with_its_page(
    formats_app: tuple[TestClient, Store], question: str, doc_id: str, page: int | None, words: str
) -> None:
    formats_client, store = formats_app
    answer = formats_client.post("/ask", json={"question": question}).json()
    assert answer["abstained"] is False, answer
    citation = next(c for c in answer["citations"] if c["chunk_id"].startswith(f"{doc_id}#"))
    assert citation["page"] == page and words in citation["cited_text"]
    chunk = formats_client.get(citation["chunk_url"]).json()
    assert chunk["page"] == page
    assert chunk["text"][citation["start"] : citation["end"]] == citation["cited_text"]
    # the same characters in the stored document text (for reST and PDF: the source's own text)
    start = chunk["start_char"] + citation["start"]
    whole = store.get_document(doc_id).text
    assert whole[start : start + len(citation["cited_text"])] == citation["cited_text"]


def test_read_document_rst_with_an_rfc822_header_block_takes_its_title(tmp_path: Path) -> None:
    (tmp_path / "ep-7.rst").write_text(
        "EP: 7\nTitle: Faster builds\nStatus: Draft\n\nAbstract\n========\n\nBuilds get faster.\n"
    )
    assert _read("ep-7.rst", tmp_path).document.title == "Faster builds"


_RST_LINE = st.one_of(
    st.sampled_from(
        [
            "",
            "Title",
            "=====",
            "-----",
            "~~~",
            "Example::",
            "::",
            "    code = 1",
            "  indented text",
            ".. note::",
            ".. code-block:: python",
            ".. setting:: NAME",
            ".. _label:",
            ":Default: ``100``",
            ">>> 1 + 1",
            "$ make html",
            "* item",
            "#. numbered",
            "term",
            "    definition.",
            "+-----+",
            "| a b |",
            "`broken role",
        ]
    ),
    st.text(alphabet="ab .:=-`*_|\n", max_size=40),
)


@settings(max_examples=120, deadline=None)
@given(lines=st.lists(_RST_LINE, max_size=30), max_tokens=st.sampled_from([20, 60, 220]))
def test_any_rst_parses_or_is_skipped_and_chunk_offsets_stay_exact(lines: list[str], max_tokens: int) -> None:
    raw = "\n".join(lines).encode()
    try:
        parsed = read_document(raw, Path("/r/x.rst"), root=Path("/r"))
    except IngestError:
        return
    chunks = _chunks(parsed, max_tokens=max_tokens)
    _assert_offsets_exact(parsed, chunks)
    assert all(c.text for c in chunks)


def test_pdf_answer_streamed_over_sse_carries_the_page_in_each_sentence_citation(
    formats_app: tuple[TestClient, Store],
) -> None:
    client, _ = formats_app
    question = "How long can borrowed survey equipment be kept after a project ends?"
    raw = client.post("/ask/stream", json={"question": question}).content.decode()
    sentences = [
        json.loads(line.removeprefix("data: "))
        for block in raw.split("\n\n")
        if block.startswith("event: sentence")
        for line in block.split("\n")
        if line.startswith("data: ")
    ]
    assert sentences and all(c["page"] == 2 for s in sentences for c in s["citations"])


def test_read_document_docx_nested_list_items_are_indented_under_their_parent(tmp_path: Path) -> None:
    from docx import Document as new_docx

    word = new_docx()
    word.add_heading("Packing list", level=1)
    word.add_paragraph("Tools", style="List Bullet")
    word.add_paragraph("Spare batteries", style="List Bullet 2")
    word.add_paragraph("Maps", style="List Bullet")
    word.save(str(tmp_path / "packing.docx"))
    doc = _read("packing.docx", tmp_path).document
    assert doc.title == "Packing list"
    assert "- Tools\n  - Spare batteries\n- Maps" in doc.text


def _docx_with_table(tmp_path: Path, rows: list[list[str]], *, first_row: str | None = None) -> str:
    from docx import Document as new_docx
    from docx.oxml.ns import qn

    word = new_docx()
    word.add_paragraph("Laptops are issued by role.")
    table = word.add_table(rows=len(rows), cols=len(rows[0]))
    for row, texts in zip(table.rows, rows, strict=True):
        for cell, text in zip(row.cells, texts, strict=True):
            cell.text = text
    if first_row is not None:
        table._tbl.tblPr.xpath("./w:tblLook")[0].set(qn("w:firstRow"), first_row)
    word.add_paragraph("Spares", style="List Bullet")
    word.save(str(tmp_path / "laptops.docx"))
    return _read("laptops.docx", tmp_path).document.text


LAPTOP_ROWS = [
    ["Role", "Laptop", "Memory"],
    ["Engineer", "ThinkPad X1", "32 GB"],
    ["Designer", "MacBook Pro", ""],
]


def test_read_document_docx_table_rows_name_every_cell_by_its_column_header(tmp_path: Path) -> None:
    assert _docx_with_table(tmp_path, LAPTOP_ROWS) == (
        "Laptops are issued by role.\n\n"
        "- Role: Engineer; Laptop: ThinkPad X1; Memory: 32 GB\n- Role: Designer; Laptop: MacBook Pro\n\n"
        "- Spares\n"
    )


def test_read_document_docx_table_whose_look_has_no_header_row_keeps_markdown_rows(tmp_path: Path) -> None:
    text = _docx_with_table(tmp_path, [["Max size", "1 GB"], ["Max rows", "none"]], first_row="0")
    assert "| Max size | 1 GB |\n| Max rows | none |" in text


def test_read_document_docx_merged_cells_are_one_cell_under_their_headers(tmp_path: Path) -> None:
    from docx import Document as new_docx

    word = new_docx()
    table = word.add_table(rows=3, cols=3)
    grid = [["Type", "Size", ""], ["serial", "4 bytes", "8 bytes"], ["", "1", "2"]]
    for row, texts in zip(table.rows, grid, strict=True):
        for cell, text in zip(row.cells, texts, strict=True):
            cell.text = text
    table.cell(0, 1).merge(table.cell(0, 2))
    table.cell(1, 0).merge(table.cell(2, 0))
    word.save(str(tmp_path / "types.docx"))
    assert _read("types.docx", tmp_path).document.text == (
        "- Type: serial; Size: 4 bytes; Size: 8 bytes\n- Type: serial; Size: 1; Size: 2\n"
    )


def test_offline_reader_answers_from_a_docx_table_row_under_its_header(tmp_path: Path) -> None:
    from rag.reader.offline import OfflineGenerator
    from rag.types import Block

    text = _docx_with_table(tmp_path, LAPTOP_ROWS)
    chunk = Chunk(chunk_id="laptops#c00", doc_id="laptops", title="Laptop policy", section="", text=text)
    question = "How much memory does an engineer's laptop have?"
    drafts = (
        OfflineGenerator().generate(question, [Block(n=1, chunk=chunk, score=0.5, sent_text=text)]).drafts
    )
    assert [d.text for d in drafts] == ["Role: Engineer; Laptop: ThinkPad X1; Memory: 32 GB"]
