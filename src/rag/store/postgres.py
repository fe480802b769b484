"""PostgreSQL store: the `Store` interface over psycopg 3 and a connection pool, for several replicas.

Selected by `RAG_DATABASE_URL=postgresql://...`. Every replica is stateless: documents, chunks,
the coverage-gap queue and the ask log live in the database, so an ask logged by one process is
visible to `rag gaps` on another. Everything both engines share lives in `rag.store.base`.

Lexical search mirrors `SqliteStore` exactly: the same stemmed terms (`rag.language.text.terms`, reduced
to [0-9a-z]) are stored per column, indexed as a `tsvector` (config 'simple', weight class
A = section, B = title, D = body) with a GIN index for `@@` queries, and as postings
(`chunk_terms`). `search()` ranks with FTS5's BM25 (k1 = 1.2, b = 0.75, the same column weights,
IDF floor and length normalisation) over every posting of every query lexeme, by the SQLite
store's engine (`rag.store.lexical`: postings read once per corpus version into numpy arrays, in one
REPEATABLE READ snapshot); both backends hand the reranker the same
candidates and scores. Known difference: a term with an apostrophe ("o'neil") is one lexeme here
("oneil") but a two-token phrase in FTS5. Search's statistics, and the document frequencies
`term_frequencies` gives the reranker (counted from the same cached postings), follow the corpus
version (exact after every commit); the chunk count `chunk_count` gives is cached per replica for
`STATS_TTL` seconds, and a replica's own writes refresh it.

Embeddings are always stored as `real[]`. When the server has the `vector` extension (pgvector)
and the role may create it, a `vec` column is filled too and `similar()` uses an HNSW index
(cosine) per dimension; otherwise cosine is computed in Python over a cached, normalised matrix
(fine to about 10^5 vectors per replica; install pgvector beyond that).

Faults: the server must answer within `connect_timeout` seconds at start, or the store raises
`StoreUnavailable` naming the host and the reason; later, a lost server or a pool that cannot
hand out a connection raises `StoreUnavailable` (HTTP 503) until the server is back.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, NoReturn, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from rag.access import audience_text, visible_sql
from rag.errors import ConfigError, StoreUnavailable
from rag.language.text import terms
from rag.store import base  # the module, not the package
from rag.store.interface import Groups
from rag.store.lexical import LexicalCache, Snapshot, by_score_then_id
from rag.store.migrations_pg import migrate, quote_ident, vector_schema
from rag.types import Chunk, Document

logger = logging.getLogger(__name__)

# Advisory-lock namespace serialising writers of one document: (this constant, hashtext(doc_id)).
DOC_LOCK = 72_410_002
# Seconds to wait for the server when connecting (libpq `connect_timeout`; at least 2 is honoured).
CONNECT_TIMEOUT = 5.0

_LEXEME_DROP_RE = re.compile(r"[^0-9a-z]+")
_FTS_TOKEN_RE = re.compile(r"[^\W_]+")  # how FTS5's unicode61 counts tokens (document length)
_CHUNK_COLUMNS = base.chunk_columns()
_C_COLUMNS = base.chunk_columns("c")
# Errors that mean the database cannot be used now (server gone, schema gone), not a caller's mistake.
_STORE_FAULTS = (psycopg.OperationalError, psycopg.errors.UndefinedTable, PoolTimeout)

# Seconds a replica reuses corpus statistics (chunk count, mean length, per-term document
# frequency) read from the database; its own writes invalidate them at once.
STATS_TTL = 2.0

T = TypeVar("T")


class _Uncached(Exception):
    """A lexical read that the cached snapshot cannot answer without reading the database."""


def _uncached(*_: object) -> NoReturn:
    """The loader of a read with no transaction: what the snapshot lacks must be read in one."""
    raise _Uncached


def lexeme(term: object) -> str:
    """The tsvector lexeme for one stemmed term: lowercase [0-9a-z] only; "" when nothing is left."""
    return _LEXEME_DROP_RE.sub("", term.lower()) if isinstance(term, str) else ""


def ts_query(query_terms: Sequence[object]) -> tuple[str, list[str]]:
    """A safe OR `tsquery` text ("'a' | 'b'") and its distinct lexemes; ("", []) when none survive.

    Never raises: only [0-9a-z] survives, so quotes, `&`, `!`, `:*` and parentheses lose their meaning.
    """
    lexemes: list[str] = []
    for term in query_terms:
        lex = lexeme(term)
        if lex and lex not in lexemes:
            lexemes.append(lex)
        if len(lexemes) >= base.MAX_QUERY_TERMS:
            break
    return " | ".join(f"'{lex}'" for lex in lexemes), lexemes


def _field(text: str) -> tuple[str, int]:
    """(space-joined lexemes, FTS5 token count) of one column's text."""
    stemmed = terms(text)
    joined = " ".join(filter(None, (lexeme(t) for t in stemmed)))
    return joined, len(_FTS_TOKEN_RE.findall(" ".join(stemmed)))


_Postings = dict[str, list[tuple[str, float, int]]]


def _chunk_rows(chunks: Sequence[Chunk], audience: str) -> tuple[list[tuple[Any, ...]], _Postings]:
    """The `chunks` rows of one document (in order) and each chunk's postings: (lexeme, BM25-weighted
    term frequency, document length in tokens). Titles and sections are analysed once per text."""
    fields: dict[str, tuple[str, int]] = {}

    def cached(text: str) -> tuple[str, int]:
        if text not in fields:
            fields[text] = _field(text)
        return fields[text]

    rows = []
    postings: _Postings = {}
    for ord_, chunk in enumerate(chunks):
        body, n_body = _field(chunk.text)
        title, n_title = cached(chunk.title)
        section, n_section = cached(chunk.section)
        dl = n_body + n_title + n_section
        tf = _weighted_tf((body, title, section))
        postings[chunk.chunk_id] = [(lex, f, dl) for lex, f in tf.items()]
        rows.append((*base.chunk_row(ord_, chunk), body, title, section, dl, audience))
    return rows, postings


def _weighted_tf(columns: tuple[str, str, str]) -> dict[str, float]:
    """Each lexeme's frequency over (body, title, section), weighted by `BM25_WEIGHTS`."""
    tf: dict[str, float] = {}
    for joined, weight in zip(columns, base.BM25_WEIGHTS, strict=True):
        for lex in joined.split():
            tf[lex] = tf.get(lex, 0.0) + weight
    return tf


def _write_postings(copy: Any, postings: _Postings, ids: dict[str, int], audience: str) -> None:
    """Write `postings` as chunk_terms rows through a COPY, keyed by each chunk's primary key."""
    for chunk_id, items in postings.items():
        pk = ids[chunk_id]
        for lex, f, dl in items:
            copy.write_row((lex, pk, f, dl, audience))


def _postings(conn: Any, lex: str) -> tuple[list[int], list[float]]:
    """(chunk keys, column-weighted frequencies) of one lexeme, from `chunk_terms`."""
    rows = conn.execute("SELECT chunk_pk, tf FROM chunk_terms WHERE lexeme = %s", (lex,)).fetchall()
    return [int(pk) for pk, _ in rows], [float(tf) for _, tf in rows]


def _load_chunks(conn: Any, keys: list[int]) -> list[tuple[int, Chunk, bool]]:
    """(key, Chunk, plain) of each key (`LexicalCache.chunks`); the stored terms are lexemes, which
    lose a term's apostrophe, so whether the terms are plain is read from the chunk's own text."""
    rows = conn.execute(
        f"SELECT {_CHUNK_COLUMNS}, id FROM chunks WHERE id = ANY(%s::bigint[])", (keys,)
    ).fetchall()
    out = []
    for row in rows:
        chunk = base.chunk_from_row(row)
        plain = (
            base.plain_text(chunk.text)
            and base.plain_heading(chunk.title)
            and base.plain_heading(chunk.section)
        )
        out.append((int(row[10]), chunk, plain))
    return out


def _loader(read: Callable[..., T], conn: Any, *args: Any) -> Callable[..., T]:
    """`read(conn, *args, ...)` as a `LexicalCache` loader; with no connection (`conn` None, the
    cached snapshot's fast path of `PgStore._lexical_read`) a loader that raises `_Uncached`."""
    return _uncached if conn is None else partial(read, conn, *args)


def visible_pg(groups: Groups, column: str) -> tuple[str, dict[str, Any]]:
    """`rag.access.visible_sql` with psycopg's named placeholders (`%(g0)s`...)."""
    condition, values = visible_sql(groups, column)
    params: dict[str, Any] = {}
    for i, value in enumerate(values):
        condition = condition.replace("?", f"%(g{i})s", 1)
        params[f"g{i}"] = value
    return condition, params


@functools.lru_cache(maxsize=256)
def _pg_sql(sql: str) -> str:
    """Shared `?`-placeholder SQL in psycopg's `%s` style (shared SQL has no other `?` or `%`)."""
    return sql.replace("?", "%s")


def server_name(url: str) -> str:
    """`host:port/dbname` of a libpq URL or conninfo string, never its password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"RAG_DATABASE_URL is not a valid PostgreSQL URL: {exc}") from None
    host = str(info.get("host") or info.get("hostaddr") or "localhost")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


def connect_reason(exc: psycopg.Error) -> str:
    """The useful part of a libpq connection error ("Connection refused", "timeout expired", ...)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    reason = first.rsplit(" failed: ", 1)[-1]
    return reason.removeprefix("FATAL:").strip()


def connect(url: str, timeout: float = CONNECT_TIMEOUT) -> psycopg.Connection[Any]:
    """One autocommit connection, or StoreUnavailable naming the server and why, within about `timeout` s."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(2, math.ceil(timeout)))
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(
            f"cannot connect to PostgreSQL at {server_name(url)}: {connect_reason(exc)}"
        ) from None
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"RAG_DATABASE_URL is not a valid PostgreSQL URL: {exc}") from None


class PgStore(base.SqlStore[psycopg.Connection[Any]]):
    """The shared store: one PostgreSQL database, a `psycopg_pool.ConnectionPool` per process.

    Thread-safe. Each `upsert_document` is one transaction that first takes a per-document
    advisory lock, so concurrent writers of a document serialise and readers always see either
    the old or the new chunk set, never a mix, a gap or duplicates. `url` is a libpq URL or
    conninfo string; tables live in the first schema of its `search_path`.
    """

    backend = "postgres"
    _ROW_ORDER = "id"

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, connect_timeout: float = CONNECT_TIMEOUT
    ) -> None:
        super().__init__()
        self.url = url
        self.where = server_name(url)
        self._hnsw_dims: set[int] = set()
        self._count_cache: dict[str, tuple[int, float, int]] = {}  # groups key -> (generation, time, count)
        self._lexical = LexicalCache()
        with connect(url, connect_timeout) as conn:  # fail fast, with the reason, before the pool retries
            migrate(conn)
            self._vector_schema = vector_schema(conn)
            if self._vector_schema is not None and not self._has_vec_column(conn):
                self._vector_schema = None
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": max(2, math.ceil(connect_timeout))},
            timeout=2 * connect_timeout,
            open=True,
            name="rag",
        )

    @staticmethod
    def _has_vec_column(conn: Any) -> bool:
        row = conn.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = 'embeddings' AND column_name = 'vec'"
        ).fetchone()
        return row is not None

    def close(self) -> None:
        self._close_log()
        self.pool.close()

    # connections

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except _STORE_FAULTS as exc:
            # The client reads the reason; only the log names the server.
            logger.warning("PostgreSQL store at %s failed: %s", self.where, exc)
            reason = connect_reason(exc) if isinstance(exc, psycopg.Error) else str(exc)
            raise StoreUnavailable(f"the PostgreSQL store cannot be used: {reason}") from exc

    @contextmanager
    def _transaction(self, doc_id: str | None) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as conn, conn.transaction():
            if doc_id is not None:
                # Ingest is idempotent (content hashes), so a crash losing the last few commits is
                # harmless, while waiting for the WAL flush per document would dominate ingest time.
                conn.execute("SET LOCAL synchronous_commit = off")
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (DOC_LOCK, doc_id))
            yield conn

    def _exec(self, conn: psycopg.Connection[Any], sql: str, params: Sequence[Any] = ()) -> base.Cursor:
        return conn.execute(_pg_sql(sql), params)

    def _executemany(self, conn: psycopg.Connection[Any], sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with conn.cursor() as cur:
            cur.executemany(_pg_sql(sql), rows)

    # writes: postings and embeddings beside the chunk rows

    def _doc_counts(self, conn: psycopg.Connection[Any], doc_id: str) -> tuple[int, int, int, int]:
        row: Any = conn.execute(
            "SELECT (SELECT count(*) FROM documents WHERE doc_id = %(d)s), count(c.id), count(e.id),"
            " coalesce(sum(c.n_tokens), 0) FROM chunks AS c LEFT JOIN embeddings AS e ON e.chunk_pk = c.id"
            " WHERE c.doc_id = %(d)s",
            {"d": doc_id},
        ).fetchone()
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    def _delete_rows(self, conn: psycopg.Connection[Any], doc_id: str) -> None:
        """Delete one document with its postings; chunks and embeddings follow by cascade."""
        conn.execute(
            "DELETE FROM chunk_terms WHERE chunk_pk IN (SELECT id FROM chunks WHERE doc_id = %s)", (doc_id,)
        )
        conn.execute("DELETE FROM documents WHERE doc_id = %s", (doc_id,))

    def _insert_chunks(
        self,
        conn: psycopg.Connection[Any],
        doc: Document,
        chunks: Sequence[Chunk],
        embeddings: Sequence[Sequence[float]] | None,
    ) -> None:
        audience = audience_text(doc.access)
        rows, postings = _chunk_rows(chunks, audience)
        if not rows:
            return
        with conn.cursor() as cur:
            values = ", ".join(["(" + ", ".join(["%s"] * 16) + ")"] * len(rows))
            cur.execute(
                f"INSERT INTO chunks ({base.CHUNK_ROW_COLUMNS}, terms, title_terms, section_terms, n_tokens,"
                f" access) VALUES {values} RETURNING chunk_id, id",
                [value for row in rows for value in row],
            )
            ids: dict[str, int] = dict(cur.fetchall())
            with cur.copy("COPY chunk_terms (lexeme, chunk_pk, tf, dl, access) FROM STDIN") as copy:
                _write_postings(copy, postings, ids, audience)
            if embeddings is not None:
                self._insert_embeddings(cur, chunks, embeddings)

    def _insert_embeddings(
        self, cur: Any, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]
    ) -> None:
        vec_col, vec_val = "", ""
        if self._vector_schema is not None:
            vec_col, vec_val = ", vec", f", %s::{quote_ident(self._vector_schema)}.vector"
        params = []
        for chunk, vector in zip(chunks, embeddings, strict=True):
            values = [float(x) for x in vector]
            row: list[Any] = [chunk.chunk_id, len(values), values]
            if vec_col:
                row.append("[" + ",".join(repr(x) for x in values) + "]")
            row.append(chunk.chunk_id)
            params.append(row)
        cur.executemany(
            f"INSERT INTO embeddings (chunk_pk, chunk_id, dim, vector{vec_col})"
            f" SELECT id, %s, %s, %s::real[]{vec_val} FROM chunks WHERE chunk_id = %s",
            params,
        )

    def _put_embeddings(
        self, conn: psycopg.Connection[Any], model: str, items: Sequence[tuple[str, Sequence[float]]]
    ) -> None:
        vec_col, vec_val, vec_set = "", "", ""
        if self._vector_schema is not None:
            vec_col, vec_val = ", vec", f", %s::{quote_ident(self._vector_schema)}.vector"
            vec_set = ", vec = excluded.vec"
        params = []
        for chunk_id, vector in items:
            values = [float(x) for x in vector]
            row: list[Any] = [chunk_id, len(values), values, model]
            if vec_col:
                row.append("[" + ",".join(repr(x) for x in values) + "]")
            row.append(chunk_id)
            params.append(row)
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO embeddings (chunk_pk, chunk_id, dim, vector, model{vec_col})"
                f" SELECT id, %s, %s, %s::real[], %s{vec_val} FROM chunks WHERE chunk_id = %s"
                " ON CONFLICT (chunk_pk) DO UPDATE SET dim = excluded.dim, vector = excluded.vector,"
                f" model = excluded.model{vec_set}",
                params,
            )

    def _after_upsert(self, embeddings: Sequence[Sequence[float]] | None) -> None:
        if embeddings and self._vector_schema is not None:
            self._ensure_hnsw(len(embeddings[0]))

    def _ensure_hnsw(self, dim: int) -> None:
        """One HNSW cosine index per embedding dimension (pgvector indexes need a fixed dimension)."""
        if dim in self._hnsw_dims or self._vector_schema is None:
            return
        schema = quote_ident(self._vector_schema)
        try:
            with self.pool.connection() as conn:
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dim:d} ON embeddings USING hnsw"
                    f" ((vec::{schema}.vector({dim:d})) {schema}.vector_cosine_ops) WHERE dim = {dim:d}"
                )
            self._hnsw_dims.add(dim)
        except Exception as exc:  # a concurrent creator or no privilege: exact search still works
            logger.warning("HNSW index for dimension %d not created: %s", dim, exc)

    # lexical index

    def search(
        self, query_terms: Sequence[str], limit: int, *, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        """Exhaustive BM25 over every query lexeme, by the SQLite store's engine (`rag.store.lexical`):
        each lexeme's postings read once per corpus version into numpy arrays, BM25 statistics those
        of the documents everyone may read, only chunks `groups` may read ranked at all."""
        (_, lexemes), limit = ts_query(query_terms), base.clamp_limit(limit)
        if not lexemes or not limit:
            return []

        def ranked(snapshot: Snapshot, conn: Any) -> tuple[list[tuple[int, float]], dict[int, Chunk]]:
            found = [self._lexical.term(snapshot, (lex,), _loader(_postings, conn, lex)) for lex in lexemes]
            scored = snapshot.top(found, limit, groups)
            if not scored:
                return [], {}
            # the chunks from this version's cache, read by key (in its snapshot) the first time
            return scored, self._lexical.chunks(
                snapshot, [key for key, _ in scored], _loader(_load_chunks, conn)
            )

        scored, by_key = self._lexical_read(ranked)
        out = [(by_key[key], score) for key, score in scored if key in by_key]
        return by_score_then_id(out)[:limit]

    def _lexical_read(self, work: Callable[[Snapshot, Any], T]) -> T:
        """`work(snapshot, conn)` over the lexical engine's arrays of the current corpus version.

        A question's three lexical reads (`term_frequencies`, `search`, `held_terms`) mostly find
        their postings and chunks cached, and then only the version is read, one statement in
        autocommit: `work` runs on the cached snapshot of that version with `conn` None, and its
        loaders (`_loader`) raise `_Uncached` at the first thing the snapshot lacks. Then, and when
        no snapshot of that version is cached, `work` runs again inside a REPEATABLE READ
        transaction that reads the version itself, so everything loaded describes one committed
        state. Either way the answer is exact for the version read: every committed write moves it
        (`_count_delta`) and the replica's own writes move `_generation`."""
        with self._connection() as conn:
            (version,) = conn.execute(base.VERSION_SQL).fetchall()[0]
            cached = self._lexical.current((int(version), self._generation))
            if cached is not None:
                try:
                    return work(cached, None)
                except _Uncached:
                    pass
            with conn.transaction():
                return work(self._lexical_snapshot(conn), conn)

    def _lexical_snapshot(self, conn: psycopg.Connection[Any]) -> Snapshot:
        """The lexical engine's arrays for the corpus version `conn`'s transaction reads (made
        REPEATABLE READ here, so every array read under it describes one snapshot)."""
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        (version,) = conn.execute(base.VERSION_SQL).fetchall()[0]

        def chunks() -> list[tuple[int, int, str]]:
            return conn.execute("SELECT id, n_tokens, access FROM chunks").fetchall()

        return self._lexical.snapshot((int(version), self._generation), chunks)

    def held_terms(self, chunks: Sequence[Chunk], query_terms: Sequence[str]) -> dict[str, frozenset[str]]:
        """From the postings (`LexicalCache.held`): a plain term is its own lexeme, and its postings
        list every chunk whose body, title or section lexemes hold it."""
        if not chunks or not query_terms:
            return {}
        return self._lexical_read(
            lambda snapshot, conn: self._lexical.held(
                snapshot, chunks, query_terms, lambda lex: _loader(_postings, conn, lex)
            )
        )

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """`chunks.terms` holds each term as its lexeme: the same text unless the term kept an
        apostrophe ("o'neil" -> "oneil"), so chunks whose text has one are left out (the caller
        computes those)."""
        unique = list(dict.fromkeys(chunk_ids))
        if not unique:
            return {}
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT chunk_id, terms FROM chunks WHERE chunk_id = ANY(%s::text[])"
                " AND strpos(text, %s) = 0 AND strpos(text, %s) = 0",
                (unique, "'", "\u2019"),
            ).fetchall()
        return {chunk_id: frozenset(joined.split()) for chunk_id, joined in rows}

    def chunk_count(self, *, groups: Groups = None) -> int:
        """Chunks `groups` may read, cached for STATS_TTL seconds (a replica's own writes refresh it)."""
        key, now = ("*" if groups is None else ",".join(sorted(groups))), time.monotonic()
        with self._lock:
            hit = self._count_cache.get(key)
            if hit is not None and hit[0] == self._generation and now - hit[1] < STATS_TTL:
                return hit[2]
            generation = self._generation
        count = super().chunk_count(groups=groups)
        with self._lock:
            if len(self._count_cache) > 1000:
                self._count_cache.clear()
            self._count_cache[key] = (generation, now, count)
        return count

    def term_frequencies(self, query_terms: Sequence[str], *, groups: Groups = None) -> Mapping[str, int]:
        """Chunks `groups` may read holding each term, counted from the lexical engine's postings of
        this corpus version (`Snapshot.visible_df`), which `search` reads for the same lexemes: no
        count over `chunk_terms` per question (that was most of a question's time at 50,000 chunks)."""
        wanted = {term: lexeme(term) for term in dict.fromkeys(query_terms)}
        lexemes = sorted({lex for lex in wanted.values() if lex})
        counts: dict[str, int] = {}
        if lexemes:

            def count(snapshot: Snapshot, conn: Any) -> dict[str, int]:
                return {
                    lex: snapshot.visible_df(
                        self._lexical.term(snapshot, (lex,), _loader(_postings, conn, lex)), groups
                    )
                    for lex in lexemes
                }

            counts = self._lexical_read(count)
        return {term: counts.get(lex, 0) for term, lex in wanted.items()}

    # embeddings

    def similar(
        self, vector: Sequence[float], limit: int, *, model: str | None = None, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        limit = base.clamp_limit(limit)
        if self._vector_schema is None or not limit or not len(vector):
            return super().similar(vector, limit, model=model, groups=groups)
        if not any(float(x) for x in vector):
            return []  # a zero vector has no direction (pgvector's cosine distance would be NaN)
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        dim = len(vector)
        if groups is None:
            # every row may be read: walk the HNSW index
            sql, params = similar_sql(self._vector_schema, dim, model=model is not None), {"model": model}
        else:
            # filter before ranking (exact): only the rows the caller may read are compared at all
            visible, visible_params = visible_pg(groups, "c.access")
            schema = quote_ident(str(self._vector_schema))
            cast = f"{schema}.vector({dim:d})"
            sql = (
                f"SELECT {_C_COLUMNS}, 1 - (e.vec::{cast} OPERATOR({schema}.<=>) %(q)s::{cast}) AS sim"
                f" FROM embeddings AS e JOIN chunks AS c ON c.id = e.chunk_pk WHERE e.dim = {dim:d}"
                " AND (%(model)s::text IS NULL OR e.model = %(model)s::text)"
                f" AND {visible}"
                f" ORDER BY e.vec::{cast} OPERATOR({schema}.<=>) %(q)s::{cast}, c.chunk_id LIMIT %(limit)s"
            )
            params = {"model": model, **visible_params}
        with self._connection() as conn:
            rows = conn.execute(sql, {"q": literal, "limit": limit, **params}).fetchall()
        return [(base.chunk_from_row(row), float(row[10])) for row in rows]


def similar_sql(vector_schema: str, dim: int, *, model: bool = False) -> str:
    """The pgvector nearest-neighbour query for one dimension (of one model, `%(model)s`, when
    `model`); its ORDER BY matches the partial HNSW index `embeddings_hnsw_{dim}` (expression and
    WHERE), so the planner can walk the index."""
    schema = quote_ident(vector_schema)
    cast = f"{schema}.vector({dim:d})"
    distance = f"e.vec::{cast} OPERATOR({schema}.<=>) %(q)s::{cast}"
    # The inner query orders by the distance alone, the one order an HNSW index scan yields (a
    # second sort key or the join would make the planner sort every row); ties break outside.
    return (
        f"SELECT {_C_COLUMNS}, 1 - n.distance AS sim FROM ("
        f"SELECT e.chunk_pk, {distance} AS distance FROM embeddings AS e WHERE e.dim = {dim:d}"
        + (" AND e.model = %(model)s::text" if model else "")
        + f" ORDER BY {distance} LIMIT %(limit)s"
        f") AS n JOIN chunks AS c ON c.id = n.chunk_pk ORDER BY n.distance, c.chunk_id"
    )


def wait_ready(url: str, timeout: float = 5.0) -> bool:
    """True when a connection to `url` succeeds within `timeout` seconds (for tests and benchmarks)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=max(2, int(timeout))) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
