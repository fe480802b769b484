"""Rerankers: give each retrieval candidate a relevance score in [0, 1], the value the retrieval gate reads.

`LexicalReranker` is the offline default (deterministic, no network); `HybridReranker` adds the local
encoder's cosine to it when dense retrieval runs offline; `VoyageReranker` uses Voyage `rerank-2.5`
and falls back to the lexical scores, with a logged warning, on any failure.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from rag.breaker import CircuitBreaker
from rag.config import Settings
from rag.embeddings import LocalEmbedder, embedding_text
from rag.language.asking import query_words
from rag.language.inflection import forms
from rag.language.text import english_frequency, stem, terms
from rag.types import Chunk, Scored
from rag.voyage import (
    RERANK_DEFAULT_MAX_TOTAL_TOKENS,
    RERANK_MAX_DOCUMENTS,
    RERANK_MAX_TOTAL_TOKENS,
    TOKEN_HEADROOM,
    call_voyage,
    voyage_breaker,
    voyage_client_for,
    voyage_tokens,
)

logger = logging.getLogger(__name__)

# Share of the lexical score that BM25 can take away from a chunk ranked below the best BM25 match.
BM25_WEIGHT = 0.3
# Typical chunk length in words (chunk_document cuts 120-220 estimated tokens, about 90-170 words):
# the passage size the general-English prior turns word frequencies into chunk frequencies for.
CHUNK_WORDS = 130
# The dense cosine's share of the hybrid score (`HybridReranker`): the middle of the plateau (0.45-0.65)
# of evidence reach over the seven development sets (docs/eval.md, "Dense retrieval offline").
DENSE_WEIGHT = 0.55
# Term sets of recently scored chunk texts: popular chunks recur across questions (about 3 KB each).
TERM_CACHE_SIZE = 4096
# Term sets of chunk titles and section headings (a few terms each, under 1 KB): every candidate's
# two are looked up per question, so the cache holds those of a large store's chunks (issue 29).
TITLE_CACHE_SIZE = 65_536


@dataclass(frozen=True, slots=True)
class Held:
    """Which of the terms `asked` each candidate's text, title or section holds (chunk id -> those
    terms), as the store's lexical index tells (`Store.held_terms`); candidates left out are not known."""

    asked: frozenset[str]
    by_chunk: Mapping[str, frozenset[str]]


class Reranker(Protocol):
    name: str

    def rerank(
        self,
        question: str,
        candidates: Sequence[Scored],
        *,
        df: Mapping[str, int],
        n_chunks: int,
        held: Held | None = None,
    ) -> list[Scored]:
        """Candidates rescored into [0, 1], sorted by score desc, then chunk_id, each naming its `scorer`.
        `df`: chunks per term; `held`: the question's terms each candidate holds, where the store knows
        (a shortcut: the scores are the same without it). The retrieval gate's threshold is chosen per
        scorer (rag.answer.gates)."""
        ...


def idf(df: int, n_chunks: int) -> float:
    """BM25-style inverse document frequency, always > 0; largest for a term no chunk contains (df = 0)."""
    return _idf(float(df), n_chunks)


def _idf(df: float, n_chunks: int) -> float:
    """`idf` for a real-valued (expected) document frequency df >= 0."""
    return math.log(1.0 + (max(n_chunks, df) - df + 0.5) / (df + 0.5))


def english_idf(word: str, n_chunks: int, *, chunk_words: int = CHUNK_WORDS) -> float:
    """`idf` of `word` in an imagined corpus of `n_chunks` general-English passages of `chunk_words` words.

    Its expected document frequency is n_chunks * P(a passage holds the word), with
    P = 1 - exp(-chunk_words * english_frequency(word)). Same scale as `idf`, so the two compare;
    equal to `idf(0, n_chunks)` for a word English does not know.
    """
    share = -math.expm1(-chunk_words * english_frequency(word))
    return _idf(share * n_chunks, n_chunks)


def term_weights(question: str, df: Mapping[str, int], n_chunks: int) -> dict[str, float]:
    """Each distinct term retrieval searches for in `question` (`rag.language.asking.query_words`: its
    content words without those of asking for a default or hedging an amount) -> its information
    weight (> 0), in question order.

    weight = min(corpus IDF, general-English IDF). In a small corpus an everyday word the documents
    happen not to use ("think", "already", "far") gets the same top IDF as a real concept the corpus
    lacks, so a question phrased in everyday words sinks below the retrieval gate. General English
    tells the two apart: a term counts as informative only when it is rare both in the corpus and
    in English. A word English does not know (product names, codes) keeps its corpus IDF, and a
    word common in the corpus stays cheap however rare it is in English. Off-topic questions still
    score low: their content words are absent from the corpus, so no chunk covers them, and what
    they share with the corpus is mostly everyday words that now weigh less.
    When several question words share a stem, the most frequent in English sets its weight.
    """
    surface: dict[str, list[str]] = {}
    for word in query_words(question):
        surface.setdefault(stem(word), []).append(word)
    return {
        term: min(idf(df.get(term, 0), n_chunks), min(english_idf(w, n_chunks) for w in words))
        for term, words in surface.items()
    }


@lru_cache(maxsize=TITLE_CACHE_SIZE)
def _term_set(text: str) -> frozenset[str]:
    """`frozenset(terms(text))`, stemming each distinct word once (titles and sections, and tests).

    Exact because a token never spans whitespace: the distinct whitespace-separated words hold
    the same tokens as the text (about 3x faster on 200-token chunks).
    """
    return frozenset(terms(" ".join(set(text.split()))))


class ChunkTerms:
    """Stemmed term sets of recently scored chunk texts, keyed by the text (a bounded LRU, thread-safe).

    Filled from the stems the store kept at ingest (`reuse_stored_terms`), so a candidate is not
    re-tokenised and re-stemmed on a cache miss; computed from the text otherwise.
    """

    def __init__(self, size: int = TERM_CACHE_SIZE) -> None:
        self.size = size
        self._sets: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # term sets computed from the text (cache misses the store did not fill)

    def __contains__(self, text: object) -> bool:
        return text in self._sets

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()

    def remember(self, text: str, stems: frozenset[str]) -> None:
        """Record `stems` (which must equal `frozenset(terms(text))`) for `text`."""
        self.remember_all([(text, stems)])

    def remember_all(self, items: Sequence[tuple[str, frozenset[str]]]) -> None:
        """`remember` of each (text, stems) pair, under one lock."""
        with self._lock:
            for text, stems in items:
                self._sets[text] = stems
                self._sets.move_to_end(text)
            while len(self._sets) > self.size:
                self._sets.popitem(last=False)

    def get_all(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """`get` of each text, the known ones looked up under one lock."""
        with self._lock:
            found = [self._sets.get(text) for text in texts]
            for text, stems in zip(texts, found, strict=True):
                if stems is not None:
                    self._sets.move_to_end(text)
        return [self.get(text) if stems is None else stems for text, stems in zip(texts, found, strict=True)]

    def get(self, text: str) -> frozenset[str]:
        """`frozenset(terms(text))`, from the cache when known."""
        with self._lock:
            found = self._sets.get(text)
            if found is not None:
                self._sets.move_to_end(text)
                return found
        stems = _term_set.__wrapped__(text)
        self.computed += 1
        self.remember(text, stems)
        return stems


CHUNK_TERMS = ChunkTerms()


def reuse_stored_terms(
    pool: Sequence[Scored], stored: Callable[[list[str]], Mapping[str, frozenset[str]]]
) -> None:
    """Fill the lexical reranker's term sets for candidates it has not seen from `stored` (chunk ids ->
    the stems the store kept at ingest, one lookup), so they are not tokenised and stemmed again."""
    missing = {s.chunk.chunk_id: s.chunk.text for s in pool if s.chunk.text not in CHUNK_TERMS}
    if not missing:
        return
    found = stored(list(missing))
    CHUNK_TERMS.remember_all([(missing[cid], stems) for cid, stems in found.items() if cid in missing])


def _sorted(scored: list[Scored]) -> list[Scored]:
    return sorted(scored, key=lambda s: (-s.score, s.chunk.chunk_id))


class LexicalReranker:
    """Offline relevance: how much of the question's *information* a chunk covers, nudged by BM25.

    coverage = sum of the weights (`term_weights`: min of corpus and general-English IDF) of the
    question's distinct content terms found in the chunk (text, title or section) / sum of the
    weights of all of them. A specific term the corpus lacks keeps a large weight, so a question
    whose key terms are absent cannot reach a high coverage, while words present in most chunks,
    or everyday English words, barely count: a chunk that shares only such words scores low.
    score = coverage * (1 - BM25_WEIGHT + BM25_WEIGHT * bm25 / max bm25 among the
    candidates). The product (not a sum) keeps the score absolute: the best BM25 match cannot
    be lifted above its coverage just for being the best of a poor set, and among chunks of
    equal coverage the one where the terms are denser ranks first.
    """

    name = "lexical"

    def __init__(self, *, bm25_weight: float = BM25_WEIGHT) -> None:
        self.bm25_weight = bm25_weight

    def rerank(
        self,
        question: str,
        candidates: Sequence[Scored],
        *,
        df: Mapping[str, int],
        n_chunks: int,
        held: Held | None = None,
    ) -> list[Scored]:
        weights = [(forms(t), w) for t, w in term_weights(question, df, n_chunks).items()]
        total = sum(w for _, w in weights)
        best = max((c.lexical for c in candidates), default=0.0)
        out = []
        for cand, covered in zip(candidates, _coverages(weights, candidates, held), strict=True):
            coverage = covered / total if total else 0.0
            density = cand.lexical / best if best > 0 else 0.0
            score = coverage * (1.0 - self.bm25_weight + self.bm25_weight * max(0.0, density))
            out.append(cand.rescored(min(1.0, max(0.0, score)), self.name))
        return _sorted(out)


def _coverages(
    weights: Sequence[tuple[frozenset[str], float]], candidates: Sequence[Scored], held: Held | None
) -> list[float]:
    """`_covered` of each candidate: from the terms `held` says it holds when it knows the candidate and
    every form of every weighted term was asked (the same sum, in the same order), else from the
    candidate's term sets."""
    known = held.by_chunk if held is not None and all(fs <= held.asked for fs, _ in weights) else {}
    unknown = [cand.chunk.text for cand in candidates if cand.chunk.chunk_id not in known]
    bodies = iter(CHUNK_TERMS.get_all(unknown))
    out = []
    sums: dict[frozenset[str], float] = {}  # candidates often hold the same terms: one sum per set
    for cand in candidates:
        have = known.get(cand.chunk.chunk_id)
        if have is None:
            out.append(_covered(weights, next(bodies), cand.chunk))
            continue
        covered = sums.get(have)
        if covered is None:
            covered = sums[have] = sum([w for fs, w in weights if not fs.isdisjoint(have)])
        out.append(covered)
    return out


def _covered(weights: Sequence[tuple[frozenset[str], float]], body: frozenset[str], chunk: Chunk) -> float:
    """The summed weights of the terms the chunk's text (`body`), title or section holds, each term in
    any of its forms (`weights`: (forms, weight) pairs; an irregular verb's forms,
    `rag.language.inflection.forms`)."""
    # a term counts when any of the three holds one of its forms (no union set built per chunk)
    title, section = _term_set(chunk.title), _term_set(chunk.section)
    return sum(
        [
            w
            for fs, w in weights
            if not (fs.isdisjoint(body) and fs.isdisjoint(title) and fs.isdisjoint(section))
        ]
    )


class HybridReranker:
    """Offline relevance by words and by meaning: the lexical score mixed with the question's cosine.

    score = (1 - dense_weight) * lexical + dense_weight * max(0, cosine), for a candidate with a vector
    (`Scored.dense` set by retrieval); a candidate without one (the background embedder has not
    reached it) keeps its lexical score. A paraphrase that shares few words with the question is
    found by the dense search and scored by its meaning, so the gate can let it through; a chunk
    that shares words but means something else loses some of its lexical score. With no candidate
    carrying a vector (none stored yet) the lexical scores are returned as they are, naming the
    lexical scorer, so the gate applies the lexical threshold.
    """

    name = "hybrid"

    def __init__(self, *, lexical: LexicalReranker | None = None, dense_weight: float = DENSE_WEIGHT) -> None:
        self.lexical = lexical or LexicalReranker()
        self.dense_weight = dense_weight

    def rerank(
        self,
        question: str,
        candidates: Sequence[Scored],
        *,
        df: Mapping[str, int],
        n_chunks: int,
        held: Held | None = None,
    ) -> list[Scored]:
        ranked = self.lexical.rerank(question, candidates, df=df, n_chunks=n_chunks, held=held)
        if not any(c.dense for c in ranked):
            return ranked
        w = self.dense_weight
        return _sorted(
            [
                c.rescored(
                    min(1.0, max(0.0, (1.0 - w) * c.score + w * max(0.0, c.dense))) if c.dense else c.score,
                    self.name,
                    words=c.score,
                )
                for c in ranked
            ]
        )


class VoyageReranker:
    """Voyage `rerank` relevance scores (in [0, 1]) over each chunk's provenance line and text.

    One request per question, within the API's limits (at most RERANK_MAX_DOCUMENTS documents and
    the model's total-token budget: candidates past either are not sent and score 0). Retries
    and the provider's circuit breaker are `call_voyage`'s. Any failure, or an open breaker (no
    request at all), logs a warning and returns the fallback reranker's scores, each naming the
    fallback as its `scorer`, so the gate reads the fallback's threshold.
    """

    name = "voyage"

    def __init__(
        self,
        *,
        client: Any,
        model: str = "rerank-2.5",
        fallback: Reranker | None = None,
        retries: int = 2,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.fallback: Reranker = fallback or LexicalReranker()
        self.retries = retries
        self.breaker = breaker
        self.fallbacks = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> VoyageReranker:
        return cls(
            client=voyage_client_for(settings),
            model=settings.voyage_rerank_model,
            retries=settings.model_max_retries,
            breaker=voyage_breaker(settings),
        )

    def _within_limits(self, question: str, documents: list[str]) -> int:
        """How many leading documents one request may carry (documents and total tokens)."""
        budget = int(
            RERANK_MAX_TOTAL_TOKENS.get(self.model, RERANK_DEFAULT_MAX_TOTAL_TOKENS) * TOKEN_HEADROOM
        )
        query = voyage_tokens(question)
        used = 0
        for n, doc in enumerate(documents[:RERANK_MAX_DOCUMENTS]):
            used += query + voyage_tokens(doc)
            if used > budget:
                return n
        return min(len(documents), RERANK_MAX_DOCUMENTS)

    def rerank(
        self,
        question: str,
        candidates: Sequence[Scored],
        *,
        df: Mapping[str, int],
        n_chunks: int,
        held: Held | None = None,
    ) -> list[Scored]:
        if not candidates:
            return []
        documents = [embedding_text(c.chunk) for c in candidates]
        sent = self._within_limits(question, documents)

        def request() -> dict[int, float]:
            result = self.client.rerank(question, documents[:sent], model=self.model, truncation=True)
            scores = {int(r.index): float(r.relevance_score) for r in result.results}
            if not scores or any(i < 0 or i >= sent for i in scores):
                raise ValueError("malformed reply: rerank indices do not match the documents sent")
            return scores

        try:
            if sent == 0:
                raise ValueError("the question alone exceeds the rerank token budget")
            scores = call_voyage(request, what="rerank", retries=self.retries, breaker=self.breaker)
        except Exception as exc:  # any provider failure falls back to the offline scores
            self.fallbacks += 1
            logger.warning("Voyage rerank failed (%s); using the %s reranker", exc, self.fallback.name)
            return self.fallback.rerank(question, candidates, df=df, n_chunks=n_chunks, held=held)
        return _sorted(
            [c.rescored(min(1.0, max(0.0, scores.get(i, 0.0))), self.name) for i, c in enumerate(candidates)]
        )


def make_reranker(settings: Settings) -> Reranker:
    """Voyage rerank-2.5 when a key is set and MOCK is off; otherwise the hybrid reranker when dense
    retrieval runs on the local encoder (`rag.embeddings.make_embedder`), else the lexical reranker."""
    if settings.use_voyage:
        try:
            return VoyageReranker.from_settings(settings)
        except Exception as exc:
            logger.warning("Voyage reranker unavailable (%s); using the lexical reranker", exc)
    elif settings.dense_enabled and LocalEmbedder.from_settings(settings) is not None:
        return HybridReranker()
    return LexicalReranker()
