from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.answer.gates import GATE_THRESHOLDS
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import candidates_for, retrieve, rrf
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
from rag.types import Scored

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    store = SqliteStore(str(tmp_path_factory.mktemp("corpus") / "corpus.db"))
    report = ingest_paths(store, [CORPUS], settings=load_settings())
    assert report.skipped == ()
    yield store
    store.close()


@pytest.fixture
def small_store(tmp_path: Path) -> Iterator[SqliteStore]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "trash.md").write_text("## Trash\n\nDeleted projects stay in the trash for 30 days.")
    (docs / "trial.md").write_text("## Trial\n\nThe free trial lasts 90 days. Projects are unlimited.")
    (docs / "tasks.md").write_text("## Tasks\n\nProjects contain tasks. Tasks have owners in projects.")
    store = SqliteStore(str(tmp_path / "small.db"))
    ingest_paths(store, [docs], settings=load_settings())
    yield store
    store.close()


def _ask(store: SqliteStore, question: str, top_k: int = 8) -> list[Scored]:
    return retrieve(question, store=store, reranker=LexicalReranker(), top_k=top_k)


def test_rrf_sums_reciprocal_ranks_across_rankings() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] > fused["c"]


def test_retrieve_ranks_answering_chunk_first_with_scores_sorted(small_store: SqliteStore) -> None:
    results = _ask(small_store, "How long do deleted projects stay in the trash?")
    assert results[0].chunk.chunk_id == "trash#c00"
    scores = [(-s.score, s.chunk.chunk_id) for s in results]
    assert scores == sorted(scores)
    assert results[0].lexical > 0


def test_retrieve_respects_top_k_and_candidates(small_store: SqliteStore) -> None:
    assert len(_ask(small_store, "projects", top_k=2)) == 2
    assert len(candidates_for("projects", store=small_store, candidates=1)) == 1


def test_retrieve_no_matching_terms_or_only_stop_words_returns_empty(small_store: SqliteStore) -> None:
    assert _ask(small_store, "What is the capital of Australia?") == []
    assert _ask(small_store, "what is it?") == []


def test_retrieve_fts_syntax_in_question_never_raises(small_store: SqliteStore) -> None:
    for question in ['"trash', "trash* AND (NOT", "NEAR(trash projects)", "col:trash ^x", "a\x00b"]:
        assert isinstance(_ask(small_store, question), list)


def test_retrieve_bundled_corpus_trash_question_finds_thirty_day_retention(corpus_store: SqliteStore) -> None:
    top = _ask(corpus_store, "How long do deleted projects stay in the trash?")[0]
    assert "30 days" in top.chunk.text and "trash" in top.chunk.text
    assert top.score >= GATE_THRESHOLDS[("lexical", "offline")]


def test_retrieve_bundled_corpus_upload_limit_finds_both_conflicting_documents(
    corpus_store: SqliteStore,
) -> None:
    docs = [s.chunk.doc_id for s in _ask(corpus_store, "What is the maximum file upload size?", top_k=5)]
    assert "admin-guide" in docs and "api-reference" in docs


def test_retrieve_bundled_corpus_off_topic_question_scores_below_gate(corpus_store: SqliteStore) -> None:
    results = _ask(corpus_store, "What is the capital of Australia?")
    assert max((s.score for s in results), default=0.0) < GATE_THRESHOLDS[("lexical", "offline")]
