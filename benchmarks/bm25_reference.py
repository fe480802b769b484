"""The exhaustive BM25 both stores must reproduce: plain Python over every chunk, no index, no pruning.

Used by tests/test_lexical_exact.py (small generated corpora, both backends) and by
benchmarks/bench_engine.py (agreement at 50,000 chunks). It reads the store only through the public
`Store` interface (documents, their chunks and audiences) and computes everything else itself:

- a chunk's three columns are its body, title and section, each reduced to the project's stemmed
  terms (`rag.language.text.terms`) and cut into tokens as FTS5's unicode61 tokenizer cuts them;
- a query term is the phrase of its tokens; its frequency in a chunk is the number of times the
  phrase occurs in each column, weighted 1.0 / 1.5 / 2.0 (body / title / section);
- FTS5's BM25: k1 = 1.2, b = 0.75, idf = log((N - df + 0.5) / (df + 0.5)) floored at 1e-6, where
  N, df and the mean length come from the chunks everyone may read only (issue 16);
- a caller sees the chunks it may read that hold at least one term, by score, then chunk id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag.language.text import terms
from rag.store.interface import Groups, Store

K1 = 1.2
B = 0.75
WEIGHTS = (1.0, 1.5, 2.0)
MAX_QUERY_TERMS = 64
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def column(text: str) -> list[str]:
    return tokens(" ".join(terms(text)))


@dataclass(frozen=True)
class RefChunk:
    chunk_id: str
    groups: tuple[str, ...]  # () = everyone may read it
    columns: tuple[list[str], list[str], list[str]]
    # one token's column-weighted count, worked out once (a one-token phrase is by far the most common)
    counts: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        counts: dict[str, float] = {}
        for weight, toks in zip(WEIGHTS, self.columns, strict=True):
            for tok in toks:
                counts[tok] = counts.get(tok, 0.0) + weight
        object.__setattr__(self, "counts", counts)

    @property
    def length(self) -> int:
        return sum(len(c) for c in self.columns)

    def readable(self, groups: Groups) -> bool:
        return groups is None or not self.groups or bool(set(self.groups) & groups)

    def frequency(self, phrase: tuple[str, ...]) -> float:
        n = len(phrase)
        if n == 1:
            return self.counts.get(phrase[0], 0.0)
        total = 0.0
        for weight, toks in zip(WEIGHTS, self.columns, strict=True):
            hits = sum(1 for i in range(len(toks) - n + 1) if tuple(toks[i : i + n]) == phrase)
            total += weight * hits
        return total


@dataclass
class Reference:
    """Every chunk of a store, and which chunks hold each token (so a phrase's frequency is worked
    out only where its first token occurs; everywhere else it is 0)."""

    chunks: list[RefChunk]
    holders: dict[str, list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.holders = {}
        for i, chunk in enumerate(self.chunks):
            for token in chunk.counts:
                self.holders.setdefault(token, []).append(i)


def load(store: Store) -> Reference:
    """Every chunk of `store`, read through the Store interface."""
    out = []
    for doc_id in sorted(store.document_hashes()):
        doc = store.get_document(doc_id)
        for chunk in store.document_chunks(doc_id):
            columns = (column(chunk.text), column(chunk.title), column(chunk.section))
            out.append(RefChunk(chunk_id=chunk.chunk_id, groups=tuple(sorted(doc.access)), columns=columns))
    return Reference(out)


def phrases(query_terms: Sequence[str]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for term in query_terms:
        phrase = tuple(tokens(term))
        if phrase and phrase not in out:
            out.append(phrase)
        if len(out) >= MAX_QUERY_TERMS:
            break
    return out


def search(
    reference: Reference, query_terms: Sequence[str], limit: int, groups: Groups = None
) -> list[tuple[str, float]]:
    """(chunk id, BM25) of the `limit` best chunks `groups` may read, best first, ties by chunk id."""
    chunks = reference.chunks
    wanted = phrases(query_terms)
    public = [c for c in chunks if not c.groups]
    n = len(public)
    avgdl = max(sum(c.length for c in public) / n, 1.0) if n else 1.0
    freqs: dict[tuple[str, ...], dict[int, float]] = {}
    for phrase in wanted:
        found = {i: chunks[i].frequency(phrase) for i in reference.holders.get(phrase[0], [])}
        freqs[phrase] = {i: f for i, f in found.items() if f > 0}
    idfs = []
    for phrase in wanted:
        df = sum(1 for i in freqs[phrase] if not chunks[i].groups)
        value = math.log((n - df + 0.5) / (df + 0.5)) if n else 0.0
        idfs.append(value if value > 0 else 1e-6)
    scored = []
    for i, chunk in enumerate(chunks):
        if not chunk.readable(groups):
            continue
        score, matched = 0.0, False
        for phrase, idf in zip(wanted, idfs, strict=True):
            f = freqs[phrase].get(i, 0.0)
            if f > 0:
                matched = True
                score += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * chunk.length / avgdl))
        if matched:
            scored.append((chunk.chunk_id, score))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]
