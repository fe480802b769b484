"""PostgreSQL with pgvector for the store suite: the `pg_server_url` session fixture.

`RAG_TEST_DATABASE_URL` is used when it is reachable and its server offers the `vector`
extension. Otherwise (not set, unreachable, or a server without pgvector, such as Debian's
PostgreSQL 15) the suite starts the PostgreSQL 16 that the `pgserver` wheel ships, with pgvector,
in a temporary folder, once per session, so the HNSW path of `rag.store.postgres` always runs.
The tests that need PostgreSQL skip, saying why, only when neither works.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ENV_URL = os.environ.get("RAG_TEST_DATABASE_URL", "")


@cache
def server_lacks_pgvector(url: str) -> str:
    """Why `url` cannot serve the pgvector tests, or "" when it can."""
    try:
        import psycopg

        from rag.store.postgres import wait_ready
    except ImportError as exc:
        return f"psycopg is not installed: {exc}"
    if not wait_ready(url, timeout=3):
        return f"PostgreSQL at {url.rsplit('@', 1)[-1]} is unreachable"
    with psycopg.connect(url, connect_timeout=3) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return "" if row else f"PostgreSQL at {url.rsplit('@', 1)[-1]} has no pgvector"


def start_pgserver(folder: Path) -> tuple[Any, str]:
    """(server handle, URL) of the wheel's PostgreSQL 16 in `folder`, pgvector enabled in its database."""
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pgserver

        server = pgserver.get_server(folder, cleanup_mode="delete")
        url = str(server.get_uri())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server, url


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A PostgreSQL URL whose server has pgvector: RAG_TEST_DATABASE_URL, or a pgserver started here."""
    reason = server_lacks_pgvector(ENV_URL) if ENV_URL else "RAG_TEST_DATABASE_URL is not set"
    if not reason:
        yield ENV_URL
        return
    # Not under pytest's basetemp: as root, pgserver runs postgres as the system user "pgserver",
    # which must traverse every parent folder, and pytest keeps /tmp/pytest-of-<user> at mode 0700.
    folder = Path(tempfile.mkdtemp(prefix="rag-test-pgserver-"))
    try:
        server, url = start_pgserver(folder / "data")
    except Exception as exc:  # no wheel, no permission to run postgres: say both reasons
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"{reason}; pgserver could not start PostgreSQL: {exc}")
    try:
        yield url
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
