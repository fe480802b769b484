"""What every store backend shares, so SQLite and PostgreSQL cannot drift apart.

- `StoreReader` (what the HTTP routes read) and `Store` (everything), the interfaces;
- `SqlStore`, the base class that implements every method whose SQL both engines speak the
  same way (documents, chunk lookups, stats, the ask log, the gap queue, cosine over a cached
  matrix), on top of four primitives a backend provides: `_connection`, `_transaction`,
  `_exec` and `_executemany`;
- row conversion, argument validation, limits, and chunk-id versions (an id never names
  other text than it named when it was issued);
- `open_store`, which picks the backend from the settings.

Shared SQL uses `?` placeholders and only syntax both engines accept; the PostgreSQL backend
rewrites the placeholders. Backend-specific SQL (the lexical index, pgvector) stays in the
backend modules. Every store fault (missing, replaced, unreadable or corrupt database, lost
server) surfaces as `StoreUnavailable`; an unknown id as `NotFound`; a retired id as `Gone`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from rag.config import Settings
from rag.errors import ConfigError, Gone, NotFound
from rag.serialize import dumps
from rag.store.asklog import AskRow, GapRow, LogRow, LogWriter, flush_pending
from rag.text import normalise
from rag.types import AskRecord, Chunk, Document, Gap, StoreStats

# bm25() column weights for (body terms, title, section). The section path is the most specific
# description of a chunk's topic, so a question word in it counts double; the title is shared by
# every chunk of its document, so it helps pick the document but not the chunk (1.5); body text
# carries most occurrences and stays the baseline (1.0). Both backends score with these.
BM25_WEIGHTS = (1.0, 1.5, 2.0)
# Query terms kept per search (the rest are ignored); both backends cut at the same count.
MAX_QUERY_TERMS = 64
# The most rows `search`, `similar` and `gaps` return, whatever limit is asked for.
MAX_LIMIT = 1000
# Ids per `IN (...)` list when fetching chunks by id (SQLite's default variable limit is 32766).
ID_BATCH = 500
# A retired version of a chunk id: "{id issued by the chunker}.v{N}", N >= 2.
VERSION_MARK = ".v"

CHUNK_COLUMNS = (
    "chunk_id",
    "doc_id",
    "title",
    "section",
    "text",
    "updated_at",
    "url",
    "page",
    "start_char",
    "end_char",
)
DOCUMENT_COLUMNS = "doc_id, title, text, source_path, url, updated_at, content_hash"
ASK_LOG_COLUMNS = (
    "trace_id, ts, question, reason, abstained, blocks, answer, citations, verdicts, top_score,"
    " usage, timings"
)
_ASK_LOG_JSON = ("blocks", "citations", "verdicts", "usage", "timings")
_VERSION_RE = re.compile(re.escape(VERSION_MARK) + r"([0-9]+)\Z")


class StoreReader(Protocol):
    """The read side the HTTP routes use: one chunk, one document, and readiness."""

    backend: str

    def get_document(self, doc_id: str) -> Document:
        """Raises NotFound for an unknown id."""
        ...

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        """The document's chunks in order; raises NotFound for an unknown id."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Raises NotFound for an unknown id, Gone for an id whose text was replaced or removed."""
        ...

    def stats(self) -> StoreStats:
        """Counts read from the store now (a real query); raises StoreUnavailable when it cannot answer."""
        ...


class Store(StoreReader, Protocol):
    """The whole store: every backend implements it, and the suite in tests/test_store_backends.py
    holds both to the same behaviour."""

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, source_path) for every stored document."""
        ...

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Insert or replace one document and all its chunks in one transaction.

        A chunk whose text differs from what its id named before is stored under a new version
        of the id (`versioned_chunks`); read the stored ids back with `document_chunks`.
        """
        ...

    def delete_document(self, doc_id: str) -> None:
        """Remove a document and its chunks; its chunk ids answer Gone from then on. Unknown ids are fine."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Known chunks among `chunk_ids`, in the given order; unknown and retired ids are skipped."""
        ...

    def search(self, query_terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """BM25 over stemmed terms (any term may match), best first; never raises on odd input.

        At most `limit` (capped at MAX_LIMIT) results; none for a limit <= 0.
        """
        ...

    def term_frequencies(self, query_terms: Sequence[str]) -> Mapping[str, int]:
        """Number of chunks containing each term (document frequency for IDF)."""
        ...

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The stemmed body terms kept at ingest for each id (equal to `frozenset(terms(chunk.text))`);
        ids the backend does not keep them for are left out (the caller computes those)."""
        ...

    def similar(self, vector: Sequence[float], limit: int) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity, best first; empty when no embedding has this dimension."""
        ...

    def log_ask(self, record: AskRecord) -> None: ...

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]:
        """Ask-log rows for one trace id, oldest first, JSON columns decoded and `ts` as ISO text."""
        ...

    def add_gap(self, question: str, top_score: float, closest: Sequence[str]) -> None: ...

    def gaps(self, limit: int = 50) -> list[Gap]:
        """The coverage-gap queue, most asked first; at most `limit` (capped), none for a limit <= 0."""
        ...

    def close(self) -> None: ...


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


# --- values in and out -------------------------------------------------------------------------------


def clamp_limit(limit: int) -> int:
    """A row limit in 0..MAX_LIMIT (negative means none)."""
    return max(0, min(int(limit), MAX_LIMIT))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def iso_date(value: date | None) -> str | None:
    return value.isoformat() if value else None


def as_date(value: date | str | None) -> date | None:
    """A date from SQLite's ISO text or PostgreSQL's date."""
    if isinstance(value, str):
        return date.fromisoformat(value) if value else None
    return value


def as_iso(value: datetime | str) -> str:
    """A timestamp as ISO text in UTC, from SQLite's text or PostgreSQL's timestamptz."""
    return value if isinstance(value, str) else value.astimezone(UTC).isoformat(timespec="seconds")


def as_json(value: Any) -> Any:
    """A JSON column's value, from SQLite's text or PostgreSQL's decoded jsonb."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def json_text(value: object) -> str:
    return dumps(value).decode()


def chunk_columns(alias: str = "") -> str:
    """The chunk columns `chunk_from_row` reads, optionally qualified by a table alias."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + column for column in CHUNK_COLUMNS)


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """A Chunk from the first ten columns of a row in `CHUNK_COLUMNS` order."""
    return Chunk(
        chunk_id=row[0],
        doc_id=row[1],
        title=row[2],
        section=row[3],
        text=row[4],
        updated_at=as_date(row[5]),
        url=row[6],
        page=row[7],
        start_char=row[8],
        end_char=row[9],
    )


CHUNK_ROW_COLUMNS = "chunk_id, doc_id, ord, title, section, text, start_char, end_char, page, updated_at, url"


def chunk_row(ord_: int, chunk: Chunk) -> tuple[Any, ...]:
    """The values of `CHUNK_ROW_COLUMNS` for the chunk at position `ord_` of its document."""
    return (
        chunk.chunk_id,
        chunk.doc_id,
        ord_,
        chunk.title,
        chunk.section,
        chunk.text,
        chunk.start_char,
        chunk.end_char,
        chunk.page,
        iso_date(chunk.updated_at),
        chunk.url,
    )


def document_from_row(row: Sequence[Any]) -> Document:
    """A Document from a row in `DOCUMENT_COLUMNS` order."""
    return Document(
        doc_id=row[0],
        title=row[1],
        text=row[2],
        source_path=row[3],
        url=row[4],
        updated_at=as_date(row[5]),
        content_hash=row[6],
    )


def check_upsert(
    doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None
) -> None:
    """Raise ValueError unless every chunk belongs to `doc` and embeddings, when given, are one
    non-empty vector of one dimension per chunk."""
    if any(chunk.doc_id != doc.doc_id for chunk in chunks):
        raise ValueError(f"a chunk does not belong to document {doc.doc_id!r}")
    if embeddings is None:
        return
    if len(embeddings) != len(chunks):
        raise ValueError(f"{len(embeddings)} embeddings for {len(chunks)} chunks of {doc.doc_id!r}")
    dims = {len(vector) for vector in embeddings}
    if len(dims) > 1 or 0 in dims:
        raise ValueError(
            f"embeddings of {doc.doc_id!r} must share one non-zero dimension, got {sorted(dims)}"
        )


# --- chunk-id versions -----------------------------------------------------------------------------


def text_hash(text: str) -> str:
    """A stable fingerprint of a chunk's text (sha256, 16 hex digits; PostgreSQL computes the same)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def base_id(chunk_id: str) -> str:
    """The chunker's id behind a versioned id (`doc#c03.v2` -> `doc#c03`)."""
    match = _VERSION_RE.search(chunk_id)
    return chunk_id[: match.start()] if match else chunk_id


def versioned_chunks(chunks: Sequence[Chunk], issued: Mapping[str, str]) -> list[Chunk]:
    """`chunks` with ids that never name other text than they did before.

    `issued` maps every id ever stored for the document to the hash of its text. A chunk keeps
    the chunker's id when that id is new or named this very text; otherwise it takes the
    version of the id that named this text, or the next unused version (`doc#c03.v2`, `.v3`...).
    """
    versions: dict[str, dict[str, str]] = defaultdict(dict)  # base id -> text hash -> id
    highest: dict[str, int] = defaultdict(int)
    for chunk_id, digest in issued.items():
        base = base_id(chunk_id)
        versions[base].setdefault(digest, chunk_id)
        match = _VERSION_RE.search(chunk_id)
        highest[base] = max(highest[base], int(match.group(1)) if match else 1)
    out = []
    for chunk in chunks:
        base = chunk.chunk_id
        known = versions.get(base)
        if not known:
            out.append(chunk)
            continue
        same_text = known.get(text_hash(chunk.text))
        if same_text is None:
            highest[base] += 1
            same_text = f"{base}{VERSION_MARK}{highest[base]}"
        out.append(chunk if same_text == base else replace(chunk, chunk_id=same_text))
    return out


# --- embeddings --------------------------------------------------------------------------------------


def unit_matrix(vectors: Sequence[Any], dim: int) -> Any:
    """Row-normalised float32 matrix of `vectors` (bytes of float32, or sequences of floats)."""
    import numpy as np

    if vectors and isinstance(vectors[0], bytes | memoryview):
        matrix = np.frombuffer(b"".join(bytes(v) for v in vectors), dtype=np.float32)
    else:
        matrix = np.asarray(vectors, dtype=np.float32)
    matrix = matrix.reshape(len(vectors), dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def top_cosine(
    matrix: Any, ids: Sequence[str], vector: Sequence[float], limit: int
) -> list[tuple[str, float]]:
    """The `limit` ids whose unit-normalised rows of `matrix` are most similar to `vector`, best first
    (ties by id); empty for a zero vector."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0.0 or not len(ids) or limit <= 0:
        return []
    sims = matrix @ (query / norm)
    k = min(limit, len(ids))
    top = np.argpartition(-sims, k - 1)[:k]
    order = sorted(top.tolist(), key=lambda i: (-float(sims[i]), ids[i]))
    return [(ids[i], float(sims[i])) for i in order]


# --- the shared implementation ---------------------------------------------------------------------


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


C = TypeVar("C")


class SqlStore(Generic[C]):
    """Every `Store` method whose SQL is the same on both engines, over a backend's connections.

    A backend provides `_connection()` (a connection for reads), `_transaction(doc_id)` (a
    connection inside one write transaction; `doc_id` names the document written, if any),
    `_exec`/`_executemany` (run `?`-placeholder SQL), and the index-specific parts:
    `search`, `term_frequencies`, `_delete_rows` and `_insert_chunks`.
    """

    backend: str
    # The column that orders rows by insertion in `embeddings` and `ask_log`.
    _ROW_ORDER: ClassVar[str]

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Bumped after every committed change to documents; caches keyed on it see every local write.
        self._generation = 0
        self._vectors_key: tuple[object, ...] | None = None
        self._vectors: tuple[Any, list[str]] | None = None
        self._asklog: LogWriter | None = None

    # primitives a backend provides

    def _connection(self) -> AbstractContextManager[C]:
        raise NotImplementedError

    def _transaction(self, doc_id: str | None) -> AbstractContextManager[C]:
        raise NotImplementedError

    def _exec(self, conn: C, sql: str, params: Sequence[Any] = ()) -> Cursor:
        raise NotImplementedError

    def _executemany(self, conn: C, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _delete_rows(self, conn: C, doc_id: str) -> None:
        """Delete one document with its chunks, index entries and embeddings (not its issued ids)."""
        raise NotImplementedError

    def _insert_chunks(
        self, conn: C, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None
    ) -> None:
        """Insert the chunks (ids already versioned), their index entries and embeddings."""
        raise NotImplementedError

    def _after_upsert(self, embeddings: Sequence[Sequence[float]] | None) -> None:
        """Work after a committed upsert (outside the transaction); nothing by default."""

    def close(self) -> None:
        raise NotImplementedError

    # helpers

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._connection() as conn:
            return self._exec(conn, sql, params).fetchall()

    @contextmanager
    def _write(self, doc_id: str | None = None) -> Iterator[C]:
        with self._transaction(doc_id) as conn:
            yield conn
        if doc_id is not None:
            with self._lock:
                self._generation += 1

    # documents and chunks

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        rows = self._read("SELECT doc_id, content_hash, source_path FROM documents")
        return {doc_id: (content_hash, source) for doc_id, content_hash, source in rows}

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        check_upsert(doc, chunks, embeddings)
        with self._write(doc.doc_id) as conn:
            issued = dict(
                self._exec(
                    conn, "SELECT chunk_id, text_hash FROM chunk_ids WHERE doc_id = ?", (doc.doc_id,)
                ).fetchall()
            )
            stored = versioned_chunks(chunks, issued)
            before = self._doc_counts(conn, doc.doc_id)
            self._delete_rows(conn, doc.doc_id)
            self._exec(
                conn,
                "INSERT INTO documents (doc_id, title, url, updated_at, source_path, content_hash, text,"
                " ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.doc_id,
                    doc.title,
                    doc.url,
                    iso_date(doc.updated_at),
                    doc.source_path,
                    doc.content_hash,
                    doc.text,
                    now_iso(),
                ),
            )
            self._executemany(
                conn,
                "INSERT INTO chunk_ids (chunk_id, doc_id, text_hash) VALUES (?, ?, ?)",
                [(c.chunk_id, doc.doc_id, text_hash(c.text)) for c in stored if c.chunk_id not in issued],
            )
            self._insert_chunks(conn, doc, stored, embeddings)
            self._count_delta(conn, before, self._doc_counts(conn, doc.doc_id))
        self._after_upsert(embeddings)

    def delete_document(self, doc_id: str) -> None:
        with self._write(doc_id) as conn:
            before = self._doc_counts(conn, doc_id)
            self._delete_rows(conn, doc_id)
            self._count_delta(conn, before, (0, 0, 0, 0))

    # corpus counts: kept in each write transaction, so requests read one row instead of counting

    def _doc_counts(self, conn: C, doc_id: str) -> tuple[int, int, int, int]:
        """(documents, chunks, embeddings, tokens) stored now for one document (index lookups by doc_id).

        `tokens` is 0 unless the backend keeps chunk lengths for BM25 (PostgreSQL does).
        """
        row = self._exec(
            conn,
            "SELECT (SELECT count(*) FROM documents WHERE doc_id = ?), (SELECT count(*) FROM chunks"
            " WHERE doc_id = ?), (SELECT count(*) FROM embeddings WHERE chunk_id IN"
            " (SELECT chunk_id FROM chunks WHERE doc_id = ?))",
            (doc_id, doc_id, doc_id),
        ).fetchone()
        return int(row[0]), int(row[1]), int(row[2]), 0

    def _count_delta(
        self, conn: C, before: tuple[int, int, int, int], after: tuple[int, int, int, int]
    ) -> None:
        """Apply one document's change to `corpus_counts` (last statement of the transaction, so the
        row lock that serialises concurrent PostgreSQL writers is held as briefly as possible)."""
        delta = [a - b for a, b in zip(after, before, strict=True)]
        self._exec(
            conn,
            "UPDATE corpus_counts SET documents = documents + ?, chunks = chunks + ?,"
            " embeddings = embeddings + ?, tokens = tokens + ?, version = version + 1 WHERE id = 1",
            delta,
        )

    def get_document(self, doc_id: str) -> Document:
        rows = self._read(f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE doc_id = ?", (doc_id,))
        if not rows:
            raise NotFound(f"unknown document {doc_id!r}")
        return document_from_row(rows[0])

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        # One statement, so the document and its chunks come from one snapshot.
        rows = self._read(
            f"SELECT {chunk_columns('c')} FROM documents AS d LEFT JOIN chunks AS c ON c.doc_id = d.doc_id"
            " WHERE d.doc_id = ? ORDER BY c.ord",
            (doc_id,),
        )
        if not rows:
            raise NotFound(f"unknown document {doc_id!r}")
        return [chunk_from_row(row) for row in rows if row[0] is not None]

    def get_chunk(self, chunk_id: str) -> Chunk:
        with self._connection() as conn:
            row = self._exec(
                conn, f"SELECT {chunk_columns()} FROM chunks WHERE chunk_id = ?", (chunk_id,)
            ).fetchone()
            retired = None
            if row is None:
                retired = self._exec(
                    conn, "SELECT doc_id FROM chunk_ids WHERE chunk_id = ?", (chunk_id,)
                ).fetchone()
        if row is not None:
            return chunk_from_row(row)
        if retired is not None:
            raise Gone(
                f"chunk {chunk_id!r} was retired: document {retired[0]!r} changed or was removed after this"
                " id was issued, and an id never names other text"
            )
        raise NotFound(f"unknown chunk {chunk_id!r}")

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        unique = list(dict.fromkeys(chunk_ids))
        found: dict[str, Chunk] = {}
        if unique:
            with self._connection() as conn:
                for i in range(0, len(unique), ID_BATCH):
                    batch = unique[i : i + ID_BATCH]
                    marks = ", ".join("?" * len(batch))
                    sql = f"SELECT {chunk_columns()} FROM chunks WHERE chunk_id IN ({marks})"
                    for row in self._exec(conn, sql, batch).fetchall():
                        found[row[0]] = chunk_from_row(row)
        return [found[cid] for cid in chunk_ids if cid in found]

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        return {}

    # embeddings

    def similar(self, vector: Sequence[float], limit: int) -> list[tuple[Chunk, float]]:
        limit = clamp_limit(limit)
        if not limit or not len(vector):
            return []
        loaded = self._load_vectors(len(vector))
        if loaded is None:
            return []
        ranked = top_cosine(*loaded, vector, limit)
        chunks = {c.chunk_id: c for c in self.get_chunks([cid for cid, _ in ranked])}
        return [(chunks[cid], score) for cid, score in ranked if cid in chunks]

    def _load_vectors(self, dim: int) -> tuple[Any, list[str]] | None:
        """Unit-normalised matrix of every stored vector of `dim` and its chunk ids, cached until
        the table changes."""
        with self._connection() as conn:
            # the corpus version moves with every committed ingest, here or in another process
            (version,) = self._exec(conn, "SELECT version FROM corpus_counts WHERE id = 1").fetchone()
            key = (version, self._generation, dim)
            with self._lock:
                if self._vectors_key == key:
                    return self._vectors
            rows = self._exec(
                conn, "SELECT chunk_id, vector FROM embeddings WHERE dim = ? ORDER BY chunk_id", (dim,)
            ).fetchall()
        loaded = (unit_matrix([r[1] for r in rows], dim), [r[0] for r in rows]) if rows else None
        with self._lock:
            self._vectors_key, self._vectors = key, loaded
        return loaded

    # bookkeeping

    def stats(self) -> StoreStats:
        # one row kept by the ingest transactions: constant time whatever the corpus size
        ((documents, chunks, embeddings),) = self._read(
            "SELECT documents, chunks, embeddings FROM corpus_counts WHERE id = 1"
        )
        return StoreStats(documents=documents, chunks=chunks, embeddings=embeddings, backend=self.backend)

    # the ask log and the gap queue: queued by requests, written in batches by a background thread
    # (rag.store.asklog) into `_log_target()`, which holds the `ask_log` and `gaps` tables

    def log_ask(self, record: AskRecord) -> None:
        self._log_writer().submit(AskRow(record=record, ts=now_iso()))

    def _log_target(self) -> SqlStore[Any]:
        """The store whose `ask_log` and `gaps` tables hold the log (this one unless a backend moves it)."""
        return self

    def _log_writer(self) -> LogWriter:
        writer = self._asklog
        if writer is not None:
            return writer
        target = self._log_target()  # outside the lock: a backend may open its log database here
        with self._lock:
            if self._asklog is None:
                self._asklog = LogWriter(target._write_log, name=f"rag-log-{self.backend}")
            return self._asklog

    def _close_log(self) -> None:
        """Write every queued log row (the backend's `close()` calls this first)."""
        with self._lock:
            writer = self._asklog
        if writer is not None:
            writer.close()

    def _write_log(self, rows: Sequence[LogRow]) -> None:
        """Write a batch of log rows in one transaction."""
        with self._write() as conn:
            for row in rows:
                if isinstance(row, AskRow):
                    self._insert_ask(conn, row.record, row.ts)
                else:
                    self._insert_gap(conn, row.question, row.top_score, row.closest, row.ts)

    def _insert_ask(self, conn: C, record: AskRecord, ts: str) -> None:
        self._exec(
            conn,
            f"INSERT INTO ask_log ({ASK_LOG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.trace_id,
                ts,
                record.question,
                record.reason,
                record.abstained,
                json_text([list(b) for b in record.blocks]),
                record.answer_text,
                json_text(record.citations),
                json_text(record.verdicts),
                record.top_score,
                json_text(record.usage),
                json_text(record.timings),
            ),
        )

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]:
        flush_pending()
        rows = self._log_target()._read(
            f"SELECT {ASK_LOG_COLUMNS} FROM ask_log WHERE trace_id = ? ORDER BY {self._ROW_ORDER}",
            (trace_id,),
        )
        names = [name.strip() for name in ASK_LOG_COLUMNS.split(",")]
        out = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            for key in _ASK_LOG_JSON:
                item[key] = as_json(item[key])
            item["ts"] = as_iso(item["ts"])
            item["abstained"] = bool(item["abstained"])
            out.append(item)
        return out

    def add_gap(self, question: str, top_score: float, closest: Sequence[str]) -> None:
        self._log_writer().submit(
            GapRow(question=question, top_score=top_score, closest=tuple(closest), ts=now_iso())
        )

    def _insert_gap(self, conn: C, question: str, top_score: float, closest: Sequence[str], ts: str) -> None:
        key = normalise(question) or question.strip()
        self._exec(
            conn,
            "INSERT INTO gaps (normalised, question, top_score, closest, count, first_asked, last_asked)"
            " VALUES (?, ?, ?, ?, 1, ?, ?)"
            " ON CONFLICT (normalised) DO UPDATE SET count = gaps.count + 1,"
            " question = excluded.question, top_score = excluded.top_score,"
            " closest = excluded.closest, last_asked = excluded.last_asked",
            (key, question, top_score, json.dumps(list(closest)), ts, ts),
        )

    def gaps(self, limit: int = 50) -> list[Gap]:
        limit = clamp_limit(limit)
        if not limit:
            return []
        flush_pending()
        rows = self._log_target()._read(
            "SELECT question, top_score, closest, last_asked, count FROM gaps"
            " ORDER BY count DESC, last_asked DESC, normalised LIMIT ?",
            (limit,),
        )
        return [
            Gap(question=q, top_score=s, closest=tuple(as_json(c)), asked_at=as_iso(at), count=n)
            for q, s, c, at, n in rows
        ]
