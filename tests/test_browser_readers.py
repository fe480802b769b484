"""The readers' features of the web page in Debian's Chromium (Playwright): example questions, the formatted
source panel and its exact highlights, sources by relevance merged per chunk, copying, the tab's
history, feedback, keyboard-only use, a strict Content-Security-Policy, and axe-core's accessibility check.

One real app over the bundled corpus per module (see tests/test_browser.py); streams and chunks the
real corpus cannot produce on demand are injected with Playwright request routing.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_browser import (
    ANSWERABLE,
    CHROMIUM,
    CONFLICT,
    OFF_TOPIC,
    TIMEOUT_MS,
    ask,
    chromium,
    running_app,
    sse,
    visible_offsets,
)

from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
    " object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
MARKDOWN = (
    "## Trash and restore\n\n"
    "Deleted projects stay in the trash for *30 days*. Restore them from **Projects > Trash** "
    "or call `POST /projects/{id}/restore`; see [the API guide](https://example.test/api).\n\n"
    "- Admins can restore any project.\n"
    "- Owners can restore their own.\n\n"
    'Raw HTML is text: <img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\n\n'
    "Settings\n========\n\n"
    "Set ``TRASH_DAYS`` (see :setting:`TRASH_DAYS`) and read `Docs <https://example.test/docs>`_."
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (install Debian's chromium)"
    ),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("browser-readers") / "rag.db"
    with running_app(db) as url:
        yield url, db


@pytest.fixture(scope="module")
def base_url(served: tuple[str, Path]) -> str:
    return served[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def open_page(
    browser: Any, base_url: str, *, csp: bool = False, csp_paths: tuple[str, ...] = ("/",), **options: Any
) -> tuple[Any, Any, list[str]]:
    """A fresh context and page on `/`; with `csp`, the pages at `csp_paths` are served under STRICT_CSP
    and every violation is recorded in `window.__csp`. Returns (context, page, page errors)."""
    if not csp:
        # The server's own CSP forbids eval, which Playwright's string predicates use; the tests that
        # check the page against the CSP (csp=True) keep it and never wait on a string predicate.
        options.setdefault("bypass_csp", True)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **options)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    if csp:
        page.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )

        def with_csp(route: Any) -> None:
            response = route.fetch()
            route.fulfill(
                response=response, headers={**response.headers, "content-security-policy": STRICT_CSP}
            )

        for path in csp_paths:
            page.route(base_url + path, with_csp)
    page.goto(base_url + "/")
    return context, page, errors


@pytest.fixture
def page(browser: Any, base_url: str) -> Iterator[Any]:
    context, pg, errors = open_page(browser, base_url)
    yield pg
    context.close()
    assert errors == []


def fulfil_stream(page: Any, body: str) -> None:
    page.route(
        "**/ask/stream",
        lambda route: route.fulfill(
            status=200, content_type="text/event-stream", body=body, headers={"X-Trace-Id": "trace-mocked"}
        ),
    )


def citation(n: int, chunk_id: str, cited: str, start: int = 0) -> dict[str, Any]:
    return {
        "n": n,
        "chunk_id": chunk_id,
        "title": f"Doc {chunk_id}",
        "url": "",
        "chunk_url": "/chunks/" + chunk_id.replace("#", "%23"),
        "cited_text": cited,
        "start": start,
        "end": start + len(cited),
    }


def block(n: int, chunk_id: str, score: float) -> dict[str, Any]:
    return {"n": n, "chunk_id": chunk_id, "title": f"Doc {chunk_id}", "section": "", "score": score}


# ---------------------------------------------------------------- example questions


def test_page_empty_state_offers_example_questions_from_the_corpus(page: Any, base_url: str) -> None:
    from playwright.sync_api import expect

    chips = page.locator("[data-testid=example-chip]")
    expect(chips.first).to_be_visible()
    seed = page.evaluate("sessionStorage.getItem('rag.examplesSeed')")
    served = httpx.get(base_url + "/examples", params={"limit": 4, "seed": seed}, timeout=10).json()[
        "examples"
    ]
    assert chips.all_inner_texts() == [e["question"] for e in served]
    assert len(served) == 4
    chips.first.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('[data-testid=result]').dataset.finished")
    assert page.locator("[data-testid=asked-question]").inner_text() == served[0]["question"]
    assert page.locator("[data-testid=empty-state]").is_hidden()


# ---------------------------------------------------------------- the source panel


def open_markdown_chunk(page: Any, spans: list[tuple[int, int]]) -> None:
    chunk = {"chunk_id": "md#c01", "doc_id": "md", "title": "Markdown guide", "section": "", "text": MARKDOWN}
    page.route("**/chunks/md%23c01", lambda route: route.fulfill(status=200, json=chunk))
    page.evaluate(
        "spans => window.ragPage.openSource({chunkId: 'md#c01', n: 1, spans})",
        [{"start": s, "end": e, "cited": MARKDOWN[s:e]} for s, e in spans],
    )
    page.wait_for_selector("[data-testid=source-panel][data-state=ready]")


def marks(page: Any) -> list[tuple[int, int, str, int]]:
    found: list[list[Any]] = page.eval_on_selector_all(
        "[data-testid=source-text] mark",
        "ms => ms.map(m => [+m.dataset.start, +m.dataset.end, m.textContent, +m.dataset.span])",
    )
    return [(s, e, t, span) for s, e, t, span in found]


def test_page_source_panel_formats_markdown_and_rest_safely(page: Any) -> None:
    cited = "Restore them from **Projects > Trash**"
    start = MARKDOWN.index(cited)
    open_markdown_chunk(page, [(start, start + len(cited))])
    text = page.locator("[data-testid=source-text]")
    assert text.get_attribute("data-view") == "formatted"
    shown = text.inner_text()
    assert "**" not in shown and "## " not in shown and "========" not in shown and "``" not in shown
    assert text.locator("strong").first.inner_text() == "Projects > Trash"
    assert text.locator("em").first.inner_text() == "30 days"
    assert text.locator("li").all_inner_texts() == [
        "Admins can restore any project.",
        "Owners can restore their own.",
    ]
    assert text.locator(".md-heading").all_inner_texts() == ["Trash and restore", "Settings"]
    assert "TRASH_DAYS" in text.locator("code").all_inner_texts()
    assert text.locator("a").count() == 0
    assert "the API guide" in shown and "https://example.test/api" not in shown
    assert '<img src=x onerror="window.__pwned=1">' in shown
    assert text.locator("img, script").count() == 0
    assert page.evaluate("window.__pwned") is None
    found = marks(page)
    assert "".join(t for _, _, t, _ in found) == "Restore them from Projects > Trash"
    assert found[0][0] == start and all(MARKDOWN[s:e] == t for s, e, t, _ in found)


def test_page_source_highlight_covers_exactly_the_visible_cited_characters(page: Any) -> None:
    # Every visible character of the rendered chunk maps to one source offset; a highlight covers
    # exactly the visible characters inside the cited span, whatever markup the span crosses.
    visible = visible_offsets(page, MARKDOWN)
    rng = random.Random(17)
    for _ in range(12):
        start = rng.randrange(0, len(MARKDOWN) - 1)
        end = rng.randrange(start + 1, min(len(MARKDOWN), start + 160) + 1)
        open_markdown_chunk(page, [(start, end)])
        found = marks(page)
        covered = {i for s, e, _, _ in found for i in range(s, e)}
        if page.get_attribute("[data-testid=source-text]", "data-view") == "plain":
            assert not visible & set(range(start, end))  # only hidden markup cited: shown as plain text
            assert covered == set(range(start, end))
        else:
            assert covered == visible & set(range(start, end)), (start, end)
        assert all(MARKDOWN[s:e] == t for s, e, t, _ in found)


def test_page_source_panel_plain_view_shows_the_original_text(page: Any) -> None:
    open_markdown_chunk(page, [(0, 8)])
    toggle = page.locator("[data-testid=source-view]")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert page.locator("[data-testid=source-text]").inner_text() == MARKDOWN
    assert [t for _, _, t, _ in marks(page)] == [MARKDOWN[:8]]


# ---------------------------------------------------------------- sources


def test_page_sources_ordered_by_relevance_and_merged_per_chunk(page: Any) -> None:
    body = (
        sse(
            "meta",
            {
                "blocks": [
                    block(1, "a#c01", 0.5),
                    block(2, "b#c01", 0.8),
                    block(3, "a#c01", 0.6),
                    block(4, "c#c01", 0.51),
                ],
                "context_tokens": 40,
                "trace_id": "t",
            },
        )  # fmt: skip
        + sse(
            "sentence",
            {"text": "First.", "citations": [citation(1, "a#c01", "x"), citation(3, "a#c01", "y", 4)]},
        )
        + sse("sentence", {"text": "Second.", "citations": [citation(2, "b#c01", "z")]})
        + sse("sentence", {"text": "Third.", "citations": [citation(1, "a#c01", "x")]})
        + sse("done", {"status": "answered", "emitted": 3, "dropped": 0})
    )
    fulfil_stream(page, body)
    ask(page, ANSWERABLE)
    items = page.locator("[data-testid=block-item]")
    assert [i.get_attribute("data-chunk-id") for i in items.all()] == ["b#c01", "a#c01", "c#c01"]
    assert items.nth(1).locator("[data-testid=block-n]").inner_text() == "1 · 3"
    assert items.nth(1).locator("[data-testid=block-cited]").inner_text() == "cited 2×"
    assert items.nth(2).locator("[data-testid=block-cited]").is_hidden()
    first = page.locator("[data-testid=answer-sentence]").first
    assert first.locator("[data-testid=citation-chip]").all_inner_texts() == ["1"]


def test_page_real_sources_are_listed_by_descending_relevance(page: Any) -> None:
    ask(page, ANSWERABLE)
    scores = [float(s) for s in page.locator("[data-testid=block-score]").all_inner_texts()]
    assert len(scores) >= 2
    assert scores == sorted(scores, reverse=True)


# ---------------------------------------------------------------- copy


def test_page_copy_buttons_put_the_answer_and_its_footnotes_on_the_clipboard(
    browser: Any, base_url: str
) -> None:
    context, page, errors = open_page(browser, base_url, permissions=["clipboard-read", "clipboard-write"])
    try:
        expected = httpx.post(base_url + "/ask", json={"question": ANSWERABLE}, timeout=30).json()
        ask(page, ANSWERABLE)
        page.locator("[data-testid=copy-text]").click()
        page.wait_for_function(
            "document.querySelector('[data-testid=copy-status]').dataset.copied === 'text'"
        )
        plain = page.evaluate("navigator.clipboard.readText()")
        first = expected["sentences"][0]
        assert plain.startswith(ANSWERABLE + "\n\n" + first["text"] + "[1]")
        assert "\nSources:\n[1] " + first["citations"][0]["title"] in plain
        assert f'    "{first["citations"][0]["cited_text"]}"' in plain
        assert base_url + first["citations"][0]["chunk_url"] in plain or first["citations"][0]["url"] in plain
        page.locator("[data-testid=copy-markdown]").click()
        page.wait_for_function(
            "document.querySelector('[data-testid=copy-status]').dataset.copied === 'markdown'"
        )
        markdown = page.evaluate("navigator.clipboard.readText()")
        assert first["text"] + "[^1]" in markdown
        assert "\n[^1]: [" + first["citations"][0]["title"] + "](<" in markdown
        assert (
            "copied the answer and 1 source" in page.locator("[data-testid=copy-status]").inner_text().lower()
        )
    finally:
        context.close()
    assert errors == []


def test_page_copy_tools_hidden_when_nothing_was_answered(page: Any) -> None:
    ask(page, OFF_TOPIC)
    assert page.locator("[data-testid=copy-text]").is_hidden()
    assert page.locator("[data-testid=feedback]").is_visible()


# ---------------------------------------------------------------- history


def test_page_history_lists_questions_and_reopens_an_earlier_answer_without_asking(
    browser: Any, base_url: str
) -> None:
    context, page, errors = open_page(browser, base_url)
    try:
        ask(page, ANSWERABLE)
        first_answer = page.locator("[data-testid=answer]").inner_text()
        ask(page, OFF_TOPIC)
        history = page.locator("[data-testid=history]")
        assert history.locator("[data-testid=history-summary]").inner_text() == "Asked in this tab (2)"
        page.reload()
        history.locator("[data-testid=history-summary]").click()
        items = history.locator("[data-testid=history-item]")
        assert [t.split("\n")[0] for t in items.all_inner_texts()] == [OFF_TOPIC, ANSWERABLE]
        asks: list[str] = []
        page.on("request", lambda r: asks.append(r.url) if "/ask" in r.url else None)
        before = int(page.get_attribute("[data-testid=result]", "data-finished") or 0)
        items.nth(1).focus()
        page.keyboard.press("Enter")
        page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=result]').dataset.finished || 0) > n",
            arg=before,
        )
        assert page.locator("[data-testid=asked-question]").inner_text() == ANSWERABLE
        assert page.locator("[data-testid=answer]").inner_text() == first_answer
        assert asks == []
        assert items.nth(1).get_attribute("aria-current") == "true"
        page.locator("[data-testid=citation-chip]").first.click()
        page.wait_for_selector("[data-testid=source-mark]")
    finally:
        context.close()
    assert errors == []


# ---------------------------------------------------------------- feedback


def test_page_feedback_wrong_with_note_is_stored_with_the_trace_id(
    page: Any, served: tuple[str, Path]
) -> None:
    with page.expect_response("**/ask/stream") as streamed:
        ask(page, ANSWERABLE)
    trace = streamed.value.headers["x-trace-id"]
    page.locator("[data-testid=feedback-wrong]").click()
    assert page.locator("[data-testid=feedback-wrong]").get_attribute("aria-pressed") == "true"
    assert page.evaluate("document.activeElement.dataset.testid") == "feedback-note"
    page.keyboard.type("The trash keeps projects longer on Business plans.")
    with page.expect_response("**/feedback") as sent:
        page.locator("[data-testid=feedback-send]").click()
    assert sent.value.status == 201
    page.wait_for_selector("[data-testid=feedback-status][data-sent=wrong]")
    assert page.locator("[data-testid=feedback-helpful]").is_disabled()
    store = SqliteStore(str(served[1]))
    try:
        stored = [f for f in store.feedback(100) if f.trace_id == trace]
    finally:
        store.close()
    assert len(stored) == 1
    assert (stored[0].verdict, stored[0].question) == ("wrong", ANSWERABLE)
    assert stored[0].note == "The trash keeps projects longer on Business plans."
    assert "marked wrong" in (page.locator("[data-testid=history-item]").first.text_content() or "")


def test_page_feedback_failure_says_it_was_not_saved(page: Any) -> None:
    page.route(
        "**/feedback",
        lambda route: route.fulfill(
            status=503, json={"error": {"type": "store_unavailable", "message": "the store is unreachable"}}
        ),
    )
    ask(page, ANSWERABLE)
    page.locator("[data-testid=feedback-helpful]").click()
    page.locator("[data-testid=feedback-send]").click()
    status = page.locator("[data-testid=feedback-status]")
    page.wait_for_function(
        "document.querySelector('[data-testid=feedback-status]').textContent.includes('not saved')"
    )
    assert "the store is unreachable" in status.inner_text()
    assert page.locator("[data-testid=feedback-helpful]").is_enabled()


# ---------------------------------------------------------------- keyboard only


def tab_to(page: Any, testid: str, *, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.dataset.testid") == testid:
            return
    raise AssertionError(f"Tab never reached {testid}")


def test_page_keyboard_only_example_answer_chip_panel_and_back(page: Any) -> None:
    from playwright.sync_api import expect

    page.wait_for_selector("[data-testid=example-chip]")
    page.locator("[data-testid=ask-input]").focus()
    tab_to(page, "example-chip")
    before = int(page.get_attribute("[data-testid=result]", "data-finished") or 0)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=result]').dataset.finished || 0) > n", arg=before
    )
    page.locator("[data-testid=ask-input]").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(ANSWERABLE)
    before += 1
    page.keyboard.press("Enter")
    page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=result]').dataset.finished || 0) > n", arg=before
    )
    tab_to(page, "citation-chip")
    page.keyboard.press("Enter")
    expect(page.locator("[data-testid=source-mark]").first).to_be_visible()
    assert page.evaluate("document.activeElement.dataset.testid") == "source-panel"
    tab_to(page, "source-view", limit=6)
    page.keyboard.press("Enter")
    assert page.get_attribute("[data-testid=source-text]", "data-view") == "plain"
    page.keyboard.press("Escape")
    expect(page.locator("[data-testid=source-panel]")).to_be_hidden()
    assert page.evaluate("document.activeElement.dataset.testid") == "citation-chip"
    tab_to(page, "copy-text")
    tab_to(page, "feedback-helpful", limit=5)
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.dataset.testid") == "feedback-note"


# ---------------------------------------------------------------- CSP, metrics


def test_page_runs_under_a_strict_content_security_policy(browser: Any, base_url: str) -> None:
    context, page, errors = open_page(browser, base_url, csp=True)
    try:
        page.wait_for_selector("[data-testid=example-chip]")
        ask(page, ANSWERABLE)
        page.locator("[data-testid=citation-chip]").first.click()
        page.wait_for_selector("[data-testid=source-mark]")
        page.locator("[data-testid=source-view]").click()
        page.locator("[data-testid=block-item] button").first.click()
        ask(page, CONFLICT)
        assert page.locator("[data-testid=refusal-conflict]").is_visible()
        assert page.evaluate("window.__csp") == []
    finally:
        context.close()
    assert errors == []


def test_page_asks_show_up_in_the_metrics(page: Any, base_url: str) -> None:
    def asked() -> float:
        text = httpx.get(base_url + "/metrics", timeout=10).text
        for line in text.splitlines():
            if (
                line.startswith("rag_http_requests_total{")
                and 'route="/ask/stream"' in line
                and 'status="200"' in line
            ):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = asked()
    ask(page, ANSWERABLE)
    assert asked() == before + 1


# ---------------------------------------------------------------- axe-core


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page once its animations have settled: a
    sentence fading in (`arrive`) has a partial opacity, and axe judges its contrast as it is mid-fade."""
    page.evaluate(
        "Promise.all(document.getAnimations()"
        ".filter((a) => a.effect.getComputedTiming().endTime !== Infinity).map((a) => a.finished))"
    )
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_page_has_no_serious_accessibility_violations_in_any_state(browser: Any, base_url: str) -> None:
    context, page, errors = open_page(browser, base_url, bypass_csp=True)
    try:
        page.wait_for_selector("[data-testid=example-chip]")
        states: dict[str, list[dict[str, Any]]] = {"empty": axe_violations(page)}
        ask(page, ANSWERABLE)
        page.locator("[data-testid=citation-chip]").first.click()
        page.wait_for_selector("[data-testid=source-mark]")
        page.locator("[data-testid=feedback-wrong]").click()
        page.locator("[data-testid=history-summary]").click()
        states["answer, panel, feedback, history"] = axe_violations(page)
        page.locator("[data-testid=source-view]").click()
        states["plain source"] = axe_violations(page)
        page.locator("[data-testid=settings] summary").click()
        states["settings"] = axe_violations(page)
        page.keyboard.press("Escape")
        ask(page, OFF_TOPIC)
        states["not found"] = axe_violations(page)
        ask(page, CONFLICT)
        states["conflict"] = axe_violations(page)
        page.set_viewport_size({"width": 375, "height": 740})
        page.locator("[data-testid=conflict-statement]").first.click()
        page.wait_for_selector("[data-testid=source-mark]")
        states["phone, conflict source"] = axe_violations(page)
    finally:
        context.close()
    assert {state: found for state, found in states.items() if found} == {}, json.dumps(states, indent=1)
    assert errors == []
