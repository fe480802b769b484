"""The web page with principals: the API key entered under Settings decides what the page shows,
its header count included. Headless Debian chromium, as in tests/test_browser.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.serving import free_port
from tests.test_access import PLAIN_KEY, PRINCIPALS, fill
from tests.test_browser import CHROMIUM, TIMEOUT_MS, ask, chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing"),
]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    from rag.api import create_app
    from rag.config import load_settings
    from rag.store import SqliteStore

    root = tmp_path_factory.mktemp("access-page")
    db = str(root / "rag.db")
    fill(SqliteStore(db), root / "corpus", None).close()
    settings = load_settings(
        db=db,
        mock=True,
        anthropic_api_key="",
        voyage_api_key="",
        database_url="",
        api_keys=PLAIN_KEY,
        principals=json.dumps(PRINCIPALS),
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def page(base_url: str) -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context()
        pg = context.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        pg.goto(base_url + "/")
        yield pg
        context.close()


def use_key(page: Any, key: str) -> None:
    page.evaluate("document.querySelector('[data-testid=settings]').open = true")
    page.fill("[data-testid=api-key-input]", key)
    page.dispatch_event("[data-testid=api-key-input]", "change")


def test_page_key_decides_the_count_and_the_answer(page: Any) -> None:
    use_key(page, PLAIN_KEY)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=kb-status]').textContent.includes('3 passages')"
    )
    ask(page, "How much do band four engineers earn?")
    assert "92000" not in page.inner_text("[data-testid=result]")
    use_key(page, "k-alice")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=kb-status]').textContent.includes('8 passages')"
    )
    ask(page, "How much do band four engineers earn?")
    assert "92000" in page.inner_text("[data-testid=answer]")


def test_page_wrong_key_is_refused(page: Any) -> None:
    use_key(page, "not-a-key")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=kb-status]').textContent.includes('API key')"
    )
