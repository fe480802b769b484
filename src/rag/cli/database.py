"""Which database a command reads, named the way a user can check it, and opening it for reading.

Reading commands (`rag ask`, `rag chunk`, `rag gaps`) never create a database: a mistyped
`RAG_DB` must say so, not answer every question with a refusal from a new, empty file.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import click

from rag.config import Settings
from rag.store import Store, open_store

FILL_HINT = "fill it with `rag ingest PATH` (the bundled corpus: `rag ingest fixtures/corpus`)"


def describe_database(settings: Settings) -> str:
    """The database in use: the SQLite path, or the PostgreSQL URL without user, password or query."""
    if settings.database_url:
        try:
            parts = urlsplit(settings.database_url)
            host = parts.hostname or ""
            port = f":{parts.port}" if parts.port else ""
        except ValueError:
            return "the PostgreSQL database in RAG_DATABASE_URL"
        if ":" in host:
            host = f"[{host}]"
        return urlunsplit((parts.scheme, host + port, parts.path, "", ""))
    return settings.db


def open_for_reading(settings: Settings) -> Store:
    """Open the configured store without creating it: a missing SQLite file is a one-line error."""
    if not settings.database_url and settings.db != ":memory:" and not Path(settings.db).is_file():
        if Path(settings.db).exists():  # a directory or a device: "no database" would send the user astray
            return open_store(settings)  # raises StoreUnavailable saying what the path is
        raise click.ClickException(f"no database at {settings.db} (RAG_DB): {FILL_HINT}")
    return open_store(settings)


def require_documents(store: Store, settings: Settings) -> None:
    """A one-line error naming the database when it holds no chunks (every question would be refused)."""
    if store.stats().chunks == 0:
        raise click.ClickException(
            f"the database {describe_database(settings)} holds no documents: {FILL_HINT}"
        )
