"""The embedded store: one SQLite file in WAL mode, an FTS5 index, a bounded connection pool.

The lexical index is built over the *stemmed content terms* of `rag.language.text.terms`, so it matches
the same words the reranker scores. FTS5 holds it (written in each ingest transaction); ranking
reads FTS5's postings into `rag.store.lexical`, which scores every query term exhaustively with
FTS5's BM25. Everything both engines share lives in `rag.store.base`.

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
import stat
import threading
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from rag.access import audience_text, visible_sql
from rag.errors import StoreUnavailable
from rag.language.text import terms
from rag.store.base import (
    BM25_WEIGHTS,
    CHUNK_ROW_COLUMNS,
    ID_BATCH,
    MAX_QUERY_TERMS,
    VERSION_SQL,
    Cursor,
    SqlStore,
    chunk_columns,
    chunk_from_row,
    chunk_row,
    clamp_limit,
    fts_length,
    fts_tokens,
    fts_vocabulary,
    plain_heading,
    plain_joined,
)
from rag.store.interface import Groups
from rag.store.lexical import LexicalCache, Snapshot, by_score_then_id
from rag.store.migrations_sqlite import migrate
from rag.types import Chunk, Document, StoreStats

__all__ = ["SqliteStore", "fts_query"]

BUSY_TIMEOUT_SECONDS = 10.0
# Connections per store. Reads take well under a millisecond and writers queue on a lock first,
# so a few connections serve a full thread pool; each costs 2-3 file handles and its page cache.
MAX_CONNECTIONS = 8
DF_CACHE_TERMS = 50_000
# The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"

_FTS_TOKEN_RE = re.compile(r"[^\W_]+")
# One query term's postings from FTS5's own index, column-weighted (`BM25_WEIGHTS`).
_INSTANCES_SQL = f"""
    SELECT doc, sum(CASE col WHEN 'terms' THEN {BM25_WEIGHTS[0]} WHEN 'title' THEN {BM25_WEIGHTS[1]}
        ELSE {BM25_WEIGHTS[2]} END)
    FROM temp.{{table}}_instances WHERE term = ? GROUP BY doc
"""

logger = logging.getLogger(__name__)


def _phrases(query_terms: Iterable[object]) -> list[tuple[str, ...]]:
    """The token tuples of the phrases `fts_query` builds, in the same order."""
    out: list[tuple[str, ...]] = []
    for term in query_terms:
        if isinstance(term, str):
            tokens = tuple(_FTS_TOKEN_RE.findall(term.lower()))
            if tokens and tokens not in out:
                out.append(tokens)
        if len(out) >= MAX_QUERY_TERMS:
            break
    return out


def _occurrences(tokens: Sequence[str], phrase: tuple[str, ...]) -> int:
    n = len(phrase)
    if n == 1:
        return tokens.count(phrase[0])
    return sum(1 for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n]) == phrase)


def _term_counts(columns: Iterable[tuple[str, str, str]]) -> dict[str, int]:
    """FTS token -> number of chunks holding it, over (stored body terms, title, section) triples."""
    counts: dict[str, int] = {}
    for body, title, section in columns:
        for token in fts_vocabulary(body, title, section):
            counts[token] = counts.get(token, 0) + 1
    return counts


def _transient(exc: sqlite3.Error) -> bool:
    """A fault that passes by itself (another process holds the write lock), not a broken file."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower()


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
    # (groups key, term) -> readable restricted chunks holding it; and the public corpus size
    restricted_df: dict[tuple[str, str], int] | None = None
    chunk_counts: dict[str, int] | None = None  # groups key -> readable chunks
    # FTS tables whose temp.<table>_instances view (fts5vocab 'instance') this connection created
    instances: frozenset[str] = frozenset()


class SqliteStore(SqlStore[_Connection]):
    """The embedded store. Thread-safe; every method returns dataclasses.

    Readers never wait for a writer (WAL); writers take SQLite's lock with BEGIN IMMEDIATE and
    wait up to `busy_timeout` seconds for other processes. ":memory:" keeps one connection
    (each connection would see its own database).
    """

    backend = "sqlite"
    _ROW_ORDER = "rowid"
    # Unary + keeps model and dim out of the index choice, so the few vectors asked for are read by
    # chunk id (the primary key). Without statistics SQLite answered `model = ? AND dim = ? AND
    # chunk_id IN (...)` from the (model, dim) index, which lists every vector of the model: 35-90 ms
    # of CPU a question at 50,000 chunks, for the BM25 candidates outside the nearest (issue 29).
    _VECTOR_OF = "+model = ? AND +dim = ?"

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
        # The pool: idle connections, and how many are lent out; `_returned` wakes borrowers
        # waiting for a connection and a retirement waiting for all of them to come back.
        self._borrowed = 0
        self._waiting = 0
        self._retiring = False
        self._returned = threading.Condition(self._lock)
        self._writer = threading.Lock()
        self._reopening = threading.RLock()  # one thread retires or reopens connections at a time
        self._idle: list[_Connection] = []
        self._closed = False
        self._header: _HeaderFile | None = None  # the descriptor `stats` reads the file's header with
        self._epoch = 0
        self._identity: tuple[int, int] | None = None
        self._log_db: SqliteStore | None = None
        self._lexical = LexicalCache()
        if not self.memory and (problem := _path_problem(Path(path), self.name)):
            raise StoreUnavailable(problem)
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
                self._use_wal(conn)
                migrate(conn)
        except BaseException:
            conn.close()
            raise
        conn.epoch = self._epoch
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode (it stays so). SQLite answers "database is locked" at once, without
        waiting for its busy timeout, when another connection holds a lock while the mode changes, as
        when several stores open a new file together: wait and look again, up to the busy timeout."""
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.005
        while True:
            try:
                if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _stat(self) -> tuple[int, int] | None:
        """The database file's (device, inode), or None when it is missing."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreUnavailable(self._unreadable(exc)) from None
        return st.st_dev, st.st_ino

    def _follow_file(self) -> None:
        """Fail while the file is missing; reopen when another file took its place.

        Connections to a file that is gone are closed at once: SQLite names its -wal and -shm
        files after the path, so an old connection left open could checkpoint into, or delete,
        the journal of whatever file is created at that path next.
        """
        if self.memory:
            return
        identity = self._stat()
        if identity != self._identity:
            with self._reopening:
                if identity != self._identity:  # not already handled by another thread
                    self._retire()
                    self._identity = None
                    if identity is not None:
                        self._reopen(identity)
        if identity is None:
            raise StoreUnavailable(
                f"the database file {self.name} is missing (deleted or moved); restore it or run `rag ingest`"
            )

    def _retire(self) -> None:
        """Close every connection, waiting for lent ones to come back; the next ones open afresh."""
        with self._reopening, self._lock:
            self._retiring = True
            try:
                deadline = time.monotonic() + self.busy_timeout
                while self._borrowed:
                    if not self._returned.wait(deadline - time.monotonic()):
                        raise StoreUnavailable(
                            f"connections to {self.name} stayed busy for {self.busy_timeout:g} s"
                        )
                self._epoch += 1
                self._generation += 1
                idle, self._idle = self._idle, []
                for conn in idle:
                    conn.close()
            finally:
                self._retiring = False
                self._returned.notify_all()

    def _reopen(self, identity: tuple[int, int]) -> None:
        logger.warning("database file %s was replaced; reopening it", self.path)
        try:
            conn = self._open()
        except sqlite3.Error as exc:
            raise StoreUnavailable(self._describe(exc)) from None
        with self._lock:
            self._identity = identity
            self._idle.append(conn)

    def _describe(self, exc: sqlite3.Error) -> str:
        return f"the database {self.name} cannot be used: {exc}"

    def _unreadable(self, exc: OSError | None = None) -> str:
        if exc is None or isinstance(exc, PermissionError):
            return f"the database file {self.name} is not readable by this process"
        return f"the database file {self.name} cannot be read: {exc.strerror}"

    def _borrow(self) -> _Connection:
        """An idle connection, or a new one while fewer than `max_connections` are open, or wait."""
        with self._lock:
            deadline = 0.0
            while self._retiring or (not self._idle and self._borrowed >= self.max_connections):
                deadline = deadline or time.monotonic() + self.busy_timeout
                self._waiting += 1
                try:
                    returned = self._returned.wait(deadline - time.monotonic())
                finally:
                    self._waiting -= 1
                if not returned:
                    raise StoreUnavailable(
                        f"all {self.max_connections} connections to {self.name} stayed busy"
                        f" for {self.busy_timeout:g} s"
                    )
            self._borrowed += 1
            conn = self._idle.pop() if self._idle else None
        if conn is not None:
            return conn
        try:
            return self._open(prepare=False)
        except BaseException:
            self._give_back(None)
            raise

    def _give_back(self, conn: _Connection | None) -> None:
        """Return a lent connection to the pool; None (or a connection of an older file) is dropped."""
        if conn is not None and conn.in_transaction:
            try:
                conn.rollback()
            except sqlite3.Error:
                conn.close()
                conn = None
        with self._lock:
            self._borrowed -= 1
            if conn is not None and not self._closed and conn.epoch == self._epoch:
                self._idle.append(conn)
                conn = None
            if self._retiring:
                self._returned.notify_all()  # the retirer is among the waiters
            elif self._waiting:
                self._returned.notify()
        if conn is not None:
            conn.close()

    @contextmanager
    def _connection(self) -> Iterator[_Connection]:
        if self._closed:
            raise StoreUnavailable(f"the store {self.name} is closed")
        self._follow_file()
        try:
            conn = self._borrow()
        except sqlite3.Error as exc:
            if not os.access(self.path, os.R_OK):
                raise StoreUnavailable(self._unreadable()) from None
            raise StoreUnavailable(self._describe(exc)) from None
        fault: sqlite3.Error | None = None
        try:
            yield conn
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise  # a caller's mistake, not a store fault; the connection is fine
        except sqlite3.Error as exc:
            fault = exc
        finally:
            if fault is None:
                self._give_back(conn)
            else:
                conn.close()
                self._give_back(None)
        if fault is not None:
            if not _transient(fault) and not self.memory:
                # A corrupt or vanished file: pooled connections may answer from stale cached pages.
                self._retire()
            raise StoreUnavailable(self._describe(fault)) from fault

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
            header, self._header = self._header, None
        for conn in idle:
            conn.close()
        if header is not None:
            header.release()
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

    def stats(self, *, groups: Groups = None) -> StoreStats:
        """Counts of what `groups` may read, read now. The file's header is read from disk first, so
        readiness sees a file that became unreadable or was overwritten in place although pooled
        connections still hold its pages in their caches; then the pool is retired and every route
        answers 503."""
        self._follow_file()
        if not self.memory:
            try:
                header = self._read_header()
            except OSError as exc:
                self._retire()
                raise StoreUnavailable(self._unreadable(exc)) from None
            if header != SQLITE_HEADER:
                self._retire()
                raise StoreUnavailable(f"the database {self.name} cannot be used: file is not a database")
        return super().stats(groups=groups)

    def _read_header(self) -> bytes:
        """The file's first bytes, read from disk through the descriptor this process keeps open for
        the file (`_HeaderFile`: never a descriptor opened and closed for the read)."""
        if not os.access(self.path, os.R_OK):
            raise PermissionError(13, "Permission denied")
        with self._lock:
            header = self._header
            if header is None or header.identity != self._identity:
                self._header = _HeaderFile.hold(self.path)
                if header is not None:
                    header.release()
                header = self._header
        return header.read(len(SQLITE_HEADER))

    # writes: the FTS index and embeddings beside the chunk rows

    def _delete_rows(self, conn: _Connection, doc_id: str) -> None:
        # The document's chunks are found by doc_id alone (index chunks_doc) and told apart by audience
        # here: with `access = ''` beside doc_id the planner took the chunks_access index, whose ''
        # entry lists every public chunk, so each write read the whole table (issue 29).
        rows = conn.execute("SELECT id, access FROM chunks WHERE doc_id = ?", (doc_id,)).fetchall()
        public = [(pk,) for pk, access in rows if not access]
        restricted = [(pk,) for pk, access in rows if access]
        if restricted:
            self._forget_restricted_terms(conn, doc_id, rows[0][1])
        conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", public)
        conn.executemany("DELETE FROM restricted_fts WHERE rowid = ?", restricted)
        conn.execute(
            "DELETE FROM embeddings WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
        conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    @staticmethod
    def _forget_restricted_terms(conn: _Connection, doc_id: str, audience: str) -> None:
        """Take a restricted document's chunks out of its audience's term counts."""
        rows = conn.execute("SELECT terms, title, section FROM chunks WHERE doc_id = ?", (doc_id,)).fetchall()
        counts = _term_counts(rows)
        conn.executemany(
            "UPDATE restricted_terms SET df = df - ? WHERE term = ? AND access = ?",
            [(n, term, audience) for term, n in counts.items()],
        )
        conn.executemany(
            "DELETE FROM restricted_terms WHERE term = ? AND access = ? AND df <= 0",
            [(term, audience) for term in counts],
        )

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

        audience = audience_text(doc.access)
        chunk_rows = []
        fts_rows = []
        for ord_, chunk in enumerate(chunks):
            body_terms = " ".join(terms(chunk.text))
            title, section = joined(chunk.title), joined(chunk.section)
            length = fts_length(body_terms, chunk.title, chunk.section)
            chunk_rows.append((*chunk_row(ord_, chunk), body_terms, audience, length))
            fts_rows.append((body_terms, title, section, chunk.chunk_id))
        conn.executemany(
            f"INSERT INTO chunks ({CHUNK_ROW_COLUMNS}, terms, access, n_tokens)"
            f" VALUES ({', '.join('?' * 14)})",
            chunk_rows,
        )
        # documents everyone may read go into chunks_fts (whose statistics BM25 reads); the rest
        # into restricted_fts, searched only for callers who may read them
        table = "chunks_fts" if not audience else "restricted_fts"
        conn.executemany(
            f"INSERT INTO {table} (rowid, terms, title, section)"
            " SELECT id, ?, ?, ? FROM chunks WHERE chunk_id = ?",
            fts_rows,
        )
        if audience:
            counts = _term_counts(
                (row[-3], c.title, c.section) for row, c in zip(chunk_rows, chunks, strict=True)
            )
            conn.executemany(
                "INSERT INTO restricted_terms (term, access, df) VALUES (?, ?, ?)"
                " ON CONFLICT (term, access) DO UPDATE SET df = df + excluded.df",
                [(term, audience, n) for term, n in counts.items()],
            )
        if embeddings is not None:
            conn.executemany(
                "INSERT INTO embeddings (chunk_id, dim, vector) VALUES (?, ?, ?)",
                [
                    (chunk.chunk_id, len(vector), array("f", vector).tobytes())
                    for chunk, vector in zip(chunks, embeddings, strict=True)
                ],
            )

    def _put_embeddings(
        self, conn: _Connection, model: str, items: Sequence[tuple[str, Sequence[float]]]
    ) -> None:
        conn.executemany(
            "INSERT INTO embeddings (chunk_id, dim, vector, model) SELECT chunk_id, ?, ?, ? FROM chunks"
            " WHERE chunk_id = ? ON CONFLICT (chunk_id) DO UPDATE SET dim = excluded.dim,"
            " vector = excluded.vector, model = excluded.model",
            [(len(vector), array("f", vector).tobytes(), model, chunk_id) for chunk_id, vector in items],
        )

    # lexical index

    def search(
        self, query_terms: Sequence[str], limit: int, *, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        """Exhaustive BM25 over every query term (`rag.store.lexical`): FTS5's formula, statistics of
        the documents everyone may read, only chunks `groups` may read ranked at all."""
        phrases, limit = _phrases(query_terms), clamp_limit(limit)
        if not phrases or not limit:
            return []
        with self._connection() as conn:
            # one read transaction: the version and every array read under it describe one
            # committed state (on an error, giving the connection back rolls it back)
            conn.execute("BEGIN")
            snapshot = self._lexical_snapshot(conn)
            postings = [
                self._lexical.term(snapshot, phrase, partial(self._load_postings, conn, phrase))
                for phrase in phrases
            ]
            found = self._chunks_by_key(conn, snapshot, snapshot.top(postings, limit, groups))
            conn.execute("COMMIT")
        return by_score_then_id(found)[:limit]

    def _lexical_snapshot(self, conn: _Connection) -> Snapshot:
        """The lexical engine's arrays for the committed corpus `conn` reads (inside its transaction)."""
        (version,) = conn.execute(VERSION_SQL).fetchone()

        def load() -> list[tuple[int, int, str]]:
            return conn.execute("SELECT id, n_tokens, access FROM chunks").fetchall()

        return self._lexical.snapshot((int(version), self._generation), load)

    def _load_postings(self, conn: _Connection, phrase: tuple[str, ...]) -> tuple[list[int], list[float]]:
        """(chunk keys, column-weighted frequencies) of one query term over both FTS5 tables: a one-token
        term from FTS5's term instances, a multi-token one ("o'neil") by counting the phrase in the
        indexed columns of the rows FTS5 matches."""
        keys: list[int] = []
        tfs: list[float] = []
        for table in ("chunks_fts", "restricted_fts"):
            if len(phrase) == 1:
                if table not in conn.instances:
                    conn.execute(
                        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances"
                        f" USING fts5vocab(main, {table}, 'instance')"
                    )
                    conn.instances = conn.instances | {table}
                rows = conn.execute(_INSTANCES_SQL.format(table=table), phrase).fetchall()
                keys += [row[0] for row in rows]
                tfs += [float(row[1]) for row in rows]
                continue
            query = '"' + " ".join(phrase) + '"'
            for key, *columns in conn.execute(
                f"SELECT rowid, terms, title, section FROM {table} WHERE {table} MATCH ?", (query,)
            ):
                tf = sum(
                    w * _occurrences(fts_tokens(text), phrase)
                    for w, text in zip(BM25_WEIGHTS, columns, strict=True)
                )
                if tf:
                    keys.append(int(key))
                    tfs.append(float(tf))
        return keys, tfs

    def _chunks_by_key(
        self, conn: _Connection, snapshot: Snapshot, scored: Sequence[tuple[int, float]]
    ) -> list[tuple[Chunk, float]]:
        """The chunks of (chunk key, score) pairs, from the snapshot's chunk cache or read by key
        (inside the read transaction that read the snapshot's version)."""
        chunks = self._lexical.chunks(snapshot, [key for key, _ in scored], partial(self._load_chunks, conn))
        return [(chunks[key], score) for key, score in scored if key in chunks]

    @staticmethod
    def _load_chunks(conn: _Connection, keys: Sequence[int]) -> list[tuple[int, Chunk, bool]]:
        """(key, Chunk, plain) of each key: plain when all its terms are (the stored body terms, the
        title and the section; `LexicalCache.chunks`)."""
        out: list[tuple[int, Chunk, bool]] = []
        for i in range(0, len(keys), ID_BATCH):
            batch = keys[i : i + ID_BATCH]
            marks = ", ".join("?" * len(batch))
            sql = f"SELECT {chunk_columns()}, id, terms FROM chunks WHERE id IN ({marks})"
            for row in conn.execute(sql, batch):
                chunk = chunk_from_row(row)
                plain = plain_joined(row[11]) and plain_heading(chunk.title) and plain_heading(chunk.section)
                out.append((row[10], chunk, plain))
        return out

    def held_terms(self, chunks: Sequence[Chunk], query_terms: Sequence[str]) -> dict[str, frozenset[str]]:
        """From the postings of FTS5's index (`LexicalCache.held`): a plain term's postings list every
        chunk whose stored body terms, title or section terms hold it, the columns FTS5 indexes."""
        if not chunks or not query_terms:
            return {}
        with self._connection() as conn:
            conn.execute("BEGIN")
            snapshot = self._lexical_snapshot(conn)
            found = self._lexical.held(
                snapshot, chunks, query_terms, lambda term: partial(self._load_postings, conn, (term,))
            )
            conn.execute("COMMIT")
        return found

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

    def chunk_count(self, *, groups: Groups = None) -> int:
        key = "*" if groups is None else ",".join(sorted(groups))
        visible, params = visible_sql(groups, "access")
        with self._connection() as conn:
            self._df_cache(conn)
            counts = conn.chunk_counts
            if counts is None:
                counts = conn.chunk_counts = {}
            if key not in counts:
                counts[key] = int(
                    conn.execute(f"SELECT count(*) FROM chunks WHERE {visible}", params).fetchone()[0]
                )
            return counts[key]

    @staticmethod
    def _public_df(conn: _Connection, cache: dict[str, int], part: str) -> int:
        if part not in cache:
            row = conn.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (part,)).fetchone()
            cache[part] = int(row[0]) if row else 0
        return cache[part]

    def term_frequencies(self, query_terms: Sequence[str], *, groups: Groups = None) -> Mapping[str, int]:
        out: dict[str, int] = {}
        restricted = groups is None or bool(groups)
        key = "*" if groups is None else ",".join(sorted(groups))
        with self._connection() as conn:
            cache = self._df_cache(conn)
            visible, params = visible_sql(groups, "c.access")
            assert conn.restricted_df is not None
            sql = f"SELECT coalesce(sum(df), 0) FROM restricted_terms AS c WHERE term = ? AND {visible}"
            for term in dict.fromkeys(query_terms):
                counts = []
                for part in _FTS_TOKEN_RE.findall(term.lower()):
                    count = self._public_df(conn, cache, part)
                    if restricted:
                        if (key, part) not in conn.restricted_df:
                            row = conn.execute(sql, (part, *params)).fetchone()
                            conn.restricted_df[key, part] = int(row[0])
                        count += conn.restricted_df[key, part]
                    counts.append(count)
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
            conn.restricted_df, conn.chunk_counts = {}, {}
        elif conn.restricted_df is None or len(conn.restricted_df) > DF_CACHE_TERMS:
            conn.restricted_df = {}
        return conn.df


class _HeaderFile:
    """A descriptor of one database file for reading its header, one per file per process, closed
    only when no store of this process uses the file any more.

    Why not open, read and close: POSIX record locks belong to the process, and closing any
    descriptor of a file drops every lock the process holds on it, SQLite's included. A header read
    that way while requests were reading dropped the SHARED lock their connections held on the
    database; a `rag ingest` in another process closing its last connection then got the EXCLUSIVE
    lock, took itself for the file's last user, checkpointed, and deleted the WAL and its index under
    this process's open connections, whose next reads mixed the old WAL with the new file: "database
    disk image is malformed" (3 in 53,000 requests during a re-ingest, `integrity_check` ok after).
    SQLite's own descriptors are safe: it defers closing one while the process holds locks on the file.
    """

    _lock = threading.Lock()
    _open: dict[tuple[int, int], _HeaderFile] = {}

    def __init__(self, identity: tuple[int, int], fd: int) -> None:
        self.identity = identity
        self._fds = [fd]
        self._users = 1

    @classmethod
    def hold(cls, path: str) -> _HeaderFile:
        """The shared descriptor of the file at `path` (opened when no store holds one), held once more."""
        with cls._lock:
            st = os.stat(path)
            held = cls._open.get((st.st_dev, st.st_ino))
            if held is not None:
                held._users += 1
                return held
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            st = os.fstat(fd)
            identity = (st.st_dev, st.st_ino)
            held = cls._open.get(identity)
            if held is None:
                held = cls._open[identity] = cls(identity, fd)
            else:  # the path changed files in between: keep this descriptor open too, never close it early
                held._fds.append(fd)
                held._users += 1
            return held

    def read(self, size: int) -> bytes:
        return os.pread(self._fds[0], size, 0)

    def release(self) -> None:
        """One holder is done; the last one closes the descriptors (no SQLite lock of a store of this
        process is left on the file to drop, as its connections are closed first)."""
        with self._lock:
            self._users -= 1
            if self._users > 0:
                return
            self._open.pop(self.identity, None)
            fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)


_NOT_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _path_problem(path: Path, name: str) -> str:
    """Why `path` cannot hold a SQLite database, in the user's terms ("" when it may): a directory
    or a device where the file should be, a missing or read-only folder for a new file. Names the
    file (`name`), never its folder: the message may reach HTTP clients."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        folder = path.parent
        if not folder.is_dir():
            return f"the database {name} cannot be created: its folder does not exist"
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"the database {name} cannot be created: its folder is not writable by this process"
        return ""
    except OSError as exc:
        return f"the database path {name} cannot be read: {exc.strerror}"
    kind = next((what for test, what in _NOT_FILES if test(mode)), "")
    if kind:
        return f"the database path {name} is {kind}, not a database file: give the path of a file"
    return ""


class _LogDatabase(SqliteStore):
    """The log file of a `SqliteStore`: the same schema (so every migration applies to its tables),
    of which only `ask_log` and `gaps` are used."""

    def _log_target(self) -> SqlStore[Any]:
        return self
