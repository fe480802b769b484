from hypothesis import given, settings
from hypothesis import strategies as st

from rag.ingest.chunking import chunk_document, find_headings
from rag.language.text import estimate_tokens
from rag.types import Document


def _doc(text: str, title: str = "Guide") -> Document:
    return Document(doc_id="doc", title=title, text=text)


def _sentence(i: int, words: int = 12) -> str:
    return " ".join(f"word{i}x{j}" for j in range(words)).capitalize() + "."


def _heading_positions(text: str) -> set[int]:
    positions: set[int] = set()
    for heading in find_headings(text):
        positions.update(range(heading.start, heading.end))
    return positions


def _assert_invariants(doc: Document, max_tokens: int) -> None:
    chunks = chunk_document(doc, min_tokens=max_tokens // 2, max_tokens=max_tokens)
    covered = [0] * len(doc.text)
    last_end = 0
    for i, chunk in enumerate(chunks):
        assert chunk.chunk_id == f"doc#c{i:02d}"
        assert doc.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.text == chunk.text.strip() and chunk.text
        assert chunk.start_char >= last_end
        last_end = chunk.end_char
        for pos in range(chunk.start_char, chunk.end_char):
            covered[pos] += 1
    headings = _heading_positions(doc.text)
    for pos, char in enumerate(doc.text):
        if char.isspace():
            continue
        expected = 0 if pos in headings else 1
        assert covered[pos] == expected, (pos, char, doc.text)


_LINE = st.one_of(
    st.integers(1, 6).flatmap(lambda n: st.text("abc XY", max_size=12).map(lambda t: "#" * n + " " + t)),
    st.lists(
        st.sampled_from(["Alpha", "beta", "v2.3", "e.g.", "$0.67", "end.", "stop!", "why?", "x"]), max_size=30
    ).map(" ".join),
    st.sampled_from(["", "- item one", "1. first", "```", "~~~", "#no-space", "   ", "\t"]),
    st.text(alphabet="ab .!?#\n`~-*>[]1", max_size=80),
)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, max_size=25), max_tokens=st.sampled_from([20, 40, 220]))
def test_chunk_document_any_text_offsets_exact_and_text_covered_once(
    lines: list[str], max_tokens: int
) -> None:
    _assert_invariants(_doc("\n".join(lines)), max_tokens)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400))
def test_chunk_document_arbitrary_unicode_offsets_exact_and_text_covered_once(text: str) -> None:
    _assert_invariants(_doc(text.replace("\r", "\n")), 20)


def test_chunk_document_sections_carry_heading_path_without_title_duplicate() -> None:
    text = (
        "# Guide\n\nIntro text.\n\n## Limits\n\nUpload cap.\n\n### Files\n\nFile cap.\n\n"
        "## Retention\n\nThirty days.\n"
    )
    chunks = chunk_document(_doc(text, title="Guide"))
    assert [(c.section, c.text) for c in chunks] == [
        ("", "Intro text."),
        ("Limits", "Upload cap."),
        ("Limits > Files", "File cap."),
        ("Retention", "Thirty days."),
    ]


def test_chunk_document_h1_differing_from_title_is_kept_in_path() -> None:
    chunks = chunk_document(_doc("# Overview\n\nText.\n## Part\n\nMore.", title="Guide"))
    assert [c.section for c in chunks] == ["Overview", "Overview > Part"]


def test_chunk_document_heading_inside_code_fence_is_content() -> None:
    text = "## Real\n\n```\n# not a heading\n```\n"
    chunks = chunk_document(_doc(text))
    assert [c.section for c in chunks] == ["Real"]
    assert "# not a heading" in chunks[0].text


def test_chunk_document_never_crosses_heading_even_when_sections_are_small() -> None:
    chunks = chunk_document(_doc("## A\n\nOne.\n\n## B\n\nTwo."), min_tokens=120, max_tokens=220)
    assert [c.text for c in chunks] == ["One.", "Two."]


def test_chunk_document_long_section_split_at_sentence_boundaries_within_max() -> None:
    body = " ".join(_sentence(i) for i in range(40))
    chunks = chunk_document(_doc(body), min_tokens=60, max_tokens=100)
    assert len(chunks) > 1
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= 100
        assert chunk.text.endswith(".")


def test_chunk_document_balances_sizes_instead_of_leaving_a_tiny_tail() -> None:
    body = " ".join(_sentence(i, words=10) for i in range(12))  # ~ 12 x 30 tokens
    chunks = chunk_document(_doc(body), min_tokens=120, max_tokens=220)
    sizes = [estimate_tokens(c.text) for c in chunks]
    assert len(sizes) == 2
    assert abs(sizes[0] - sizes[1]) <= 25  # at most about one sentence apart


def test_chunk_document_single_oversized_sentence_cut_at_whitespace() -> None:
    sentence = " ".join(f"token{i}" for i in range(300)) + "."
    chunks = chunk_document(_doc(sentence), min_tokens=50, max_tokens=100)
    assert len(chunks) > 1
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= 100
        assert chunk.text.startswith("token") and not chunk.text.endswith(" ")
    assert " ".join(c.text for c in chunks) == sentence


def test_chunk_document_same_document_gives_identical_chunks() -> None:
    doc = _doc("## A\n\n" + " ".join(_sentence(i) for i in range(30)))
    assert chunk_document(doc) == chunk_document(doc)


def test_chunk_document_copies_provenance_to_chunks() -> None:
    from datetime import date

    doc = Document(doc_id="d", title="T", text="Hello there.", url="https://x", updated_at=date(2026, 1, 2))
    (chunk,) = chunk_document(doc)
    assert (chunk.title, chunk.url, chunk.updated_at, chunk.doc_id) == (
        "T",
        "https://x",
        date(2026, 1, 2),
        "d",
    )


def test_chunk_document_empty_or_headings_only_gives_no_chunks() -> None:
    assert chunk_document(_doc("")) == []
    assert chunk_document(_doc("# A\n\n## B\n")) == []


def test_chunk_document_chunk_starting_inside_an_entry_names_it_in_its_section() -> None:
    entry = " ".join(_sentence(i) for i in range(12))
    text = (
        f".. py:data:: MAX_WIDGET_SIZE\n\n    {entry}\n\n    Default: ``4093``\n\n"
        f".. py:data:: WIDGET_COLOUR\n\n    Paint widgets this colour.\n\nPlain prose after the entries."
    )
    chunks = chunk_document(_doc(text), min_tokens=20, max_tokens=60)
    assert len(chunks) > 2
    assert chunks[0].section == ""  # it opens with the entry's name itself
    inside = [c for c in chunks[1:] if c.start_char < text.index(".. py:data:: WIDGET_COLOUR")]
    assert inside and all(c.section == "MAX_WIDGET_SIZE" for c in inside)
    after = [c for c in chunks if c.start_char > text.index("Plain prose")]
    assert all(c.section == "" for c in after)


def test_find_entries_spans_each_entry_description() -> None:
    from rag.ingest.chunking import find_entries

    text = ".. option:: --widgets INT\n\n   How many.\n\n.. envvar:: WIDGETS\n\n   Same.\nAfter."
    assert [(e.name, text[e.body : e.end].strip()) for e in find_entries(text)] == [
        ("--widgets INT", "How many."),
        ("WIDGETS", "Same."),
    ]
