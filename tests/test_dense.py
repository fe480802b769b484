"""Dense retrieval offline: the local encoder as an embedder, the background embedding of stored
chunks, the hybrid score the gate reads, and the switch that turns it off."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from rag.answer.gates import GATE_THRESHOLDS
from rag.answer.pipeline import build_pipeline
from rag.answer.rerank import HybridReranker, LexicalReranker, make_reranker
from rag.answer.retrieve import retrieve
from rag.api.app import create_app
from rag.api.schemas import ReadyOut
from rag.config import Settings, load_settings
from rag.embeddings import LOCAL_MODEL, LocalEmbedder, make_embedder
from rag.embeddings.backfill import Backfill
from rag.evals.reach import RecordingReader
from rag.ingest.indexer import ingest_paths
from rag.language.tools import installed
from rag.store import SqliteStore
from rag.types import Chunk, Scored

HAS_ENCODER = installed().meaning is not None and installed().meaning.available()  # type: ignore[union-attr]
needs_encoder = pytest.mark.skipif(
    not HAS_ENCODER, reason="the encoder's weights (the Makefile's ENCODER_PKG) are not installed"
)

# "Who originally wrote R?" reaches its answer through the one-letter name R and an irregular verb's
# forms ("wrote"/"written"); the review page shares a word ("originally") and nothing else.
DOCS = {
    "r-history.md": "# R history\n\nR was initially written by Ross Ihaka and Robert Gentleman at the"
    " University of Auckland in New Zealand.\n",
    "review.md": "# Review process\n\nOriginally, every page of this handbook was reviewed by two"
    " editors before it went out.\n",
    "parking.md": "# Parking\n\nStaff may park in the east car park on weekdays; visitors use the west"
    " entrance.\n",
    "sessions.md": "# Sessions\n\nSESSION_COOKIE_AGE sets the age of session cookies, in seconds. The default"
    " is 1209600, two weeks.\n",
}
# Only meaning connects "When does the workplace shut at the end of the week?" to its answer.
HOURS = {"hours.md": "# Office hours\n\nThe office closes at 6 pm on Fridays.\n"}


def write_docs(folder: Path, docs: dict[str, str] = DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def dense_settings(tmp_path: Path, **overrides: object) -> Settings:
    return load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="auto", **overrides)


class WordEmbedder:
    """A real embedder of hashed words (a bag of words in 64 numbers): similar texts share words.
    Records every text it embeds; fails on demand."""

    name = "words"
    model = "test/words"
    max_inputs = 2
    max_tokens = 10_000
    background = True

    def __init__(self, *, fail: bool = False, delay: float = 0.0) -> None:
        self.fail = fail
        self.delay = delay
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _vector(self, text: str) -> list[float]:
        v = np.zeros(64)
        for word in text.lower().split():
            v[int(hashlib.sha1(word.encode()).hexdigest(), 16) % 64] += 1.0
        return (v / max(np.linalg.norm(v), 1e-9)).tolist()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail:
            raise RuntimeError("encoder exploded")
        time.sleep(self.delay)
        with self._lock:
            self.embedded.extend(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.fail:
            raise RuntimeError("encoder exploded")
        return self._vector(text)


@pytest.fixture
def lexical_store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(str(tmp_path / "rag.db"))
    ingest_paths(store, [write_docs(tmp_path / "docs")], settings=load_settings(mock=True))
    return store


# ---------------------------------------------------------------- the switch


def test_dense_off_restores_lexical_retrieval(tmp_path: Path) -> None:
    off = load_settings(mock=True, dense="off")
    assert make_embedder(off) is None
    assert isinstance(make_reranker(off), LexicalReranker)
    for word in ("0", "false", "no", "OFF"):
        assert load_settings(mock=True, dense=word).dense == "off"
    assert load_settings(mock=True, dense="on").dense == "auto"


@needs_encoder
def test_dense_auto_offline_uses_the_local_encoder_and_the_hybrid_score() -> None:
    settings = load_settings(mock=True, dense="auto")
    embedder = make_embedder(settings)
    assert isinstance(embedder, LocalEmbedder) and embedder.model == LOCAL_MODEL != "voyage-3.5"
    assert embedder.background
    assert isinstance(make_reranker(settings), HybridReranker)
    assert make_embedder(load_settings(mock=True, dense="auto", encoder="off")) is None
    assert isinstance(make_reranker(load_settings(mock=True, dense="auto", encoder="off")), LexicalReranker)


# ---------------------------------------------------------------- the hybrid score


def _scored(chunk_id: str, *, lexical: float, dense: float) -> Scored:
    chunk = Chunk(
        chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], title="T", section="", text=f"text of {chunk_id}"
    )
    return Scored(chunk=chunk, score=0.0, lexical=lexical, dense=dense)


class FixedLexical(LexicalReranker):
    def __init__(self, scores: dict[str, float]) -> None:
        super().__init__()
        self.scores = scores

    def rerank(self, question: str, candidates: Sequence[Scored], **_: object) -> list[Scored]:  # type: ignore[override]
        return [c.rescored(self.scores[c.chunk.chunk_id], "lexical") for c in candidates]


def test_hybrid_score_mixes_lexical_and_cosine_and_keeps_words_for_chunks_without_vectors() -> None:
    reranker = HybridReranker(
        lexical=FixedLexical({"a#c00": 0.1, "b#c00": 0.6, "c#c00": 0.5}), dense_weight=0.5
    )
    pool = [
        _scored("a#c00", lexical=0.0, dense=0.8),  # paraphrase: few shared words, close in meaning
        _scored("b#c00", lexical=3.0, dense=0.1),
        _scored("c#c00", lexical=2.0, dense=0.0),  # no vector yet
    ]
    ranked = reranker.rerank("q", pool, df={}, n_chunks=3)
    assert [(s.chunk.chunk_id, round(s.score, 3), s.scorer) for s in ranked] == [
        ("c#c00", 0.5, "hybrid"),
        ("a#c00", 0.45, "hybrid"),
        ("b#c00", 0.35, "hybrid"),
    ]


def test_hybrid_score_without_any_vector_is_the_lexical_score_under_its_name() -> None:
    reranker = HybridReranker(lexical=FixedLexical({"a#c00": 0.4}))
    [only] = reranker.rerank("q", [_scored("a#c00", lexical=1.0, dense=0.0)], df={}, n_chunks=1)
    assert (only.score, only.scorer) == (0.4, "lexical")


# ---------------------------------------------------------------- background embedding


def test_backfill_embeds_in_batches_committing_each_and_reports_progress(lexical_store: SqliteStore) -> None:
    embedder = WordEmbedder()
    backfill = Backfill(lexical_store, embedder, batch=3)
    assert backfill.progress().json() == {
        "model": "test/words",
        "embedded": 0,
        "total": 4,
        "state": "running",
        "error": "",
    }
    seen: list[tuple[int, str]] = []
    assert backfill.run(on_batch=lambda p: seen.append((p.embedded, p.state))) == 4
    assert seen == [(3, "running"), (4, "done"), (4, "done")]
    assert lexical_store.embedding_progress("test/words") == (4, 4)
    assert backfill.run() == 0 and len(embedder.embedded) == 4  # nothing left: nothing embedded again


def test_backfill_resumes_after_a_restart_with_only_what_is_missing(tmp_path: Path) -> None:
    path = str(tmp_path / "rag.db")
    first_store = SqliteStore(path)
    ingest_paths(first_store, [write_docs(tmp_path / "docs")], settings=load_settings(mock=True))
    first = Backfill(first_store, WordEmbedder(), batch=3)
    assert first.step() == 3
    first.stop()  # a server shutting down gives the lease up
    first_store.close()
    store = SqliteStore(path)  # the restarted process
    embedder = WordEmbedder()
    assert Backfill(store, embedder, batch=3).run() == 1
    assert len(embedder.embedded) == 1 and store.embedding_progress("test/words") == (4, 4)


def test_backfill_of_a_killed_holder_is_taken_over_once_its_lease_expires(lexical_store: SqliteStore) -> None:
    dead = Backfill(lexical_store, WordEmbedder(), batch=1, lease=0.3)
    assert dead.step() == 1  # then the process dies without releasing
    waiting = Backfill(lexical_store, WordEmbedder(), batch=1, poll=0.05)
    assert waiting.step() == 0 and waiting.progress().state == "waiting"
    time.sleep(0.35)
    assert waiting.run() == 3
    assert lexical_store.embedding_progress("test/words") == (4, 4)


def test_two_backfills_on_one_store_never_embed_the_same_chunk(tmp_path: Path) -> None:
    path = str(tmp_path / "rag.db")
    docs = {f"doc{i}.md": f"# Topic {i}\n\nParagraph {i} about subject number {i}.\n" for i in range(12)}
    store = SqliteStore(path)
    ingest_paths(store, [write_docs(tmp_path / "docs", docs)], settings=load_settings(mock=True))
    other = SqliteStore(path)  # a second process's store on the same file
    embedders = [WordEmbedder(delay=0.02), WordEmbedder(delay=0.02)]
    workers = [Backfill(s, e, batch=2, poll=0.02) for s, e in zip((store, other), embedders, strict=True)]
    threads = [threading.Thread(target=w.run) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    texts = embedders[0].embedded + embedders[1].embedded
    assert len(texts) == len(set(texts)) == 12
    assert store.embedding_progress("test/words") == (12, 12)
    other.close()


def test_background_embedding_failure_is_reported_and_retrieval_stays_lexical(
    lexical_store: SqliteStore,
) -> None:
    failing = WordEmbedder(fail=True)
    backfill = Backfill(lexical_store, failing, retry=0.05, poll=0.05)
    backfill.start()
    deadline = time.monotonic() + 10
    while backfill.progress().state != "failed" and time.monotonic() < deadline:
        time.sleep(0.02)
    backfill.stop()
    progress = backfill.progress()
    assert (progress.state, progress.error, progress.embedded) == ("failed", "encoder exploded", 0)
    found = retrieve(
        "Where do visitors park?", store=lexical_store, reranker=HybridReranker(), embedder=failing
    )
    assert found[0].chunk.doc_id == "parking" and found[0].scorer == "lexical"
    # vectors made before the encoder broke: the question cannot be embedded, words still answer
    Backfill(lexical_store, WordEmbedder()).run()
    found = retrieve(
        "Where do visitors park?", store=lexical_store, reranker=HybridReranker(), embedder=failing
    )
    assert found[0].chunk.doc_id == "parking" and found[0].scorer == "lexical"


def test_a_store_without_the_models_vectors_costs_no_question_embedding(lexical_store: SqliteStore) -> None:
    class Counting(WordEmbedder):
        queries = 0

        def embed_query(self, text: str) -> list[float]:
            self.queries += 1
            return super().embed_query(text)

    embedder = Counting()
    found = retrieve(
        "Where do visitors park?", store=lexical_store, reranker=HybridReranker(), embedder=embedder
    )
    assert found[0].chunk.doc_id == "parking" and found[0].scorer == "lexical" and embedder.queries == 0
    Backfill(lexical_store, embedder).run()
    found = retrieve(
        "Where do visitors park?", store=lexical_store, reranker=HybridReranker(), embedder=embedder
    )
    assert found[0].chunk.doc_id == "parking" and found[0].scorer == "hybrid" and embedder.queries == 1


def test_background_embedding_catches_chunks_a_later_ingest_adds(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "rag.db"))
    settings = load_settings(mock=True)
    ingest_paths(store, [write_docs(tmp_path / "docs")], settings=settings)
    backfill = Backfill(store, WordEmbedder(), poll=0.05)
    backfill.start()
    try:
        write_docs(tmp_path / "docs", {"late.md": "# Late\n\nA document added while the server runs.\n"})
        ingest_paths(store, [tmp_path / "docs"], settings=settings)
        deadline = time.monotonic() + 10
        while store.embedding_progress("test/words") != (5, 5) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        backfill.stop()
    assert store.embedding_progress("test/words") == (5, 5)


# ---------------------------------------------------------------- paraphrase, with the local encoder


@needs_encoder
def test_fusion_finds_a_paraphrase_that_shares_no_word_with_the_question(tmp_path: Path) -> None:
    settings = dense_settings(tmp_path)
    store = SqliteStore(settings.db)
    ingest_paths(store, [write_docs(tmp_path / "docs", {**DOCS, **HOURS})], settings=settings)
    question = "When does the workplace shut at the end of the week?"
    lexical = retrieve(question, store=store, reranker=LexicalReranker())
    assert all(s.chunk.doc_id != "hours" for s in lexical)  # no shared term: BM25 cannot find it
    embedder = make_embedder(settings)
    assert embedder is not None
    Backfill(store, embedder).run()
    fused = retrieve(question, store=store, reranker=make_reranker(settings), embedder=embedder)
    assert fused[0].chunk.doc_id == "hours" and fused[0].scorer == "hybrid"
    assert fused[0].dense > 0.5


@needs_encoder
def test_who_originally_wrote_r_finds_r_was_initially_written_by(tmp_path: Path) -> None:
    settings = dense_settings(tmp_path)
    store = SqliteStore(settings.db)
    ingest_paths(store, [write_docs(tmp_path / "docs")], settings=settings)
    question = "Who originally wrote R?"
    # words alone: "wrote" finds "written" (an irregular verb's forms are searched together) and the
    # name R is a term, though "originally" is the review page's word
    lexical = retrieve(question, store=store, reranker=LexicalReranker())
    assert [s.chunk.doc_id for s in lexical[:2]] == ["r-history", "review"]
    embedder = make_embedder(settings)
    assert embedder is not None
    Backfill(store, embedder).run()
    fused = retrieve(question, store=store, reranker=make_reranker(settings), embedder=embedder)
    assert fused[0].chunk.doc_id == "r-history"


@needs_encoder
def test_gate_lets_the_paraphrase_through_and_still_refuses_the_off_topic(tmp_path: Path) -> None:
    settings = dense_settings(tmp_path)
    store = SqliteStore(settings.db)
    ingest_paths(store, [write_docs(tmp_path / "docs", {**DOCS, **HOURS})], settings=settings)
    # a paraphrase sharing no word with its answer scores by meaning alone (DENSE_WEIGHT x cosine):
    # over the calibrated threshold in front of Claude but under the offline one
    question = "When does the workplace shut at the end of the week?"
    lexical = build_pipeline(settings.model_copy(update={"dense": "off"}), store=store).plan(question)
    assert lexical.refusal is not None or all(b.chunk.doc_id != "hours" for b in lexical.blocks)
    # with Claude reading (native citations), whose gate the paraphrase must pass
    pipeline = build_pipeline(settings, store=store, generator=RecordingReader())
    assert pipeline.embedder is not None and pipeline.reader == "claude"
    Backfill(store, pipeline.embedder).run()
    plan = pipeline.plan(question)
    assert plan.refusal is None and plan.scorer == "hybrid"
    assert plan.threshold == GATE_THRESHOLDS[("hybrid", "claude")]
    assert plan.blocks[0].chunk.doc_id == "hours"
    far = pipeline.plan("What is the boiling point of tungsten?")
    assert far.refusal is not None and far.refusal.reason == "low_retrieval_score"


@needs_encoder
def test_readyz_reports_embedding_progress_until_done(tmp_path: Path) -> None:
    settings = dense_settings(tmp_path)
    store = SqliteStore(settings.db)
    ingest_paths(store, [write_docs(tmp_path / "docs")], settings=settings)
    store.close()
    with TestClient(create_app(settings)) as client:
        first = client.get("/readyz").json()["embedding"]
        assert first["model"] == LOCAL_MODEL and first["total"] == 4
        assert first["state"] in ("running", "done")
        deadline = time.monotonic() + 120
        ready = first
        while ready["state"] != "done" and time.monotonic() < deadline:
            time.sleep(0.2)
            ready = client.get("/readyz").json()["embedding"]
        assert (ready["embedded"], ready["total"], ready["state"]) == (4, 4, "done")
        assert client.get("/readyz").json()["reranker"] == "hybrid"


def test_readyz_reports_the_background_embedding_as_it_goes(tmp_path: Path) -> None:
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    ingest_paths(SqliteStore(settings.db), [write_docs(tmp_path / "docs")], settings=settings)
    backfill = Backfill(SqliteStore(settings.db), WordEmbedder(delay=0.2), batch=1, poll=0.05)
    seen = []
    with TestClient(create_app(settings, backfill=backfill)) as client:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready = client.get("/readyz").json()
            ReadyOut.model_validate(ready)
            seen.append((ready["embedding"]["embedded"], ready["embedding"]["state"]))
            if seen[-1][1] == "done":
                break
            time.sleep(0.05)
    assert seen[-1] == (4, "done") and ("running" in {state for _, state in seen})
    assert ready["embedding"]["model"] == "test/words" and ready["embedding"]["total"] == 4
    assert backfill._thread is None  # stopped with the app


def test_readyz_without_dense_retrieval_has_no_embedding(tmp_path: Path) -> None:
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").json()["embedding"] is None
