"""The document store: the `Store` protocol and shared logic (`base`), SQLite and PostgreSQL
backends, their migrations."""

from rag.store.base import Store, StoreReader, open_store
from rag.store.sqlite import SqliteStore

__all__ = ["SqliteStore", "Store", "StoreReader", "open_store"]
