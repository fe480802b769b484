"""SQLite schema as an ordered list of named steps, applied once each via `PRAGMA user_version`.

A database at version N has had exactly `MIGRATIONS[:N]` applied. Steps are never edited
after release; a schema change is a new `mNNN_...` function appended to `MIGRATIONS`.
Each step runs inside the caller's transaction, so it must not COMMIT (no `executescript`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from rag.store.base import fts_length
from rag.store.ids import text_hash

Migration = Callable[[sqlite3.Connection], None]


def m001_documents_and_chunks(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE documents (
            doc_id       TEXT PRIMARY KEY,
            title        TEXT NOT NULL,
            url          TEXT NOT NULL DEFAULT '',
            updated_at   TEXT,
            source_path  TEXT NOT NULL DEFAULT '',
            content_hash TEXT NOT NULL DEFAULT '',
            text         TEXT NOT NULL,
            ingested_at  TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX documents_source_path ON documents(source_path)")
    # `id` is an explicit INTEGER PRIMARY KEY so the FTS rowid that points at it survives VACUUM;
    # `chunk_id` is the natural, unique key everything outside the store uses.
    conn.execute(
        """
        CREATE TABLE chunks (
            id          INTEGER PRIMARY KEY,
            chunk_id    TEXT NOT NULL UNIQUE,
            doc_id      TEXT NOT NULL,
            ord         INTEGER NOT NULL,
            title       TEXT NOT NULL,
            section     TEXT NOT NULL DEFAULT '',
            text        TEXT NOT NULL,
            start_char  INTEGER NOT NULL,
            end_char    INTEGER NOT NULL,
            page        INTEGER,
            updated_at  TEXT,
            url         TEXT NOT NULL DEFAULT '',
            terms       TEXT NOT NULL DEFAULT ''
        )
        """
    )
    conn.execute("CREATE INDEX chunks_doc ON chunks(doc_id, ord)")


def m002_lexical_index(conn: sqlite3.Connection) -> None:
    # Columns hold space-joined stemmed terms (rag.language.text.terms), so FTS5 matches exactly the
    # words the reranker scores; rowid = chunks.id.
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, title, section, tokenize='unicode61')")
    conn.execute("CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row')")


def m003_embeddings(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE embeddings (
            chunk_id TEXT PRIMARY KEY,
            dim      INTEGER NOT NULL,
            vector   BLOB NOT NULL
        )
        """
    )


def m004_gaps_and_ask_log(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE gaps (
            normalised  TEXT PRIMARY KEY,
            question    TEXT NOT NULL,
            top_score   REAL NOT NULL,
            closest     TEXT NOT NULL DEFAULT '[]',
            count       INTEGER NOT NULL DEFAULT 1,
            first_asked TEXT NOT NULL,
            last_asked  TEXT NOT NULL
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE ask_log (
            trace_id   TEXT NOT NULL,
            ts         TEXT NOT NULL,
            question   TEXT NOT NULL,
            reason     TEXT NOT NULL DEFAULT '',
            abstained  INTEGER NOT NULL DEFAULT 0,
            blocks     TEXT NOT NULL DEFAULT '[]',
            answer     TEXT NOT NULL DEFAULT '',
            citations  TEXT NOT NULL DEFAULT '[]',
            verdicts   TEXT NOT NULL DEFAULT '[]',
            top_score  REAL NOT NULL DEFAULT 0,
            usage      TEXT NOT NULL DEFAULT '{}',
            timings    TEXT NOT NULL DEFAULT '{}'
        )
        """
    )
    conn.execute("CREATE INDEX ask_log_trace ON ask_log(trace_id)")


def m005_chunk_ids(conn: sqlite3.Connection) -> None:
    # Every chunk id ever issued, with a fingerprint of the text it named: an id whose chunk is
    # gone answers 410 Gone, and a changed text never takes an id that named other words.
    conn.execute(
        """
        CREATE TABLE chunk_ids (
            chunk_id  TEXT PRIMARY KEY,
            doc_id    TEXT NOT NULL,
            text_hash TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX chunk_ids_doc ON chunk_ids(doc_id)")
    rows = conn.execute("SELECT chunk_id, doc_id, text FROM chunks").fetchall()
    conn.executemany(
        "INSERT INTO chunk_ids (chunk_id, doc_id, text_hash) VALUES (?, ?, ?)",
        [(chunk_id, doc_id, text_hash(text)) for chunk_id, doc_id, text in rows],
    )


def m006_embedding_model(conn: sqlite3.Connection) -> None:
    # The model that made each vector: vectors of two models are never compared, and a model change
    # re-embeds. Vectors stored before this step have model '' (unknown), so they are re-embedded.
    conn.execute("ALTER TABLE embeddings ADD COLUMN model TEXT NOT NULL DEFAULT ''")
    conn.execute("CREATE INDEX embeddings_model_dim ON embeddings(model, dim)")


def m007_feedback(conn: sqlite3.Connection) -> None:
    # Readers' "helpful / wrong" verdicts, each tied to the trace id of the answer it judges.
    conn.execute(
        """
        CREATE TABLE feedback (
            id         INTEGER PRIMARY KEY,
            trace_id   TEXT NOT NULL,
            created_at TEXT NOT NULL,
            verdict    TEXT NOT NULL CHECK (verdict IN ('helpful', 'wrong')),
            note       TEXT NOT NULL DEFAULT '',
            question   TEXT NOT NULL DEFAULT ''
        )
        """
    )
    conn.execute("CREATE INDEX feedback_trace ON feedback(trace_id)")


def m008_ask_log_retrieval(conn: sqlite3.Connection) -> None:
    # What retrieval saw for each ask: {"retrieved": [[chunk_id, score], ...], "reranker", "threshold"}.
    conn.execute("ALTER TABLE ask_log ADD COLUMN retrieval TEXT NOT NULL DEFAULT '{}'")


def m009_audiences(conn: sqlite3.Connection) -> None:
    # Who may read a document (rag.access stored form, '' = everyone), copied onto its chunks so
    # every chunk query filters without a join. Restricted chunks are indexed in their own FTS
    # table: chunks_fts (and so FTS5's BM25 statistics) holds only documents everyone may read,
    # and a caller's scores never depend on documents hidden from them. `n_tokens` is a chunk's
    # FTS5 length (all columns), for scoring restricted chunks with the same BM25 in Python.
    conn.execute("ALTER TABLE documents ADD COLUMN access TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE chunks ADD COLUMN access TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE chunks ADD COLUMN n_tokens INTEGER NOT NULL DEFAULT 0")
    conn.execute("CREATE INDEX chunks_access ON chunks(access, n_tokens)")
    conn.execute("CREATE INDEX documents_access ON documents(access)")
    conn.execute(
        "CREATE VIRTUAL TABLE restricted_fts USING fts5(terms, title, section, tokenize='unicode61')"
    )
    # per audience, the restricted chunks holding each FTS token: a caller's document frequencies
    # are chunks_fts's (public) plus the rows of the audiences it may read
    conn.execute(
        "CREATE TABLE restricted_terms (term TEXT NOT NULL, access TEXT NOT NULL, df INTEGER NOT NULL,"
        " PRIMARY KEY (term, access)) WITHOUT ROWID"
    )
    conn.execute("ALTER TABLE chunk_ids ADD COLUMN access TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE ask_log ADD COLUMN principal TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE gaps ADD COLUMN principal TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE feedback ADD COLUMN principal TEXT NOT NULL DEFAULT ''")
    rows = conn.execute("SELECT id, terms, title, section FROM chunks").fetchall()
    conn.executemany(
        "UPDATE chunks SET n_tokens = ? WHERE id = ?",
        [(fts_length(body, title, section), pk) for pk, body, title, section in rows],
    )


def m010_corpus_counts(conn: sqlite3.Connection) -> None:
    # One row of corpus counts, kept by every ingest transaction (`SqlStore._count_delta`), so no
    # request counts rows. `tokens` is the PostgreSQL BM25 length sum (unused here, kept at 0);
    # `version` grows with every committed change to the corpus.
    conn.execute(
        """
        CREATE TABLE corpus_counts (
            id         INTEGER PRIMARY KEY CHECK (id = 1),
            documents  INTEGER NOT NULL,
            chunks     INTEGER NOT NULL,
            embeddings INTEGER NOT NULL,
            tokens     INTEGER NOT NULL DEFAULT 0,
            version    INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    conn.execute(
        "INSERT INTO corpus_counts (id, documents, chunks, embeddings) SELECT 1,"
        " (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), (SELECT count(*) FROM embeddings)"
    )


def m011_embedding_leases(conn: sqlite3.Connection) -> None:
    # Who embeds the chunks lacking a model's vectors, until when (epoch seconds): one holder per model
    # at a time, so two server processes never embed the same chunks (rag.embeddings.backfill).
    conn.execute(
        "CREATE TABLE embedding_leases (model TEXT PRIMARY KEY, holder TEXT NOT NULL, expires REAL NOT NULL)"
    )


def m012_ask_log_conversation(conn: sqlite3.Connection) -> None:
    # A follow-up's conversation: the client's id and the 1-based turn ('' and 0 for a single question).
    conn.execute("ALTER TABLE ask_log ADD COLUMN conversation_id TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE ask_log ADD COLUMN turn INTEGER NOT NULL DEFAULT 0")


MIGRATIONS: tuple[Migration, ...] = (
    m001_documents_and_chunks,
    m002_lexical_index,
    m003_embeddings,
    m004_gaps_and_ask_log,
    m005_chunk_ids,
    m006_embedding_model,
    m007_feedback,
    m008_ask_log_retrieval,
    m009_audiences,
    m010_corpus_counts,
    m011_embedding_leases,
    m012_ask_log_conversation,
)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the pending steps in one IMMEDIATE transaction; returns the names applied (maybe none).

    `conn` must be in autocommit mode (`isolation_level=None`). Safe when several processes
    open the same file at once: the version is re-read under the write lock.
    """
    if schema_version(conn) >= len(migrations):
        return []
    applied: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(conn)
        for step in migrations[version:]:
            step(conn)
            applied.append(step.__name__)
        conn.execute(f"PRAGMA user_version = {len(migrations):d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
