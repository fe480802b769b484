"""PostgreSQL schema as an ordered list of named steps, recorded in `schema_migrations`.

A schema at version N has rows 1..N in `schema_migrations`. Steps are never edited after
release; a change is a new `mNNN_...` entry appended to `MIGRATIONS`. `migrate()` applies the
pending steps in ONE transaction under a transaction-level advisory lock keyed by the current
schema, so several replicas starting at once (or one starting twice) apply each step exactly once.

Everything lives in the first schema of `search_path` (tests use one schema per test).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

# Advisory-lock namespace for migrations: (this constant, hashtext(current_schema())).
MIGRATION_LOCK = 72_410_001

Migration = tuple[str, str]

M001_DOCUMENTS_AND_CHUNKS = """
CREATE TABLE documents (
    doc_id       text PRIMARY KEY,
    title        text NOT NULL,
    url          text NOT NULL DEFAULT '',
    updated_at   date,
    source_path  text NOT NULL DEFAULT '',
    content_hash text NOT NULL DEFAULT '',
    text         text NOT NULL,
    ingested_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_source_path ON documents (source_path);
CREATE TABLE chunks (
    id            bigserial PRIMARY KEY,
    chunk_id      text NOT NULL UNIQUE,
    doc_id        text NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    ord           integer NOT NULL,
    title         text NOT NULL,
    section       text NOT NULL DEFAULT '',
    text          text NOT NULL,
    start_char    integer NOT NULL,
    end_char      integer NOT NULL,
    page          integer,
    updated_at    date,
    url           text NOT NULL DEFAULT '',
    terms         text NOT NULL DEFAULT '',
    title_terms   text NOT NULL DEFAULT '',
    section_terms text NOT NULL DEFAULT '',
    n_tokens      integer NOT NULL DEFAULT 0
);
CREATE INDEX chunks_doc ON chunks (doc_id, ord);
"""

# The lexical index: the same space-joined stemmed terms SQLite's FTS5 indexes, as a tsvector (one
# weight class per column: section A, title B, body D) with a GIN index for `@@` matching, and as
# postings (`chunk_terms`: lexeme, chunk, column-weighted term frequency, chunk length in tokens)
# from which store_pg.py computes FTS5's BM25 with MaxScore pruning. Postings carry no foreign key
# (a per-row check would dominate ingest); the store deletes them with their chunks.
M002_LEXICAL_INDEX = """
ALTER TABLE chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, terms), 'D')
    || setweight(to_tsvector('simple'::regconfig, title_terms), 'B')
    || setweight(to_tsvector('simple'::regconfig, section_terms), 'A')
) STORED;
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE TABLE chunk_terms (
    lexeme   text NOT NULL,
    chunk_pk bigint NOT NULL,
    tf       real NOT NULL,
    dl       integer NOT NULL,
    PRIMARY KEY (lexeme, chunk_pk) INCLUDE (tf, dl)
);
CREATE INDEX chunk_terms_chunk ON chunk_terms (chunk_pk);
"""

M003_EMBEDDINGS = """
CREATE TABLE embeddings (
    id       bigserial PRIMARY KEY,
    chunk_pk bigint NOT NULL UNIQUE REFERENCES chunks (id) ON DELETE CASCADE,
    chunk_id text NOT NULL,
    dim      integer NOT NULL,
    vector   real[] NOT NULL
);
CREATE INDEX embeddings_dim ON embeddings (dim);
"""

M004_GAPS_AND_ASK_LOG = """
CREATE TABLE gaps (
    normalised  text PRIMARY KEY,
    question    text NOT NULL,
    top_score   double precision NOT NULL,
    closest     jsonb NOT NULL DEFAULT '[]',
    count       integer NOT NULL DEFAULT 1,
    first_asked timestamptz NOT NULL,
    last_asked  timestamptz NOT NULL
);
CREATE TABLE ask_log (
    id        bigserial PRIMARY KEY,
    trace_id  text NOT NULL,
    ts        timestamptz NOT NULL DEFAULT now(),
    question  text NOT NULL,
    reason    text NOT NULL DEFAULT '',
    abstained boolean NOT NULL DEFAULT false,
    blocks    jsonb NOT NULL DEFAULT '[]',
    answer    text NOT NULL DEFAULT '',
    citations jsonb NOT NULL DEFAULT '[]',
    verdicts  jsonb NOT NULL DEFAULT '[]',
    top_score double precision NOT NULL DEFAULT 0,
    usage     jsonb NOT NULL DEFAULT '{}',
    timings   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX ask_log_trace ON ask_log (trace_id);
"""

# Every chunk id ever issued, with a fingerprint of the text it named (sha256, 16 hex digits, the
# same as `rag.store.ids.text_hash`): an id whose chunk is gone answers 410 Gone, and a changed
# text never takes an id that named other words.
M005_CHUNK_IDS = """
CREATE TABLE chunk_ids (
    chunk_id  text PRIMARY KEY,
    doc_id    text NOT NULL,
    text_hash text NOT NULL
);
CREATE INDEX chunk_ids_doc ON chunk_ids (doc_id);
INSERT INTO chunk_ids (chunk_id, doc_id, text_hash)
SELECT chunk_id, doc_id, left(encode(sha256(convert_to(text, 'UTF8')), 'hex'), 16) FROM chunks;
"""

# The model that made each vector (see the SQLite step of the same name).
M006_EMBEDDING_MODEL = """
ALTER TABLE embeddings ADD COLUMN model text NOT NULL DEFAULT '';
CREATE INDEX embeddings_model_dim ON embeddings (model, dim);
"""

# Readers' "helpful / wrong" verdicts, each tied to the trace id of the answer it judges.
M007_FEEDBACK = """
CREATE TABLE feedback (
    id         bigserial PRIMARY KEY,
    trace_id   text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    verdict    text NOT NULL CHECK (verdict IN ('helpful', 'wrong')),
    note       text NOT NULL DEFAULT '',
    question   text NOT NULL DEFAULT ''
);
CREATE INDEX feedback_trace ON feedback (trace_id);
"""

# What retrieval saw for each ask: {"retrieved": [[chunk_id, score], ...], "reranker", "threshold"}.
M008_ASK_LOG_RETRIEVAL = """
ALTER TABLE ask_log ADD COLUMN retrieval jsonb NOT NULL DEFAULT '{}';
"""

# Who may read a document (rag.access stored form, '' = everyone), on documents, chunks and
# postings, so every query filters by the caller's groups without a join; BM25 statistics are
# computed over the postings everyone may read (access = '').
M009_AUDIENCES = """
ALTER TABLE documents ADD COLUMN access text NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN access text NOT NULL DEFAULT '';
ALTER TABLE chunk_terms ADD COLUMN access text NOT NULL DEFAULT '';
CREATE INDEX chunks_access ON chunks (access);
CREATE INDEX documents_access ON documents (access);
ALTER TABLE chunk_ids ADD COLUMN access text NOT NULL DEFAULT '';
ALTER TABLE ask_log ADD COLUMN principal text NOT NULL DEFAULT '';
ALTER TABLE gaps ADD COLUMN principal text NOT NULL DEFAULT '';
ALTER TABLE feedback ADD COLUMN principal text NOT NULL DEFAULT '';
"""

# One row of corpus counts, kept by every ingest transaction (`SqlStore._count_delta`), so no
# request counts rows: `tokens` is the sum of `chunks.n_tokens` (BM25's mean length), `version`
# grows with every committed change to the corpus.
M010_CORPUS_COUNTS = """
CREATE TABLE corpus_counts (
    id         integer PRIMARY KEY CHECK (id = 1),
    documents  bigint NOT NULL,
    chunks     bigint NOT NULL,
    embeddings bigint NOT NULL,
    tokens     bigint NOT NULL DEFAULT 0,
    version    bigint NOT NULL DEFAULT 0
);
INSERT INTO corpus_counts (id, documents, chunks, embeddings, tokens)
SELECT 1, (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks),
       (SELECT count(*) FROM embeddings), (SELECT coalesce(sum(n_tokens), 0) FROM chunks);
"""

# Who embeds the chunks lacking a model's vectors, until when (epoch seconds; see the SQLite step).
M011_EMBEDDING_LEASES = """
CREATE TABLE embedding_leases (
    model   text PRIMARY KEY,
    holder  text NOT NULL,
    expires double precision NOT NULL
);
"""

# A follow-up's conversation: the client's id and the 1-based turn ('' and 0 for a single question).
M012_ASK_LOG_CONVERSATION = """
ALTER TABLE ask_log ADD COLUMN conversation_id text NOT NULL DEFAULT '';
ALTER TABLE ask_log ADD COLUMN turn integer NOT NULL DEFAULT 0;
"""

MIGRATIONS: tuple[Migration, ...] = (
    ("m001_documents_and_chunks", M001_DOCUMENTS_AND_CHUNKS),
    ("m002_lexical_index", M002_LEXICAL_INDEX),
    ("m003_embeddings", M003_EMBEDDINGS),
    ("m004_gaps_and_ask_log", M004_GAPS_AND_ASK_LOG),
    ("m005_chunk_ids", M005_CHUNK_IDS),
    ("m006_embedding_model", M006_EMBEDDING_MODEL),
    ("m007_feedback", M007_FEEDBACK),
    ("m008_ask_log_retrieval", M008_ASK_LOG_RETRIEVAL),
    ("m009_audiences", M009_AUDIENCES),
    ("m010_corpus_counts", M010_CORPUS_COUNTS),
    ("m011_embedding_leases", M011_EMBEDDING_LEASES),
    ("m012_ask_log_conversation", M012_ASK_LOG_CONVERSATION),
)


def _applied(conn: Any) -> set[int]:
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
        return set()
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: Any, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply pending steps in one transaction under the schema's advisory lock; returns the names applied.

    `conn` is a psycopg connection in autocommit mode. Safe to run twice and from several
    processes at once: the applied set is re-read after the lock is taken. Also enables the
    `vector` extension when the server has it (never fails when it does not).
    """
    if len(_applied(conn)) >= len(migrations) and _pgvector_ready(conn):
        return []
    names: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = _applied(conn)
        for version, (name, sql) in enumerate(migrations, start=1):
            if version in done:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            names.append(name)
        _enable_pgvector(conn)
    if names:
        logger.info("applied migrations %s", ", ".join(names))
    return names


def schema_version(conn: Any) -> int:
    applied = _applied(conn)
    return max(applied) if applied else 0


def vector_schema(conn: Any) -> str | None:
    """The schema holding the `vector` extension's type and operators; None when it is not installed."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'vector'"
    ).fetchone()
    return str(row[0]) if row else None


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _pgvector_ready(conn: Any) -> bool:
    """Nothing to do for pgvector: the server lacks it, or the column already exists."""
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if available is None:
        return True
    if vector_schema(conn) is None:
        return False
    return (
        conn.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = 'embeddings' AND column_name = 'vec'"
        ).fetchone()
        is not None
    )


def _enable_pgvector(conn: Any) -> None:
    """Try `CREATE EXTENSION vector` and add the `vec` column; on any failure keep `real[]` only."""
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
        return
    try:
        with conn.transaction():  # a savepoint: a failure here must not undo the migrations
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            schema = vector_schema(conn)
            conn.execute(
                f"ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS vec {quote_ident(str(schema))}.vector"
            )
    except Exception as exc:  # no privilege, broken install: cosine in Python instead
        logger.warning("pgvector unavailable (%s); embeddings stay real[] with cosine in Python", exc)
