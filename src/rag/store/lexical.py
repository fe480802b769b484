"""Exact BM25 for the SQLite store: FTS5's postings, loaded per term into numpy arrays and scored
exhaustively (issue 18: no query term is left out for speed).

FTS5 stays the durable index. Its rows are written in the same transaction as the chunk rows, so a
crash can never leave the index and the chunks out of step and nothing needs repair on start. What
FTS5 does slowly is rank: `bm25()` visits every posting of every query term row by row in the
virtual-table machinery, which is why common terms used to be left out of the match. Here a term's
postings are read once from FTS5's own index (its `fts5vocab` instance view, one row per
occurrence) and kept as two arrays: the chunk keys holding the term and, per key, the term's share
of FTS5's BM25, `idf tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl))`, with `tf` column-weighted
(`BM25_WEIGHTS`). That contribution depends on nothing but the term, the chunk and the corpus, so a
query is one `bincount` over its terms' postings into a dense score array, then a partial sort.

Everything is keyed by the corpus version (`corpus_counts.version`, moved by every committed
write, in any process) and the store's file generation: a new version drops the cache, and every
array is read inside one read transaction, so the arrays always describe one committed state.
The `Chunk` values a search returns are cached the same way (`LexicalCache.chunks`): a chunk row
cannot change without the version moving, so under one version a chunk key names one immutable
`Chunk`, read from the database once instead of on every query that ranks it.

Statistics follow issue 16's contract: the chunk count, the mean length and each term's document
frequency come from the documents everyone may read (`chunks_fts`); restricted chunks
(`restricted_fts`) are scored with those statistics and kept only for callers who may read them.
The formula and its constants are FTS5's, so scores sit on the scale the retrieval gates were
calibrated on, and equal `bm25(chunks_fts, 1.0, 1.5, 2.0)` for the public chunks.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.access import EVERYONE, audience_groups
from rag.store.interface import Groups
from rag.types import Chunk

# FTS5's bm25() constants.
BM25_K1 = 1.2
BM25_B = 0.75
# The most postings (over all cached terms) one store keeps in memory; past it the terms used least
# recently are dropped (16 bytes a posting: 512 MB at most, reached past about 500,000 chunks).
MAX_CACHED_POSTINGS = 32_000_000
# The most `Chunk` values one store keeps per corpus version (least recently returned dropped first):
# a chunk is about 2-3 KB with its text, so at most about 50 MB.
MAX_CACHED_CHUNKS = 20_000

_PLAIN_RE = re.compile(r"[0-9a-z]+")

Floats = npt.NDArray[np.float64]
Keys = npt.NDArray[np.int64]


def idf(n_rows: int, df: int) -> float:
    """FTS5's idf: log((N - df + 0.5) / (df + 0.5)), floored at 1e-6 as FTS5 floors it."""
    value = math.log((n_rows - df + 0.5) / (df + 0.5)) if n_rows > 0 else 0.0
    return value if value > 0.0 else 1e-6


@dataclass(frozen=True)
class Postings:
    """One term's postings under one snapshot: chunk keys (distinct, ascending), the term's BM25 contribution
    to each (idf x share), and the number of public chunks among them (its document frequency)."""

    keys: Keys
    scores: Floats
    public_df: int


@dataclass
class Snapshot:
    """The chunk-level arrays of one corpus version, and the terms loaded under it."""

    version: tuple[int, ...]
    norm: Floats  # per chunk key: k1 (1 - b + b len / avgdl); 0 where no chunk has that key
    audience: npt.NDArray[np.int32]  # per chunk key: index into `audiences`, -1 where no chunk
    audiences: list[str]
    n_public: int
    avgdl: float
    terms: OrderedDict[tuple[str, ...], Postings] = field(default_factory=OrderedDict)  # least recent first
    hidden: dict[frozenset[str], Keys] = field(default_factory=dict)
    cached: int = 0
    chunks: OrderedDict[int, Chunk] = field(default_factory=OrderedDict)  # chunk key -> Chunk, LRU
    # chunk id -> key of the cached chunks whose every term the index holds as itself (`held`)
    plain: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, version: tuple[int, ...], rows: Sequence[tuple[int, int, str]]) -> Snapshot:
        """From (chunk key, length in FTS5 tokens, stored audience) of every chunk."""
        codes: dict[str, int] = {}
        size = max((row[0] for row in rows), default=-1) + 1
        keys = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        lengths = np.fromiter((row[1] for row in rows), dtype=np.float64, count=len(rows))
        coded = np.fromiter((codes.setdefault(row[2], len(codes)) for row in rows), np.int32, len(rows))
        audiences = list(codes)
        public = coded == codes[EVERYONE] if EVERYONE in codes else np.zeros(len(rows), dtype=bool)
        n_public = int(public.sum())
        # FTS5's mean length over chunks_fts (the public chunks), at least 1
        avgdl = max(float(lengths[public].sum()) / n_public, 1.0) if n_public else 1.0
        norm = np.zeros(size, dtype=np.float64)
        norm[keys] = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / avgdl)
        audience = np.full(size, -1, dtype=np.int32)
        audience[keys] = coded
        return cls(
            version=version, norm=norm, audience=audience, audiences=audiences, n_public=n_public, avgdl=avgdl
        )

    def postings(self, keys: Sequence[int], tfs: Sequence[float]) -> Postings:
        """A term's postings from its chunk keys and column-weighted frequencies (any order)."""
        k = np.asarray(keys, dtype=np.int64)
        tf = np.asarray(tfs, dtype=np.float64)
        order = np.argsort(k, kind="stable")
        k, tf = k[order], tf[order]
        public_code = self.audiences.index(EVERYONE) if EVERYONE in self.audiences else -2
        public_df = int(np.count_nonzero(self.audience[k] == public_code))
        # FTS5's expression, operation for operation: idf * ((tf * (k1 + 1)) / (tf + k1 * (...)))
        shares = (tf * (BM25_K1 + 1.0)) / (tf + self.norm[k])
        return Postings(keys=k, scores=idf(self.n_public, public_df) * shares, public_df=public_df)

    def hidden_keys(self, groups: frozenset[str]) -> Keys:
        """Chunk keys `groups` may not read (cached per groups)."""
        found = self.hidden.get(groups)
        if found is None:
            unreadable = [
                code
                for code, audience in enumerate(self.audiences)
                if audience != EVERYONE and not groups & set(audience_groups(audience))
            ]
            found = np.flatnonzero(np.isin(self.audience, unreadable)).astype(np.int64)
            if len(self.hidden) > 256:
                self.hidden.clear()
            self.hidden[groups] = found
        return found

    def visible_df(self, term: Postings, groups: Groups) -> int:
        """How many of `term`'s chunks `groups` may read (None: every chunk; no groups: the public
        ones), from the postings already loaded: no count over the index."""
        if groups is None:
            return int(term.keys.size)
        if not groups:
            return term.public_df
        hidden = self.hidden_keys(groups)
        if not hidden.size:
            return int(term.keys.size)
        return int(term.keys.size - np.count_nonzero(np.isin(term.keys, hidden, assume_unique=True)))

    def top(self, terms: Sequence[Postings], limit: int, groups: Groups) -> list[tuple[int, float]]:
        """(chunk key, BM25) of the `limit` best chunks `groups` may read that hold any of the terms,
        best first; chunks tied with the last one are all included (the caller breaks ties by id)."""
        if limit <= 0 or not terms:
            return []
        # one pass over every posting of every term: each chunk's contributions are added in query
        # order, starting from 0, as FTS5's bm25() sums its phrases (so the floats are the same).
        # `np.add.at` term by term, in place: no concatenated copy of the postings (a bincount over
        # them cost about 40% more on 50,000 chunks)
        scores = np.zeros(len(self.norm), dtype=np.float64)
        for t in terms:
            np.add.at(scores, t.keys, t.scores)
        if groups is not None:
            hidden = self.hidden_keys(groups)
            if hidden.size:
                scores[hidden] = 0.0
        floor = sample_floor(scores, terms, limit)
        if floor > 0.0:
            hit = at_least(scores, floor, limit)
        else:
            best = float(scores.max()) if scores.size else 0.0
            if best <= 0.0:
                return []
            hit = best_keys(scores, best, limit)
        values = scores[hit]
        order = np.argsort(-values, kind="stable")
        # tolist(): the same Python ints and floats as int() and float() per element, in one call
        return list(zip(hit[order].tolist(), values[order].tolist(), strict=True))


def by_score_then_id(found: list[tuple[Chunk, float]]) -> list[tuple[Chunk, float]]:
    """`found`, in the best-first order `Snapshot.top` gives, with tied scores ordered by chunk id
    (sorted in place only when two scores tie: otherwise the order is already that)."""
    scores = [score for _, score in found]
    if any(a == b for a, b in pairwise(scores)):
        found.sort(key=lambda item: (-item[1], item[0].chunk_id))
    return found


def is_plain(term: str) -> bool:
    """True for a term both lexical indexes hold as one token equal to itself (a run of [0-9a-z])."""
    return _PLAIN_RE.fullmatch(term) is not None


def sample_floor(scores: npt.NDArray[Any], terms: Sequence[Postings], limit: int) -> float:
    """A score that at least `limit` chunks reach (so no more than the `limit`-th best of `scores`):
    the `limit`-th best score among the chunks of the rarest term that holds at least `limit` (its
    keys are distinct; a rare term's chunks score the highest); 0.0 when no term holds that many, or
    only one as common as a quarter of the chunks (reading it would cost what it saves).

    It saves `best_keys` a pass over the whole score array for its maximum and keeps the cut
    close to the answer: every chunk scoring at least the `limit`-th best scores at least this."""
    sizes = [t.keys.size for t in terms]
    enough = [size for size in sizes if size >= limit]
    if not enough or min(enough) * 4 > scores.size:
        return 0.0
    keys = terms[sizes.index(min(enough))].keys
    values = scores[keys]
    return float(np.partition(values, keys.size - limit)[keys.size - limit])


def at_least(scores: npt.NDArray[Any], floor: float, limit: int) -> Keys:
    """`best_keys` given a score `floor` > 0 that at least `limit` chunks reach: the keys (ascending)
    of every chunk scoring at least the `limit`-th best, ties included."""
    hit = (scores >= floor).nonzero()[0]
    if hit.size > limit:
        values = scores[hit]
        kth = np.partition(values, hit.size - limit)[hit.size - limit]
        hit = hit[values >= kth]
    return hit


def best_keys(scores: npt.NDArray[Any], best: float, limit: int) -> Keys:
    """The keys (ascending) of every chunk scoring at least the `limit`-th best of `scores`, ties
    included; `best` is the highest score (above 0)."""
    # the chunks above a fraction of the best score, lowered until `limit` of them pass: every
    # chunk scoring at least the limit-th best is among them, and far fewer are partitioned
    for fraction in (0.5, 0.2, 0.05, 0.0):
        hit = (scores > best * fraction).nonzero()[0]
        if hit.size >= limit:
            break
    if hit.size > limit:
        values = scores[hit]
        kth = np.partition(values, hit.size - limit)[hit.size - limit]
        hit = hit[values >= kth]
    return hit


class LexicalCache:
    """The current `Snapshot` of one store, shared by its connections (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None

    def current(self, version: tuple[int, ...]) -> Snapshot | None:
        """The cached snapshot when it describes `version`, else None (nothing is loaded)."""
        with self._lock:
            current = self._snapshot
        return current if current is not None and current.version == version else None

    def snapshot(
        self, version: tuple[int, ...], load: Callable[[], Sequence[tuple[int, int, str]]]
    ) -> Snapshot:
        """The snapshot of `version`, built with `load()` (every chunk's key, length, audience) when
        the cached one describes another version."""
        with self._lock:
            current = self._snapshot
        if current is not None and current.version == version:
            return current
        fresh = Snapshot.build(version, load())
        with self._lock:
            if self._snapshot is None or self._snapshot.version != version:
                self._snapshot = fresh
            return self._snapshot

    def term(
        self, snapshot: Snapshot, phrase: tuple[str, ...], load: Callable[[], tuple[list[int], list[float]]]
    ) -> Postings:
        """The postings of `phrase` under `snapshot`, read with `load()` (keys, frequencies) once."""
        with self._lock:
            found = snapshot.terms.get(phrase)
            if found is not None:
                snapshot.terms.move_to_end(phrase)
                return found
        keys, tfs = load()
        found = snapshot.postings(keys, tfs)
        with self._lock:
            if phrase not in snapshot.terms:
                snapshot.terms[phrase] = found
                snapshot.cached += len(found.keys)
            while snapshot.cached > MAX_CACHED_POSTINGS and len(snapshot.terms) > 1:
                _, dropped = snapshot.terms.popitem(last=False)
                snapshot.cached -= len(dropped.keys)
        return found

    def chunks(
        self,
        snapshot: Snapshot,
        keys: Sequence[int],
        load: Callable[[list[int]], Iterable[tuple[int, Chunk, bool]]],
    ) -> dict[int, Chunk]:
        """The chunks of `keys` under `snapshot` (key -> Chunk; a key no chunk has is left out), those
        not cached read with `load(missing keys)` as (key, Chunk, plain) triples, `plain` true when
        every term of the chunk's text, title and section is one the index holds as itself (a run of
        [0-9a-z], `rag.store.base.plain_text`). `load` must read the same committed state `snapshot`
        describes (inside the transaction that read its version)."""
        found: dict[int, Chunk] = {}
        missing: list[int] = []
        with self._lock:
            cached = snapshot.chunks
            for key in keys:
                chunk = cached.get(key)
                if chunk is None:
                    missing.append(key)
                else:
                    cached.move_to_end(key)
                    found[key] = chunk
        if missing:
            rows = list(load(missing))
            loaded = {key: chunk for key, chunk, _ in rows}
            found.update(loaded)
            with self._lock:
                cached.update(loaded)
                snapshot.plain.update((chunk.chunk_id, key) for key, chunk, plain in rows if plain)
                while len(cached) > MAX_CACHED_CHUNKS:
                    key, chunk = cached.popitem(last=False)
                    if snapshot.plain.get(chunk.chunk_id) == key:
                        del snapshot.plain[chunk.chunk_id]
        return found

    def held(
        self,
        snapshot: Snapshot,
        chunks: Sequence[Chunk],
        query_terms: Sequence[str],
        load: Callable[[str], Callable[[], tuple[list[int], list[float]]]],
    ) -> dict[str, frozenset[str]]:
        """chunk id -> the terms of `query_terms` its text, title or section holds, for each of `chunks`
        this snapshot can answer for exactly; the others are left out.

        Exact for a chunk cached under `snapshot` with that very content whose terms are all plain
        (runs of [0-9a-z]): each of its terms is then one index token equal to itself, so it holds a
        plain term exactly when its key is among the term's postings, and no term that is not plain.
        `load(term)` reads a term's postings (keys, frequencies) the first time, as for `search`.
        """
        with self._lock:
            known = {}
            for chunk in chunks:
                key = snapshot.plain.get(chunk.chunk_id)
                cached = snapshot.chunks.get(key) if key is not None else None
                if cached is not None and (cached is chunk or cached == chunk):
                    known[chunk.chunk_id] = key
        if not known:
            return {}
        keys = np.fromiter(known.values(), dtype=np.int64, count=len(known))
        plain = [term for term in dict.fromkeys(query_terms) if is_plain(term)]
        # one row per term: which of the keys its postings hold; then one frozenset per distinct
        # column (candidates often hold the same terms), not a Python loop over every hit
        rows = np.zeros((len(plain), len(keys)), dtype=bool)
        for row, term in zip(rows, plain, strict=True):
            posted = self.term(snapshot, (term,), load(term)).keys
            if posted.size:
                where = np.minimum(np.searchsorted(posted, keys), posted.size - 1)
                np.equal(posted[where], keys, out=row)
        sets: dict[tuple[bool, ...], frozenset[str]] = {}
        out: dict[str, frozenset[str]] = {}
        for chunk_id, column in zip(known, rows.T.tolist(), strict=True):
            mask = tuple(column)
            found = sets.get(mask)
            if found is None:
                found = sets[mask] = frozenset(compress(plain, column))
            out[chunk_id] = found
        return out

    def clear(self) -> None:
        with self._lock:
            self._snapshot = None
