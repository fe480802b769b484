"""The ask log off the request path (rag.store.asklog), corpus counts kept at ingest, stored stems reused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from test_store_backends import backend, doc_and_chunks, open_new, pg_url, record, store  # noqa: F401

from rag.answer.rerank import CHUNK_TERMS, TERM_CACHE_SIZE, LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.errors import StoreUnavailable
from rag.ingest.indexer import ingest_paths
from rag.language.text import terms
from rag.store import SqliteStore, Store
from rag.store.asklog import AskRow, LogRow, LogWriter

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"


def ask(trace_id: str) -> AskRow:
    return AskRow(record=record(trace_id), ts="2026-01-01T00:00:00+00:00")


class Target:
    """A write function that records each batch; `gate` holds writes back until it is set."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail_unavailable = 0
        self.reject: set[str] = set()

    def __call__(self, rows: Sequence[LogRow]) -> None:
        self.gate.wait(10)
        if self.fail_unavailable:
            self.fail_unavailable -= 1
            raise StoreUnavailable("the database is down")
        ids = [row.record.trace_id for row in rows if isinstance(row, AskRow)]
        if self.reject & set(ids):
            raise ValueError("rejected row")
        self.batches.append(ids)

    @property
    def written(self) -> list[str]:
        return [trace for batch in self.batches for trace in batch]


def test_log_writer_batches_rows_queued_while_a_write_runs() -> None:
    target = Target()
    target.gate.clear()
    writer = LogWriter(target, linger=0.0)
    writer.submit(ask("first"))
    for i in range(300):
        writer.submit(ask(f"t{i}"))
    target.gate.set()
    assert writer.flush(10)
    writer.close()
    assert target.written == ["first", *(f"t{i}" for i in range(300))]
    assert len(target.batches) < 10
    assert writer.written == 301 and writer.dropped == 0


def test_log_writer_close_writes_every_queued_row() -> None:
    target = Target()
    target.gate.clear()
    writer = LogWriter(target, linger=5.0)
    for i in range(50):
        writer.submit(ask(f"t{i}"))
    threading.Timer(0.2, target.gate.set).start()
    writer.close()
    assert target.written == [f"t{i}" for i in range(50)]


def test_log_writer_retries_while_the_database_is_unavailable() -> None:
    target = Target()
    target.fail_unavailable = 3
    writer = LogWriter(target, linger=0.0)
    for i in range(5):
        writer.submit(ask(f"t{i}"))
    assert writer.flush(10)
    writer.close()
    assert target.written == [f"t{i}" for i in range(5)]
    assert writer.dropped == 0


def test_log_writer_drops_only_the_row_the_database_rejects() -> None:
    target = Target()
    target.reject = {"bad"}
    target.gate.clear()
    writer = LogWriter(target, linger=0.0)
    for trace in ("a", "bad", "b"):
        writer.submit(ask(trace))
    target.gate.set()
    writer.close()
    assert target.written == ["a", "b"]
    assert writer.dropped == 1


def test_log_writer_bounds_its_queue() -> None:
    target = Target()
    target.gate.clear()
    writer = LogWriter(target, linger=0.0, max_pending=3)
    for i in range(10):
        writer.submit(ask(f"t{i}"))
    assert writer.dropped >= 1  # at most 3 wait, beside what the blocked write already took
    target.gate.set()
    writer.close()
    assert len(target.written) + writer.dropped == 10


def test_store_log_survives_close_and_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "rag.db")
    first = SqliteStore(path)
    for i in range(200):
        first.log_ask(record(f"t{i}"))
    first.add_gap("Where is the moon?", 0.1, ["a#c01"])
    first.close()
    second = SqliteStore(path)
    try:
        assert all(len(second.ask_log(f"t{i}")) == 1 for i in range(200))
        assert [g.question for g in second.gaps()] == ["Where is the moon?"]
    finally:
        second.close()


def test_store_log_is_written_at_exit_without_close(tmp_path: Path) -> None:
    path = str(tmp_path / "rag.db")
    script = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "from test_store_backends import record\n"
        "from rag.store import SqliteStore\n"
        "store = SqliteStore(sys.argv[1])\n"
        "for i in range(100): store.log_ask(record(f't{i}'))\n"
    )
    subprocess.run([sys.executable, "-c", script, path, str(Path(__file__).parent)], check=True, timeout=60)
    reopened = SqliteStore(path)
    try:
        assert sum(len(reopened.ask_log(f"t{i}")) for i in range(100)) == 100
    finally:
        reopened.close()


def test_sqlite_ask_log_writes_never_touch_the_chunk_database(tmp_path: Path) -> None:
    path = tmp_path / "rag.db"
    lite = SqliteStore(str(path))
    try:
        doc, chunks = doc_and_chunks("guide", ["Alpha text about invoices.", "Beta text about refunds."])
        lite.upsert_document(doc, chunks)
        watcher = sqlite3.connect(path)
        version = watcher.execute("PRAGMA data_version").fetchone()[0]
        for i in range(20):
            lite.log_ask(record(f"t{i}"))
            lite.add_gap(f"question {i}", 0.1, [])
        assert len(lite.ask_log("t7")) == 1
        # data_version moves when another connection commits: the df cache keys on it
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == version
        assert watcher.execute("SELECT count(*) FROM ask_log").fetchone()[0] == 0
        watcher.close()
        assert Path(lite.log_path).name == "rag-log.db" and Path(lite.log_path).exists()
    finally:
        lite.close()


def test_sqlite_log_rows_kept_in_the_chunk_database_move_to_the_log_file(tmp_path: Path) -> None:
    path = tmp_path / "rag.db"
    SqliteStore(str(path)).close()
    old = sqlite3.connect(path)
    old.execute(
        "INSERT INTO ask_log (trace_id, ts, question) VALUES ('old-trace', '2025-01-01T00:00:00+00:00', 'q?')"
    )
    old.execute(
        "INSERT INTO gaps (normalised, question, top_score, first_asked, last_asked)"
        " VALUES ('old q', 'Old q?', 0.1, '2025-01-01', '2025-01-01')"
    )
    old.commit()
    old.close()
    lite = SqliteStore(str(path))
    try:
        assert [row["question"] for row in lite.ask_log("old-trace")] == ["q?"]
        assert [g.question for g in lite.gaps()] == ["Old q?"]
    finally:
        lite.close()


def _counted(conn_store: Store) -> tuple[int, int, int]:
    stats = conn_store.stats()
    return stats.documents, stats.chunks, stats.embeddings


def test_store_counts_kept_at_ingest_match_the_rows(store: Store, open_new) -> None:  # noqa: F811
    texts = ["Alpha about invoices.", "Beta about refunds.", "Gamma about trials."]
    assert _counted(store) == (0, 0, 0)
    doc, chunks = doc_and_chunks("a", texts)
    store.upsert_document(doc, chunks, [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert _counted(store) == (1, 3, 3)
    doc_b, chunks_b = doc_and_chunks("b", texts[:2])
    store.upsert_document(doc_b, chunks_b)
    assert _counted(store) == (2, 5, 3)
    doc, chunks = doc_and_chunks("a", texts[:1])  # re-ingest, fewer chunks, no vectors
    store.upsert_document(doc, chunks)
    assert _counted(store) == (2, 3, 0)
    store.delete_document("b")
    store.delete_document("no-such-document")
    assert _counted(store) == (1, 1, 0)
    assert _counted(open_new()) == (1, 1, 0)  # another replica reads the same row


def test_store_counts_follow_embeddings_put_after_ingest(store: Store, open_new) -> None:  # noqa: F811
    doc, chunks = doc_and_chunks("a", ["Alpha about invoices.", "Beta about refunds.", "Gamma."])
    store.upsert_document(doc, chunks)
    assert [c.chunk_id for c in store.chunks_missing_embeddings("m1")] == [c.chunk_id for c in chunks]
    assert store.put_embeddings("m1", [("a#c00", [1.0, 0.0]), ("a#c01", [0.0, 1.0])]) == 2
    assert _counted(store) == (1, 3, 2)
    # a replaced vector (another model) keeps the count; an unknown id adds nothing
    assert store.put_embeddings("m2", [("a#c00", [0.5, 0.5]), ("nope#c00", [1.0, 1.0])]) == 1
    assert _counted(store) == (1, 3, 2)
    assert [c.chunk_id for c, _ in store.similar([0.5, 0.5], 1, model="m2")] == ["a#c00"]
    assert _counted(open_new()) == (1, 3, 2)
    store.delete_document("a")
    assert _counted(store) == (0, 0, 0)


def test_store_counts_with_groups_count_only_readable_rows(store: Store) -> None:  # noqa: F811
    doc, chunks = doc_and_chunks("open", ["Alpha about invoices."])
    store.upsert_document(doc, chunks, [[1.0, 0.0]])
    doc, chunks = doc_and_chunks("hr", ["Beta about salaries.", "Gamma about leave."])
    store.upsert_document(replace(doc, access=("hr",)), chunks, [[0.0, 1.0], [1.0, 1.0]])
    assert _counted(store) == (2, 3, 3)
    everyone = store.stats(groups=frozenset())
    assert (everyone.documents, everyone.chunks, everyone.embeddings) == (1, 1, 1)
    hr = store.stats(groups=frozenset({"hr"}))
    assert (hr.documents, hr.chunks, hr.embeddings) == (2, 3, 3)
    assert (store.chunk_count(), store.chunk_count(groups=frozenset())) == (3, 1)


def test_pg_bm25_corpus_statistics_equal_the_public_chunks(pg_url: str) -> None:  # noqa: F811
    from rag.store.postgres import PgStore

    pg = PgStore(pg_url)
    try:
        ingest_paths(pg, [CORPUS], settings=load_settings(mock=True))
        with pg.pool.connection() as conn, conn.transaction():
            snapshot = pg._lexical_snapshot(conn)  # the statistics search and term_frequencies use
            count, mean = conn.execute("SELECT count(*), avg(n_tokens) FROM chunks").fetchone()
            assert (snapshot.n_public, snapshot.avgdl) == (count, pytest.approx(float(mean)))
    finally:
        pg.close()


def test_sqlite_stored_stems_equal_the_terms_of_every_chunk(corpus_db: str) -> None:
    lite = SqliteStore(corpus_db)
    try:
        chunks = [c for doc_id in lite.document_hashes() for c in lite.document_chunks(doc_id)]
        stored = lite.chunk_terms([c.chunk_id for c in chunks])
    finally:
        lite.close()
    assert len(stored) == len(chunks)
    for chunk in chunks:
        assert stored[chunk.chunk_id] == frozenset(terms(chunk.text)), chunk.chunk_id


def test_retrieve_scores_candidates_from_stored_stems_without_restemming(corpus_db: str) -> None:
    lite = SqliteStore(corpus_db)
    lite.held_terms = lambda chunks, query_terms: {}  # type: ignore[method-assign]  # the term-set path
    try:
        CHUNK_TERMS.clear()
        computed = CHUNK_TERMS.computed
        first = retrieve(
            "How long do deleted projects stay in the trash?", store=lite, reranker=LexicalReranker()
        )
        assert first and CHUNK_TERMS.computed == computed
        CHUNK_TERMS.clear()
        CHUNK_TERMS.size = 0  # nothing remembered: every candidate is stemmed again, same scores
        again = retrieve(
            "How long do deleted projects stay in the trash?", store=lite, reranker=LexicalReranker()
        )
        assert CHUNK_TERMS.computed > computed
        assert [(s.chunk.chunk_id, s.score) for s in again] == [(s.chunk.chunk_id, s.score) for s in first]
    finally:
        CHUNK_TERMS.size = TERM_CACHE_SIZE
        lite.close()


def test_pg_similar_walks_the_hnsw_index_and_finds_the_exact_neighbours(pg_url: str) -> None:  # noqa: F811
    import numpy as np

    from rag.store.postgres import PgStore, similar_sql

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 8)).astype(np.float32)
    pg = PgStore(pg_url)
    try:
        assert pg._vector_schema is not None, "the test server must have pgvector (tests/pg_server.py)"
        for d in range(0, 300, 50):
            doc, chunks = doc_and_chunks(f"d{d:03d}", [f"text {i}" for i in range(d, d + 50)])
            pg.upsert_document(doc, chunks, vectors[d : d + 50].tolist())
        query = rng.normal(size=8).astype(np.float32)
        with pg.pool.connection() as conn, conn.transaction():
            conn.execute("ANALYZE embeddings")  # row estimates as a loaded table would have them
            conn.execute("SET LOCAL enable_seqscan = off")
            literal = "[" + ",".join(repr(float(x)) for x in query) + "]"
            plan = conn.execute("EXPLAIN " + similar_sql(pg._vector_schema, 8), {"q": literal, "limit": 5})
            text = "\n".join(row[0] for row in plan.fetchall())
            indexes = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'embeddings'"
            ).fetchall()
            assert "embeddings_hnsw_8" in text, (text, indexes)
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        exact = np.argsort(-(unit @ (query / np.linalg.norm(query))))[:5]
        expected = [f"d{(i // 50) * 50:03d}#c{i % 50:02d}" for i in exact]
        assert [c.chunk_id for c, _ in pg.similar(query.tolist(), 5)] == expected
        assert pg.similar([0.0] * 8, 5) == []
    finally:
        pg.close()


def test_pg_similar_without_pgvector_computes_cosine_in_python(pg_url: str) -> None:  # noqa: F811
    from rag.store.postgres import PgStore

    pg = PgStore(pg_url)
    try:
        pg._vector_schema = None  # as on a server without the extension: real[] and numpy
        doc, chunks = doc_and_chunks("guide", ["north", "east", "south"])
        pg.upsert_document(doc, chunks, [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.1]])
        found = pg.similar([0.9, 0.1], 2)
        assert [c.chunk_id for c, _ in found] == ["guide#c00", "guide#c01"]
        assert found[0][1] == pytest.approx(0.9939, abs=1e-3)
        assert pg.similar([0.0, 0.0], 2) == []
    finally:
        pg.close()


def test_pg_stored_stems_equal_the_terms_of_the_chunks_returned(pg_url: str) -> None:  # noqa: F811
    from rag.store.postgres import PgStore

    pg = PgStore(pg_url)
    try:
        ingest_paths(pg, [CORPUS], settings=load_settings(mock=True))
        chunks = [c for doc_id in pg.document_hashes() for c in pg.document_chunks(doc_id)]
        doc, extra = doc_and_chunks("names", ["O'Neil signs the Smiths\u2019 forms.", "Plain words only."])
        pg.upsert_document(doc, extra)
        stored = pg.chunk_terms([c.chunk_id for c in [*chunks, *extra]])
    finally:
        pg.close()
    assert "names#c00" not in stored and "names#c01" in stored
    assert len(stored) >= len(chunks) // 2
    for chunk in [*chunks, *extra]:
        if chunk.chunk_id in stored:
            assert stored[chunk.chunk_id] == frozenset(terms(chunk.text)), chunk.chunk_id


def test_store_ask_log_records_a_follow_ups_conversation_and_turn(store: Store) -> None:  # noqa: F811
    store.log_ask(replace(record("conv-t2"), conversation_id="c-42", turn=2))
    store.log_ask(record("single"))
    [row] = store.ask_log("conv-t2")
    assert (row["conversation_id"], row["turn"]) == ("c-42", 2)
    [row] = store.ask_log("single")
    assert (row["conversation_id"], row["turn"]) == ("", 0)
