"""The web page in headless Chromium (Debian's /usr/bin/chromium driven by Playwright; never a download).

One real app per module: the bundled corpus ingested into a tmp store, served by uvicorn in a thread on
a free loopback port, offline generator. Error paths the real app cannot produce on demand (503, a
stream cut mid-answer, an `error` event) are injected with Playwright request routing; the page is the
unit under test there.

Also a script: `python tests/test_browser.py --docs docs` writes the README pictures.
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serving import free_port

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ANSWERABLE = "How long do deleted projects stay in the trash?"
OFF_TOPIC = "What is the capital of Australia?"
CONFLICT = "What is the maximum file upload size?"
TIMEOUT_MS = 20_000
CITATION = {"n": 1, "chunk_id": "d#c01", "title": "Doc", "url": "", "cited_text": "x", "start": 0, "end": 1}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="/usr/bin/chromium is missing: install Debian's chromium (.ci/services.sh does it as root)",
    ),
]


@contextmanager
def running_app(db_path: Path, **overrides: Any) -> Iterator[str]:
    """Ingest the bundled corpus into `db_path`, serve the real app on loopback, yield its base URL.
    `overrides` are settings (`api_keys=...`, `admin_keys=...`)."""
    import uvicorn

    from rag.api import create_app
    from rag.config import load_settings
    from rag.ingest.indexer import ingest_paths
    from rag.store import open_store

    # Explicit values, not the environment: this may run before the per-test offline fixture.
    settings = load_settings(
        **{
            "db": str(db_path),
            "mock": True,
            "anthropic_api_key": "",
            "voyage_api_key": "",
            "api_keys": "",
            "database_url": "",
            "dense": "off",  # conftest's rule: the local encoder's embedding runs where a test turns it on
            **overrides,
        }
    )
    store = open_store(settings)
    try:
        ingest_paths(store, [CORPUS], settings=settings)
    finally:
        store.close()
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="browser-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def ask(page: Any, question: str) -> None:
    """Type the question, press Enter, and wait until the page has finished this ask."""
    before = int(page.get_attribute("[data-testid=result]", "data-finished") or 0)
    page.fill("[data-testid=ask-input]", question)
    page.press("[data-testid=ask-input]", "Enter")
    page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=result]').dataset.finished || 0) > n",
        arg=before,
        timeout=TIMEOUT_MS,
    )


def sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def visible_offsets(page: Any, text: str) -> set[int]:
    """The offsets of `text` the page's formatter (RagMarkup) shows; markup characters are hidden."""
    shown: set[int] = set()
    for s, e in page.evaluate(
        """text => {
            const out = [];
            const walk = nodes => nodes.forEach(n => n.text ? out.push(n.text) : walk(n.children));
            RagMarkup.parse(text).forEach(b => walk(b.inlines));
            return out;
        }""",
        text,
    ):
        shown.update(range(s, e))
    return shown


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not any(CORPUS.glob("*")):
        pytest.skip("fixtures/corpus is empty")
    with running_app(tmp_path_factory.mktemp("browser") / "rag.db") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(base_url + "/")
    yield pg
    context.close()
    assert errors == []


def test_page_answerable_chip_opens_source_with_cited_span_highlighted(page: Any, base_url: str) -> None:
    from playwright.sync_api import expect

    expected = httpx.post(base_url + "/ask", json={"question": ANSWERABLE}, timeout=30).json()
    first = expected["sentences"][0]
    n = min(c["n"] for c in first["citations"])
    spans = sorted((c for c in first["citations"] if c["n"] == n), key=lambda c: c["start"])

    ask(page, ANSWERABLE)

    sentences = page.locator("[data-testid=answer-sentence]")
    assert sentences.count() == len(expected["sentences"])
    assert first["text"] in sentences.first.inner_text()
    chip = sentences.first.locator("[data-testid=citation-chip]").first
    assert chip.inner_text().strip() == str(n)
    chip.click()

    panel = page.locator("[data-testid=source-panel]")
    expect(panel).to_be_visible()
    marks = panel.locator("[data-testid=source-mark]")
    expect(marks.first).to_be_visible()
    assert marks.all_inner_texts() == [c["cited_text"] for c in spans]
    expect(marks.first).to_be_in_viewport()
    chunk = httpx.get(base_url + spans[0]["chunk_url"], timeout=10).json()
    assert panel.locator("[data-testid=source-title]").inner_text() == chunk["title"]
    shown = panel.locator("[data-testid=source-text]")
    assert shown.get_attribute("data-view") == "formatted"
    assert "**" not in shown.inner_text()
    visible = page.evaluate("text => RagMarkup.visibleText(text)", chunk["text"])
    assert shown.inner_text().split() == visible.split()
    panel.locator("[data-testid=source-view]").click()
    assert shown.get_attribute("data-view") == "plain"
    assert shown.inner_text().split() == chunk["text"].split()
    assert marks.all_inner_texts() == [c["cited_text"] for c in spans]
    if chunk["updated_at"]:
        assert panel.locator("time").get_attribute("datetime") == chunk["updated_at"]
    blocks = page.locator("[data-testid=block-item]")
    assert blocks.count() >= 1
    assert blocks.first.get_attribute("data-n") == "1"


def test_page_chip_keyboard_enter_opens_panel_and_escape_returns_focus(page: Any) -> None:
    from playwright.sync_api import expect

    ask(page, ANSWERABLE)
    chip = page.locator("[data-testid=citation-chip]").first
    chip.focus()
    page.keyboard.press("Enter")
    expect(page.locator("[data-testid=source-mark]").first).to_be_visible()
    assert chip.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Escape")
    expect(page.locator("[data-testid=source-panel]")).to_be_hidden()
    assert page.evaluate("document.activeElement.dataset.testid") == "citation-chip"


def test_page_off_topic_question_shows_low_retrieval_view(page: Any) -> None:
    from playwright.sync_api import expect

    ask(page, OFF_TOPIC)
    view = page.locator("[data-testid=refusal-low-retrieval]")
    expect(view).to_be_visible()
    text = view.inner_text()
    assert "couldn't find this in the knowledge base" in text
    assert "may not be indexed yet" in text
    assert page.locator("[data-testid=answer-sentence]").count() == 0
    links = view.locator("[data-testid=closest-link]")
    if links.count():
        links.first.click()
        expect(page.locator("[data-testid=source-title]")).to_have_text(links.first.inner_text())


def test_page_conflicting_limit_shows_both_statements_each_openable(page: Any, base_url: str) -> None:
    from playwright.sync_api import expect

    expected = httpx.post(base_url + "/ask", json={"question": CONFLICT}, timeout=30).json()
    assert expected["reason"] == "conflicting_sources"
    ask(page, CONFLICT)
    view = page.locator("[data-testid=refusal-conflict]")
    expect(view).to_be_visible()
    cards = view.locator("[data-testid=conflict-statement]")
    statements = expected["conflict"]["statements"]
    assert cards.count() == len(statements) >= 2
    for card, statement in zip(cards.all(), statements, strict=True):
        assert card.locator("[data-testid=statement-value]").inner_text() == statement["quantity"]
        assert card.locator("[data-testid=statement-title]").inner_text() == statement["title"]
        assert card.locator("time").get_attribute("datetime") == statement["updated_at"]
        card.click()
        mark = page.locator("[data-testid=source-panel] [data-testid=source-mark]")
        expect(mark).to_have_text(statement["text"])
        panel = page.locator("[data-testid=source-panel]")
        assert panel.get_attribute("data-chunk-id") == statement["chunk_id"]
    assert "250 MB" in view.inner_text() and "100 MB" in view.inner_text()


def test_page_service_unavailable_shows_message(page: Any) -> None:
    body = '{"error": {"type": "upstream_unavailable", "message": "the model provider is unavailable"}}'
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(
            status=503, headers={"Retry-After": "7"}, content_type="application/json", body=body
        ),
    )
    ask(page, ANSWERABLE)
    alert = page.locator("[data-testid=error-message]")
    assert "temporarily unavailable" in alert.inner_text()
    assert "7 seconds" in alert.inner_text()


def test_page_network_failure_before_response_shows_message(page: Any) -> None:
    page.route("**/ask/stream", lambda route: route.abort("connectionreset"))
    ask(page, ANSWERABLE)
    assert "Could not reach the service" in page.locator("[data-testid=error-message]").inner_text()


def test_page_stream_cut_after_sentence_keeps_sentence_and_reports_loss(page: Any, base_url: str) -> None:
    full = httpx.post(base_url + "/ask/stream", json={"question": ANSWERABLE}, timeout=30).text
    cut = full.index("\n\n", full.index("event: sentence")) + 2
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=full[:cut]),
    )
    ask(page, ANSWERABLE)
    assert page.locator("[data-testid=answer-sentence]").count() == 1
    alert = page.locator("[data-testid=error-message]").inner_text()
    assert "ended before it was complete" in alert
    assert "verified before the interruption" in alert


@contextmanager
def cut_stream_server(first_events: str) -> Iterator[str]:
    """A loopback server that starts a chunked SSE response, sends `first_events`, then drops the socket."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            payload = first_events.encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                + f"{len(payload):x}\r\n".encode()
                + payload
                + b"\r\n"
            )
            time.sleep(0.3)

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/ask/stream"
    finally:
        listener.close()
        thread.join(timeout=5)


def test_page_connection_lost_mid_stream_keeps_sentence_and_says_so(page: Any) -> None:
    first = sse("meta", {"blocks": [], "context_tokens": 10, "trace_id": "t"}) + sse(
        "sentence", {"text": "Kept sentence.", "citations": [CITATION]}
    )
    with cut_stream_server(first) as url:
        page.route("**/ask/stream", lambda route: route.continue_(url=url))
        ask(page, ANSWERABLE)
    assert page.locator("[data-testid=answer-sentence]").count() == 1
    alert = page.locator("[data-testid=error-message]").inner_text()
    assert "connection was lost" in alert
    assert "verified before the interruption" in alert


def test_page_error_event_keeps_sentences_and_shows_error(page: Any) -> None:
    body = (
        sse("meta", {"blocks": [], "context_tokens": 10, "trace_id": "t"})
        + ": keep-alive\n\n"
        + sse("sentence", {"text": "Kept sentence.", "citations": [CITATION]})
        + sse("error", {"type": "upstream_unavailable", "message": "The provider went away."})
        + sse("done", {"status": "error", "emitted": 1, "dropped": 0})
    )
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
    )
    ask(page, ANSWERABLE)
    assert page.locator("[data-testid=answer-sentence]").all_inner_texts()[0].startswith("Kept sentence.")
    assert "The provider went away." in page.locator("[data-testid=error-message]").inner_text()


def test_page_dropped_sentence_is_withheld_not_shown(page: Any) -> None:
    body = (
        sse("meta", {"blocks": [], "context_tokens": 10, "trace_id": "t"})
        + sse("sentence", {"text": "Shown sentence.", "citations": [CITATION]})
        + sse("dropped", {"text": "Invented claim.", "detail": ["cited a nonexistent chunk number [8]"]})
        + sse("done", {"status": "answered", "emitted": 1, "dropped": 1})
    )
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
    )
    ask(page, ANSWERABLE)
    assert "Invented claim." not in page.locator("[data-testid=answer]").inner_text()
    withheld = page.locator("[data-testid=withheld]")
    assert withheld.locator("[data-testid=withheld-summary]").inner_text() == "Withheld (1)"
    withheld.locator("[data-testid=withheld-summary]").click()
    reason = withheld.locator("[data-testid=withheld-reason]").inner_text()
    assert reason == "cited a nonexistent chunk number [8]"


def test_page_api_key_sent_as_bearer_header(page: Any) -> None:
    seen: list[str | None] = []

    def capture(route: Any) -> None:
        seen.append(route.request.headers.get("authorization"))
        route.fulfill(
            status=401,
            content_type="application/json",
            body='{"error": {"type": "unauthorized", "message": "missing or invalid API key"}}',
        )

    page.route("**/ask/stream", capture)
    page.locator("[data-testid=settings] summary").click()
    page.fill("[data-testid=api-key-input]", "secret-key")
    page.locator("[data-testid=api-key-input]").dispatch_event("change")
    ask(page, ANSWERABLE)
    assert seen == ["Bearer secret-key"]
    assert page.evaluate("localStorage.getItem('rag.apiKey')") == "secret-key"
    assert "API key" in page.locator("[data-testid=error-message]").inner_text()


def test_page_phone_width_answer_and_panel_fit_without_horizontal_scroll(page: Any) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 375, "height": 740})
    ask(page, ANSWERABLE)
    page.locator("[data-testid=citation-chip]").first.click()
    expect(page.locator("[data-testid=source-mark]").first).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    ask(page, CONFLICT)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def take_screenshots(docs: Path, question: str = ANSWERABLE) -> list[Path]:
    """The README pictures at 1280x900: `screenshot.png` (an answer with its first citation open),
    `screenshot-examples.png` (the empty page's example questions) and `screenshot-admin.png` (the
    content owners' page with one trace open, after a few asks and one answer marked wrong)."""
    docs.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp) / "rag.db") as url, chromium() as b:
        pg = b.new_page(viewport={"width": 1280, "height": 900})
        pg.goto(url + "/")
        pg.wait_for_selector("[data-testid=example-chip]")
        written.append(docs / "screenshot-examples.png")
        pg.screenshot(path=str(written[-1]))
        for other in (OFF_TOPIC, "What's the capital city of Australia?", CONFLICT):
            httpx.post(url + "/ask", json={"question": other}, timeout=30)
        ask(pg, question)
        pg.locator("[data-testid=citation-chip]").first.click()
        pg.wait_for_selector("[data-testid=source-mark]")
        pg.locator("[data-testid=ask-input]").blur()
        pg.wait_for_timeout(500)
        written.append(docs / "screenshot.png")
        pg.screenshot(path=str(written[-1]))
        pg.locator("[data-testid=feedback-wrong]").click()
        pg.fill("[data-testid=feedback-note]", "Business plans keep deleted projects for 90 days.")
        pg.locator("[data-testid=feedback-send]").click()
        pg.wait_for_selector("[data-testid=feedback-status][data-sent]")
        pg.goto(url + "/admin")
        pg.wait_for_selector("body[data-loaded=ok]")
        pg.locator("[data-testid=wrong-row] [data-testid=trace-button]").click()
        pg.wait_for_selector("[data-testid=trace-view]:not([hidden])")
        pg.evaluate("window.scrollTo(0, 0)")
        written.append(docs / "screenshot-admin.png")
        pg.screenshot(path=str(written[-1]))
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="where the PNG files go")
    parser.add_argument("--question", default=ANSWERABLE)
    cli = parser.parse_args()
    for path in take_screenshots(cli.docs, cli.question):
        print(path)  # noqa: T201


def test_page_runs_under_its_csp_without_violations(browser: Any, base_url: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    console: list[str] = []
    pg.on("console", lambda msg: console.append(msg.text))
    response = pg.goto(base_url + "/")
    assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
    ask(pg, ANSWERABLE)
    widths = pg.eval_on_selector_all(".score-fill", "els => els.map(e => e.style.width)")
    context.close()
    assert widths and all(w.endswith("%") for w in widths)
    assert [m for m in console if "Content Security Policy" in m] == []


def test_docs_page_renders_the_api_reference_offline(browser: Any, base_url: str) -> None:
    context = browser.new_context()
    outside: list[str] = []

    def only_loopback(route: Any) -> None:
        if route.request.url.startswith(base_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_loopback)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    console: list[str] = []
    pg.on("console", lambda msg: console.append(msg.text))
    pg.goto(base_url + "/docs")
    pg.wait_for_selector("[data-testid=docs-operation]")
    paths = pg.locator("[data-testid=docs-operation] .path").all_inner_texts()
    context.close()
    assert {"/ask", "/ask/stream", "/chunks/{chunk_id}", "/readyz"} <= set(paths)
    assert outside == []
    assert [m for m in console if "Content Security Policy" in m] == []


def test_page_keeps_paragraphs_and_list_items_of_the_answer(page: Any) -> None:
    body = (
        sse("meta", {"blocks": [], "context_tokens": 10, "trace_id": "t"})
        + sse("sentence", {"text": "Plans differ.", "starts": "", "citations": [CITATION]})
        + sse("sentence", {"text": "Team: 50 members.", "starts": "item", "citations": [CITATION]})
        + sse("sentence", {"text": "Business: 300 members.", "starts": "item", "citations": [CITATION]})
        + sse("sentence", {"text": "Prices are per user.", "starts": "paragraph", "citations": [CITATION]})
        + sse("done", {"status": "answered", "emitted": 4, "dropped": 0})
    )
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
    )
    ask(page, ANSWERABLE)
    answer = page.locator("[data-testid=answer]")
    assert answer.locator("li.answer-item").count() == 2
    assert answer.locator("p.answer-para").count() == 2
    assert answer.locator("li.answer-item").first.inner_text().startswith("Team: 50 members.")


def test_page_keeps_numbered_items_and_table_rows_of_the_answer(page: Any) -> None:
    body = (
        sse("meta", {"blocks": [], "context_tokens": 10, "trace_id": "t"})
        + sse(
            "sentence", {"text": "Open Settings.", "starts": "numbered", "number": 1, "citations": [CITATION]}
        )
        + sse(
            "sentence",
            {"text": "Choose Members.", "starts": "numbered", "number": 2, "citations": [CITATION]},
        )
        + sse(
            "sentence",
            {"text": "| Plan | Seats |", "starts": "header", "cells": ["Plan", "Seats"], "citations": []},
        )
        + sse(
            "sentence",
            {"text": "| Team | 50 |", "starts": "row", "cells": ["Team", "50"], "citations": [CITATION]},
        )
        + sse("done", {"status": "answered", "emitted": 4, "dropped": 0})
    )
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
    )
    ask(page, ANSWERABLE)
    answer = page.locator("[data-testid=answer]")
    assert answer.locator("ol > li.answer-item").count() == 2
    assert answer.locator("ol > li.answer-item").nth(1).get_attribute("value") == "2"
    assert answer.locator("[data-testid=answer-table-header] th").all_inner_texts() == ["Plan", "Seats"]
    cells = answer.locator("[data-testid=answer-table-row] td").all_inner_texts()
    assert cells[0] == "Team" and cells[1].startswith("50")


def test_page_holds_a_conversation_each_turn_with_its_own_chips_and_sources(page: Any) -> None:
    from playwright.sync_api import expect

    sent: list[dict[str, Any]] = []
    page.on(
        "request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith("/ask/stream") else None
    )
    ask(page, ANSWERABLE)
    first_sentence = page.locator("[data-testid=answer-sentence]").first.inner_text()
    before = int(page.get_attribute("[data-testid=result]", "data-finished") or 0)
    page.fill("[data-testid=followup-input]", "Who can restore them?")
    page.press("[data-testid=followup-input]", "Enter")
    page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=result]').dataset.finished || 0) > n",
        arg=before,
        timeout=TIMEOUT_MS,
    )
    # the follow-up went with the earlier turn, and the page says what was searched for
    [earlier] = sent[-1]["history"]
    assert earlier["question"] == ANSWERABLE and "30 days" in earlier["answer"] in first_sentence
    assert sent[-1]["conversation_id"].startswith("page-")
    expect(page.locator("[data-testid=searched-for]")).to_have_text(
        "Searched for: Who can restore them (deleted projects stay)?"
    )
    # the earlier turn stays above, its chip still opens its own source
    turn = page.locator("[data-testid=thread-turn]")
    expect(turn).to_have_count(1)
    assert turn.locator("[data-testid=turn-question]").inner_text() == ANSWERABLE
    turn.locator("[data-testid=citation-chip]").first.click()
    panel = page.locator("[data-testid=source-panel]")
    expect(panel.locator("[data-testid=source-mark]").first).to_be_visible()
    # a new conversation forgets the thread: the next question goes alone
    page.click("[data-testid=new-conversation]")
    expect(page.locator("[data-testid=thread]")).to_be_hidden()
    ask(page, "Who can restore them?")
    assert "history" not in sent[-1]
    expect(page.locator("[data-testid=searched-for]")).to_be_hidden()
