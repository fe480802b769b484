"""Shared fixtures: an offline environment for every test, and a store built from the bundled corpus."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import get_settings

# `fake_anthropic` and `claude_env` (Claude path); `pg_server_url` (PostgreSQL with pgvector)
pytest_plugins = ["fake_anthropic", "pg_server"]

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"


def _go_offline(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    """MOCK=1, no provider keys, no RAG_ settings from the machine, BM25 alone, and `db` as the store."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "VOYAGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("RAG_") and name != "RAG_TEST_DATABASE_URL":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MOCK", "1")
    monkeypatch.setenv("RAG_DENSE", "off")
    monkeypatch.setenv("RAG_DB", str(db))
    monkeypatch.chdir(ROOT)
    get_settings.cache_clear()


@pytest.fixture(scope="module", autouse=True)
def offline_module_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same offline environment while module-scoped fixtures are built.

    Module fixtures (a store, an app) are set up before any function-scoped fixture runs, so without
    this they read the machine's environment: an app built there would fill embeddings in the
    background (RAG_DENSE unset means auto) and its retrieval would depend on how far that got."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _go_offline(monkeypatch, tmp_path_factory.mktemp("module-env") / "rag.db")
        yield
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Every test runs offline: MOCK=1, no provider keys, a private database path, and BM25 alone
    (RAG_DENSE=off: the local encoder's dense retrieval is tested where a test turns it on)."""
    _go_offline(monkeypatch, tmp_path / "rag.db")
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite store with the bundled corpus ingested, one per test module (modules write asks to it)."""
    from rag.config import load_settings
    from rag.ingest.indexer import ingest_paths
    from rag.store.sqlite import SqliteStore

    path = str(tmp_path_factory.mktemp("corpus") / "corpus.db")
    store = SqliteStore(path)
    try:
        ingest_paths(store, [str(CORPUS)], settings=load_settings(db=path, mock=True))
    finally:
        store.close()
    return path
