"""Retrieval: BM25 candidates (+ dense candidates, fused by reciprocal rank), then the reranker.

The result's `score` is the reranker's relevance in [0, 1]; `lexical` keeps the raw BM25
score (0 for a candidate only the dense search found); `dense` the question's cosine to the
chunk, for every candidate with a vector from the embedder's model (0 for one without: a chunk the
background embedder has not reached yet). The question is embedded once per call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from rag.answer.rerank import Held, Reranker, reuse_stored_terms
from rag.embeddings import Embedder
from rag.errors import ConfigError
from rag.language.asking import query_words
from rag.language.inflection import forms
from rag.language.text import stem
from rag.store import Store
from rag.store.interface import Groups
from rag.types import Chunk, Scored, scored

logger = logging.getLogger(__name__)

RRF_K = 60


def rrf(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: id -> sum over rankings of 1 / (k + rank), ranks 1-based."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


_MISMATCH_WARNED: set[tuple[int, str]] = set()


def _warn_model_mismatch(store: Store, model: str) -> None:
    """Say once per store and model why dense retrieval found nothing when the store's vectors
    come from another embedding model (they are never compared with this model's queries)."""
    key = (id(store), model)
    if key in _MISMATCH_WARNED:
        return
    _MISMATCH_WARNED.add(key)
    others = [(m, n) for m, _, n in store.embedding_counts() if m != model]
    if others:
        logger.warning(
            "dense retrieval is off: the store's vectors come from %s, not the configured embedding"
            " model %s (RAG_VOYAGE_EMBED_MODEL with a Voyage key, else the local encoder); run `rag ingest`"
            " (with a key) or `rag ingest --embed` (without) to re-embed them (BM25 only until then)",
            ", ".join(f"{m or 'an unrecorded model'} ({n} vectors)" for m, n in others),
            model,
        )


def question_terms(question: str) -> list[str]:
    """The stemmed terms retrieval searches for and weighs: the question's content words without the
    words of asking for a default or hedging an amount, "default" added when it asks for one
    (`rag.language.asking.query_words`)."""
    return [stem(word) for word in query_words(question)]


def search_terms(question: str) -> list[str]:
    """The question's distinct `question_terms` in order, each followed by the other forms of an
    irregular verb ("wrote" also searches "write" and "written": `rag.language.inflection`)."""
    return _with_forms(question_terms(question))


def _with_forms(query_terms: Sequence[str]) -> list[str]:
    """`query_terms` each followed by the other forms of an irregular verb, each once, in order."""
    return list(dict.fromkeys(form for term in query_terms for form in (term, *sorted(forms(term)))))


def candidates_for(
    question: str,
    *,
    store: Store,
    embedder: Embedder | None = None,
    candidates: int = 40,
    groups: Groups = None,
    searched: Sequence[str] | None = None,
) -> list[Scored]:
    """Up to `candidates` chunks for the reranker, best first, with `score` 0 and `lexical` = BM25.

    Only chunks `groups` may read are candidates (None: every chunk). Every question term takes part
    in the BM25 match, however common (the store's search is exhaustive, issue 18). `searched`: the
    question's `search_terms` when the caller has them.
    """
    query_terms = search_terms(question) if searched is None else searched
    lexical = store.search(query_terms, candidates, groups=groups) if query_terms else []
    words = [scored(chunk, 0.0, score) for chunk, score in lexical]
    if embedder is None:
        return words
    if not store.has_embeddings(embedder.model):  # none yet (or another model's): no question vector
        _warn_model_mismatch(store, embedder.model)
        return words
    vector = _query_vector(question, embedder)
    if vector is None:
        return words
    try:
        dense = store.similar(vector, candidates, model=embedder.model, groups=groups)
    except Exception as exc:  # a store without usable vectors: lexical retrieval only
        logger.warning("dense retrieval failed (%s); using BM25 only", exc)
        dense = []
    if not dense:
        return words
    pool = _fused(lexical, dense, candidates)
    near = {s.chunk.chunk_id: s.dense for s in pool if s.dense}
    unscored = [s.chunk.chunk_id for s in pool if s.chunk.chunk_id not in near]
    if unscored:  # BM25 candidates outside the nearest: their cosine too, when they have a vector
        near.update(store.embedding_cosines(vector, unscored, model=embedder.model))
    return [replace(s, dense=near.get(s.chunk.chunk_id, 0.0)) for s in pool]


_FAILED_WARNED: set[tuple[int, str]] = set()


def _query_vector(question: str, embedder: Embedder | None) -> list[float] | None:
    """The question's vector, None without an embedder or when it fails (logged; a ConfigError, such as
    an encoder whose weights cannot load, fails every time and is logged once per embedder; BM25 only)."""
    if embedder is None:
        return None
    try:
        return embedder.embed_query(question)
    except Exception as exc:  # any embedder failure: lexical retrieval only
        key = (id(embedder), str(exc))
        repeated = isinstance(exc, ConfigError) and key in _FAILED_WARNED
        if isinstance(exc, ConfigError):
            _FAILED_WARNED.add(key)
        logger.log(
            logging.DEBUG if repeated else logging.WARNING,
            "dense retrieval failed (%s); using BM25 only",
            exc,
        )
        return None


def _fused(
    lexical: list[tuple[Chunk, float]], dense: list[tuple[Chunk, float]], candidates: int
) -> list[Scored]:
    """Both rankings fused by reciprocal rank (ties by chunk_id), the first `candidates` kept."""
    bm25 = {chunk.chunk_id: score for chunk, score in lexical}
    chunks = {chunk.chunk_id: chunk for chunk, _ in [*lexical, *dense]}
    fused = rrf([[c.chunk_id for c, _ in lexical], [c.chunk_id for c, _ in dense]])
    order = sorted(fused, key=lambda cid: (-fused[cid], cid))[:candidates]
    near = {chunk.chunk_id: similarity for chunk, similarity in dense}
    return [
        Scored(chunk=chunks[cid], score=0.0, lexical=bm25.get(cid, 0.0), dense=near.get(cid, 0.0))
        for cid in order
    ]


def retrieve(
    question: str,
    *,
    store: Store,
    reranker: Reranker,
    embedder: Embedder | None = None,
    top_k: int = 8,
    candidates: int = 40,
    groups: Groups = None,
) -> list[Scored]:
    """The `top_k` most relevant chunks `groups` may read (None: every chunk), sorted by score desc,
    then chunk_id; [] when nothing matches.

    Filtered before ranking: the candidates, the document frequencies and the chunk count the
    reranker weighs terms by all cover only what `groups` may read.
    """
    query_terms = list(dict.fromkeys(question_terms(question)))
    df = store.term_frequencies(query_terms, groups=groups) if query_terms else {}
    asked = _with_forms(query_terms)
    pool = candidates_for(
        question, store=store, embedder=embedder, candidates=candidates, groups=groups, searched=asked
    )
    if not pool:
        return []
    n_chunks = store.chunk_count(groups=groups)
    held = Held(asked=frozenset(asked), by_chunk=store.held_terms([s.chunk for s in pool], asked))
    reuse_stored_terms([s for s in pool if s.chunk.chunk_id not in held.by_chunk], store.chunk_terms)
    ranked = reranker.rerank(question, pool, df=df, n_chunks=n_chunks, held=held)
    return sorted(ranked, key=lambda s: (-s.score, s.chunk.chunk_id))[:top_k]
