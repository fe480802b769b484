"""The embedded store: one SQLite file in WAL mode, an FTS5 index, a bounded connection pool.

The lexical index is built over the *stemmed content terms* of `rag.text.terms`, so it matches
the same words the reranker scores. Everything both engines share lives in `rag.store.base`.

Connections: at most `max_connections` per store, reused across threads (a thread borrows one
for one operation), so worker threads that come and go never strand file handles. Writers in
this process queue on a lock before they borrow one, so readers always find a connection.

Faults: before each operation the file's identity (device, inode) is compared with the one the
store opened. A missing or unreadable file raises `StoreUnavailable`; a replaced file is
reopened (old connections are closed), and if it is not a readable store, every operation
raises `StoreUnavailable` until it is. SQLite errors that mean the database cannot be used
(corrupt, not a database, no such table, locked past the busy timeout) raise `StoreUnavailable`.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag.errors import StoreUnavailable
from rag.store.base import (
    BM25_WEIGHTS,
    CHUNK_ROW_COLUMNS,
    ID_BATCH,
    MAX_QUERY_TERMS,
    Cursor,
    SqlStore,
    chunk_columns,
    chunk_from_row,
    chunk_row,
    clamp_limit,
)
from rag.store.migrations_sqlite import migrate
from rag.text import terms
from rag.types import Chunk, Document

__all__ = ["SqliteStore", "fts_query"]

BUSY_TIMEOUT_SECONDS = 10.0
# Connections per store. Reads take well under a millisecond and writers queue on a lock first,
# so a few connections serve a full thread pool; each costs 2-3 file handles and its page cache.
MAX_CONNECTIONS = 8
DF_CACHE_TERMS = 50_000

_FTS_TOKEN_RE = re.compile(r"[^\W_]+")
_SEARCH_SQL = f"""
    SELECT {chunk_columns("c")}, s.score
    FROM (
        SELECT rowid AS id, -bm25(chunks_fts, {", ".join(map(str, BM25_WEIGHTS))}) AS score
        FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?
    ) AS s
    JOIN chunks AS c ON c.id = s.id
    ORDER BY s.score DESC, c.chunk_id
"""

logger = logging.getLogger(__name__)


def fts_query(query_terms: Iterable[object]) -> str:
    """A safe FTS5 MATCH expression: each term as a double-quoted phrase of its alphanumeric runs, ORed.

    Never raises; drops anything without a letter or digit and returns "" when nothing is left.
    Quotes, `*`, `^`, `:`, parentheses, NUL and operator words (AND, OR, NOT, NEAR) lose their
    meaning because only word characters survive and every phrase is quoted.
    """
    phrases: list[str] = []
    seen: set[str] = set()
    for term in query_terms:
        if not isinstance(term, str):
            continue
        tokens = _FTS_TOKEN_RE.findall(term.lower())
        if not tokens:
            continue
        phrase = '"' + " ".join(tokens) + '"'
        if phrase not in seen:
            seen.add(phrase)
            phrases.append(phrase)
        if len(phrases) >= MAX_QUERY_TERMS:
            break
    return " OR ".join(phrases)


class _Connection(sqlite3.Connection):
    """A pooled connection with what it carries between borrowings."""

    epoch = 0  # the file generation it was opened on (see SqliteStore._reopen)
    df: dict[str, int] | None = None  # term -> document frequency, valid for `df_version`
    df_version: tuple[int, int] = (-1, -1)


class SqliteStore(SqlStore[_Connection]):
    """The embedded store. Thread-safe; every method returns dataclasses.

    Readers never wait for a writer (WAL); writers take SQLite's lock with BEGIN IMMEDIATE and
    wait up to `busy_timeout` seconds for other processes. ":memory:" keeps one connection
    (each connection would see its own database).
    """

    backend = "sqlite"
    _ROW_ORDER = "rowid"

    def __init__(
        self, path: str, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS, max_connections: int = MAX_CONNECTIONS
    ) -> None:
        super().__init__()
        self.path = path
        # Messages name the file, never its folder: they reach HTTP clients, and server paths must not.
        self.name = Path(path).name or path
        self.busy_timeout = busy_timeout
        self.memory = path in ("", ":memory:")
        self.max_connections = 1 if self.memory else max(1, max_connections)
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._writer = threading.Lock()
        self._reopening = threading.Lock()
        self._idle: list[_Connection] = []
        self._closed = False
        self._epoch = 0
        self._identity: tuple[int, int] | None = None
        self._log_db: SqliteStore | None = None
        try:
            conn = self._open(create=True)
        except sqlite3.Error as exc:
            raise StoreUnavailable(self._describe(exc)) from None
        self._identity = self._stat()
        self._idle.append(conn)

    # connections

    def _open(self, *, create: bool = False, prepare: bool = True) -> _Connection:
        """A new connection. `create` may create the file (only at first open); `prepare` sets WAL
        mode and applies pending migrations (first open, and after the file was replaced)."""
        if self.memory:
            target, uri = self.path or ":memory:", False
        else:
            target, uri = Path(self.path).absolute().as_uri() + ("?mode=rwc" if create else "?mode=rw"), True
        conn = sqlite3.connect(
            target,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
            factory=_Connection,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA temp_store = MEMORY")
            if prepare:
                conn.execute("PRAGMA journal_mode = WAL")
                migrate(conn)
        except BaseException:
            conn.close()
            raise
        conn.epoch = self._epoch
        return conn

    def _stat(self) -> tuple[int, int] | None:
        """The database file's (device, inode); raises StoreUnavailable when it is missing."""
        if self.memory:
            return None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise StoreUnavailable(
                f"the database file {self.name} is missing (deleted or moved); restore it or run `rag ingest`"
            ) from None
        except OSError as exc:
            raise StoreUnavailable(f"the database file {self.name} cannot be read: {exc.strerror}") from None
        return st.st_dev, st.st_ino

    def _follow_file(self) -> None:
        """Fail while the file is missing or unreadable; reopen when it was replaced."""
        if self.memory:
            return
        identity = self._stat()
        if identity != self._identity:
            self._reopen(identity)
        if not os.access(self.path, os.R_OK):
            raise StoreUnavailable(f"the database file {self.name} is not readable by this process")

    def _reopen(self, identity: tuple[int, int] | None) -> None:
        with self._reopening:
            if identity == self._identity:
                return  # another thread got here first
            logger.warning("database file %s was replaced; reopening it", self.path)
            with self._lock:
                self._epoch += 1
                self._generation += 1
                idle, self._idle = self._idle, []
            for old in idle:
                old.close()
            try:
                conn = self._open()
            except sqlite3.Error as exc:
                raise StoreUnavailable(self._describe(exc)) from None
            with self._lock:
                self._identity = identity
                self._idle.append(conn)

    def _describe(self, exc: sqlite3.Error) -> str:
        return f"the database {self.name} cannot be used: {exc}"

    @contextmanager
    def _connection(self) -> Iterator[_Connection]:
        if self._closed:
            raise StoreUnavailable(f"the store {self.name} is closed")
        self._follow_file()
        if not self._slots.acquire(timeout=self.busy_timeout):
            raise StoreUnavailable(
                f"all {self.max_connections} connections to {self.name} stayed busy"
                f" for {self.busy_timeout:g} s"
            )
        conn: _Connection | None = None
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = self._open(prepare=False)
            yield conn
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise  # a caller's mistake, not a store fault; the connection is fine
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
                conn = None
            raise StoreUnavailable(self._describe(exc)) from exc
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    def _give_back(self, conn: _Connection) -> None:
        if conn.in_transaction:
            conn.rollback()
        with self._lock:
            if not self._closed and conn.epoch == self._epoch:
                self._idle.append(conn)
                return
        conn.close()

    @contextmanager
    def _transaction(self, doc_id: str | None) -> Iterator[_Connection]:
        if not self._writer.acquire(timeout=self.busy_timeout):
            raise StoreUnavailable(f"another write to {self.name} held the lock for {self.busy_timeout:g} s")
        try:
            with self._connection() as conn:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        finally:
            self._writer.release()

    def _exec(self, conn: _Connection, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return conn.execute(sql, params)

    def _executemany(self, conn: _Connection, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        conn.executemany(sql, rows)

    def close(self) -> None:
        self._close_log()
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            log_db, self._log_db = self._log_db, None
        for conn in idle:
            conn.close()
        if log_db is not None and log_db is not self:
            log_db.close()

    # the ask log and gap queue live in a file of their own beside the database ("rag.db" ->
    # "rag-log.db"): their commits then never touch the chunk database, so its per-connection
    # caches (document frequencies, SQLite's page cache) survive every ask

    @property
    def log_path(self) -> str:
        """The log database's path: the database's name with "-log" before its suffix."""
        if self.memory:
            return ":memory:"
        path = Path(self.path)
        return str(path.with_name(f"{path.stem}-log{path.suffix}"))

    def _log_target(self) -> SqlStore[Any]:
        with self._lock:
            if self._log_db is not None:
                return self._log_db
        fresh = self.memory or not os.path.exists(self.log_path)
        log_db = _LogDatabase(self.log_path, busy_timeout=self.busy_timeout)
        with self._lock:
            if self._log_db is not None:  # another thread opened it first
                winner: SqlStore[Any] = self._log_db
            else:
                self._log_db = winner = log_db
        if winner is not log_db:
            log_db.close()
        elif fresh:
            self._move_log_rows(log_db)
        return winner

    def _move_log_rows(self, log_db: SqliteStore) -> None:
        """Copy the ask-log and gap rows an older version kept in the chunk database (same columns)."""
        with self._connection() as conn:
            tables = {
                table: conn.execute(f"SELECT * FROM {table}").fetchall() for table in ("ask_log", "gaps")
            }
        if not any(tables.values()):
            return
        with log_db._write() as conn:
            for table, rows in tables.items():
                if rows:
                    marks = ", ".join("?" * len(rows[0]))
                    conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)
        logger.info("moved %d ask-log and gap rows to %s", sum(map(len, tables.values())), log_db.name)

    def check(self) -> None:
        """Run a real query on a fresh connection (for readiness): raises StoreUnavailable on any fault."""
        self._follow_file()
        try:
            conn = self._open(prepare=False)
            try:
                conn.execute("SELECT count(*) FROM (SELECT 1 FROM chunks LIMIT 1)").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StoreUnavailable(self._describe(exc)) from None

    # writes: the FTS index and embeddings beside the chunk rows

    def _delete_rows(self, conn: _Connection, doc_id: str) -> None:
        conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)", (doc_id,)
        )
        conn.execute(
            "DELETE FROM embeddings WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
        conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def _insert_chunks(
        self,
        conn: _Connection,
        doc: Document,
        chunks: Sequence[Chunk],
        embeddings: Sequence[Sequence[float]] | None,
    ) -> None:
        field_terms: dict[str, str] = {}

        def joined(text: str) -> str:
            if text not in field_terms:
                field_terms[text] = " ".join(terms(text))
            return field_terms[text]

        chunk_rows = []
        fts_rows = []
        for ord_, chunk in enumerate(chunks):
            body_terms = " ".join(terms(chunk.text))
            chunk_rows.append((*chunk_row(ord_, chunk), body_terms))
            fts_rows.append((body_terms, joined(chunk.title), joined(chunk.section), chunk.chunk_id))
        conn.executemany(
            f"INSERT INTO chunks ({CHUNK_ROW_COLUMNS}, terms) VALUES ({', '.join('?' * 12)})", chunk_rows
        )
        conn.executemany(
            "INSERT INTO chunks_fts (rowid, terms, title, section)"
            " SELECT id, ?, ?, ? FROM chunks WHERE chunk_id = ?",
            fts_rows,
        )
        if embeddings is not None:
            conn.executemany(
                "INSERT INTO embeddings (chunk_id, dim, vector) VALUES (?, ?, ?)",
                [
                    (chunk.chunk_id, len(vector), array("f", vector).tobytes())
                    for chunk, vector in zip(chunks, embeddings, strict=True)
                ],
            )

    # lexical index

    def search(self, query_terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        query, limit = fts_query(query_terms), clamp_limit(limit)
        if not query or not limit:
            return []
        with self._connection() as conn:
            try:
                rows = conn.execute(_SEARCH_SQL, (query, limit)).fetchall()
            except sqlite3.OperationalError as exc:
                if "fts5" not in str(exc).lower() and "syntax" not in str(exc).lower():
                    raise
                logger.warning("FTS query %r rejected: %s", query, exc)
                return []
        return [(chunk_from_row(row), float(row[10])) for row in rows]

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """`chunks.terms` holds " ".join(terms(text)), written at ingest beside the FTS row."""
        unique = list(dict.fromkeys(chunk_ids))
        out: dict[str, frozenset[str]] = {}
        with self._connection() as conn:
            for i in range(0, len(unique), ID_BATCH):
                batch = unique[i : i + ID_BATCH]
                sql = f"SELECT chunk_id, terms FROM chunks WHERE chunk_id IN ({', '.join('?' * len(batch))})"
                for chunk_id, joined in conn.execute(sql, batch):
                    out[chunk_id] = frozenset(joined.split())
        return out

    def term_frequencies(self, query_terms: Sequence[str]) -> Mapping[str, int]:
        out: dict[str, int] = {}
        with self._connection() as conn:
            cache = self._df_cache(conn)
            for term in dict.fromkeys(query_terms):
                counts = []
                for part in _FTS_TOKEN_RE.findall(term.lower()):
                    if part not in cache:
                        row = conn.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (part,)).fetchone()
                        cache[part] = int(row[0]) if row else 0
                    counts.append(cache[part])
                # a term the tokenizer splits ("o'neil") occurs at most as often as its rarest part
                out[term] = min(counts) if counts else 0
        return out

    def _df_cache(self, conn: _Connection) -> dict[str, int]:
        """This connection's term -> df cache, emptied whenever anyone committed since it was filled.

        fts5vocab counts a term by walking its whole posting list, so a common term costs
        milliseconds; the common terms are also the ones every question repeats.
        """
        version = (conn.execute("PRAGMA data_version").fetchone()[0], self._generation)
        if conn.df is None or conn.df_version != version or len(conn.df) > DF_CACHE_TERMS:
            conn.df, conn.df_version = {}, version
        return conn.df


class _LogDatabase(SqliteStore):
    """The log file of a `SqliteStore`: the same schema (so every migration applies to its tables),
    of which only `ask_log` and `gaps` are used."""

    def _log_target(self) -> SqlStore[Any]:
        return self
