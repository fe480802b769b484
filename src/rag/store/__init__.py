"""The document store: its interfaces (`interface`), what both backends share (`base`, `ids`),
SQLite and PostgreSQL backends, their migrations."""

from rag.store.interface import Store, StoreReader, open_store
from rag.store.sqlite import SqliteStore

__all__ = ["SqliteStore", "Store", "StoreReader", "open_store"]
