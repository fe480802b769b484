"""The web page while the server embeds in the background: a line beside the passage count says how
many passages meaning search covers, and goes away when all are embedded. Headless Debian chromium,
as in tests/test_browser.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import load_settings
from rag.embeddings.backfill import Backfill
from rag.ingest.indexer import ingest_paths
from rag.store import SqliteStore
from tests.serving import free_port
from tests.test_browser import CHROMIUM, TIMEOUT_MS, chromium
from tests.test_dense import WordEmbedder, write_docs

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing"),
]

STATUS = "document.querySelector('[data-testid=embed-status]')"


@pytest.fixture
def base_url(tmp_path: Path) -> Iterator[str]:
    import uvicorn

    from rag.api import create_app

    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off", anthropic_api_key="")
    ingest_paths(SqliteStore(settings.db), [write_docs(tmp_path / "docs")], settings=settings)
    # slow enough that the page sees the work in progress (chromium starts in seconds): a passage every 5 s
    backfill = Backfill(SqliteStore(settings.db), WordEmbedder(delay=5.0), batch=1, poll=0.1)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, backfill=backfill), host="127.0.0.1", port=port, log_level="warning"
        )
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


def test_page_shows_embedding_progress_until_every_passage_is_embedded(base_url: str) -> None:
    with chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base_url + "/")
        page.wait_for_function(f"() => !{STATUS}.hidden && {STATUS}.textContent.includes('of 4 passages')")
        assert "meaning search" in page.inner_text("[data-testid=embed-status]")
        assert "4 passages indexed" in page.inner_text("[data-testid=kb-status]")
        page.wait_for_function(f"() => {STATUS}.hidden", timeout=60_000)
        assert page.inner_text("[data-testid=kb-status]") == "4 passages indexed"
