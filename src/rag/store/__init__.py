"""The document store: its interfaces (`interface`), the choice of backend (`backends`), what both
backends share (`base`, `ids`, `lexical`, `asklog`), the SQLite and PostgreSQL backends and their
migrations.

May import: `rag.language` (tokens for search), `rag.access`, `rag.serialize`, `rag.config`,
`rag.types`, `rag.errors`; never the request path, ingest, the API or the CLI.
"""

from rag.store.backends import open_store
from rag.store.interface import Store, StoreReader
from rag.store.sqlite import SqliteStore

__all__ = ["SqliteStore", "Store", "StoreReader", "open_store"]
