"""The content owners' `/admin` page in Debian's Chromium (Playwright): groups, wrong answers, one trace,
exports, keyboard use, the admin-key guard, a strict Content-Security-Policy and axe-core."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_browser import ANSWERABLE, CHROMIUM, CONFLICT, OFF_TOPIC, chromium, running_app
from test_browser_readers import axe_violations, open_page

ADMIN = "admin-secret"
USER = "reader-secret"
SIMILAR = "What's the capital city of Australia?"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (install Debian's chromium)"
    ),
]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app with reader and admin keys, after a few asks and one answer marked wrong."""
    with running_app(
        tmp_path_factory.mktemp("browser-admin") / "rag.db", api_keys=USER, admin_keys=ADMIN
    ) as url:
        reader = {"Authorization": f"Bearer {USER}"}
        for question in (OFF_TOPIC, SIMILAR, CONFLICT):
            httpx.post(url + "/ask", json={"question": question}, headers=reader, timeout=30)
        answered = httpx.post(url + "/ask", json={"question": ANSWERABLE}, headers=reader, timeout=30)
        wrong = {
            "trace_id": answered.headers["x-trace-id"],
            "verdict": "wrong",
            "note": "Business keeps 90 days.",
        }
        httpx.post(url + "/feedback", json=wrong, headers=reader, timeout=30)
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def open_admin(browser: Any, base_url: str, key: str, **options: Any) -> tuple[Any, Any, list[str]]:
    context, page, errors = open_page(browser, base_url, **options)
    page.evaluate("key => localStorage.setItem('rag.apiKey', key)", key)
    page.goto(base_url + "/admin")
    page.wait_for_selector("body[data-loaded]")
    return context, page, errors


@pytest.fixture
def admin(browser: Any, base_url: str) -> Iterator[Any]:
    context, page, errors = open_admin(browser, base_url, ADMIN, accept_downloads=True)
    yield page
    context.close()
    assert errors == []


def test_admin_page_groups_refusals_and_lists_answers_marked_wrong(admin: Any) -> None:
    assert admin.get_attribute("body", "data-loaded") == "ok"
    assert admin.locator("[data-testid=count-low_retrieval_score] dd").inner_text() == "2"
    assert admin.locator("[data-testid=count-conflicting_sources] dd").inner_text() == "1"
    assert admin.locator("[data-testid=count-wrong] dd").inner_text() == "1"
    top = admin.locator("[data-testid=group-row]").first
    assert top.locator("[data-testid=group-count]").inner_text() == "2"
    assert top.locator("[data-testid=group-question]").inner_text() in (OFF_TOPIC, SIMILAR)
    conflict = admin.locator("[data-testid=group-row]", has_text=CONFLICT)
    assert conflict.locator("[data-testid=group-closest]").count() >= 2
    assert (
        conflict.locator("[data-testid=group-reason]").get_attribute("data-reason") == "conflicting_sources"
    )
    wrong = admin.locator("[data-testid=wrong-row]")
    assert wrong.count() == 1
    assert ANSWERABLE in wrong.inner_text() and wrong.locator("[data-testid=wrong-note]").inner_text() == (
        "Business keeps 90 days."
    )
    assert admin.locator("[data-testid=refusal-row]").count() == 3


def test_admin_trace_opens_from_the_keyboard_with_every_step(admin: Any) -> None:
    button = admin.locator("[data-testid=wrong-row] [data-testid=trace-button]")
    button.focus()
    admin.keyboard.press("Enter")
    trace = admin.locator("[data-testid=trace-view]")
    trace.wait_for()
    assert admin.evaluate("document.activeElement.id") == "trace-title"
    assert ANSWERABLE in trace.locator("[data-testid=trace-facts]").inner_text()
    assert "30 days" in trace.locator("[data-testid=trace-answer]").inner_text()
    assert trace.locator("[data-testid=trace-verdict]").count() >= 1
    text = trace.inner_text()
    for needle in (
        "Retrieved, best first",
        "Blocks sent to the model",
        "Timings (ms)",
        "Usage",
        "Business keeps 90 days.",
    ):
        assert needle in text
    assert admin.evaluate("location.hash").startswith("#trace=")


def test_admin_exports_download_csv_with_every_refusal(admin: Any, tmp_path: Path) -> None:
    with admin.expect_download() as info:
        admin.locator("[data-testid=export-refusals-csv]").click()
    download = info.value
    assert download.suggested_filename == "rag-refusals.csv"
    path = tmp_path / "refusals.csv"
    download.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert {r["question"] for r in rows} == {OFF_TOPIC, SIMILAR, CONFLICT}


@pytest.mark.parametrize(("key", "message"), [("", "missing admin key"), (USER, "may not open")])
def test_admin_page_without_an_admin_key_shows_why_and_no_data(
    browser: Any, base_url: str, key: str, message: str
) -> None:
    context, page, errors = open_admin(browser, base_url, key)
    try:
        assert page.get_attribute("body", "data-loaded") == "error"
        assert message in page.locator("[data-testid=admin-error]").inner_text()
        assert page.locator("[data-testid=group-row]").count() == 0
        assert page.locator("[data-testid=settings]").get_attribute("open") is not None
    finally:
        context.close()
    assert errors == []


def test_admin_page_under_strict_csp_has_no_serious_accessibility_violations(
    browser: Any, base_url: str
) -> None:
    context, page, errors = open_admin(browser, base_url, ADMIN, csp=True, csp_paths=("/", "/admin"))
    try:
        assert page.get_attribute("body", "data-loaded") == "ok"
        page.locator("[data-testid=trace-button]").first.click()
        page.wait_for_selector("[data-testid=trace-view]:not([hidden])")
        assert page.evaluate("window.__csp") == []
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        found = axe_violations(page)
    finally:
        context.close()
    assert found == []
    assert errors == []
