from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answer.assemble import NEIGHBOUR_SHARE, assemble, block_tokens, end_weighted, with_neighbours
from rag.language.text import fingerprint
from rag.types import Chunk, Scored


def scored(i: int, score: float, text: str | None = None, title: str = "Doc") -> Scored:
    chunk = Chunk(
        chunk_id=f"doc-{i:03d}#c01",
        doc_id=f"doc-{i:03d}",
        title=title,
        section="Section",
        text=text if text is not None else f"Passage number {i} about topic {i}. " * 3,
        updated_at=date(2026, 1, 1),
    )
    return Scored(chunk=chunk, score=score)


WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "Alpha", "BETA,", "gamma.", "x" * 40])
ITEMS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=30),
        st.floats(min_value=0, max_value=1, allow_nan=False),
        st.lists(WORDS, min_size=1, max_size=120).map(" ".join),
    ),
    max_size=14,
)


def build(items: list[tuple[int, float, str]]) -> list[Scored]:
    return [scored(i, s, text) for i, s, text in items]


@settings(max_examples=150, deadline=None)
@given(ITEMS, st.integers(min_value=1, max_value=800), st.integers(min_value=1, max_value=7))
def test_assemble_any_input_never_exceeds_budget(items, budget, max_blocks):
    blocks = assemble(build(items), budget=budget, max_blocks=max_blocks)
    assert sum(block_tokens(b) for b in blocks) <= budget
    assert len(blocks) <= max_blocks


@settings(max_examples=150, deadline=None)
@given(ITEMS)
def test_assemble_any_input_has_no_shared_fingerprints(items):
    blocks = assemble(build(items), budget=2000)
    prints = [fingerprint(b.chunk.text) for b in blocks]
    assert len(prints) == len(set(prints))


@settings(max_examples=150, deadline=None)
@given(ITEMS)
def test_assemble_any_input_numbers_exactly_one_to_n(items):
    blocks = assemble(build(items), budget=2000)
    assert [b.n for b in blocks] == list(range(1, len(blocks) + 1))


@settings(max_examples=100, deadline=None)
@given(ITEMS, st.randoms())
def test_assemble_same_input_in_any_order_gives_same_numbering(items, rnd):
    unique = {i: (i, s, t) for i, s, t in items}  # one text per chunk id, as a store guarantees
    first = build(list(unique.values()))
    shuffled = list(first)
    rnd.shuffle(shuffled)
    numbering = [(b.n, b.chunk.chunk_id) for b in assemble(first)]
    assert numbering == [(b.n, b.chunk.chunk_id) for b in assemble(shuffled)]
    assert numbering == [(b.n, b.chunk.chunk_id) for b in assemble(first)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=2, max_size=10, unique=True))
def test_assemble_two_or_more_fitting_blocks_top_first_second_last(scores):
    items = [scored(i, s) for i, s in enumerate(scores)]
    blocks = assemble(items, budget=5000)
    ranked = sorted(items, key=lambda s: -s.score)
    assert blocks[0].chunk.chunk_id == ranked[0].chunk.chunk_id
    assert blocks[-1].chunk.chunk_id == ranked[1].chunk.chunk_id


def test_assemble_oversized_chunk_is_skipped_and_smaller_one_fits():
    big = scored(1, 0.9, "word " * 2000)
    small = scored(2, 0.5, "A short passage.")
    blocks = assemble([big, small], budget=200)
    assert [b.chunk.chunk_id for b in blocks] == [small.chunk.chunk_id]


def test_assemble_duplicate_text_keeps_higher_scored_copy():
    a = scored(1, 0.4, "Deleted items stay for 30 days.")
    b = scored(2, 0.8, "deleted ITEMS stay, for 30 days")
    blocks = assemble([a, b])
    assert [blk.chunk.chunk_id for blk in blocks] == [b.chunk.chunk_id]


def test_assemble_equal_scores_ordered_by_chunk_id():
    items = [scored(i, 0.5) for i in (3, 1, 2)]
    blocks = assemble(items)
    # ranked doc-001, doc-002, doc-003 -> end-weighted 001, 003, 002
    assert [b.chunk.doc_id for b in blocks] == ["doc-001", "doc-003", "doc-002"]


def test_assemble_more_than_max_blocks_caps_count():
    blocks = assemble([scored(i, 1 - i / 10) for i in range(9)], budget=10_000, max_blocks=5)
    assert len(blocks) == 5


def test_assemble_sent_text_is_original_chunk_text():
    blocks = assemble([scored(1, 0.7, "Original text, kept as is.")])
    assert blocks[0].sent_text == blocks[0].chunk.text == "Original text, kept as is."


def test_end_weighted_five_items_puts_least_important_in_middle():
    assert end_weighted([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]  # type: ignore[list-item]


def neighbour(i: int, text: str) -> Chunk:
    return Chunk(chunk_id=f"doc-001#c{i:02d}", doc_id="doc-001", title="Doc", section="", text=text)


def test_with_neighbours_scores_the_top_chunks_neighbours_below_it_and_keeps_a_higher_score():
    top, other, known = scored(1, 0.8), scored(2, 0.7), scored(3, 0.1, "Known neighbour text.")
    before, after = neighbour(0, "The sentence before."), neighbour(2, "The sentence after.")
    offered = with_neighbours([other, top, known], [before, after, known.chunk])
    by_id = {s.chunk.chunk_id: s.score for s in offered}
    assert by_id[before.chunk_id] == by_id[after.chunk_id] == NEIGHBOUR_SHARE * 0.8
    assert by_id[known.chunk.chunk_id] == NEIGHBOUR_SHARE * 0.8  # raised to the neighbour's score
    assert by_id[top.chunk.chunk_id] == 0.8 and by_id[other.chunk.chunk_id] == 0.7
    assert with_neighbours([top], []) == [top] and with_neighbours([], [before]) == []
    high = scored(4, 0.9, "Already ranked high.")
    assert with_neighbours([top, high], [high.chunk]) == [top, high]  # a higher score is kept


def test_with_neighbours_then_assemble_keeps_budget_fingerprints_and_original_text():
    top = scored(1, 0.8, "Top passage about the harbour gauge.")
    twin = neighbour(0, "top passage about THE harbour gauge")  # same fingerprint as the top chunk
    long = neighbour(2, "word " * 400)  # does not fit the budget
    after = neighbour(3, "  The gauge is read quarterly.  ")
    blocks = assemble(with_neighbours([top], [twin, long, after]), budget=120)
    assert [b.chunk.chunk_id for b in blocks] == [top.chunk.chunk_id, after.chunk_id]
    assert sum(block_tokens(b) for b in blocks) <= 120
    assert [b.sent_text for b in blocks] == [top.chunk.text, after.text]
