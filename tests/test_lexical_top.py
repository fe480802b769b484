"""`Snapshot.top`, the ranking step of both stores' BM25 (`rag.store.lexical`), against a brute-force
ranking of the same score array: the chunks scoring at least the `limit`-th best, ties included, best
first with ties by key, for every caller. The cut it starts from (`sample_floor`, read from the rarest
terms' postings) is checked to be reached by at least `limit` chunks, so no chunk of the answer is
ever left below it; and `scored`, the fast constructor retrieval uses, is checked field by field.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.store.lexical import Snapshot, by_score_then_id, sample_floor
from rag.types import Chunk, Scored, scored

AUDIENCES = ("", "", "", "hr", "security")
CALLERS = (None, frozenset(), frozenset({"hr"}))


def brute_force(scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """Every chunk scoring above 0 and at least the limit-th best, best first, ties by key."""
    ranked = sorted(((-float(s), k) for k, s in enumerate(scores.tolist()) if s > 0.0))
    if len(ranked) > limit:
        kth = ranked[limit - 1][0]
        ranked = [r for r in ranked if r[0] <= kth]
    return [(k, -s) for s, k in ranked]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, list, int, frozenset[str] | None]:
    n = draw(st.integers(min_value=1, max_value=120))
    rows = [(key, draw(st.integers(1, 40)), AUDIENCES[key % len(AUDIENCES)]) for key in range(n)]
    snapshot = Snapshot.build((1,), rows)
    terms = []
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        keys = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
        # few distinct frequencies, so scores tie often
        tfs = [float(draw(st.sampled_from([1, 2, 3]))) for _ in keys]
        terms.append(snapshot.postings(keys, tfs))
    return snapshot, terms, draw(st.integers(min_value=1, max_value=30)), draw(st.sampled_from(CALLERS))


@settings(max_examples=400, deadline=None)
@given(cases())
def test_top_equals_a_brute_force_ranking(case: tuple[Snapshot, list, int, frozenset[str] | None]) -> None:
    snapshot, terms, limit, groups = case
    scores = np.zeros(len(snapshot.norm))
    for t in terms:  # query order, from 0: the same float sums as top's
        for key, value in zip(t.keys.tolist(), t.scores.tolist(), strict=True):
            scores[key] += value
    if groups is not None:
        scores[snapshot.hidden_keys(groups)] = 0.0
    assert snapshot.top(terms, limit, groups) == brute_force(scores, limit)
    floor = sample_floor(scores, terms, limit)
    assert floor >= 0.0
    if floor > 0.0:  # the cut top starts from: at least `limit` chunks reach it
        assert int((scores >= floor).sum()) >= limit


def test_the_sampled_cut_is_taken_and_exact_on_a_common_and_a_rare_term() -> None:
    n = 2_000
    snapshot = Snapshot.build((1,), [(key, 10 + key % 7, "") for key in range(n)])
    rng = np.random.default_rng(3)
    common = snapshot.postings(list(range(n)), rng.integers(1, 4, n).astype(float).tolist())
    rare_keys = rng.choice(n, 300, replace=False).tolist()
    rare = snapshot.postings(rare_keys, [1.0] * 300)
    scores = np.zeros(n)
    for t in (common, rare):
        np.add.at(scores, t.keys, t.scores)
    assert sample_floor(scores, [common, rare], 40) > 0.0  # the new path, not best_keys's fallback
    assert snapshot.top([common, rare], 40, None) == brute_force(scores, 40)


def test_tied_scores_are_ordered_by_chunk_id_and_others_kept() -> None:
    def chunk(cid: str) -> Chunk:
        return Chunk(chunk_id=cid, doc_id="d", title="", section="", text="x")

    found = [(chunk("b"), 3.0), (chunk("z"), 2.0), (chunk("a"), 2.0), (chunk("c"), 1.0)]
    assert [c.chunk_id for c, _ in by_score_then_id(found)] == ["b", "a", "z", "c"]
    untied = [(chunk("z"), 3.0), (chunk("a"), 2.0)]
    assert [c.chunk_id for c, _ in by_score_then_id(untied)] == ["z", "a"]


def test_scored_makes_the_same_value_as_the_dataclass() -> None:
    chunk = Chunk(chunk_id="a#1", doc_id="a", title="t", section="s", text="x")
    values = {
        "chunk": chunk,
        "score": 0.5,
        "lexical": 7.0,
        "scorer": "lexical",
        "dense": 0.25,
        "words": 0.125,
    }
    assert [f.name for f in fields(Scored)] == list(values)  # scored() takes them in this order
    made = scored(*values.values())
    assert made == Scored(**values)
    assert type(made) is Scored and hash(made) == hash(Scored(**values))
    assert made.rescored(0.9, "hybrid") == Scored(**{**values, "score": 0.9, "scorer": "hybrid"})
