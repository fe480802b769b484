import sqlite3
import threading
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.config import load_settings
from rag.errors import NotFound
from rag.ingest.chunking import chunk_document
from rag.store import SqliteStore, open_store
from rag.store.migrations_sqlite import MIGRATIONS, migrate, schema_version
from rag.store.sqlite import fts_query
from rag.types import AskRecord, Chunk, Citation, Document, Usage


def _doc(doc_id: str, text: str, title: str = "Guide", **kw: object) -> tuple[Document, list[Chunk]]:
    doc = Document(doc_id=doc_id, title=title, text=text, source_path=f"/src/{doc_id}.md", **kw)  # type: ignore[arg-type]
    return doc, chunk_document(doc, min_tokens=5, max_tokens=30)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "store.db"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def search_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path_factory.mktemp("search") / "s.db"))
    s.upsert_document(*_doc("a", "## Trash\n\nDeleted projects stay in the trash for 30 days."))
    s.upsert_document(*_doc("b", "## Trial\n\nThe free trial lasts 90 days for every project."))
    yield s
    s.close()


def test_migrate_fresh_database_reaches_latest_version_and_reopen_applies_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    SqliteStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema_version(conn) == len(MIGRATIONS)
    assert migrate(conn) == []
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_migrate_partial_database_applies_only_pending_steps(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "p.db"), isolation_level=None)
    assert migrate(conn, MIGRATIONS[:2]) == ["m001_documents_and_chunks", "m002_lexical_index"]
    assert migrate(conn) == [m.__name__ for m in MIGRATIONS[2:]]
    conn.close()


def test_upsert_document_roundtrips_document_and_chunks(store: SqliteStore) -> None:
    doc, chunks = _doc(
        "d1", "## A\n\nFirst sentence here. Second one.", url="https://u", updated_at=date(2026, 5, 1)
    )
    store.upsert_document(doc, chunks)
    assert store.get_document("d1") == doc
    assert store.document_chunks("d1") == chunks
    assert store.get_chunk(chunks[0].chunk_id) == chunks[0]
    assert store.document_hashes() == {"d1": ("", "/src/d1.md")}


def test_upsert_document_again_replaces_old_chunks_and_index(store: SqliteStore) -> None:
    store.upsert_document(*_doc("d1", "Zebras graze quietly. " * 20))
    store.upsert_document(*_doc("d1", "Giraffes eat leaves."))
    assert [c.text for c in store.document_chunks("d1")] == ["Giraffes eat leaves."]
    assert store.search(["zebra"], 10) == []
    assert store.stats().chunks == 1


def test_upsert_document_failing_midway_keeps_previous_version(store: SqliteStore) -> None:
    doc, chunks = _doc("d1", "Original text stays.")
    store.upsert_document(doc, chunks)
    new_doc = Document(doc_id="d1", title="Guide", text="New text. More text.")
    duplicate = [chunks[0], chunks[0]]  # same chunk_id twice violates UNIQUE after the delete ran
    with pytest.raises(sqlite3.IntegrityError):
        store.upsert_document(new_doc, duplicate)
    assert store.get_document("d1").text == "Original text stays."
    assert [c.text for c in store.document_chunks("d1")] == ["Original text stays."]


def test_delete_document_removes_chunks_embeddings_and_index(store: SqliteStore) -> None:
    doc, chunks = _doc("d1", "Alpha beta gamma.")
    store.upsert_document(doc, chunks, [[1.0, 0.0]])
    store.delete_document("d1")
    assert store.stats().documents == store.stats().chunks == store.stats().embeddings == 0
    assert store.search(["alpha"], 5) == []
    with pytest.raises(NotFound):
        store.get_document("d1")


def test_get_unknown_ids_raise_not_found_with_the_id(store: SqliteStore) -> None:
    with pytest.raises(NotFound, match="'nope#c00'"):
        store.get_chunk("nope#c00")
    with pytest.raises(NotFound):
        store.document_chunks("nope")


def test_get_chunks_keeps_requested_order_and_skips_unknown(store: SqliteStore) -> None:
    doc, chunks = _doc("d1", "## A\n\nOne.\n\n## B\n\nTwo.")
    store.upsert_document(doc, chunks)
    got = store.get_chunks(["d1#c01", "missing", "d1#c00"])
    assert [c.chunk_id for c in got] == ["d1#c01", "d1#c00"]


def test_search_ranks_chunk_with_query_terms_first(search_store: SqliteStore) -> None:
    results = search_store.search(["delet", "trash"], 10)
    assert [c.doc_id for c, _ in results] == ["a"]
    assert results[0][1] > 0


def test_search_matches_section_and_title_columns(search_store: SqliteStore) -> None:
    assert [c.doc_id for c, _ in search_store.search(["trial"], 10)] == ["b"]


def test_search_empty_or_punctuation_only_terms_returns_empty(search_store: SqliteStore) -> None:
    assert search_store.search([], 10) == []
    assert search_store.search(['"', "*", "()"], 10) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=8))
def test_fts_query_arbitrary_text_never_raises_and_quotes_every_term(words: list[str]) -> None:
    query = fts_query(words)
    assert isinstance(query, str)
    for phrase in filter(None, query.split(" OR ")):
        assert phrase.startswith('"') and phrase.endswith('"') and '"' not in phrase[1:-1]


_FTS_SYNTAX = st.sampled_from(
    ['"', "*", "AND", "OR", "NOT", "NEAR", "(", ")", ":", "^", "-", "+", "{", "}", "\x00"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(), _FTS_SYNTAX, st.lists(_FTS_SYNTAX).map("".join)), max_size=8))
def test_search_fts_syntax_in_terms_never_raises(search_store: SqliteStore, words: list[str]) -> None:
    assert isinstance(search_store.search(words, 5), list)


def test_term_frequencies_counts_chunks_per_term_and_zero_for_unknown(search_store: SqliteStore) -> None:
    assert search_store.term_frequencies(["day", "trash", "absent", "o'neil"]) == {
        "day": 2,
        "trash": 1,
        "absent": 0,
        "o'neil": 0,
    }


def test_term_frequencies_sees_writes_from_another_connection(store: SqliteStore) -> None:
    assert store.term_frequencies(["walrus"]) == {"walrus": 0}
    other = SqliteStore(store.path)
    other.upsert_document(*_doc("w", "A walrus sleeps."))
    assert store.term_frequencies(["walrus"]) == {"walrus": 1}
    store.delete_document("w")
    assert store.term_frequencies(["walrus"]) == {"walrus": 0}
    other.close()


def test_similar_returns_nearest_by_cosine(store: SqliteStore) -> None:
    doc, chunks = _doc("d1", "## A\n\nNorth.\n\n## B\n\nEast.\n\n## C\n\nSouth-east.")
    store.upsert_document(doc, chunks, [[0.0, 1.0], [1.0, 0.0], [0.7, -0.7]])
    got = store.similar([2.0, 0.1], 2)
    assert [c.chunk_id for c, _ in got] == ["d1#c01", "d1#c02"]
    assert got[0][1] == pytest.approx(0.9988, abs=1e-3)


def test_similar_sees_vectors_written_after_first_query(store: SqliteStore) -> None:
    assert store.similar([1.0, 0.0], 3) == []
    store.upsert_document(*_doc("d1", "Only."), [[1.0, 0.0]])  # type: ignore[call-arg]
    assert [c.chunk_id for c, _ in store.similar([1.0, 0.0], 3)] == ["d1#c00"]


def test_upsert_document_rejects_embedding_count_mismatch(store: SqliteStore) -> None:
    doc, chunks = _doc("d1", "One. Two.")
    with pytest.raises(ValueError):
        store.upsert_document(doc, chunks, [[1.0], [1.0], [1.0]])


def test_add_gap_same_question_normalised_counts_up(store: SqliteStore) -> None:
    store.add_gap("What is the capital of Australia?", 0.1, ["a#c00"])
    store.add_gap("what is the capital of australia", 0.2, ["b#c01"])
    store.add_gap("Other?", 0.0, [])
    gaps = store.gaps()
    assert [(g.count, g.top_score, g.closest) for g in gaps] == [(2, 0.2, ("b#c01",)), (1, 0.0, ())]


def test_log_ask_stores_blocks_and_citations_for_later_resolution(store: SqliteStore) -> None:
    citation = Citation(n=1, chunk_id="a#c00", title="T", url="", cited_text="x", start=0, end=1)
    record = AskRecord(
        trace_id="t1",
        question="q?",
        reason="",
        abstained=False,
        blocks=((1, "a#c00"), (2, "b#c03")),
        answer_text="x [1]",
        citations=(citation,),
        verdicts=("ok",),
        top_score=0.8,
        usage=Usage(input_tokens=3),
        timings={"total": 1.5},
    )
    store.log_ask(record)
    (row,) = store.ask_log("t1")
    assert row["blocks"] == [[1, "a#c00"], [2, "b#c03"]]
    assert row["citations"][0]["chunk_id"] == "a#c00"
    assert row["usage"]["input_tokens"] == 3 and row["abstained"] is False


def test_open_store_creates_parent_folder_for_sqlite(tmp_path: Path) -> None:
    settings = load_settings(db=str(tmp_path / "deep" / "x.db"))
    store = open_store(settings)
    assert store.backend == "sqlite" and (tmp_path / "deep" / "x.db").exists()
    store.close()


def test_store_concurrent_writer_and_readers_never_fail(store: SqliteStore) -> None:
    errors: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        try:
            for i in range(60):
                store.upsert_document(*_doc(f"w{i % 7}", f"Writer text number {i}. Shared words here."))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def read() -> None:
        try:
            while not stop.is_set():
                store.search(["writer", "share"], 10)
                store.term_frequencies(["writer"])
                store.stats()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert store.stats().documents == 7
