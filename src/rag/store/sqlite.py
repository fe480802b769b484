"""The store: documents, chunks, lexical index, embeddings, ask log and coverage-gap queue.

`Store` is the interface every backend implements (SQLite here, PostgreSQL in
`store_pg.py`). Nothing outside a store module writes SQL. The lexical index is built
over the *stemmed content terms* of `rag.text.terms`, so every backend matches the
same words the reranker scores.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Protocol

from rag.config import Settings
from rag.errors import ConfigError, NotFound
from rag.serialize import dumps
from rag.store.migrations_sqlite import migrate
from rag.text import normalise, terms
from rag.types import AskRecord, Chunk, Document, Gap, StoreStats


class Store(Protocol):
    backend: str

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, source_path) for every stored document."""
        ...

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Insert or replace one document and all its chunks in one transaction."""
        ...

    def delete_document(self, doc_id: str) -> None: ...

    def get_document(self, doc_id: str) -> Document:
        """Raises NotFound for an unknown id."""
        ...

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        """The document's chunks in order; raises NotFound for an unknown id."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Raises NotFound for an unknown id."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Known chunks among `chunk_ids`, in the given order; unknown ids are skipped."""
        ...

    def search(self, query_terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """BM25 over stemmed terms (any term may match); higher score is better; never raises on odd input."""
        ...

    def term_frequencies(self, query_terms: Sequence[str]) -> Mapping[str, int]:
        """Number of chunks containing each term (document frequency for IDF)."""
        ...

    def similar(self, vector: Sequence[float], limit: int) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity; empty when no embeddings are stored."""
        ...

    def stats(self) -> StoreStats: ...

    def log_ask(self, record: AskRecord) -> None: ...

    def add_gap(self, question: str, top_score: float, closest: Sequence[str]) -> None: ...

    def gaps(self, limit: int = 50) -> list[Gap]: ...

    def close(self) -> None: ...


# --- SQLite -----------------------------------------------------------------------------------------

# bm25() column weights for (terms, title, section). The section path is the most specific
# description of a chunk's topic, so a question word in it counts double; the title is shared by
# every chunk of its document, so it helps pick the document but not the chunk (1.5); body text
# carries most occurrences and stays the baseline (1.0).
BM25_WEIGHTS = (1.0, 1.5, 2.0)
MAX_QUERY_TERMS = 64
BUSY_TIMEOUT_SECONDS = 10.0
DF_CACHE_TERMS = 50_000

_FTS_TOKEN_RE = re.compile(r"[^\W_]+")
_CHUNK_COLUMNS = "chunk_id, doc_id, title, section, text, updated_at, url, page, start_char, end_char"
_SEARCH_SQL = f"""
    SELECT {", ".join("c." + col.strip() for col in _CHUNK_COLUMNS.split(","))}, s.score
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


def open_store(settings: Settings) -> Store:
    """The configured store: PostgreSQL when `settings.database_url` is set, else SQLite at `settings.db`."""
    if settings.database_url:
        try:
            module = importlib.import_module("rag.store.postgres")
        except ImportError as exc:
            raise ConfigError(
                f"RAG_DATABASE_URL is set but the PostgreSQL store is unavailable: {exc}"
            ) from None
        store: Store = module.PgStore(settings.database_url)
        return store
    if settings.db != ":memory:":
        Path(settings.db).parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(settings.db)


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None


def _date(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """A Chunk from a row (chunk_id, doc_id, title, section, text, updated_at, url, page, start, end);
    `updated_at` may be an ISO string (SQLite) or a date (PostgreSQL)."""
    updated = row[5]
    return Chunk(
        chunk_id=row[0],
        doc_id=row[1],
        title=row[2],
        section=row[3],
        text=row[4],
        updated_at=_date(updated) if isinstance(updated, str) or updated is None else updated,
        url=row[6],
        page=row[7],
        start_char=row[8],
        end_char=row[9],
    )


def top_cosine(
    matrix: Any, ids: Sequence[str], vector: Sequence[float], limit: int
) -> list[tuple[str, float]]:
    """The `limit` ids whose unit-normalised rows of `matrix` are most similar to `vector`, best first
    (ties by id); empty for a zero vector."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0.0 or not len(ids):
        return []
    sims = matrix @ (query / norm)
    k = min(limit, len(ids))
    top = np.argpartition(-sims, k - 1)[:k]
    order = sorted(top.tolist(), key=lambda i: (-float(sims[i]), ids[i]))
    return [(ids[i], float(sims[i])) for i in order]


def chunks_by_score(store: Store, ranked: Sequence[tuple[str, float]]) -> list[tuple[Chunk, float]]:
    """(chunk, score) for ranked chunk ids that still exist, in the given order."""
    chunks = {c.chunk_id: c for c in store.get_chunks([cid for cid, _ in ranked])}
    return [(chunks[cid], score) for cid, score in ranked if cid in chunks]


class SqliteStore:
    """The embedded store: one SQLite file in WAL mode, one connection per thread.

    Readers never wait for a writer (WAL); writers take the lock with BEGIN IMMEDIATE and wait
    up to `busy_timeout` seconds for each other. Every method returns dataclasses.
    A ":memory:" path works for single-threaded use only (each thread would see its own database).
    """

    backend = "sqlite"

    def __init__(self, path: str, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        self._generation = 0
        self._vectors_key: tuple[object, ...] | None = None
        self._vectors: tuple[Any, list[str]] | None = None
        conn = self._conn()
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn)

    # connections and transactions

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise sqlite3.ProgrammingError("store is closed")
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        with self._lock:
            self._connections.append(conn)
        self._local.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        with self._lock:
            self._generation += 1

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    # documents and chunks

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        rows = self._conn().execute("SELECT doc_id, content_hash, source_path FROM documents").fetchall()
        return {doc_id: (content_hash, source) for doc_id, content_hash, source in rows}

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        if embeddings is not None and len(embeddings) != len(chunks):
            raise ValueError(f"{len(embeddings)} embeddings for {len(chunks)} chunks of {doc.doc_id!r}")
        if any(chunk.doc_id != doc.doc_id for chunk in chunks):
            raise ValueError(f"a chunk does not belong to document {doc.doc_id!r}")
        field_terms: dict[str, str] = {}

        def joined(text: str) -> str:
            if text not in field_terms:
                field_terms[text] = " ".join(terms(text))
            return field_terms[text]

        chunk_rows = []
        fts_rows = []
        for ord_, chunk in enumerate(chunks):
            body_terms = " ".join(terms(chunk.text))
            chunk_rows.append(
                (
                    chunk.chunk_id,
                    doc.doc_id,
                    ord_,
                    chunk.title,
                    chunk.section,
                    chunk.text,
                    chunk.start_char,
                    chunk.end_char,
                    chunk.page,
                    _iso(chunk.updated_at),
                    chunk.url,
                    body_terms,
                )
            )
            fts_rows.append((body_terms, joined(chunk.title), joined(chunk.section), chunk.chunk_id))
        with self._write() as conn:
            self._delete(conn, doc.doc_id)
            conn.execute(
                "INSERT INTO documents (doc_id, title, url, updated_at, source_path, content_hash, text,"
                " ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.doc_id,
                    doc.title,
                    doc.url,
                    _iso(doc.updated_at),
                    doc.source_path,
                    doc.content_hash,
                    doc.text,
                    _now(),
                ),
            )
            conn.executemany(
                "INSERT INTO chunks (chunk_id, doc_id, ord, title, section, text, start_char, end_char, page,"
                " updated_at, url, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                chunk_rows,
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

    def delete_document(self, doc_id: str) -> None:
        with self._write() as conn:
            self._delete(conn, doc_id)

    @staticmethod
    def _delete(conn: sqlite3.Connection, doc_id: str) -> None:
        conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)", (doc_id,)
        )
        conn.execute(
            "DELETE FROM embeddings WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
        conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def get_document(self, doc_id: str) -> Document:
        row = (
            self._conn()
            .execute(
                "SELECT doc_id, title, text, source_path, url, updated_at, content_hash FROM documents"
                " WHERE doc_id = ?",
                (doc_id,),
            )
            .fetchone()
        )
        if row is None:
            raise NotFound(f"unknown document {doc_id!r}")
        return Document(
            doc_id=row[0],
            title=row[1],
            text=row[2],
            source_path=row[3],
            url=row[4],
            updated_at=_date(row[5]),
            content_hash=row[6],
        )

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        conn = self._conn()
        rows = conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE doc_id = ? ORDER BY ord", (doc_id,)
        ).fetchall()
        if (
            not rows
            and conn.execute("SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)).fetchone() is None
        ):
            raise NotFound(f"unknown document {doc_id!r}")
        return [chunk_from_row(row) for row in rows]

    def get_chunk(self, chunk_id: str) -> Chunk:
        row = (
            self._conn()
            .execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE chunk_id = ?", (chunk_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(f"unknown chunk {chunk_id!r}")
        return chunk_from_row(row)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        found: dict[str, Chunk] = {}
        conn = self._conn()
        unique = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(unique), 500):
            batch = unique[i : i + 500]
            marks = ", ".join("?" * len(batch))
            for row in conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE chunk_id IN ({marks})", batch
            ):
                found[row[0]] = chunk_from_row(row)
        return [found[cid] for cid in chunk_ids if cid in found]

    # lexical index

    def search(self, query_terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        query = fts_query(query_terms)
        if not query or limit <= 0:
            return []
        try:
            rows = self._conn().execute(_SEARCH_SQL, (query, limit)).fetchall()
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc).lower() and "syntax" not in str(exc).lower():
                raise
            logger.warning("FTS query %r rejected: %s", query, exc)
            return []
        return [(chunk_from_row(row), float(row[10])) for row in rows]

    def term_frequencies(self, query_terms: Sequence[str]) -> Mapping[str, int]:
        conn = self._conn()
        cache = self._df_cache(conn)
        out: dict[str, int] = {}
        for term in dict.fromkeys(query_terms):
            parts = _FTS_TOKEN_RE.findall(term.lower())
            counts = []
            for part in parts:
                if part not in cache:
                    row = conn.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (part,)).fetchone()
                    cache[part] = int(row[0]) if row else 0
                counts.append(cache[part])
            # a term the tokenizer splits ("o'neil") occurs at most as often as its rarest part
            out[term] = min(counts) if counts else 0
        return out

    def _df_cache(self, conn: sqlite3.Connection) -> dict[str, int]:
        """This thread's term -> df cache, emptied whenever anyone committed since it was filled.

        fts5vocab counts a term by walking its whole posting list, so a common term costs
        milliseconds; the common terms are also the ones every question repeats.
        """
        version = (conn.execute("PRAGMA data_version").fetchone()[0], self._generation)
        cache: dict[str, int] | None = getattr(self._local, "df", None)
        if cache is None or self._local.df_version != version or len(cache) > DF_CACHE_TERMS:
            cache = {}
            self._local.df, self._local.df_version = cache, version
        return cache

    # embeddings

    def similar(self, vector: Sequence[float], limit: int) -> list[tuple[Chunk, float]]:
        if limit <= 0 or not len(vector):
            return []
        loaded = self._load_vectors(len(vector))
        if loaded is None:
            return []
        return chunks_by_score(self, top_cosine(*loaded, vector, limit))

    def _load_vectors(self, dim: int) -> tuple[Any, list[str]] | None:
        """Unit-normalised float32 matrix of every stored vector of `dim`, cached until the table changes."""
        import numpy as np

        conn = self._conn()
        count, last = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM embeddings").fetchone()
        key = (count, last, self._generation, dim)
        with self._lock:
            if self._vectors_key == key:
                return self._vectors
        ids: list[str] = []
        blobs: list[bytes] = []
        for chunk_id, blob in conn.execute(
            "SELECT chunk_id, vector FROM embeddings WHERE dim = ? ORDER BY chunk_id", (dim,)
        ):
            ids.append(chunk_id)
            blobs.append(blob)
        loaded: tuple[Any, list[str]] | None = None
        if ids:
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dim)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            loaded = (matrix / norms, ids)
        with self._lock:
            self._vectors_key, self._vectors = key, loaded
        return loaded

    # bookkeeping

    def stats(self) -> StoreStats:
        conn = self._conn()
        documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        embeddings = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        return StoreStats(documents=documents, chunks=chunks, embeddings=embeddings, backend=self.backend)

    def log_ask(self, record: AskRecord) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO ask_log (trace_id, ts, question, reason, abstained, blocks, answer, citations,"
                " verdicts, top_score, usage, timings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.trace_id,
                    _now(),
                    record.question,
                    record.reason,
                    int(record.abstained),
                    dumps([list(b) for b in record.blocks]).decode(),
                    record.answer_text,
                    dumps(record.citations).decode(),
                    dumps(record.verdicts).decode(),
                    record.top_score,
                    dumps(record.usage).decode(),
                    dumps(record.timings).decode(),
                ),
            )

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]:
        """Raw ask-log rows for one trace id (JSON columns decoded), oldest first; for audits and tests."""
        cursor = self._conn().execute("SELECT * FROM ask_log WHERE trace_id = ? ORDER BY rowid", (trace_id,))
        names = [d[0] for d in cursor.description]
        out = []
        for row in cursor.fetchall():
            item = dict(zip(names, row, strict=True))
            for key in ("blocks", "citations", "verdicts", "usage", "timings"):
                item[key] = json.loads(item[key])
            item["abstained"] = bool(item["abstained"])
            out.append(item)
        return out

    def add_gap(self, question: str, top_score: float, closest: Sequence[str]) -> None:
        now = _now()
        key = normalise(question) or question.strip()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO gaps (normalised, question, top_score, closest, count, first_asked, last_asked)"
                " VALUES (?, ?, ?, ?, 1, ?, ?)"
                " ON CONFLICT(normalised) DO UPDATE SET count = count + 1, question = excluded.question,"
                " top_score = excluded.top_score, closest = excluded.closest,"
                " last_asked = excluded.last_asked",
                (key, question, top_score, json.dumps(list(closest)), now, now),
            )

    def gaps(self, limit: int = 50) -> list[Gap]:
        rows = self._conn().execute(
            "SELECT question, top_score, closest, last_asked, count FROM gaps"
            " ORDER BY count DESC, last_asked DESC, normalised LIMIT ?",
            (limit,),
        )
        return [
            Gap(question=q, top_score=s, closest=tuple(json.loads(c)), asked_at=at, count=n)
            for q, s, c, at, n in rows
        ]
