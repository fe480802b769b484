"""Readers' routes: example questions from the corpus's headings (their wording and asking: see
tests/test_examples.py), and "helpful / wrong" feedback.

The store methods behind them (`headings`, `add_feedback`, `feedback`) run on SQLite and
PostgreSQL through the backend fixtures of tests/test_store_backends.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_api import ANSWERABLE, KEY, OFF_TOPIC, serve_app
from test_examples import ready_examples
from test_store_backends import backend, doc_and_chunks, open_new, pg_url, store  # noqa: F401

from rag.config import Settings, load_settings
from rag.store import Store, open_store
from rag.store.migrations_sqlite import MIGRATIONS, migrate
from rag.store.sqlite import SqliteStore
from rag.types import AskRecord, Feedback, Usage

# ---------------------------------------------------------------- store (both backends)


def test_store_headings_distinct_sections_with_chunk_counts(store: Store) -> None:  # noqa: F811
    doc, chunks = doc_and_chunks("h1", ["First part.", "Second part.", "Third part."])
    sections = ["Intro", "Limits", "Limits"]
    chunks = [replace(c, section=s) for c, s in zip(chunks, sections, strict=True)]
    store.upsert_document(doc, chunks)
    found = {(h.doc_id, h.section): h.chunks for h in store.headings(10)}
    assert found == {("h1", "Intro"): 1, ("h1", "Limits"): 2}
    assert store.headings(0) == [] and store.headings(-3) == []
    assert len(store.headings(1)) == 1


def test_store_corpus_version_moves_with_every_change_to_the_corpus_only(store: Store) -> None:  # noqa: F811
    empty = store.corpus_version()
    assert store.corpus_version() == empty
    doc, chunks = doc_and_chunks("v1", ["First part.", "Second part."])
    store.upsert_document(doc, chunks)
    ingested = store.corpus_version()
    assert ingested != empty
    store.add_feedback(Feedback(trace_id="t1", verdict="wrong"))  # not the corpus
    assert store.corpus_version() == ingested
    store.upsert_document(doc, [replace(chunks[0], text="First part, changed.")])
    changed = store.corpus_version()
    assert changed not in (empty, ingested)
    store.delete_document("v1")
    assert store.corpus_version() not in (empty, ingested, changed)


def test_store_feedback_round_trip_newest_first_and_filtered(store: Store) -> None:  # noqa: F811
    first = store.add_feedback(Feedback(trace_id="t1", verdict="wrong", note="Outdated.", question="Q?"))
    second = store.add_feedback(Feedback(trace_id="t2", verdict="helpful"))
    assert first.id and second.id and first.id != second.id
    assert first.created_at.startswith("20")
    assert [f.trace_id for f in store.feedback(10)] == ["t2", "t1"]
    assert store.feedback(10, verdict="wrong") == [first]
    assert store.feedback(0) == []


@pytest.mark.parametrize(
    "bad",
    [
        Feedback(trace_id="t", verdict="meh"),  # type: ignore[arg-type]
        Feedback(trace_id="  ", verdict="wrong"),
        Feedback(trace_id="t", verdict="wrong", note="x" * 4001),
    ],
)
def test_store_feedback_rejects_bad_values_and_keeps_nothing(store: Store, bad: Feedback) -> None:  # noqa: F811
    with pytest.raises(ValueError):
        store.add_feedback(bad)
    assert store.feedback(10) == []


def test_store_recent_asks_newest_first_with_retrieval_and_refusal_filter(store: Store) -> None:  # noqa: F811
    def record(trace_id: str, abstained: bool) -> AskRecord:
        return AskRecord(
            trace_id=trace_id,
            question=f"Question {trace_id}?",
            reason="low_retrieval_score" if abstained else "",
            abstained=abstained,
            blocks=(),
            answer_text="",
            citations=(),
            verdicts=(),
            top_score=0.3,
            usage=Usage(),
            retrieved=(("a#c01", 0.31234), ("b#c02", 0.2)),
            reranker="lexical",
            threshold=0.47,
        )

    for trace_id, abstained in (("t1", True), ("t2", False), ("t3", True)):
        store.log_ask(record(trace_id, abstained))
    assert [r["trace_id"] for r in store.recent_asks(10)] == ["t3", "t2", "t1"]
    assert [r["trace_id"] for r in store.recent_asks(10, abstained=True)] == ["t3", "t1"]
    assert [r["trace_id"] for r in store.recent_asks(10, abstained=False)] == ["t2"]
    assert store.recent_asks(1)[0]["retrieval"] == {
        "retrieved": [["a#c01", 0.3123], ["b#c02", 0.2]],
        "reranker": "lexical",
        "threshold": 0.47,
    }
    assert store.ask_log("t1")[0]["retrieval"]["threshold"] == 0.47
    assert store.recent_asks(0) == []


def test_store_feedback_filtered_by_trace(store: Store) -> None:  # noqa: F811
    store.add_feedback(Feedback(trace_id="t1", verdict="wrong"))
    store.add_feedback(Feedback(trace_id="t2", verdict="wrong"))
    store.add_feedback(Feedback(trace_id="t1", verdict="helpful"))
    assert [f.verdict for f in store.feedback(10, trace_id="t1")] == ["helpful", "wrong"]
    assert [f.trace_id for f in store.feedback(10, verdict="wrong", trace_id="t2")] == ["t2"]


def test_sqlite_feedback_migration_keeps_existing_asks(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, MIGRATIONS[:5])
    conn.execute("INSERT INTO ask_log (trace_id, ts, question) VALUES ('old', '2026-01-01', 'Kept?')")
    assert migrate(conn) == [
        "m006_embedding_model",
        "m007_feedback",
        "m008_ask_log_retrieval",
        "m009_audiences",
        "m010_corpus_counts",
        "m011_embedding_leases",
        "m012_ask_log_conversation",
    ]
    assert conn.execute("SELECT question, retrieval FROM ask_log").fetchall() == [("Kept?", "{}")]
    assert conn.execute("SELECT count(*) FROM feedback").fetchone() == (0,)
    conn.close()
    # the store moves the old rows, with main's columns, into its log file (`old-log.db`)
    reopened = SqliteStore(str(path))
    try:
        [row] = reopened.ask_log("old")
        assert (row["question"], row["retrieval"], row["principal"]) == ("Kept?", {}, "")
        assert (tmp_path / "old-log.db").exists()
    finally:
        reopened.close()


# ---------------------------------------------------------------- HTTP


@pytest.fixture
def client(corpus_db: str) -> Iterator[TestClient]:
    with serve_app(corpus_db) as c:
        yield c


def test_examples_route_words_questions_from_indexed_headings(client: TestClient, corpus_db: str) -> None:
    examples = ready_examples(client, limit=4)
    assert len(examples) == 4
    opened = open_store(_settings(corpus_db))
    try:
        indexed = {(h.doc_id, h.section) for h in opened.headings(1000)}
    finally:
        opened.close()
    assert all((e["doc_id"], e["section"]) in indexed for e in examples)
    assert len({e["doc_id"] for e in examples}) == 4
    assert all(e["question"].endswith("?") for e in examples)
    assert client.get("/examples", params={"limit": 4}).json() == {"examples": examples, "pending": False}


def test_examples_route_rejects_out_of_range_limit(client: TestClient) -> None:
    assert client.get("/examples", params={"limit": 0}).status_code == 422
    assert client.get("/examples", params={"limit": 13}).status_code == 422


def test_examples_route_on_empty_store_returns_none(tmp_path: Path) -> None:
    with serve_app(str(tmp_path / "empty.db")) as c:
        assert ready_examples(c) == []


def test_feedback_after_ask_stores_verdict_with_the_logged_question(
    client: TestClient, corpus_db: str
) -> None:
    asked = client.post("/ask", json={"question": ANSWERABLE})
    trace = asked.headers["x-trace-id"]
    response = client.post("/feedback", json={"trace_id": trace, "verdict": "wrong", "note": " Too vague. "})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["trace_id"], body["verdict"], body["note"]) == (trace, "wrong", "Too vague.")
    assert "question" not in body
    opened = open_store(_settings(corpus_db))
    try:
        stored = opened.feedback(50, trace_id=trace)
    finally:
        opened.close()
    assert [(f.id, f.question) for f in stored] == [(body["id"], ANSWERABLE)]


def test_feedback_for_unlogged_trace_keeps_the_question_sent(client: TestClient, corpus_db: str) -> None:
    response = client.post(
        "/feedback", json={"trace_id": "not-logged-1", "verdict": "helpful", "question": OFF_TOPIC}
    )
    assert response.status_code == 201
    opened = open_store(_settings(corpus_db))
    try:
        assert [f.question for f in opened.feedback(10, trace_id="not-logged-1")] == [OFF_TOPIC]
    finally:
        opened.close()


def test_feedback_never_echoes_the_question_logged_under_a_chosen_trace_id(client: TestClient) -> None:
    client.post("/ask", json={"question": ANSWERABLE}, headers={"X-Request-ID": "guessable-1"})
    response = client.post("/feedback", json={"trace_id": "guessable-1", "verdict": "wrong"})
    assert response.status_code == 201
    assert ANSWERABLE not in response.text


@pytest.mark.parametrize(
    "body",
    [
        {"trace_id": "t", "verdict": "maybe"},
        {"trace_id": "", "verdict": "wrong"},
        {"trace_id": "has space", "verdict": "wrong"},
        {"trace_id": "t", "verdict": "wrong", "note": "x" * 2001},
        {"trace_id": "t", "verdict": "wrong", "extra": 1},
        {"verdict": "wrong"},
    ],
)
def test_feedback_bad_body_returns_422_and_stores_nothing(
    client: TestClient, corpus_db: str, body: dict[str, object]
) -> None:
    opened = open_store(_settings(corpus_db))
    try:
        before = len(opened.feedback(1000))
        response = client.post("/feedback", json=body)
        assert response.status_code == 422
        assert response.json()["error"]["type"] == "invalid_request"
        assert len(opened.feedback(1000)) == before
    finally:
        opened.close()


def test_feedback_and_examples_need_the_api_key_when_keys_are_set(corpus_db: str) -> None:
    with serve_app(corpus_db, api_keys=KEY) as c:
        assert c.post("/feedback", json={"trace_id": "t", "verdict": "wrong"}).status_code == 401
        assert c.get("/examples").status_code == 401
        headers = {"Authorization": f"Bearer {KEY}"}
        assert c.get("/examples", headers=headers).status_code == 200


def _settings(db: str) -> Settings:
    return load_settings(db=db, mock=True)
