import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_store_backends import pg_url  # noqa: F401

from rag.answer.rerank import CHUNK_TERMS, TERM_CACHE_SIZE, Held, LexicalReranker
from rag.answer.retrieve import candidates_for, retrieve, search_terms
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.language.text import terms
from rag.store import Store
from rag.store.base import plain_joined, plain_text
from rag.store.sqlite import SqliteStore
from rag.types import Chunk, Document

ROOT = Path(__file__).resolve().parent.parent
DEV_SETS = [ROOT / "fixtures" / "eval" / "golden.jsonl", ROOT / "fixtures" / "devdocs" / "golden.jsonl"]


def _all_chunks(store: Store) -> list[Chunk]:
    return [c for doc_id in sorted(store.document_hashes()) for c in store.document_chunks(doc_id)]


def _questions(store: Store) -> list[str]:
    """The development sets' questions, and one per stored chunk: its section and its first words."""
    asked = [json.loads(line)["question"] for path in DEV_SETS for line in path.read_text().splitlines()]
    asked += [f"{c.section} {' '.join(c.text.split()[:8])}?" for c in _all_chunks(store)]
    return asked


def _held_everywhere(chunk: Chunk, asked: list[str]) -> frozenset[str]:
    return frozenset(asked) & frozenset([*terms(chunk.text), *terms(chunk.title), *terms(chunk.section)])


@pytest.fixture
def restemmed() -> Iterator[None]:
    """The reranker's term-set cache off: the reference path stems every candidate's text again."""
    CHUNK_TERMS.clear()
    CHUNK_TERMS.size = 0
    yield
    CHUNK_TERMS.size = TERM_CACHE_SIZE
    CHUNK_TERMS.clear()


def _compare(store: Store, questions: list[str]) -> tuple[int, int]:
    """Assert the reranker's scores from the store's held terms equal those from the candidates' own
    term sets, for every question; (candidates the store answered for, candidates)."""
    reranker, n_chunks, known, seen = LexicalReranker(), store.chunk_count(), 0, 0
    for question in questions:
        pool = candidates_for(question, store=store)
        if not pool:
            continue
        asked = search_terms(question)
        df = store.term_frequencies(list(dict.fromkeys(terms(question))))
        by_chunk = store.held_terms([s.chunk for s in pool], asked)
        for s in pool:
            if s.chunk.chunk_id in by_chunk:
                assert by_chunk[s.chunk.chunk_id] == _held_everywhere(s.chunk, asked), (
                    question,
                    s.chunk.chunk_id,
                )
        held = Held(asked=frozenset(asked), by_chunk=by_chunk)
        new = reranker.rerank(question, pool, df=df, n_chunks=n_chunks, held=held)
        old = reranker.rerank(question, pool, df=df, n_chunks=n_chunks)
        assert [(s.chunk.chunk_id, s.score) for s in new] == [(s.chunk.chunk_id, s.score) for s in old], (
            question
        )
        known, seen = known + len(by_chunk), seen + len(pool)
    return known, seen


def test_rerank_from_held_terms_scores_exactly_as_from_term_sets_over_the_corpus(
    corpus_db: str, restemmed: None
) -> None:
    store = SqliteStore(corpus_db)
    try:
        questions = _questions(store)
        assert len(questions) > 300
        known, seen = _compare(store, questions)
    finally:
        store.close()
    assert known >= 0.9 * seen  # the shortcut answers for nearly every candidate


def test_retrieve_gives_the_same_ranking_with_and_without_held_terms(corpus_db: str, restemmed: None) -> None:
    store = SqliteStore(corpus_db)
    try:
        questions = _questions(store)[:150]
        with_held = [retrieve(q, store=store, reranker=LexicalReranker()) for q in questions]
        store.held_terms = lambda chunks, query_terms: {}  # type: ignore[method-assign]
        without = [retrieve(q, store=store, reranker=LexicalReranker()) for q in questions]
    finally:
        store.close()
    assert [[(s.chunk.chunk_id, s.score) for s in r] for r in with_held] == [
        [(s.chunk.chunk_id, s.score) for s in r] for r in without
    ]


ODD = {
    "irish": ("Names", "O'Neil wrote the naïve café guide; Neil reviewed it."),
    "plain": ("Names", "Neil wrote the cafe guide and the naive reviews."),
    "longs": ("Odd letters", "The \u017fhip logs list the Kelvin \u212a scale."),
    "ident": ("Settings", "Set SESSION_COOKIE_AGE and app.config.from_object before the o'clock job."),
}


def _odd_store(path: Path) -> SqliteStore:
    store = SqliteStore(str(path))
    for doc_id, (section, text) in ODD.items():
        doc = Document(doc_id=doc_id, title=f"{doc_id.title()}'s guide", text=text)
        chunk = Chunk(
            chunk_id=f"{doc_id}#c00",
            doc_id=doc_id,
            title=doc.title,
            section=section,
            text=text,
            end_char=len(text),
        )
        store.upsert_document(doc, [chunk])
    return store


@pytest.mark.parametrize(
    "question",
    [
        "Who is Neil?",
        "What did O'Neil write?",
        "naïve café",
        "naive cafe",
        "ship kelvin scale",
        "session cookie age",
        "sessioncookieage from_object",
        "o'clock job guide",
        "Irish's guide",
    ],
)
def test_held_terms_leave_out_chunks_whose_terms_the_index_splits_or_folds(
    tmp_path: Path, restemmed: None, question: str
) -> None:
    store = _odd_store(tmp_path / "odd.db")
    try:
        pool = candidates_for(question, store=store)
        asked = search_terms(question)
        by_chunk = store.held_terms([s.chunk for s in pool], asked)
        for s in pool:
            if s.chunk.chunk_id in by_chunk:
                assert by_chunk[s.chunk.chunk_id] == _held_everywhere(s.chunk, asked)
        assert "irish#c00" not in by_chunk and "longs#c00" not in by_chunk  # split or folded terms
        _compare(store, [question])
    finally:
        store.close()


def test_held_terms_know_only_chunks_of_the_current_version(tmp_path: Path) -> None:
    store = _odd_store(tmp_path / "odd.db")
    try:
        (found,) = [
            s.chunk for s in candidates_for("naive cafe reviews", store=store) if s.chunk.doc_id == "plain"
        ]
        assert store.held_terms([found], ["naiv", "cafe"]) == {found.chunk_id: frozenset({"naiv", "cafe"})}
        edited = Chunk(
            chunk_id=found.chunk_id,
            doc_id="plain",
            title=found.title,
            section="Names",
            text="Neil wrote tea reviews.",
            end_char=23,
        )
        assert store.held_terms([edited], ["naiv", "cafe"]) == {}  # not the content the index holds
        store.upsert_document(Document(doc_id="plain", title=found.title, text=edited.text), [edited])
        assert store.held_terms([found], ["naiv", "cafe"]) == {}  # a new version: nothing cached yet
    finally:
        store.close()


def test_plain_text_is_true_only_when_every_term_is_a_run_of_letters_and_digits() -> None:
    for text in [
        *(t for _, t in ODD.values()),
        "Brightwater's plan",
        "naïve",
        "x\u2019s",
        "\u017fhip",
        "A_B c.d",
    ]:
        assert plain_text(text) == plain_joined(" ".join(terms(text))), text
    assert plain_text("plain ASCII words, SESSION_COOKIE_AGE and 42")
    assert not plain_text("o'clock") and not plain_text("\u017fhip")
    assert plain_text("naïve")  # its tokens are "na" and "ve", both plain


def test_pg_rerank_from_held_terms_scores_exactly_as_from_term_sets(pg_url: str, restemmed: None) -> None:  # noqa: F811
    from rag.store.postgres import PgStore

    pg = PgStore(pg_url)
    try:
        ingest_paths(pg, [str(ROOT / "fixtures" / "corpus")], settings=load_settings(mock=True))
        known, seen = _compare(pg, _questions(pg)[:200])
    finally:
        pg.close()
    assert known >= 0.5 * seen
