"""`open_store`: the configured backend, PostgreSQL (`postgres.py`) or SQLite (`sqlite.py`).

The backends are imported when chosen: the PostgreSQL driver is an optional extra.
"""

from __future__ import annotations

from pathlib import Path

from rag.config import Settings
from rag.errors import ConfigError
from rag.store.interface import Store


def open_store(settings: Settings) -> Store:
    """The configured store: PostgreSQL when `settings.database_url` is set, else SQLite at `settings.db`."""
    if settings.database_url:
        try:
            from rag.store.postgres import PgStore
        except ImportError as exc:
            raise ConfigError(
                f"RAG_DATABASE_URL is set but the PostgreSQL store is unavailable: {exc}"
            ) from None
        return PgStore(settings.database_url, connect_timeout=settings.db_connect_timeout)
    from rag.store.sqlite import SqliteStore

    if settings.db != ":memory:":
        Path(settings.db).parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(settings.db)
