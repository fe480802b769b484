"""The document store: the `Store` protocol, SQLite and PostgreSQL backends, their migrations."""

from rag.store.sqlite import SqliteStore, Store, open_store

__all__ = ["SqliteStore", "Store", "open_store"]
