"""What both store backends share, so SQLite and PostgreSQL cannot drift apart.

`SqlStore` implements every `Store` method whose SQL both engines speak the same way (documents,
chunk lookups with chunk-id versions, stats, the ask log, the gap queue, cosine over a cached
matrix) on top of primitives a backend provides: `_connection`, `_transaction`, `_exec` and
`_executemany`, plus its index-specific parts. Around it: row conversion, argument validation,
limits and the constants both backends score with.

Shared SQL uses `?` placeholders and only syntax both engines accept; the PostgreSQL backend
rewrites the placeholders. Backend-specific SQL (the lexical index, pgvector) stays in the
backend modules. Every store fault (missing, replaced, unreadable or corrupt database, lost
server) surfaces as `StoreUnavailable`; an unknown id as `NotFound`; a retired id as `Gone`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from rag.access import EVERYONE, audience_groups, audience_text, visible_sql
from rag.errors import Gone, NotFound
from rag.language.text import normalise, terms
from rag.serialize import dumps
from rag.store.asklog import AskRow, GapRow, LogRow, LogWriter, flush_pending
from rag.store.ids import text_hash, versioned_chunks
from rag.store.interface import Groups
from rag.types import AskRecord, Chunk, Document, Feedback, Gap, Heading, StoreStats

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
DOCUMENT_COLUMNS = "doc_id, title, text, source_path, url, updated_at, content_hash, access"
# The corpus version: moved by every committed write of chunks or embeddings (`_count_delta`).
VERSION_SQL = "SELECT version FROM corpus_counts WHERE id = 1"
ASK_LOG_COLUMNS = (
    "trace_id, ts, question, reason, abstained, blocks, answer, citations, verdicts, top_score,"
    " usage, timings, retrieval, principal, conversation_id, turn"
)
FEEDBACK_COLUMNS = "id, trace_id, created_at, verdict, note, question, principal"
# The longest feedback note and copied question a store accepts (characters).
MAX_FEEDBACK_CHARS = 4000
FEEDBACK_VERDICTS = ("helpful", "wrong")
_ASK_LOG_JSON = ("blocks", "citations", "verdicts", "usage", "timings", "retrieval")
_FTS_TOKEN_RE = re.compile(r"[^\W_]+")  # how FTS5's unicode61 tokenizer cuts text into tokens


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
        access=audience_groups(row[7] or EVERYONE),
    )


_PLAIN_JOINED_RE = re.compile(r"[0-9a-z ]*")


def fts_tokens(text: str) -> list[str]:
    """`text` cut into tokens as FTS5's unicode61 tokenizer cuts it (lowercase alphanumeric runs)."""
    return _FTS_TOKEN_RE.findall(text.lower())


def fts_vocabulary(body_terms: str, title: str, section: str) -> set[str]:
    """The distinct FTS5 tokens of a chunk's three indexed columns (see `fts_length`)."""
    return (
        set(fts_tokens(body_terms))
        | set(fts_tokens(" ".join(terms(title))))
        | set(fts_tokens(" ".join(terms(section))))
    )


def plain_joined(joined_terms: str) -> bool:
    """True when every space-separated term of `joined_terms` is plain (`rag.store.lexical.is_plain`)."""
    return _PLAIN_JOINED_RE.fullmatch(joined_terms) is not None


def plain_text(text: str) -> bool:
    """True when every term of `text` (`terms`) is plain, a run of [0-9a-z] that both lexical indexes
    hold as one token equal to itself. ASCII text without an apostrophe always is (its tokens,
    identifier forms and stems are such runs), so only other text is tokenised to tell."""
    return (text.isascii() and "'" not in text) or plain_joined(" ".join(terms(text)))


# `plain_text` of titles and section headings, which every chunk of a document repeats.
plain_heading = lru_cache(maxsize=65_536)(plain_text)


def fts_length(body_terms: str, title: str, section: str) -> int:
    """A chunk's length in FTS5 tokens over its three indexed columns: the space-joined stemmed body
    terms as stored, and the title and section (stemmed here), as both backends index them."""
    return (
        len(fts_tokens(body_terms))
        + len(fts_tokens(" ".join(terms(title))))
        + len(fts_tokens(" ".join(terms(section))))
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


# What no store holds: NUL (PostgreSQL text refuses it) and lone surrogates (not encodable as UTF-8).
_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str:
    """Why `text` cannot be stored ("" when it can): a NUL or a lone surrogate, on every backend alike.
    No stored key holds one, so a lookup by such a key is simply not found."""
    found = _UNSTORABLE_RE.search(text)
    if found is None:
        return ""
    what = "a NUL character" if found.group() == "\x00" else "a lone surrogate (not UTF-8 text)"
    return f"holds {what} at offset {found.start()}, which cannot be stored"


def check_feedback(feedback: Feedback) -> None:
    """Raise ValueError unless the verdict is known, the trace id is set and the texts fit and can
    be stored (`unstorable`)."""
    if feedback.verdict not in FEEDBACK_VERDICTS:
        raise ValueError(f"unknown feedback verdict {feedback.verdict!r}; use one of {FEEDBACK_VERDICTS}")
    if not feedback.trace_id.strip():
        raise ValueError("feedback needs the trace id of the answer it judges")
    for name in ("trace_id", "note", "question", "principal"):
        if len(getattr(feedback, name)) > MAX_FEEDBACK_CHARS:
            raise ValueError(f"feedback {name} is over {MAX_FEEDBACK_CHARS} characters")
        if why := unstorable(getattr(feedback, name)):
            raise ValueError(f"feedback {name} {why}")


def ask_row(row: Sequence[Any]) -> dict[str, Any]:
    """An ask-log row in `ASK_LOG_COLUMNS` order as a dict: JSON columns decoded, `ts` as ISO text."""
    names = [name.strip() for name in ASK_LOG_COLUMNS.split(",")]
    item = dict(zip(names, row, strict=True))
    for key in _ASK_LOG_JSON:
        item[key] = as_json(item[key])
    item["ts"] = as_iso(item["ts"])
    item["abstained"] = bool(item["abstained"])
    return item


def feedback_from_row(row: Sequence[Any]) -> Feedback:
    """A Feedback from a row in `FEEDBACK_COLUMNS` order."""
    return Feedback(
        id=int(row[0]),
        trace_id=row[1],
        created_at=as_iso(row[2]),
        verdict=row[3],
        note=row[4],
        question=row[5],
        principal=row[6],
    )


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


def float_vectors(model: str, items: Sequence[tuple[str, Sequence[float]]]) -> list[tuple[str, list[float]]]:
    """`items` with float vectors; ValueError unless every vector has the same non-zero dimension."""
    vectors = [(chunk_id, [float(x) for x in vector]) for chunk_id, vector in items]
    if vectors and (any(not vector for _, vector in vectors) or len({len(v) for _, v in vectors}) != 1):
        raise ValueError(f"embeddings from {model!r} must share one non-zero dimension")
    return vectors


def readable_rows(
    matrix: Any, ids: list[str], audiences: Sequence[str], groups: frozenset[str]
) -> tuple[Any, list[str]] | None:
    """The rows of `matrix` (and their `ids`) whose audience `groups` may read; None when none is."""
    readable = {a for a in set(audiences) if a == EVERYONE or groups & set(audience_groups(a))}
    keep = [i for i, audience in enumerate(audiences) if audience in readable]
    if not keep:
        return None
    if len(keep) < len(ids):
        return matrix[keep], [ids[i] for i in keep]
    return matrix, ids


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
    # `embedding_cosines`'s condition on the model and dimension, beside its chunk ids.
    _VECTOR_OF: ClassVar[str] = "model = ? AND dim = ?"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Bumped after every committed change to documents; caches keyed on it see every local write.
        self._generation = 0
        self._vectors_key: tuple[object, ...] | None = None
        self._vectors: tuple[Any, list[str], list[str]] | None = None
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

    def _put_embeddings(self, conn: C, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Upsert vectors of existing chunks, tagged with `model` (rows for unknown ids are skipped)."""
        raise NotImplementedError

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
            audience = audience_text(doc.access)
            self._delete_rows(conn, doc.doc_id)
            self._exec(
                conn,
                "INSERT INTO documents (doc_id, title, url, updated_at, source_path, content_hash, text,"
                " ingested_at, access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.doc_id,
                    doc.title,
                    doc.url,
                    iso_date(doc.updated_at),
                    doc.source_path,
                    doc.content_hash,
                    doc.text,
                    now_iso(),
                    audience,
                ),
            )
            # every id the document ever issued follows its current audience (a retired id of a
            # document now hidden from a caller answers 404 to it, not 410)
            self._exec(conn, "UPDATE chunk_ids SET access = ? WHERE doc_id = ?", (audience, doc.doc_id))
            self._executemany(
                conn,
                "INSERT INTO chunk_ids (chunk_id, doc_id, text_hash, access) VALUES (?, ?, ?, ?)",
                [
                    (c.chunk_id, doc.doc_id, text_hash(c.text), audience)
                    for c in stored
                    if c.chunk_id not in issued
                ],
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

    def get_document(self, doc_id: str, *, groups: Groups = None, text: bool = True) -> Document:
        if unstorable(doc_id):
            raise NotFound(f"unknown document {doc_id!r}")
        visible, params = visible_sql(groups, "access")
        columns = DOCUMENT_COLUMNS if text else DOCUMENT_COLUMNS.replace(" text,", " '' AS text,")
        rows = self._read(
            f"SELECT {columns} FROM documents WHERE doc_id = ? AND {visible}", (doc_id, *params)
        )
        if not rows:
            raise NotFound(f"unknown document {doc_id!r}")
        return document_from_row(rows[0])

    def document_chunks(
        self, doc_id: str, *, groups: Groups = None, start: int = 0, limit: int | None = None
    ) -> list[Chunk]:
        if unstorable(doc_id):
            raise NotFound(f"unknown document {doc_id!r}")
        if limit is not None and limit <= 0:
            self.get_document(doc_id, groups=groups)
            return []
        # One statement, so the document and its chunks come from one snapshot; the position is a
        # join condition, so a document read past its last chunk is still found.
        visible, params = visible_sql(groups, "d.access")
        page = (" LIMIT ?", (limit,)) if limit is not None else ("", ())
        rows = self._read(
            f"SELECT {chunk_columns('c')} FROM documents AS d LEFT JOIN chunks AS c ON c.doc_id = d.doc_id"
            f" AND c.ord >= ? WHERE d.doc_id = ? AND {visible} ORDER BY c.ord{page[0]}",
            (max(0, start), doc_id, *params, *page[1]),
        )
        if not rows:
            raise NotFound(f"unknown document {doc_id!r}")
        return [chunk_from_row(row) for row in rows if row[0] is not None]

    def get_chunk(self, chunk_id: str, *, groups: Groups = None) -> Chunk:
        if unstorable(chunk_id):
            raise NotFound(f"unknown chunk {chunk_id!r}")
        visible, params = visible_sql(groups, "access")
        with self._connection() as conn:
            row = self._exec(
                conn,
                f"SELECT {chunk_columns()} FROM chunks WHERE chunk_id = ? AND {visible}",
                (chunk_id, *params),
            ).fetchone()
            retired = None
            if row is None:
                retired = self._exec(
                    conn,
                    "SELECT doc_id FROM chunk_ids WHERE chunk_id = ? AND chunk_id NOT IN"
                    f" (SELECT chunk_id FROM chunks) AND {visible}",
                    (chunk_id, *params),
                ).fetchone()
        if row is not None:
            return chunk_from_row(row)
        if retired is not None:
            raise Gone(
                f"chunk {chunk_id!r} was retired: document {retired[0]!r} changed or was removed after this"
                " id was issued, and an id never names other text"
            )
        raise NotFound(f"unknown chunk {chunk_id!r}")

    def get_chunks(self, chunk_ids: Sequence[str], *, groups: Groups = None) -> list[Chunk]:
        unique = [cid for cid in dict.fromkeys(chunk_ids) if not unstorable(cid)]
        found: dict[str, Chunk] = {}
        visible, params = visible_sql(groups, "access")
        if unique:
            with self._connection() as conn:
                for i in range(0, len(unique), ID_BATCH):
                    batch = unique[i : i + ID_BATCH]
                    marks = ", ".join("?" * len(batch))
                    sql = f"SELECT {chunk_columns()} FROM chunks WHERE chunk_id IN ({marks}) AND {visible}"
                    for row in self._exec(conn, sql, [*batch, *params]).fetchall():
                        found[row[0]] = chunk_from_row(row)
        return [found[cid] for cid in chunk_ids if cid in found]

    def adjacent_chunks(
        self, chunk_ids: Sequence[str], *, groups: Groups = None, width: int = 1
    ) -> list[Chunk]:
        # One statement on both engines: each asked chunk joined to the chunks of its own document
        # within `width` positions. Both sides pass the caller's filter, so a hidden chunk has no
        # neighbours and no hidden chunk is one.
        unique = [cid for cid in dict.fromkeys(chunk_ids) if not unstorable(cid)]
        if not unique or width <= 0:
            return []
        asked_visible, asked_params = visible_sql(groups, "a.access")
        near_visible, near_params = visible_sql(groups, "n.access")
        rows: list[tuple[str, int, Any]] = []
        with self._connection() as conn:
            for i in range(0, len(unique), ID_BATCH):
                batch = unique[i : i + ID_BATCH]
                marks = ", ".join("?" * len(batch))
                sql = (
                    f"SELECT a.chunk_id, n.ord - a.ord, {chunk_columns('n')} FROM chunks AS a"
                    " JOIN chunks AS n ON n.doc_id = a.doc_id AND n.ord BETWEEN a.ord - ? AND a.ord + ?"
                    f" AND n.ord <> a.ord WHERE a.chunk_id IN ({marks}) AND {asked_visible}"
                    f" AND {near_visible}"
                )
                params = [width, width, *batch, *asked_params, *near_params]
                rows.extend(self._exec(conn, sql, params).fetchall())
        rank = {cid: i for i, cid in enumerate(unique)}
        rows.sort(key=lambda row: (rank[row[0]], abs(row[1]), row[1]))
        asked = set(unique)
        out: dict[str, Chunk] = {}
        for row in rows:
            chunk = chunk_from_row(row[2:])
            if chunk.chunk_id not in asked:
                out.setdefault(chunk.chunk_id, chunk)
        return list(out.values())

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        return {}

    def held_terms(self, chunks: Sequence[Chunk], query_terms: Sequence[str]) -> dict[str, frozenset[str]]:
        return {}

    # embeddings

    def similar(
        self, vector: Sequence[float], limit: int, *, model: str | None = None, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        limit = clamp_limit(limit)
        if not limit or not len(vector):
            return []
        loaded = self._load_vectors(len(vector), model)
        if loaded is None:
            return []
        matrix, ids, audiences = loaded
        if groups is not None:
            # filter before ranking: only the rows the caller may read are compared at all
            readable = readable_rows(matrix, ids, audiences, groups)
            if readable is None:
                return []
            matrix, ids = readable
        ranked = top_cosine(matrix, ids, vector, limit)
        chunks = {c.chunk_id: c for c in self.get_chunks([cid for cid, _ in ranked], groups=groups)}
        return [(chunks[cid], score) for cid, score in ranked if cid in chunks]

    def embedding_cosines(
        self, vector: Sequence[float], chunk_ids: Sequence[str], *, model: str
    ) -> dict[str, float]:
        unique = list(dict.fromkeys(chunk_ids))
        if not unique or not len(vector):
            return {}
        rows: list[Any] = []
        with self._connection() as conn:
            for i in range(0, len(unique), ID_BATCH):
                batch = unique[i : i + ID_BATCH]
                sql = (
                    f"SELECT chunk_id, vector FROM embeddings WHERE {self._VECTOR_OF}"
                    f" AND chunk_id IN ({', '.join('?' * len(batch))})"
                )
                rows.extend(self._exec(conn, sql, [model, len(vector), *batch]).fetchall())
        ranked = top_cosine(
            unit_matrix([r[1] for r in rows], len(vector)), [r[0] for r in rows], vector, len(rows)
        )
        return dict(ranked)

    def chunks_missing_embeddings(self, model: str, limit: int | None = None) -> list[Chunk]:
        rows = self._read(
            f"SELECT {chunk_columns('c')} FROM chunks AS c LEFT JOIN embeddings AS e"
            " ON e.chunk_id = c.chunk_id AND e.model = ? WHERE e.chunk_id IS NULL ORDER BY c.doc_id, c.ord"
            + (" LIMIT ?" if limit is not None else ""),
            (model,) if limit is None else (model, max(0, limit)),
        )
        return [chunk_from_row(row) for row in rows]

    def has_embeddings(self, model: str) -> bool:
        return bool(self._read("SELECT 1 FROM embeddings WHERE model = ? LIMIT 1", (model,)))

    def embedding_progress(self, model: str, *, groups: Groups = None) -> tuple[int, int]:
        if groups is None:
            # vectors always name stored chunks (deleted with them, `put_embeddings` skips unknown ids)
            ((embedded,),) = self._read("SELECT count(*) FROM embeddings WHERE model = ?", (model,))
            return int(embedded), self.chunk_count()
        visible, params = visible_sql(groups, "c.access")
        ((embedded, total),) = self._read(
            "SELECT (SELECT count(*) FROM embeddings AS e JOIN chunks AS c ON c.chunk_id = e.chunk_id"
            f" WHERE e.model = ? AND {visible}), (SELECT count(*) FROM chunks AS c WHERE {visible})",
            [model, *params, *params],
        )
        return int(embedded), int(total)

    def claim_embedding(self, model: str, holder: str, seconds: float, *, now: float | None = None) -> bool:
        at = time.time() if now is None else now
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO embedding_leases (model, holder, expires) VALUES (?, ?, ?)"
                " ON CONFLICT (model) DO UPDATE SET holder = excluded.holder, expires = excluded.expires"
                " WHERE embedding_leases.holder = excluded.holder OR embedding_leases.expires < ?",
                (model, holder, at + seconds, at),
            )
            row = self._exec(conn, "SELECT holder FROM embedding_leases WHERE model = ?", (model,)).fetchone()
        return row is not None and row[0] == holder

    def release_embedding(self, model: str, holder: str) -> None:
        with self._write() as conn:
            self._exec(conn, "DELETE FROM embedding_leases WHERE model = ? AND holder = ?", (model, holder))

    def put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> int:
        items = float_vectors(model, items)
        if not items:
            return 0
        with self._write() as conn:
            had = self._embedded(conn, [chunk_id for chunk_id, _ in items])
            self._put_embeddings(conn, model, items)
            stored = self._known_chunks(conn, [chunk_id for chunk_id, _ in items])
            # replaced vectors keep the count; the version moves either way (cached matrices reload)
            self._count_delta(conn, (0, 0, had, 0), (0, 0, self._embedded(conn, [c for c, _ in items]), 0))
        with self._lock:
            self._generation += 1  # replaced rows keep their count and row order: drop the cached matrix
        self._after_upsert([vector for _, vector in items[:1]])
        return stored

    def _known_chunks(self, conn: C, chunk_ids: Sequence[str]) -> int:
        """How many entries of `chunk_ids` (repeats counted once per batch) name a stored chunk."""
        stored = 0
        for i in range(0, len(chunk_ids), ID_BATCH):
            ids = list(chunk_ids[i : i + ID_BATCH])
            sql = f"SELECT count(*) FROM chunks WHERE chunk_id IN ({', '.join('?' * len(ids))})"
            stored += int(self._exec(conn, sql, ids).fetchone()[0])
        return stored

    def _embedded(self, conn: C, chunk_ids: Sequence[str]) -> int:
        """How many of `chunk_ids` (distinct) have a stored vector of any model."""
        unique = list(dict.fromkeys(chunk_ids))
        total = 0
        for i in range(0, len(unique), ID_BATCH):
            ids = unique[i : i + ID_BATCH]
            sql = f"SELECT count(*) FROM embeddings WHERE chunk_id IN ({', '.join('?' * len(ids))})"
            total += int(self._exec(conn, sql, ids).fetchone()[0])
        return total

    def embedding_counts(self) -> list[tuple[str, int, int]]:
        rows = self._read("SELECT model, dim, count(*) FROM embeddings GROUP BY model, dim")
        return sorted(((m, int(d), int(n)) for m, d, n in rows), key=lambda r: (-r[2], r[0], r[1]))

    def _load_vectors(self, dim: int, model: str | None = None) -> tuple[Any, list[str], list[str]] | None:
        """Unit-normalised matrix of every stored vector of `dim` (made by `model`, when given), its
        chunk ids and their audiences, cached until the table changes."""
        where, params = ("dim = ? AND model = ?", (dim, model)) if model is not None else ("dim = ?", (dim,))
        with self._connection() as conn:
            # the corpus version moves with every committed ingest or embedding write, here or in
            # another process (`_count_delta`)
            (version,) = self._exec(conn, VERSION_SQL).fetchone()
            key = (version, self._generation, dim, model)
            with self._lock:
                if self._vectors_key == key:
                    return self._vectors
            rows = self._exec(
                conn,
                "SELECT e.chunk_id, e.vector, c.access FROM embeddings AS e"
                f" JOIN chunks AS c ON c.chunk_id = e.chunk_id WHERE e.{where.replace(' AND ', ' AND e.')}"
                " ORDER BY e.chunk_id",
                params,
            ).fetchall()
        loaded = (
            (unit_matrix([r[1] for r in rows], dim), [r[0] for r in rows], [r[2] for r in rows])
            if rows
            else None
        )
        with self._lock:
            self._vectors_key, self._vectors = key, loaded
        return loaded

    # bookkeeping

    def chunk_count(self, *, groups: Groups = None) -> int:
        if groups is None:
            # one row kept by the ingest transactions: constant time whatever the corpus size
            return int(self._read("SELECT chunks FROM corpus_counts WHERE id = 1")[0][0])
        visible, params = visible_sql(groups, "access")
        return int(self._read(f"SELECT count(*) FROM chunks WHERE {visible}", params)[0][0])

    def stats(self, *, groups: Groups = None) -> StoreStats:
        if groups is None:
            # one row kept by the ingest transactions: constant time whatever the corpus size; the
            # tables it counts are named too (no row read), so readiness still fails without them
            ((documents, chunks, embeddings),) = self._read(
                "SELECT documents, chunks, embeddings FROM corpus_counts WHERE id = 1"
                " AND NOT EXISTS (SELECT 1 FROM documents WHERE 1 = 0)"
                " AND NOT EXISTS (SELECT 1 FROM chunks WHERE 1 = 0)"
                " AND NOT EXISTS (SELECT 1 FROM embeddings WHERE 1 = 0)"
            )
        else:
            # a caller with groups sees counts of what it may read, so they are counted
            d_visible, d_params = visible_sql(groups, "access")
            c_visible, c_params = visible_sql(groups, "c.access")
            ((documents, chunks, embeddings),) = self._read(
                f"SELECT (SELECT count(*) FROM documents WHERE {d_visible}),"
                f" (SELECT count(*) FROM chunks AS c WHERE {c_visible}),"
                " (SELECT count(*) FROM embeddings AS e JOIN chunks AS c ON c.chunk_id = e.chunk_id"
                f" WHERE {c_visible})",
                [*d_params, *c_params, *c_params],
            )
        return StoreStats(documents=documents, chunks=chunks, embeddings=embeddings, backend=self.backend)

    def corpus_version(self) -> str:
        # one row kept by the write transactions (`_count_delta`), here or in another process; the
        # generation tells a replaced database file from the one opened before
        ((version,),) = self._read(VERSION_SQL)
        return f"{int(version)}.{self._generation}"

    # the ask log and the gap queue: queued by requests, written in batches by a background thread
    # (rag.store.asklog) into `_log_target()`, which holds the `ask_log` and `gaps` tables

    def log_ask(self, record: AskRecord) -> None:
        self._log_writer().submit(AskRow(record=record, ts=now_iso()))

    def _log_target(self) -> SqlStore[Any]:
        """The store whose `ask_log` and `gaps` tables hold the log (this one unless a backend moves it)."""
        return self

    def check_log(self) -> None:
        self._log_target()

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
                    self._insert_gap(conn, row)

    def _insert_ask(self, conn: C, record: AskRecord, ts: str) -> None:
        self._exec(
            conn,
            f"INSERT INTO ask_log ({ASK_LOG_COLUMNS}) VALUES ({', '.join('?' * 16)})",
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
                json_text(
                    {
                        "retrieved": [[cid, round(score, 4)] for cid, score in record.retrieved],
                        "reranker": record.reranker,
                        "threshold": record.threshold,
                    }
                ),
                record.principal,
                record.conversation_id,
                record.turn,
            ),
        )

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]:
        if unstorable(trace_id):
            return []
        flush_pending()
        rows = self._log_target()._read(
            f"SELECT {ASK_LOG_COLUMNS} FROM ask_log WHERE trace_id = ? ORDER BY {self._ROW_ORDER}",
            (trace_id,),
        )
        return [ask_row(row) for row in rows]

    def recent_asks(self, limit: int = 200, *, abstained: bool | None = None) -> list[dict[str, Any]]:
        limit = clamp_limit(limit)
        if not limit:
            return []
        where, params = (
            ("WHERE abstained = ? ", (abstained, limit)) if abstained is not None else ("", (limit,))
        )
        flush_pending()
        rows = self._log_target()._read(
            f"SELECT {ASK_LOG_COLUMNS} FROM ask_log {where}ORDER BY {self._ROW_ORDER} DESC LIMIT ?", params
        )
        return [ask_row(row) for row in rows]

    def add_gap(self, question: str, top_score: float, closest: Sequence[str], principal: str = "") -> None:
        self._log_writer().submit(
            GapRow(
                question=question,
                top_score=top_score,
                closest=tuple(closest),
                ts=now_iso(),
                principal=principal,
            )
        )

    def _insert_gap(self, conn: C, row: GapRow) -> None:
        key = normalise(row.question) or row.question.strip()
        self._exec(
            conn,
            "INSERT INTO gaps (normalised, question, top_score, closest, count, first_asked, last_asked,"
            " principal) VALUES (?, ?, ?, ?, 1, ?, ?, ?)"
            " ON CONFLICT (normalised) DO UPDATE SET count = gaps.count + 1,"
            " question = excluded.question, top_score = excluded.top_score,"
            " closest = excluded.closest, last_asked = excluded.last_asked,"
            " principal = excluded.principal",
            (key, row.question, row.top_score, json.dumps(list(row.closest)), row.ts, row.ts, row.principal),
        )

    def gaps(self, limit: int = 50, *, groups: Groups = None) -> list[Gap]:
        limit = clamp_limit(limit)
        if not limit:
            return []
        flush_pending()
        rows = self._log_target()._read(
            "SELECT question, top_score, closest, last_asked, count, principal FROM gaps"
            " ORDER BY count DESC, last_asked DESC, normalised LIMIT ?",
            (limit,),
        )
        out = [
            Gap(question=q, top_score=s, closest=tuple(as_json(c)), asked_at=as_iso(at), count=n, principal=p)
            for q, s, c, at, n, p in rows
        ]
        if groups is None:
            return out
        readable = {
            c.chunk_id for c in self.get_chunks([cid for g in out for cid in g.closest], groups=groups)
        }
        return [replace(g, closest=tuple(cid for cid in g.closest if cid in readable)) for g in out]

    # readers' feedback and the corpus's headings

    def add_feedback(self, feedback: Feedback) -> Feedback:
        check_feedback(feedback)
        created = now_iso()
        with self._write() as conn:
            (new_id,) = self._exec(
                conn,
                "INSERT INTO feedback (trace_id, created_at, verdict, note, question, principal)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    feedback.trace_id,
                    created,
                    feedback.verdict,
                    feedback.note,
                    feedback.question,
                    feedback.principal,
                ),
            ).fetchone()
        return replace(feedback, id=int(new_id), created_at=created)

    def feedback(
        self, limit: int = 50, *, verdict: str | None = None, trace_id: str | None = None
    ) -> list[Feedback]:
        limit = clamp_limit(limit)
        if not limit or unstorable(trace_id or "") or unstorable(verdict or ""):
            return []
        filters = [(name, value) for name, value in (("verdict", verdict), ("trace_id", trace_id)) if value]
        where = "".join(f"{'WHERE' if i == 0 else 'AND'} {name} = ? " for i, (name, _) in enumerate(filters))
        params = (*(value for _, value in filters), limit)
        rows = self._read(f"SELECT {FEEDBACK_COLUMNS} FROM feedback {where}ORDER BY id DESC LIMIT ?", params)
        return [feedback_from_row(row) for row in rows]

    def headings(self, limit: int = 200, *, groups: Groups = None) -> list[Heading]:
        limit = clamp_limit(limit)
        if not limit:
            return []
        visible, params = visible_sql(groups, "access")
        rows = self._read(
            f"SELECT doc_id, title, section, count(*), min(ord) FROM chunks WHERE {visible}"
            " GROUP BY doc_id, title, section ORDER BY min(ord), doc_id, section LIMIT ?",
            (*params, limit),
        )
        return [Heading(doc_id=d, title=t, section=s, chunks=int(n)) for d, t, s, n, _ in rows]
