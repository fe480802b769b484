"""The Store suite, run against SQLite and PostgreSQL, plus backend agreement and multi-replica tests.

PostgreSQL tests run on a server with pgvector: RAG_TEST_DATABASE_URL when it has it, else the
PostgreSQL 16 of the `pgserver` wheel, started once per session (tests/pg_server.py); without
either they skip with the reason. Each test gets its own schema.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from faults import kill_ingest_after
from serving import free_port

from rag.answer.pipeline import build_pipeline
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.errors import Gone, NotFound, StoreUnavailable
from rag.ingest.indexer import ingest_paths
from rag.language.text import terms
from rag.store import SqliteStore, Store, open_store
from rag.types import AskRecord, Chunk, Document, Feedback, StoreStats, Usage

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
GOLDEN = ROOT / "fixtures" / "eval" / "golden.jsonl"


StoreFactory = Callable[[], Store]


def schema_url(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema},public')}"


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A URL whose search_path is a fresh, empty schema, dropped after the test (tests/pg_server.py)."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield schema_url(pg_server_url, schema)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_new(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens another store instance on the same database (each call is a new "replica")."""
    opened: list[Store] = []
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        from rag.store.postgres import PgStore

        def make() -> Store:
            store = PgStore(url, max_size=6)
            opened.append(store)
            return store
    else:
        path = str(tmp_path / "backend.db")

        def make() -> Store:
            store = SqliteStore(path)
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_new: StoreFactory) -> Store:
    return open_new()


def doc_and_chunks(doc_id: str, texts: list[str], *, title: str = "Handbook") -> tuple[Document, list[Chunk]]:
    body = "\n\n".join(texts)
    doc = Document(
        doc_id=doc_id, title=title, text=body, source_path=f"{doc_id}.md", content_hash=f"h-{len(body)}"
    )
    chunks, start = [], 0
    for i, text in enumerate(texts):
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}#c{i:02d}",
                doc_id=doc_id,
                title=title,
                section=f"Part {i}",
                text=text,
                updated_at=date(2026, 5, 1),
                url=f"https://example.com/{doc_id}",
                start_char=start,
                end_char=start + len(text),
            )
        )
        start += len(text) + 2
    return doc, chunks


def record(trace_id: str) -> AskRecord:
    return AskRecord(
        trace_id=trace_id,
        question="How long is the trial?",
        reason="",
        abstained=False,
        blocks=((1, "pricing#c01"),),
        answer_text="Ninety days [1].",
        citations=(),
        verdicts=("ok",),
        top_score=0.8,
        usage=Usage(input_tokens=12, output_tokens=3),
        timings={"retrieve": 1.5},
    )


# --- the Store contract ------------------------------------------------------------------------------


def test_store_upsert_then_get_returns_document_and_chunks_in_order(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["Alpha text about invoices.", "Beta text about refunds."])
    store.upsert_document(doc, chunks)
    assert store.get_document("guide") == doc
    assert store.document_chunks("guide") == chunks
    assert store.get_chunk("guide#c01") == chunks[1]
    assert store.document_hashes() == {"guide": (doc.content_hash, "guide.md")}


def test_store_upsert_again_replaces_chunks_without_leftovers(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["old zebra text", "old walrus text", "old heron text"]))
    doc, chunks = doc_and_chunks("guide", ["new giraffe text"])
    store.upsert_document(doc, chunks)
    assert store.document_chunks("guide") == [replace(chunks[0], chunk_id="guide#c00.v2")]
    assert store.search(["zebra"], 10) == []
    assert store.term_frequencies(terms("walrus giraffe")) == {"walrus": 0, "giraff": 1}
    assert store.stats().chunks == 1


def test_store_delete_document_removes_it_and_its_index_entries(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["penguins nest on ice"]))
    store.delete_document("guide")
    with pytest.raises(NotFound):
        store.get_document("guide")
    assert store.search(["penguin"], 5) == []
    assert store.term_frequencies(["penguin"]) == {"penguin": 0}
    assert store.stats().documents == 0


def test_store_unknown_ids_raise_not_found_and_get_chunks_skips_them(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["one", "two"])
    store.upsert_document(doc, chunks)
    for call in (
        lambda: store.get_document("nope"),
        lambda: store.document_chunks("nope"),
        lambda: store.get_chunk("nope#c00"),
    ):
        with pytest.raises(NotFound):
            call()
    assert store.get_chunks(["guide#c01", "nope", "guide#c00"]) == [chunks[1], chunks[0]]


def test_store_search_ranks_the_chunk_with_more_query_terms_first(store: Store) -> None:
    texts = [
        "Refunds are issued within 14 days of a cancelled subscription.",
        "The office kitchen is cleaned every Friday.",
        "Subscription invoices list every seat.",
    ]
    store.upsert_document(*doc_and_chunks("guide", texts))
    found = store.search(terms("refund for a cancelled subscription"), 10)
    assert [c.chunk_id for c, _ in found] == ["guide#c00", "guide#c02"]
    assert found[0][1] > found[1][1] > 0


def test_store_search_reuses_its_chunks_until_a_write_of_this_store_moves_the_version(store: Store) -> None:
    """Search keeps the Chunk values it returned for the corpus version it read; an edit or a delete
    (even one whose new rows take the same row keys) is seen by the next search."""
    store.upsert_document(*doc_and_chunks("guide", ["The harbour gauge reads quarterly."]))
    first = store.search(terms("harbour gauge"), 5)
    again = store.search(terms("harbour gauge"), 5)
    assert [c.text for c, _ in first] == ["The harbour gauge reads quarterly."]
    assert again[0][0] is first[0][0]  # served from the cache, not rebuilt from a row
    for text in ("The harbour gauge reads hourly.", "The harbour gauge reads daily."):
        store.upsert_document(*doc_and_chunks("guide", [text]))  # delete + insert: keys may be reused
        found = store.search(terms("harbour gauge"), 5)
        assert [(c.chunk_id, c.text) for c, _ in found] == [
            (c.chunk_id, c.text) for c in store.document_chunks("guide")
        ]
        assert [c.text for c, _ in found] == [text]
    store.delete_document("guide")
    assert store.search(terms("harbour gauge"), 5) == []


def test_store_search_chunks_follow_another_replica_and_another_writer_process(
    backend: str, open_new: StoreFactory, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A replica's cached chunks are dropped when another instance in this process, or `rag ingest`
    in another process, commits: the corpus version they are keyed by is in the database."""
    if backend == "postgres":
        env = {**os.environ, "MOCK": "1", "RAG_DATABASE_URL": request.getfixturevalue("pg_url")}
    else:
        env = {**os.environ, "MOCK": "1", "RAG_DB": str(tmp_path / "backend.db")}
    env.pop("RAG_DATABASE_URL" if backend == "sqlite" else "RAG_DB", None)
    reader, writer = open_new(), open_new()
    folder = tmp_path / "docs"
    folder.mkdir()
    page = folder / "tide.md"

    def ingest(text: str | None) -> None:
        if text is None:
            page.unlink()
        else:
            page.write_text(f"# Tide tables\n\n{text}\n")
        subprocess.run(
            [sys.executable, "-m", "rag", "ingest", "--prune", str(folder)],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )

    def texts() -> list[str]:
        return [c.text for c, _ in reader.search(terms("harbour gauge"), 5)]

    ingest("The harbour gauge reads hourly.")
    assert texts() == ["The harbour gauge reads hourly."]
    assert texts() == ["The harbour gauge reads hourly."]  # cached now
    ingest("The harbour gauge reads daily.")
    assert texts() == ["The harbour gauge reads daily."]
    ingest(None)
    assert texts() == []
    writer.upsert_document(*doc_and_chunks("other", ["The harbour gauge reads quarterly."]))
    assert texts() == ["The harbour gauge reads quarterly."]
    writer.upsert_document(*doc_and_chunks("other", ["The harbour gauge reads weekly."]))
    assert texts() == ["The harbour gauge reads weekly."]
    writer.delete_document("other")
    assert texts() == []


def test_store_search_odd_input_never_raises(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["plain text about quotas"]))
    odd = ["'", '"', "a:*", "!x", "&", "|", "(", "o'neil", "\x00", "NEAR", "", "quota", "ünïcode"]
    assert [c.chunk_id for c, _ in store.search(odd, 5)] == ["guide#c00"]
    assert store.search([], 5) == []
    assert store.search(["quota"], 0) == []


def test_store_term_frequencies_count_chunks_containing_each_term(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("a", ["quota quota limit", "limit only"]))
    store.upsert_document(*doc_and_chunks("b", ["nothing relevant"]))
    assert store.term_frequencies(["quota", "limit", "absent"]) == {"quota": 1, "limit": 2, "absent": 0}


def test_store_similar_returns_nearest_by_cosine(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["north", "east", "south"])
    store.upsert_document(doc, chunks, [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.1]])
    found = store.similar([0.9, 0.1], 2)
    assert [c.chunk_id for c, _ in found] == ["guide#c00", "guide#c01"]
    assert found[0][1] == pytest.approx(0.9939, abs=1e-3)
    assert store.stats().embeddings == 3
    assert store.similar([0.0, 0.0], 2) == []


def test_store_gaps_count_repeats_and_order_by_count(store: Store) -> None:
    store.add_gap("What is the capital of Australia?", 0.1, ["a#c01"])
    store.add_gap("Who won the 1998 cup?", 0.2, ["b#c02", "c#c03"])
    store.add_gap("what is the capital of australia", 0.15, ["a#c02"])
    gaps = store.gaps()
    assert [(g.question, g.count, g.closest) for g in gaps] == [
        ("what is the capital of australia", 2, ("a#c02",)),
        ("Who won the 1998 cup?", 1, ("b#c02", "c#c03")),
    ]
    assert gaps[0].top_score == pytest.approx(0.15)
    assert gaps[0].asked_at.startswith(str(date.today().year))
    assert len(store.gaps(limit=1)) == 1


def test_store_log_ask_round_trips_json_columns(store: Store) -> None:
    store.log_ask(record("trace-1"))
    rows = store.ask_log("trace-1")  # type: ignore[attr-defined]
    assert len(rows) == 1
    row = rows[0]
    assert (row["question"], row["abstained"], row["blocks"], row["verdicts"]) == (
        "How long is the trial?",
        False,
        [[1, "pricing#c01"]],
        ["ok"],
    )
    assert row["usage"]["input_tokens"] == 12 and row["timings"] == {"retrieve": 1.5}


def test_store_stats_counts_documents_chunks_and_backend(store: Store, backend: str) -> None:
    store.upsert_document(*doc_and_chunks("a", ["one", "two"]))
    store.upsert_document(*doc_and_chunks("b", ["three"]))
    stats = store.stats()
    assert (stats.documents, stats.chunks, stats.embeddings, stats.backend) == (2, 3, 0, backend)


# --- edge cases: every method behaves the same on both backends ------------------------------------


@pytest.mark.parametrize("limit", [0, -1, -50])
def test_store_non_positive_limits_return_nothing(store: Store, limit: int) -> None:
    doc, chunks = doc_and_chunks("guide", ["quota text", "more quota text"])
    store.upsert_document(doc, chunks, [[1.0, 0.0], [0.0, 1.0]])
    store.add_gap("Where is the moon?", 0.1, [])
    assert store.search(["quota"], limit) == []
    assert store.similar([1.0, 0.0], limit) == []
    assert store.gaps(limit) == []


def test_store_limits_above_the_cap_return_everything_available(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["quota text", "more quota text"])
    store.upsert_document(doc, chunks, [[1.0, 0.0], [0.0, 1.0]])
    store.add_gap("Where is the moon?", 0.1, [])
    assert len(store.search(["quota"], 10**9)) == 2
    assert len(store.similar([1.0, 0.0], 10**9)) == 2
    assert len(store.gaps(10**9)) == 1


def test_store_limit_one_returns_the_best_only(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["quota quota quota", "quota once", "nothing"])
    store.upsert_document(doc, chunks, [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    store.add_gap("asked twice", 0.1, [])
    store.add_gap("asked twice", 0.1, [])
    store.add_gap("asked once", 0.1, [])
    assert [c.chunk_id for c, _ in store.search(["quota"], 1)] == ["guide#c00"]
    assert [c.chunk_id for c, _ in store.similar([0.0, 1.0], 1)] == ["guide#c02"]
    assert [g.question for g in store.gaps(1)] == ["asked twice"]


def test_store_empty_store_answers_every_read_without_error(store: Store, backend: str) -> None:
    assert store.stats() == StoreStats(documents=0, chunks=0, embeddings=0, backend=backend)
    assert store.document_hashes() == {}
    assert store.search(["anything"], 5) == []
    assert store.term_frequencies(["anything"]) == {"anything": 0}
    assert store.similar([1.0, 0.0], 5) == []
    assert store.get_chunks(["a#c00"]) == []
    assert store.gaps() == []
    assert store.ask_log("no-such-trace") == []


def test_store_empty_inputs_return_empty_results(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["quota text"]), [[1.0, 0.0]])
    assert store.get_chunks([]) == []
    assert store.term_frequencies([]) == {}
    assert store.search([], 5) == []
    assert store.search(["", "  ", "'"], 5) == []
    assert store.similar([], 5) == []
    assert store.similar([0.0, 0.0], 5) == []


def test_store_similar_with_a_dimension_nobody_stored_returns_nothing(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["quota text"]), [[1.0, 0.0]])
    assert store.similar([1.0, 0.0, 0.0], 5) == []
    assert [c.chunk_id for c, _ in store.similar([1.0, 0.0], 5)] == ["guide#c00"]


def test_store_get_chunks_keeps_the_order_and_repeats_asked_for(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["one", "two"])
    store.upsert_document(doc, chunks)
    assert store.get_chunks(["guide#c01", "guide#c00", "guide#c01", "x"]) == [chunks[1], chunks[0], chunks[1]]


def test_store_get_chunks_reads_more_ids_than_one_batch(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", [f"text number {i}" for i in range(3)])
    store.upsert_document(doc, chunks)
    asked = [f"missing#c{i}" for i in range(1200)] + ["guide#c02"]
    assert store.get_chunks(asked) == [chunks[2]]


def test_store_document_without_chunks_exists_with_no_chunks(store: Store) -> None:
    doc, _ = doc_and_chunks("empty", [])
    store.upsert_document(doc, [])
    assert store.get_document("empty") == doc
    assert store.document_chunks("empty") == []
    assert store.stats().documents == 1


def test_store_delete_unknown_document_is_a_no_op(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["kept"]))
    store.delete_document("nope")
    assert store.stats().chunks == 1


def test_store_upsert_rejects_bad_arguments_and_keeps_the_stored_version(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["first", "second"])
    store.upsert_document(doc, chunks)
    other_doc, other_chunks = doc_and_chunks("other", ["stranger"])
    for call in (
        lambda: store.upsert_document(doc, other_chunks),
        lambda: store.upsert_document(doc, chunks, [[1.0]]),
        lambda: store.upsert_document(doc, chunks, [[1.0, 0.0], [1.0]]),
        lambda: store.upsert_document(doc, chunks, [[], []]),
    ):
        with pytest.raises(ValueError):
            call()
    assert store.document_chunks("guide") == chunks
    assert store.stats().embeddings == 0
    assert store.get_chunks([other_chunks[0].chunk_id]) == []


def test_store_gaps_with_empty_closest_and_odd_questions_round_trip(store: Store) -> None:
    store.add_gap("   ", 0.0, [])
    store.add_gap("¿Dónde está la oficina? 🏢", 0.25, ["a#c00"])
    gaps = {g.question: g for g in store.gaps()}
    assert gaps["   "].closest == () and gaps["   "].top_score == 0.0
    assert gaps["¿Dónde está la oficina? 🏢"].closest == ("a#c00",)


def test_store_ask_log_keeps_every_row_of_one_trace_in_order(store: Store) -> None:
    first, second = (
        record("t"),
        replace(record("t"), question="second?", abstained=True, reason="no_citations"),
    )
    store.log_ask(first)
    store.log_ask(second)
    store.log_ask(record("other"))
    rows = store.ask_log("t")
    assert [(r["question"], r["abstained"], r["reason"]) for r in rows] == [
        ("How long is the trial?", False, ""),
        ("second?", True, "no_citations"),
    ]
    assert all(isinstance(r["ts"], str) and r["ts"][:4].isdigit() for r in rows)


def test_store_broken_database_raises_store_unavailable_on_every_read(store: Store, backend: str) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["quota text"]))
    if backend == "postgres":
        with store.pool.connection() as conn:  # type: ignore[attr-defined]
            conn.execute("DROP TABLE chunks, documents, chunk_ids, chunk_terms, embeddings CASCADE")
    else:
        Path(store.path).unlink()  # type: ignore[attr-defined]
    for call in (
        store.stats,
        lambda: store.search(["quota"], 5),
        lambda: store.get_chunk("guide#c00"),
        lambda: store.document_chunks("guide"),
        lambda: store.get_document("guide"),
    ):
        with pytest.raises(StoreUnavailable):
            call()


# --- chunk ids never name other text ---------------------------------------------------------------


def test_store_edited_chunk_gets_a_new_version_and_its_old_id_is_gone(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["Refunds take 14 days.", "Support is open daily."]))
    store.upsert_document(*doc_and_chunks("guide", ["Refunds take 30 days.", "Support is open daily."]))
    assert [(c.chunk_id, c.text) for c in store.document_chunks("guide")] == [
        ("guide#c00.v2", "Refunds take 30 days."),
        ("guide#c01", "Support is open daily."),
    ]
    with pytest.raises(Gone, match="guide#c00"):
        store.get_chunk("guide#c00")
    assert store.get_chunk("guide#c00.v2").text == "Refunds take 30 days."
    assert store.get_chunks(["guide#c00", "guide#c01"]) == [store.get_chunk("guide#c01")]


def test_store_reverted_text_gets_its_old_id_back_and_versions_keep_counting(store: Store) -> None:
    texts = [
        "Refunds take 14 days.",
        "Refunds take 30 days.",
        "Refunds take 14 days.",
        "Refunds take 60 days.",
    ]
    ids = []
    for text in texts:
        store.upsert_document(*doc_and_chunks("guide", [text]))
        ids.append(store.document_chunks("guide")[0].chunk_id)
    assert ids == ["guide#c00", "guide#c00.v2", "guide#c00", "guide#c00.v3"]
    assert store.get_chunk("guide#c00.v3").text == "Refunds take 60 days."
    for retired in ("guide#c00", "guide#c00.v2"):
        with pytest.raises(Gone):
            store.get_chunk(retired)


def test_store_deleted_document_chunk_ids_are_gone_not_unknown(store: Store) -> None:
    store.upsert_document(*doc_and_chunks("guide", ["Some text."]))
    store.delete_document("guide")
    with pytest.raises(Gone):
        store.get_chunk("guide#c00")
    with pytest.raises(NotFound):
        store.get_chunk("never#c00")


def test_store_every_id_ever_served_names_one_text_across_edits(store: Store) -> None:
    seen: dict[str, str] = {}
    for round_ in range(6):
        texts = [f"Paragraph {i} says {(round_ * (i + 1)) % 3}." for i in range(4 - round_ % 2)]
        store.upsert_document(*doc_and_chunks("guide", texts))
        for chunk in store.document_chunks("guide"):
            assert seen.setdefault(chunk.chunk_id, chunk.text) == chunk.text
    for chunk_id, text in seen.items():
        try:
            assert store.get_chunk(chunk_id).text == text
        except Gone:
            pass


def write_policy(path: Path, window: str) -> None:
    path.write_text(
        "# Billing policy\n\n## Refund window\n\n"
        f"Refunds are available within {window} of the purchase date for every plan.\n\n"
        "## Invoices\n\nInvoices are sent by e-mail on the first working day of each month.\n",
        encoding="utf-8",
    )


def test_store_reingest_after_an_edit_never_lets_an_old_id_name_new_text(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_policy(folder / "billing.md", "14 days")
    settings = load_settings(mock=True, chunk_min_tokens=10, chunk_max_tokens=40)
    ingest_paths(store, [folder], settings=settings)
    (doc_id,) = store.document_hashes()
    before = {c.chunk_id: c.text for c in store.document_chunks(doc_id)}
    assert len(before) == 2
    write_policy(folder / "billing.md", "30 days")
    ingest_paths(store, [folder], settings=settings)
    after = {c.chunk_id: c.text for c in store.document_chunks(doc_id)}
    assert any("30 days" in text for text in after.values())
    kept = set(before) & set(after)
    assert len(kept) == 1 and all(before[cid] == after[cid] for cid in kept)
    (old,) = set(before) - kept
    assert "14 days" in before[old]
    with pytest.raises(Gone):
        store.get_chunk(old)
    for chunk_id, text in after.items():
        assert store.get_chunk(chunk_id).text == text


# --- concurrency and migrations ------------------------------------------------------------------------


def test_store_concurrent_replacing_writers_readers_see_whole_versions(open_new: StoreFactory) -> None:
    versions = [
        doc_and_chunks("doc", [f"version {v} part {i} words" for i in range(n)]) for v, n in ((1, 3), (2, 5))
    ]
    writer_store, reader_store = open_new(), open_new()
    expected = []
    for version in versions:
        writer_store.upsert_document(*version)
        expected.append([c.chunk_id for c in writer_store.document_chunks("doc")])
    stop = threading.Event()
    seen: list[list[str]] = []

    def write(offset: int) -> None:
        for i in range(30):
            writer_store.upsert_document(*versions[(i + offset) % 2])

    def read() -> None:
        while not stop.is_set():
            seen.append([c.chunk_id for c in reader_store.document_chunks("doc")])

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(write, (0, 1)))
    stop.set()
    for thread in readers:
        thread.join()
    assert seen and all(ids in expected for ids in seen)
    assert reader_store.stats().chunks in (3, 5)
    assert [c.chunk_id for c in reader_store.document_chunks("doc")] in expected


def test_store_two_concurrent_ingests_of_the_corpus_lose_and_duplicate_nothing(
    open_new: StoreFactory, tmp_path: Path
) -> None:
    settings = load_settings(mock=True)
    # What one ingest alone writes, in a database of its own (chunking does not depend on the backend).
    alone = SqliteStore(str(tmp_path / "reference.db"))
    reference = ingest_paths(alone, [CORPUS], settings=settings)
    alone.close()
    assert reference.chunks_written > 100
    stores = [open_new(), open_new()]
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda s: ingest_paths(s, [CORPUS], settings=settings), stores))
    # Each run sees every document once: added by it, or already written by the other (unchanged or
    # updated, depending on which commit it read); which one is a race, the total is not.
    for report in reports:
        assert len(report.added) + len(report.updated) + report.unchanged == len(reference.added)
    stats = stores[0].stats()
    assert (stats.documents, stats.chunks) == (len(reference.added), reference.chunks_written)
    ids = [c.chunk_id for doc_id in stores[1].document_hashes() for c in stores[1].document_chunks(doc_id)]
    assert len(ids) == len(set(ids)) == reference.chunks_written


def test_store_opening_several_instances_at_once_migrates_once(open_new: StoreFactory, backend: str) -> None:
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: open_new(), range(4)))
    stores[0].upsert_document(*doc_and_chunks("a", ["shared text"]))
    assert all(s.stats().chunks == 1 for s in stores)
    assert open_new().stats().chunks == 1
    if backend == "postgres":
        from rag.store.migrations_pg import MIGRATIONS, migrate

        with stores[0].pool.connection() as conn:  # type: ignore[attr-defined]
            rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
            assert rows == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]
            assert migrate(conn) == []


def test_migrations_pg_concurrent_runs_on_an_empty_schema_apply_each_step_once(pg_url: str) -> None:
    import psycopg

    from rag.store.migrations_pg import MIGRATIONS, migrate

    barrier = threading.Barrier(4)

    def run(_: int) -> list[str]:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            barrier.wait()
            return migrate(conn)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    assert sorted(len(r) for r in results) == [0, 0, 0, len(MIGRATIONS)]


# --- PostgreSQL specifics ----------------------------------------------------------------------------


def test_ts_query_keeps_only_alphanumeric_lexemes_and_never_raises() -> None:
    pytest.importorskip("psycopg_pool")
    from rag.store.postgres import ts_query

    assert ts_query(["o'neil", "a:*", "!&|()", "", 7, "quota", "quota"]) == (
        "'oneil' | 'a' | 'quota'",
        ["oneil", "a", "quota"],
    )
    assert ts_query(["'", "\x00"]) == ("", [])


def test_open_store_postgres_url_selects_pg_store(pg_url: str) -> None:
    store = open_store(load_settings(database_url=pg_url))
    try:
        assert store.backend == "postgres"
    finally:
        store.close()


def test_pg_lost_connections_answer_store_unavailable_then_the_pool_recovers(pg_url: str) -> None:
    import psycopg

    from rag.store.postgres import PgStore

    store = PgStore(pg_url, max_size=2)
    try:
        store.upsert_document(*doc_and_chunks("guide", ["quota text"]))
        assert store.stats().chunks == 1
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename = current_user"
            )
        with pytest.raises(StoreUnavailable, match="PostgreSQL"):
            store.stats()
        deadline = time.monotonic() + 10
        while True:
            try:
                assert store.stats().chunks == 1
                break
            except StoreUnavailable:
                assert time.monotonic() < deadline, "the pool did not reconnect"
                time.sleep(0.1)
    finally:
        store.close()


@pytest.fixture
def both_stores(pg_url: str, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    from rag.store.postgres import PgStore

    settings = load_settings(mock=True)
    lite, pg = SqliteStore(str(tmp_path / "agree.db")), PgStore(pg_url)
    for store in (lite, pg):
        ingest_paths(store, [CORPUS], settings=settings)
    yield lite, pg
    lite.close()
    pg.close()


def test_backends_agree_on_bm25_scores_top_chunks_and_refusals(both_stores: tuple[Store, Store]) -> None:
    lite, pg = both_stores
    golden = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    reranker = LexicalReranker()
    for item in golden:
        query = list(dict.fromkeys(terms(item["question"])))
        a, b = lite.search(query, 40), pg.search(query, 40)
        assert [c.chunk_id for c, _ in a] == [c.chunk_id for c, _ in b], item["id"]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9), item["id"]
        assert lite.term_frequencies(query) == pg.term_frequencies(query), item["id"]
    for item in (i for i in golden if i["label"] == "answer"):
        top = [retrieve(item["question"], store=s, reranker=reranker)[0].chunk.chunk_id for s in (lite, pg)]
        assert top[0] == top[1], item["id"]
    settings = load_settings(mock=True)
    pipelines = [build_pipeline(settings, store=s) for s in (lite, pg)]
    for item in golden:
        decisions = [(a.abstained, a.reason) for a in (p.answer(item["question"]) for p in pipelines)]
        assert decisions[0] == decisions[1], item["id"]


def test_pg_gap_logged_by_one_replica_is_visible_to_another(pg_url: str) -> None:
    from rag.store.postgres import PgStore

    first, second = PgStore(pg_url), PgStore(pg_url)
    try:
        ingest_paths(first, [CORPUS], settings=load_settings(mock=True))
        answer = build_pipeline(load_settings(mock=True), store=first).answer(
            "What is the capital of Australia?"
        )
        assert answer.reason == "low_retrieval_score"
        assert [g.question for g in second.gaps()] == ["What is the capital of Australia?"]
        assert second.ask_log(answer.trace_id)[0]["reason"] == "low_retrieval_score"
    finally:
        first.close()
        second.close()


def test_pg_two_rag_serve_processes_share_one_gap_queue(pg_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "RAG_DATABASE_URL": pg_url, "MOCK": "1", "RAG_DB": str(tmp_path / "unused.db")}
    rag = [sys.executable, "-m", "rag"]
    subprocess.run([*rag, "ingest", str(CORPUS)], env=env, check=True, capture_output=True, timeout=120)
    ports = [free_port(), free_port()]
    servers = [
        subprocess.Popen(
            [*rag, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for port in ports
    ]
    try:
        for port in ports:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        for port in ports:
            reply = httpx.post(
                f"http://127.0.0.1:{port}/ask",
                json={"question": "What is the capital of Australia?"},
                timeout=30,
            )
            assert reply.status_code == 200
        out = subprocess.run(
            [*rag, "gaps", "--json"], env=env, check=True, capture_output=True, timeout=60, text=True
        ).stdout
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=10)
    gaps = json.loads(out)
    assert [(g["question"], g["count"]) for g in gaps] == [("What is the capital of Australia?", 2)]


def test_store_embeddings_record_their_model_and_missing_ones_are_listed(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["north", "east", "south"])
    store.upsert_document(doc, chunks)
    assert [c.chunk_id for c in store.chunks_missing_embeddings("m1")] == [
        "guide#c00",
        "guide#c01",
        "guide#c02",
    ]
    assert (
        store.put_embeddings(
            "m1", [("guide#c00", [1.0, 0.0]), ("guide#c02", [-1.0, 0.1]), ("gone#c00", [1.0, 1.0])]
        )
        == 2
    )
    assert [c.chunk_id for c in store.chunks_missing_embeddings("m1")] == ["guide#c01"]
    assert store.embedding_counts() == [("m1", 2, 2)]
    assert [c.chunk_id for c, _ in store.similar([0.9, 0.1], 3, model="m1")] == ["guide#c00", "guide#c02"]
    assert store.similar([0.9, 0.1], 3, model="m2") == []
    # a new model's vector replaces the old one, and queries of each model see only their own
    assert store.put_embeddings("m2", [("guide#c00", [0.0, 1.0])]) == 1
    assert store.embedding_counts() == [("m1", 2, 1), ("m2", 2, 1)]
    assert [c.chunk_id for c, _ in store.similar([0.9, 0.1], 3, model="m1")] == ["guide#c02"]
    assert [c.chunk_id for c, _ in store.similar([0.9, 0.1], 3, model="m2")] == ["guide#c00"]
    assert [c.chunk_id for c in store.chunks_missing_embeddings("m2")] == ["guide#c01", "guide#c02"]
    with pytest.raises(ValueError):
        store.put_embeddings("m1", [("guide#c01", [1.0]), ("guide#c02", [1.0, 0.0])])


def test_store_embedding_progress_counts_one_models_vectors_among_readable_chunks(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["north", "east", "south"])
    store.upsert_document(doc, chunks)
    hidden, secret = doc_and_chunks("vault", ["west"])
    store.upsert_document(replace(hidden, access=("hr",)), secret)
    assert store.embedding_progress("m1") == (0, 4) and not store.has_embeddings("m1")
    store.put_embeddings("m1", [("guide#c00", [1.0, 0.0]), ("vault#c00", [0.0, 1.0])])
    assert store.has_embeddings("m1") and not store.has_embeddings("m3")
    store.put_embeddings("m2", [("guide#c01", [1.0, 0.0])])
    assert store.embedding_progress("m1") == (2, 4)
    assert store.embedding_progress("m1", groups=frozenset()) == (1, 3)
    assert store.embedding_progress("m1", groups=frozenset({"hr"})) == (2, 4)
    assert [c.chunk_id for c in store.chunks_missing_embeddings("m1", limit=1)] == ["guide#c01"]
    store.delete_document("vault")
    assert store.embedding_progress("m1") == (1, 3)


def test_store_embedding_cosines_cover_the_ids_with_a_vector_of_the_model(store: Store) -> None:
    doc, chunks = doc_and_chunks("guide", ["north", "east", "south"])
    store.upsert_document(doc, chunks)
    store.put_embeddings("m1", [("guide#c00", [1.0, 0.0]), ("guide#c02", [-3.0, 0.0])])
    store.put_embeddings("m2", [("guide#c01", [1.0, 0.0])])
    cosines = store.embedding_cosines(
        [2.0, 0.0], ["guide#c00", "guide#c01", "guide#c02", "nope#c00"], model="m1"
    )
    assert cosines == pytest.approx({"guide#c00": 1.0, "guide#c02": -1.0})
    assert store.embedding_cosines([1.0, 0.0, 0.0], ["guide#c00"], model="m1") == {}  # another dimension
    assert store.embedding_cosines([1.0, 0.0], [], model="m1") == {}


def test_store_embedding_lease_has_one_holder_until_released_or_expired(open_new: StoreFactory) -> None:
    one, two = open_new(), open_new()
    assert one.claim_embedding("m1", "a", 60, now=1000.0)
    assert not two.claim_embedding("m1", "b", 60, now=1010.0)  # held by a
    assert two.claim_embedding("m2", "b", 60, now=1010.0)  # another model's lease is its own
    assert one.claim_embedding("m1", "a", 60, now=1050.0)  # renewed: now until 1110
    assert not two.claim_embedding("m1", "b", 60, now=1100.0)
    assert two.claim_embedding("m1", "b", 60, now=1111.0)  # expired: taken over
    assert not one.claim_embedding("m1", "a", 60, now=1112.0)
    one.release_embedding("m1", "a")  # not a's to release
    assert not one.claim_embedding("m1", "a", 60, now=1113.0)
    two.release_embedding("m1", "b")
    assert one.claim_embedding("m1", "a", 60, now=1114.0)


# --- kill -9 during ingest ---------------------------------------------------------------------------


def consistency_problems(store: Store, backend: str) -> list[str]:
    """Everything that would show a half-written document; empty when the store is whole."""
    problems = []
    orphans = {
        "postings without a chunk": "SELECT count(*) FROM chunk_terms AS t LEFT JOIN chunks AS c"
        " ON c.id = t.chunk_pk WHERE c.id IS NULL",
        "chunks without a document": "SELECT count(*) FROM chunks AS c LEFT JOIN documents AS d"
        " ON d.doc_id = c.doc_id WHERE d.doc_id IS NULL",
        "chunks without an issued id": "SELECT count(*) FROM chunks AS c LEFT JOIN chunk_ids AS i"
        " ON i.chunk_id = c.chunk_id WHERE i.chunk_id IS NULL",
    }
    if backend == "sqlite":
        orphans["postings without a chunk"] = (
            "SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)"
        )
        orphans["chunks without postings"] = (
            "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts)"
        )
    for what, sql in orphans.items():
        count = store._read(sql)[0][0]  # type: ignore[attr-defined]
        if count:
            problems.append(f"{count} {what}")
    if backend == "sqlite":
        (verdict,) = store._read("PRAGMA integrity_check")[0]  # type: ignore[attr-defined]
        if verdict != "ok":
            problems.append(f"integrity_check: {verdict}")
    for doc_id in store.document_hashes():
        chunks = store.document_chunks(doc_id)
        if not chunks:
            problems.append(f"{doc_id} has no chunks")
        for chunk in chunks:
            if store.get_chunk(chunk.chunk_id) != chunk:
                problems.append(f"{chunk.chunk_id} reads back differently")
    return problems


@pytest.mark.slow
def test_store_kill_9_during_ingest_leaves_whole_documents_and_a_rerun_completes(
    backend: str, open_new: StoreFactory, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from benchmarks.corpus_gen import generate

    corpus = generate(tmp_path / "corpus", 300)
    files = len(list(corpus.rglob("*.md")))
    if backend == "postgres":
        env = {"RAG_DATABASE_URL": request.getfixturevalue("pg_url")}
    else:
        env = {"RAG_DB": str(tmp_path / "backend.db")}
    env = {**os.environ, "MOCK": "1", **env}
    store = open_new()  # migrates the schema before the ingest starts
    for kill_after in (5, 60, 150):
        kill_ingest_after(store, corpus, env, kill_after)
        assert consistency_problems(store, backend) == [], kill_after
    subprocess.run(
        [sys.executable, "-m", "rag", "ingest", str(corpus)], env=env, check=True, capture_output=True
    )
    assert store.stats().documents == files
    assert consistency_problems(store, backend) == []


# --- odd strings: the same answer on both stores -------------------------------------------------------

ODD_KEYS = ["x\0", "\0", "abc\x00def", "x\ud800", "\udcff", "\u202ex", "a'b\";--", "%00", "\\", "é#c00"]


def test_store_odd_strings_answer_like_unknown_keys_on_both_stores(store: Store) -> None:
    doc, chunks = doc_and_chunks("pricing", ["The trial lasts ninety days."])
    store.upsert_document(doc, chunks)
    for key in ODD_KEYS:
        with pytest.raises(NotFound):
            store.get_chunk(key)
        with pytest.raises(NotFound):
            store.get_document(key)
        with pytest.raises(NotFound):
            store.document_chunks(key)
        assert store.get_chunks([key, "pricing#c00"]) == [chunks[0]]
        assert store.ask_log(key) == [] and store.feedback(trace_id=key) == []
    for note in ("bad\0note", "bad\ud800note"):
        with pytest.raises(ValueError, match="cannot be stored"):
            store.add_feedback(Feedback(trace_id="t-1", verdict="wrong", note=note))
    assert (
        store.add_feedback(Feedback(trace_id="t-1", verdict="wrong", note="\u202e ok é")).note
        == "\u202e ok é"
    )


def test_api_odd_strings_get_404_and_422_on_both_stores(store: Store) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app

    doc, chunks = doc_and_chunks("pricing", ["The trial lasts ninety days."])
    store.upsert_document(doc, chunks)
    settings = load_settings(mock=True)
    app = create_app(settings, pipeline=build_pipeline(settings, store=store))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        for path in ("/chunks/x%00", "/documents/x%00", "/admin/api/traces/abc%00", "/chunks/%00"):
            assert client.get(path).status_code == 404, path
        for note in ("bad\u0000note", "bad\ud800note"):
            body = json.dumps(
                {"trace_id": "abc", "verdict": "wrong", "note": note}
            )  # ASCII, "\\ud800" escaped
            sent = client.post("/feedback", content=body, headers={"content-type": "application/json"})
            assert sent.status_code == 422, (note, sent.text)
        for question in ("How long\u0000 is the trial?", "How long is the \x1b[31mtrial?"):
            assert client.post("/ask", json={"question": question}).status_code == 200
        sent = client.post("/feedback", json={"trace_id": "abc", "verdict": "wrong", "question": "q\0"})
        assert sent.status_code == 422


def test_ingest_front_matter_with_nul_is_skipped_and_the_run_goes_on(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe trial lasts ninety days.\n")
    (folder / "bad.md").write_text('---\ntitle: "bad\\0title"\n---\n# Bad\n\nText.\n')
    (folder / "url.md").write_text('---\nurl: "/x\\0y"\ndoc_id: "u\\0"\n---\n# Url\n\nText.\n')
    report = ingest_paths(store, [folder], settings=load_settings(mock=True))
    assert report.added == ("good",)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(reasons) == {"bad.md", "url.md"} and "NUL" in reasons["bad.md"]


def test_store_document_chunks_reads_a_page_from_a_position(store: Store) -> None:
    doc, chunks = doc_and_chunks("long", [f"Part {i} says something." for i in range(7)])
    store.upsert_document(doc, chunks)
    assert store.document_chunks("long", start=2, limit=3) == chunks[2:5]
    assert store.document_chunks("long", start=5) == chunks[5:]
    assert store.document_chunks("long", start=9, limit=3) == []  # past the end: found, no chunks
    with pytest.raises(NotFound):
        store.document_chunks("nope", start=0, limit=3)


def test_store_adjacent_chunks_are_the_ones_before_and_after_in_the_same_document(store: Store) -> None:
    doc, chunks = doc_and_chunks("long", [f"Part {i} says something." for i in range(6)])
    store.upsert_document(doc, chunks)
    other, theirs = doc_and_chunks("other", ["Another document's first part.", "And its second."])
    store.upsert_document(other, theirs)
    assert store.adjacent_chunks(["long#c02"]) == [chunks[1], chunks[3]]
    assert store.adjacent_chunks(["long#c00"]) == [chunks[1]]  # the first chunk has no previous one
    assert store.adjacent_chunks(["long#c05"]) == [chunks[4]]  # nor the last a next one, nor another doc's
    assert store.adjacent_chunks(["long#c02"], width=2) == [chunks[1], chunks[3], chunks[0], chunks[4]]
    # several ids: in their order, each neighbour once, none of the asked ids themselves
    assert store.adjacent_chunks(["other#c00", "long#c03", "long#c04"]) == [
        theirs[1],
        chunks[2],
        chunks[5],
    ]
    assert store.adjacent_chunks(["nope#c00", "", "long#c02"], width=0) == []
    assert store.adjacent_chunks(["nope#c00"]) == []


def test_store_adjacent_chunks_never_reveal_a_document_hidden_from_the_caller(store: Store) -> None:
    public, shown = doc_and_chunks("guide", ["Open part one.", "Open part two.", "Open part three."])
    store.upsert_document(public, shown)
    hidden, secret = doc_and_chunks("vault", ["Salary bands.", "Bonus rules.", "Pension terms."])
    store.upsert_document(replace(hidden, access=("hr",)), secret)
    nobody, staff = frozenset(), frozenset({"staff"})
    for groups in (nobody, staff):
        assert store.adjacent_chunks(["vault#c01"], groups=groups) == []
        assert store.adjacent_chunks(["vault#c00", "guide#c01"], groups=groups) == [shown[0], shown[2]]
    assert store.adjacent_chunks(["vault#c01"], groups=frozenset({"hr"})) == [secret[0], secret[2]]
    assert store.adjacent_chunks(["vault#c01"]) == [secret[0], secret[2]]  # the local operator reads all


def test_api_documents_pages_its_chunks_with_a_cursor(store: Store) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app

    doc, chunks = doc_and_chunks("long", [f"Part {i} says something." for i in range(7)])
    store.upsert_document(doc, chunks)
    settings = load_settings(mock=True)
    with TestClient(create_app(settings, pipeline=build_pipeline(settings, store=store))) as client:
        seen, cursor, pages = [], "0", 0
        while cursor is not None:
            body = client.get("/documents/long", params={"limit": 3, "cursor": cursor}).json()
            seen += [c["chunk_id"] for c in body["chunks"]]
            cursor, pages = body["next_cursor"], pages + 1
        assert seen == [c.chunk_id for c in chunks] and pages == 3
        whole = client.get("/documents/long").json()
        assert len(whole["chunks"]) == 7 and whole["next_cursor"] is None
        for bad in ({"limit": 0}, {"limit": 10_000}, {"cursor": "-1"}, {"cursor": "x"}):
            assert client.get("/documents/long", params=bad).status_code == 422, bad


def test_api_documents_page_stays_under_its_size_budget(store: Store) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app
    from rag.api.app import DOCUMENT_PAGE_CHARS

    third = "word " * (DOCUMENT_PAGE_CHARS // 15 + 2)  # a little over a third of the budget
    doc, chunks = doc_and_chunks("big", [f"{i} {third}" for i in range(4)])
    store.upsert_document(doc, chunks)
    settings = load_settings(mock=True)
    with TestClient(create_app(settings, pipeline=build_pipeline(settings, store=store))) as client:
        first = client.get("/documents/big").json()
        assert len(first["chunks"]) == 2 and first["next_cursor"] == "2"
        assert len(client.get("/documents/big", params={"cursor": "2"}).json()["chunks"]) == 2


class _CountingConnection:
    """A pooled connection that records each statement it sends and each transaction it opens."""

    def __init__(self, conn: object, sent: list[str]) -> None:
        self._conn, self._sent = conn, sent

    def execute(self, sql: object, *args: object, **kwargs: object) -> object:
        self._sent.append(str(sql))
        return self._conn.execute(sql, *args, **kwargs)  # type: ignore[attr-defined]

    def transaction(self) -> object:
        self._sent.append("BEGIN")
        return self._conn.transaction()  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_pg_lexical_reads_of_a_warm_question_send_only_the_version(
    open_new: StoreFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question whose postings and chunks are cached for the current corpus version costs one
    statement per lexical read (the version, in autocommit), not a REPEATABLE READ transaction each;
    after another replica commits, the next read loads the new version in a transaction and answers
    from it."""
    if backend != "postgres":
        pytest.skip("PostgreSQL's round trips")
    from contextlib import contextmanager

    from rag.store.postgres import PgStore

    reader, writer = open_new(), open_new()
    assert isinstance(reader, PgStore)
    texts = ["The harbour gauge reads hourly.", "Ferries run daily."]
    writer.upsert_document(*doc_and_chunks("tides", texts))
    asked = terms("harbour gauge ferries")
    sent: list[str] = []
    pooled = reader._connection

    @contextmanager
    def counting() -> Iterator[object]:
        with pooled() as conn:
            yield _CountingConnection(conn, sent)

    monkeypatch.setattr(reader, "_connection", counting)

    def question() -> tuple[object, ...]:
        found = reader.search(asked, 5)
        return (
            [(c.chunk_id, round(s, 9)) for c, s in found],
            dict(reader.term_frequencies(asked)),
            reader.held_terms([c for c, _ in found], asked),
        )

    cold = question()
    assert sent.count("BEGIN") >= 1  # the first question loads postings and chunks in a snapshot
    sent.clear()
    assert question() == cold
    assert sent == ["SELECT version FROM corpus_counts WHERE id = 1"] * 3
    assert len(cold[0]) == 2 and sorted(cold[1].values()) == [1, 1, 1]

    writer.upsert_document(*doc_and_chunks("more", ["The harbour gauge reads weekly."]))
    sent.clear()
    after = question()
    assert "BEGIN" in sent
    assert len(after[0]) == 3 and sorted(after[1].values()) == [1, 2, 2]
    sent.clear()
    assert question() == after
    assert sent == ["SELECT version FROM corpus_counts WHERE id = 1"] * 3
