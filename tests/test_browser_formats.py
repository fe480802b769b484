"""Each document format through to the web page (Debian's Chromium driven by Playwright): a question whose
answer is in a reST, reST-in-.txt, PDF or DOCX file, asked in the page; its citation chip opens the
source panel on the right document (title from the document, the page of a PDF citation, also named by
the chip) with a highlight on exactly the cited characters of the stored chunk (`/chunks/{id}` and its
offsets), formatted and plain. Also the formatter's handling of the reST and DOCX markup these files
carry (doctests, code directives, literal-block markers, pipe tables), unit by unit.

One real `rag serve` (offline generator) over fixtures/formats/ only, started with tests/serving.py.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from serving import serving
from test_browser import CHROMIUM, TIMEOUT_MS, ask, chromium, visible_offsets

from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store import open_store

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "fixtures" / "formats"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (install Debian's chromium)"
    ),
]


@dataclass(frozen=True)
class Case:
    file: str
    question: str
    title: str  # the document's own title (heading or metadata), not its file name
    page: int | None
    words: str  # in the cited span


CASES = [
    Case("sessions.rst", "When does the nightly cleanup job run?", "Sessions in Orbit", None, "02:00"),
    # the cited field line carries reST markup (``300``) inside the span
    Case("caching.txt", "What is the default value of ORBIT_CACHE_SECONDS?", "Response caching", None, "300"),
    Case(
        "handbook.pdf",
        "How long can borrowed survey equipment be kept after a project ends?",
        "Field Office Handbook",
        2,
        "14 days",
    ),
    Case(
        "safety.docx", "Where is solvent waste collected?", "Laboratory Safety Guide", None, "red containers"
    ),
    # a row of the DOCX table: the highlight covers its cells, not its pipes
    Case("safety.docx", "What is the capacity of Wet lab A?", "Laboratory Safety Guide", None, "12 people"),
]
IDS = ["sessions.rst", "caching.txt", "handbook.pdf", "safety.docx", "safety.docx-table"]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser-formats")
    db = tmp / "rag.db"
    settings = load_settings(
        db=str(db), mock=True, anthropic_api_key="", voyage_api_key="", api_keys="", database_url=""
    )
    store = open_store(settings)
    try:
        report = ingest_paths(store, [FORMATS], settings=settings)
    finally:
        store.close()
    assert report.skipped == () and len(report.added) == len(list(FORMATS.iterdir()))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAG_", "ANTHROPIC_", "VOYAGE_")) and k != "DATABASE_URL"
    }
    env.update(MOCK="1", RAG_DB=str(db), RAG_DENSE="off")  # no background embedding (conftest)

    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "rag", "serve", "--host", "127.0.0.1", "--port", str(port)]

    with serving(argv, env=env, log=tmp / "server.log", cwd=ROOT) as (url, _):
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    # The server's CSP forbids eval, which Playwright's string predicates need.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(base_url + "/")
    yield pg
    context.close()
    assert errors == []


def streamed_sentences(body: str) -> list[dict[str, Any]]:
    """The `sentence` events of an SSE body."""
    return [
        json.loads(line.removeprefix("data: "))
        for event in body.split("\n\n")
        if event.startswith("event: sentence")
        for line in event.split("\n")
        if line.startswith("data: ")
    ]


def marks(page: Any) -> list[tuple[int, int, str]]:
    found: list[list[Any]] = page.eval_on_selector_all(
        "[data-testid=source-text] mark",
        "ms => ms.map(m => [+m.dataset.start, +m.dataset.end, m.textContent])",
    )
    return [(s, e, t) for s, e, t in found]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_page_citation_into_each_format_opens_its_document_page_and_exact_highlight(
    page: Any, base_url: str, case: Case
) -> None:
    from playwright.sync_api import expect

    with page.expect_response("**/ask/stream") as streamed:
        ask(page, case.question)
    sentences = streamed_sentences(streamed.value.text())
    doc_id = Path(case.file).stem
    citation = next(
        c
        for s in sentences
        for c in s["citations"]
        if c["chunk_id"].startswith(doc_id + "#") and case.words in c["cited_text"]
    )
    chunk = httpx.get(base_url + citation["chunk_url"], timeout=10).json()
    start, end = citation["start"], citation["end"]
    text = chunk["text"]
    assert text[start:end] == citation["cited_text"] and chunk["page"] == case.page == citation["page"]
    # the cited span is whole words of the stored text (a span shifted by a character is not)
    assert (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())

    # the "built from" list names the page of a PDF source, and no page for the others
    item = page.locator(f"[data-testid=block-item][data-chunk-id='{citation['chunk_id']}']").first
    listed = item.locator("[data-testid=block-page]")
    assert listed.all_inner_texts() == ([] if case.page is None else [f"page {case.page}"])

    chip = page.locator(f"[data-testid=citation-chip][data-chunk-id='{citation['chunk_id']}']").first
    page_note = "" if case.page is None else f", page {case.page}"
    assert chip.get_attribute("aria-label") == f"Source {chip.inner_text().strip()}: {case.title}{page_note}"
    chip.click()
    panel = page.locator("[data-testid=source-panel]")
    expect(panel).to_have_attribute("data-state", "ready")
    assert panel.get_attribute("data-chunk-id") == citation["chunk_id"]

    title = panel.locator("[data-testid=source-title]").inner_text()
    assert title == case.title == chunk["title"] and title != doc_id
    where = panel.locator("[data-testid=source-section]")
    pages = [part for part in (where.text_content() or "").split(" · ") if part.startswith("page ")]
    assert pages == ([] if case.page is None else [f"page {case.page}"])
    if case.page is not None:
        expect(where).to_be_visible()

    # Formatted view: every mark is a slice of the stored chunk text inside the cited span, the marks
    # together cover every visible cited character, and only markup characters of the span go unmarked.
    shown = panel.locator("[data-testid=source-text]")
    assert shown.get_attribute("data-view") == "formatted"
    found = marks(page)
    assert found and all(text[s:e] == t for s, e, t in found), found
    covered = {i for s, e, _ in found for i in range(s, e)}
    span = set(range(start, end))
    assert covered == visible_offsets(page, text) & span, (found, start, end)
    assert all(not text[i].isalnum() for i in span - covered), (found, start, end)
    expect(page.locator("[data-testid=source-mark]").first).to_be_in_viewport()

    # Plain view: one mark, the cited span exactly.
    panel.locator("[data-testid=source-view]").click()
    assert shown.get_attribute("data-view") == "plain"
    assert marks(page) == [(start, end, citation["cited_text"])]
    assert shown.inner_text() == text


# ---------------------------------------------------------------- markup.js: reST code and tables

REST_CODE = (
    "Set it in your settings::\n\n    TIMEOUT = 60\n\n"
    "Run this: ::\n\n    make\n\n"
    "::\n\n    bare = True\n\n"
    ">>> session.get('cart')\n'c-1'\n\n"
    "> A quoted remark.\n\n"
    ".. code-block:: console\n   :caption: Clearing\n\n    $ orbit clear\n    Removed 3.\n\n"
    ".. note::\n\n   Signed-in visitors are never cached.\n\n"
    "Sessions expire after ``TIMEOUT`` seconds."
)
TABLE = (
    "Rooms and their capacity:\n\n"
    "| Room | Capacity |\n|:---|---:|\n| Wet lab A | 12 **people** |\n| Clean \\| dry room |  |\n\n"
    "| Cold room | 2 people |\n| Store | 1 person |\n\nBook a room first."
)


def blocks(page: Any, text: str) -> list[tuple[str, str]]:
    """(type, visible text) of each block RagMarkup.parse finds in `text`."""
    found: list[list[str]] = page.evaluate(
        """text => RagMarkup.parse(text).map(b => {
            const out = [];
            const walk = nodes => nodes.forEach(
                n => n.text ? out.push(text.slice(...n.text)) : walk(n.children));
            walk(b.inlines);
            return [b.type, out.join('')];
        })""",
        text,
    )
    return [(kind, shown) for kind, shown in found]


def test_markup_shows_rest_doctests_and_code_directive_bodies_as_code_and_literal_markers_as_rest_does(
    page: Any,
) -> None:
    assert blocks(page, REST_CODE) == [
        ("paragraph", "Set it in your settings:"),
        ("code", "    TIMEOUT = 60"),
        ("paragraph", "Run this:"),
        ("code", "    make"),
        ("code", "    bare = True"),
        ("code", ">>> session.get('cart')\n'c-1'"),
        ("quote", "A quoted remark."),
        ("directive", ".. code-block:: console\n   :caption: Clearing"),
        ("code", "    $ orbit clear\n    Removed 3."),
        ("directive", ".. note::"),
        ("paragraph", "Signed-in visitors are never cached."),
        ("paragraph", "Sessions expire after TIMEOUT seconds."),
    ]


def test_markup_renders_pipe_tables_as_tables_whose_cells_are_exact_slices(page: Any) -> None:
    row = "| Wet lab A | 12 **people** |"
    start = TABLE.index(row)
    box = page.evaluate(
        """([text, ranges]) => {
            const box = document.createElement('div');
            const counts = RagMarkup.render(box, text, ranges, {});
            return {
                counts,
                tables: [...box.querySelectorAll('table')].map(t => [...t.rows].map(
                    r => [...r.cells].map(c => [c.localName, c.textContent]))),
                marks: [...box.querySelectorAll('mark')].map(
                    m => [+m.dataset.start, +m.dataset.end, m.textContent]),
                visible: RagMarkup.visibleText(text),
            };
        }""",
        [TABLE, [[start, start + len(row)]]],
    )
    assert box["tables"] == [
        [
            [["th", "Room"], ["th", "Capacity"]],
            [["td", "Wet lab A"], ["td", "12 people"]],
            [["td", "Clean | dry room"], ["td", ""]],
        ],
        # rows without a delimiter row (a chunk may start inside a table): no header
        [[["td", "Cold room"], ["td", "2 people"]], [["td", "Store"], ["td", "1 person"]]],
    ]
    assert box["counts"] == [3]
    assert [t for _, _, t in box["marks"]] == ["Wet lab A", "12 ", "people"]
    assert all(TABLE[s:e] == t for s, e, t in box["marks"])
    assert (
        "Clean | dry room\t" in box["visible"]
        and "| Room" not in box["visible"]
        and "---" not in box["visible"]
    )
    assert box["visible"].split("\n")[1:3] == ["Room\tCapacity", "Wet lab A\t12 people"]


@pytest.mark.parametrize("text", [REST_CODE, TABLE], ids=["rest-code", "table"])
def test_markup_highlight_of_any_span_covers_exactly_its_visible_characters(page: Any, text: str) -> None:
    rng = random.Random(13)
    visible = visible_offsets(page, text)
    spans = [
        (s := rng.randrange(len(text) - 1), rng.randrange(s + 1, min(len(text), s + 80) + 1))
        for _ in range(40)
    ]
    for (start, end), found in zip(
        spans,
        page.evaluate(
            """([text, spans]) => spans.map(([s, e]) => {
                const box = document.createElement('div');
                RagMarkup.render(box, text, [[s, e]], {});
                return [...box.querySelectorAll('mark')].map(
                    m => [+m.dataset.start, +m.dataset.end, m.textContent]);
            })""",
            [text, spans],
        ),
        strict=True,
    ):
        covered = {i for s, e, _ in found for i in range(s, e)}
        assert covered == visible & set(range(start, end)), (start, end)
        assert all(text[s:e] == t for s, e, t in found)


@pytest.mark.parametrize(
    ("sentence", "shown", "codes", "field"),
    [
        (":Default: ``300``.", "Default: 300.", ["300"], "Default:"),
        (
            "Set :setting:`broker_url` (see `the guide <https://x.test/g>`_).",
            "Set broker_url (see the guide).",
            ["broker_url"],
            None,
        ),
        ("Plain words, nothing to render.", "Plain words, nothing to render.", [], None),
        (
            "A role :ref:`x` in a sentence is no field: ok.",
            "A role x in a sentence is no field: ok.",
            ["x"],
            None,
        ),
    ],
)
def test_answer_sentence_shows_its_source_markup_rendered_not_typed(
    page: Any, sentence: str, shown: str, codes: list[str], field: str | None
) -> None:
    got = page.evaluate(
        """(text) => {
            const box = document.createElement('span');
            RagMarkup.renderInline(box, text);
            return {
                text: box.textContent,
                codes: [...box.querySelectorAll('code')].map(c => c.textContent),
                field: box.querySelector('.md-field')?.textContent ?? null,
                html: box.querySelectorAll('script, img, a').length,
            };
        }""",
        sentence,
    )
    assert got == {"text": shown, "codes": codes, "field": field, "html": 0}


def test_answer_sentence_markup_is_never_parsed_as_html(page: Any) -> None:
    got = page.evaluate(
        """() => {
            const box = document.createElement('span');
            RagMarkup.renderInline(box, '<img src=x onerror=alert(1)> ``<b>x</b>``');
            return [box.querySelectorAll('img, b').length, box.textContent];
        }"""
    )
    assert got == [0, "<img src=x onerror=alert(1)> <b>x</b>"]
