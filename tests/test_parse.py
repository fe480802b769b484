import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag.answer.parse import SentenceBuffer, citation_numbers, parse_inline, strip_markers
from rag.types import Claim, Draft, Piece


def _claims(*numbers: int) -> tuple[Claim, ...]:
    return tuple(Claim(n=n) for n in numbers)


def _stream(pieces: list[Piece], *, native: bool = False) -> list[Draft]:
    buffer = SentenceBuffer(native=native)
    out: list[Draft] = []
    for piece in pieces:
        out.extend(buffer.feed(piece))
    out.extend(buffer.flush())
    return out


def _split(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def test_parse_inline_trailing_markers_attach_to_the_sentence_before() -> None:
    assert parse_inline("Uploads are capped at 50 MB.[1][3] Retention is 30 days. [2] Done [4]") == (
        Draft(text="Uploads are capped at 50 MB.", claims=_claims(1, 3)),
        Draft(text="Retention is 30 days.", claims=_claims(2)),
        Draft(text="Done", claims=_claims(4)),
    )


def test_parse_inline_marker_before_period_is_removed_with_its_space() -> None:
    assert parse_inline("Trash keeps projects for 30 days [2].") == (
        Draft(text="Trash keeps projects for 30 days.", claims=_claims(2)),
    )


def test_parse_inline_comma_list_and_ranges_expand_in_order() -> None:
    (draft,) = parse_inline("A claim [1, 3] and another [2-4] and [5–6] and [7,8].")
    assert draft.text == "A claim and another and and."
    assert [c.n for c in draft.claims] == [1, 3, 2, 4, 5, 6, 7, 8]


def test_parse_inline_repeated_number_is_claimed_once() -> None:
    (draft,) = parse_inline("Same source twice [1][1] here [1].")
    assert draft.claims == _claims(1)


def test_parse_inline_prose_brackets_are_not_citations() -> None:
    text = "He wrote [sic] about version [2.0] and [v2] and [a] and item [0] today."
    assert parse_inline(text) == (Draft(text=text, claims=()),)


def test_parse_inline_identifier_index_is_prose_but_glued_marker_at_clause_end_is_a_citation() -> None:
    assert parse_inline("Read array[1] first. The cap is 50 MB[2].") == (
        Draft(text="Read array[1] first.", claims=()),
        Draft(text="The cap is 50 MB.", claims=_claims(2)),
    )


def test_parse_inline_reversed_or_huge_range_is_not_a_citation() -> None:
    assert parse_inline("Odd [3-1] thing.")[0].claims == ()
    assert parse_inline("Odd [1-999] thing.")[0].claims == ()


def test_parse_inline_marker_only_sentences_are_dropped() -> None:
    assert parse_inline("First claim.\n\n[1][2]\n\nSecond claim. [3]") == (
        Draft(text="First claim.", claims=()),
        Draft(text="Second claim.", claims=_claims(3), starts="paragraph"),
    )


def test_parse_inline_bullets_headings_and_enumerators_are_tidied() -> None:
    text = "# Limits\n- Uploads stop at 250 MB [1]\n* Trash keeps 30 days [2]\n1. Open Settings [3]"
    assert parse_inline(text) == (
        Draft(text="Limits", claims=()),
        Draft(text="Uploads stop at 250 MB", claims=_claims(1), starts="item"),
        Draft(text="Trash keeps 30 days", claims=_claims(2), starts="item"),
        Draft(text="Open Settings", claims=_claims(3), starts="numbered", number=1),
    )


def test_parse_inline_marks_paragraphs_and_list_items() -> None:
    text = (
        "Plans differ [1].\n\n- Team: 50 members [1].\n- Business: unlimited [2].\n\n"
        "Prices are per user [1]. Billed monthly [1]."
    )
    assert [d.starts for d in parse_inline(text)] == ["", "item", "item", "paragraph", ""]


def test_parse_inline_keeps_decimals_versions_and_abbreviations_in_one_sentence() -> None:
    (draft,) = parse_inline("Since v2.3 it costs $0.67, e.g. for the U.S. team [1].")
    assert draft == Draft(text="Since v2.3 it costs $0.67, e.g. for the U.S. team.", claims=_claims(1))


def test_parse_inline_empty_text_gives_no_drafts() -> None:
    assert parse_inline("") == ()
    assert parse_inline("   \n\n [1] ") == ()


def test_citation_numbers_rejects_descending_range() -> None:
    assert citation_numbers("[1][3-4]") == (1, 3, 4)
    assert citation_numbers("[4-3]") is None


def test_strip_markers_returns_text_and_numbers() -> None:
    assert strip_markers("Claim [2], then more [1].") == ("Claim, then more.", (2, 1))


def test_sentence_buffer_waits_for_a_marker_that_arrives_after_the_period() -> None:
    buffer = SentenceBuffer(native=False)
    assert buffer.feed(Piece(text="The cap is 50 MB.")) == []
    assert buffer.feed(Piece(text=" ")) == []
    assert buffer.feed(Piece(text="[1")) == []
    assert buffer.feed(Piece(text="]")) == []
    assert buffer.feed(Piece(text=" Next")) == [Draft(text="The cap is 50 MB.", claims=_claims(1))]
    assert buffer.flush() == [Draft(text="Next", claims=())]


def test_sentence_buffer_emits_a_sentence_once_the_next_one_starts() -> None:
    buffer = SentenceBuffer(native=False)
    assert buffer.feed(Piece(text="One [1]. Two")) == [Draft(text="One.", claims=_claims(1))]
    assert buffer.feed(Piece(text=" [2].")) == []
    assert buffer.flush() == [Draft(text="Two.", claims=_claims(2))]
    assert buffer.flush() == []


def test_sentence_buffer_native_claims_attach_to_every_overlapping_sentence() -> None:
    a, b = Claim(n=1, cited_text="The grass is green."), Claim(n=2, cited_text="The sky is blue.")
    pieces = [
        Piece(text="According to the document, ", index=1),
        Piece(index=2, claims=(a,)),
        Piece(text="the grass is green", index=2),
        Piece(text=". Also ", index=3),
        Piece(text="the sky is blue. And", index=4, claims=(b,)),
        Piece(text=" more.", index=5),
    ]
    assert _stream(pieces, native=True) == [
        Draft(text="According to the document, the grass is green.", claims=(a,)),
        Draft(text="Also the sky is blue.", claims=(b,)),
        Draft(text="And more.", claims=(b,)),
    ]


def test_sentence_buffer_native_claims_arriving_after_text_are_not_lost() -> None:
    claim = Claim(n=1, cited_text="Uploads stop at 250 MB.")
    buffer = SentenceBuffer(native=True)
    assert buffer.feed(Piece(text="Uploads stop at 250 MB. Next", index=1)) == []
    assert buffer.feed(Piece(index=1, claims=(claim,))) == []
    assert buffer.feed(Piece(text=" sentence.", index=2)) == [
        Draft(text="Uploads stop at 250 MB.", claims=(claim,))
    ]
    assert buffer.flush() == [Draft(text="Next sentence.", claims=(claim,))]


def test_sentence_buffer_empty_cited_block_attaches_to_the_sentence_before() -> None:
    claim = Claim(n=3, cited_text="x")
    pieces = [
        Piece(text="First sentence.", index=0),
        Piece(index=1, claims=(claim,)),
        Piece(text=" Second sentence.", index=2),
    ]
    assert _stream(pieces, native=True) == [
        Draft(text="First sentence.", claims=(claim,)),
        Draft(text="Second sentence.", claims=()),
    ]


def test_sentence_buffer_ignores_usage_only_pieces() -> None:
    assert _stream([Piece(text="Done [1]."), Piece()]) == [Draft(text="Done.", claims=_claims(1))]


_ALPHABET = st.sampled_from(
    list("ab. \n[]1,-#*2e.g.v3$0") + [" [1]", "[2]", ". ", "! ", "\n\n", "e.g. ", "[1-2]"]
)
_TEXT = st.lists(_ALPHABET, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, cuts=st.lists(st.integers(min_value=0, max_value=500), max_size=12))
def test_sentence_buffer_equals_parse_inline_for_any_piece_split(text: str, cuts: list[int]) -> None:
    pieces = [Piece(text=part) for part in _split(text, cuts)]
    assert _stream(pieces) == list(parse_inline(text))


@settings(max_examples=80, deadline=None)
@given(
    blocks=st.lists(
        st.tuples(_TEXT, st.lists(st.integers(min_value=1, max_value=5), max_size=2), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_sentence_buffer_native_drafts_do_not_depend_on_piece_split_or_claim_order(
    blocks: list[tuple[str, list[int], bool]], cuts: list[int]
) -> None:
    # Claude's cited blocks carry the text they claim: a citation-only empty block after a finished
    # sentence is not a shape it sends (that sentence is released as soon as its block closes).
    # Nor does text glue its first letter to a sentence that ended at a block boundary ("aa." + "b").
    for before, (text, numbers, _) in zip(blocks, blocks[1:], strict=False):
        assume(not (numbers and not text.strip() and before[0].strip()))
    texts = [text for text, _, _ in blocks]
    for i in range(1, len(texts)):
        so_far, rest = "".join(texts[:i]), "".join(texts[i:])
        assume(not (so_far.endswith((".", "!", "?")) and rest[:1].strip()))
    whole: list[Piece] = []
    split: list[Piece] = []
    for index, (text, numbers, claims_first) in enumerate(blocks, start=1):
        claims = tuple(Claim(n=n, cited_text=f"span {n}") for n in numbers)
        whole.append(Piece(text=text, index=index, claims=claims))
        parts = [Piece(text=part, index=index) for part in _split(text, cuts)] or [Piece(index=index)]
        if claims:
            claim_piece = Piece(index=index, claims=claims)
            parts = [claim_piece, *parts] if claims_first else [*parts, claim_piece]
        split.extend(parts)
    streamed = _stream(split, native=True)
    assert streamed == _stream(whole, native=True)
    assert [d.text for d in streamed] == [
        d.text for d in parse_inline("".join(text for text, _, _ in blocks))
    ]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_inline_never_raises_and_returns_clean_drafts(text: str) -> None:
    for draft in parse_inline(text):
        assert draft.text == draft.text.strip()
        assert draft.text
        assert all(1 <= claim.n <= 999 for claim in draft.claims)


def test_sentence_buffer_native_releases_sentence_when_its_block_closes() -> None:
    buffer = SentenceBuffer(native=True)
    assert buffer.feed(Piece(index=0, claims=(Claim(n=1, cited_text="Uploads are capped at 250 MB."),))) == []
    assert buffer.feed(Piece(index=0, text="Uploads are capped at 250 MB.")) == []
    released = buffer.feed(Piece(index=1))  # content_block_stop: the next block begins empty
    assert [d.text for d in released] == ["Uploads are capped at 250 MB."]
    assert released[0].claims == (Claim(n=1, cited_text="Uploads are capped at 250 MB."),)
    assert buffer.flush() == []


def test_sentence_buffer_native_holds_sentence_that_may_continue_after_block_close() -> None:
    buffer = SentenceBuffer(native=True)
    buffer.feed(Piece(index=0, text="The current release is v2."))
    assert buffer.feed(Piece(index=1)) == []  # "v2." may continue as "v2.5"
    buffer.feed(Piece(index=1, text="5 with fixes."))
    assert [d.text for d in buffer.flush()] == ["The current release is v2.5 with fixes."]


_WRAPPERS = [("", ""), ('"', '"'), ("“", "”"), ("'", "'"), ("(", ")"), ("**", "**"), ("*", "*"), ("_", "_")]
_RUNS = {"[1]": (1,), "[1][2]": (1, 2), "[1, 3]": (1, 3), "[2-3]": (2, 3), "[2]": (2,)}


@settings(max_examples=400, deadline=None)
@given(
    wrapper=st.sampled_from(_WRAPPERS),
    run=st.sampled_from(sorted(_RUNS)),
    position=st.sampled_from(["inside", "after_close", "after_stop", "after_stop_emphasis"]),
    space=st.sampled_from(["", " "]),
    stop_inside=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_parse_inline_markers_after_quotes_brackets_and_emphasis_in_every_position(
    wrapper: tuple[str, str], run: str, position: str, space: str, stop_inside: bool, cuts: list[int]
) -> None:
    opening, closing = wrapper
    stop_in, stop_out = (".", "") if stop_inside and closing else ("", ".")
    if position == "inside":
        core = f"{opening}at any time {run}{stop_in}{closing}{stop_out}"
    elif position == "after_close":
        core = f"{opening}at any time{stop_in}{closing}{space}{run}{stop_out}"
    elif position == "after_stop":
        core = f"{opening}at any time{stop_in}{closing}{stop_out or ''}{space}{run}"
        if not stop_out:
            core += "." if space else ""
    else:
        core = f"{opening}at any time{stop_in}{closing}{stop_out}**{run}**"
    text = f"Refunds are available {core} Uploads stop at 250 MB [4]."
    drafts = parse_inline(text)
    assert [d.claims for d in drafts] == [_claims(*_RUNS[run]), _claims(4)], text
    first = drafts[0].text
    assert "[" not in first and "]" not in first, text
    assert first.startswith("Refunds are available") and "at any time" in first
    assert "**" not in first.replace(f"{opening}at", "").replace(f"{closing}", "") or opening == "**"
    assert _stream([Piece(text=part) for part in _split(text, cuts)]) == list(drafts)


def test_sentence_buffer_native_typed_markers_are_not_citations() -> None:
    api = Claim(n=1, cited_text="Uploads stop at 250 MB.", start=0, end=23)
    pieces = [
        Piece(text="Trash keeps projects for 30 days [2]. ", index=0),
        Piece(index=1, claims=(api,)),
        Piece(text="Uploads stop at 250 MB [3].", index=1),
        Piece(index=2),
    ]
    assert _stream(pieces, native=True) == [
        Draft(text="Trash keeps projects for 30 days.", claims=()),
        Draft(text="Uploads stop at 250 MB.", claims=(api,)),
    ]


def test_sentence_buffer_inline_rejects_native_claims() -> None:
    buffer = SentenceBuffer(native=False)
    with pytest.raises(ValueError, match="inline-contract"):
        buffer.feed(Piece(index=1, claims=(Claim(n=1, cited_text="x"),)))


def test_sentence_buffer_native_releases_a_sentence_inside_a_block_whose_citations_came_first() -> None:
    claim = Claim(n=1, cited_text="Uploads stop at 250 MB. Larger files are rejected.")
    buffer = SentenceBuffer(native=True)
    assert buffer.feed(Piece(index=1, claims=(claim,))) == []
    assert buffer.feed(Piece(index=1, text="Uploads stop at 250 MB.")) == []
    released = buffer.feed(Piece(index=1, text=" Larger files"))  # the block is still open
    assert released == [Draft(text="Uploads stop at 250 MB.", claims=(claim,))]
    assert buffer.feed(Piece(index=1, text=" are rejected.")) == []
    assert buffer.feed(Piece(index=2)) == [Draft(text="Larger files are rejected.", claims=(claim,))]


def test_sentence_buffer_native_holds_sentences_of_an_open_block_whose_citations_may_follow() -> None:
    claim = Claim(n=1, cited_text="Uploads stop at 250 MB.")
    buffer = SentenceBuffer(native=True)
    assert buffer.feed(Piece(index=1, text="Uploads stop at 250 MB. Larger files")) == []
    assert buffer.feed(Piece(index=1, claims=(claim,))) == []
    assert buffer.feed(Piece(index=2, text=" are rejected.")) == [
        Draft(text="Uploads stop at 250 MB.", claims=(claim,))
    ]


def test_sentence_buffer_keeps_a_marker_run_that_may_still_join_the_sentence_before() -> None:
    # "[2]." after "aaa." only becomes the first sentence's tail once the words after "[1]" arrive
    text = "aaa. [2]. [1]a"
    assert _stream([Piece(text=text[:13]), Piece(text=text[13:])]) == list(parse_inline(text))
