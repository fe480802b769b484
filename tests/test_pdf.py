"""PDF pages made text: running headers, footers and page numbers left out, contents pages left out,
words broken over a line end joined; offsets stay exact against the stored text."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.formats_gen import pdf_bytes
from rag.ingest.chunking import chunk_document
from rag.ingest.formats import ParsedFile, read_document
from rag.ingest.pdf_lines import furniture, is_contents_page, join_broken_words
from rag.types import Chunk

TOPICS = [
    (
        "Power budget",
        "The solar wings deliver {n} kilowatts at noon.",
        "Batteries carry the station through each night.",
    ),
    (
        "Docking",
        "A visiting craft holds at {n} metres from the port.",
        "Only the commander clears the final approach.",
    ),
    (
        "Airlock",
        "Pressure stays below {n} pascal before the hatch opens.",
        "Suits are checked twice by a second crew member.",
    ),
    (
        "Water",
        "Everyone is allowed {n} litres of drinking water daily.",
        "Recycled water is tested weekly for bacteria.",
    ),
    (
        "Lighting",
        "Cabin lights dim to {n} percent while the crew sleeps.",
        "Work lamps stay on in the laboratory module.",
    ),
    (
        "Exercise",
        "Crew members train for {n} minutes before lunch.",
        "Treadmill harnesses are adjusted for each person.",
    ),
    (
        "Waste",
        "Sealed bags return to Earth on cargo flight {n}.",
        "Food scraps are frozen in the aft freezer.",
    ),
    (
        "Radio",
        "Ground contact is checked every {n} hours.",
        "A backup frequency is kept free for emergencies.",
    ),
]


def _body(page: int) -> list[str]:
    """Three lines of prose that only this page has (their words differ from every other page's)."""
    topic, first, second = TOPICS[page % len(TOPICS)]
    return [f"{page}.1 {topic}", first.format(n=page * 3 + 7), second]


def _read(tmp_path: Path, pages: list[list[str]], title: str = "Orbit Station Manual") -> ParsedFile:
    path = tmp_path / "manual.pdf"
    path.write_bytes(pdf_bytes(title, pages))
    return read_document(path.read_bytes(), path, root=tmp_path)


def _chunks(parsed: ParsedFile) -> list[Chunk]:
    chunks = chunk_document(parsed.document, min_tokens=20, max_tokens=60, layout=parsed.layout)
    text = parsed.document.text
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text
    return chunks


def _sphinx_like(n_pages: int) -> list[list[str]]:
    """A title page, then pages headed by the book's title and release, footed by the page number
    and the chapter (even pages) or the section and the page number (odd pages)."""
    pages = [["Orbit Station Manual", "Release 2.4", "Written for the crews of the station."]]
    for number in range(2, n_pages + 1):
        chapter = number // 3 + 1
        footer = (
            f"{number} Chapter {chapter}. Operations"
            if number % 2 == 0
            else f"{chapter}.{number}. Checks {number}"
        )
        pages.append(["Orbit Station Manual, Release 2.4", *_body(number), footer])
    return pages


def test_running_headers_and_footers_with_page_numbers_are_in_no_chunk(tmp_path: Path) -> None:
    parsed = _read(tmp_path, _sphinx_like(9))
    text = parsed.document.text
    assert "Orbit Station Manual, Release" not in text
    assert "Chapter" not in text and "Checks" not in text
    chunks = _chunks(parsed)
    for number in range(2, 10):
        on_page = " ".join(c.text for c in chunks if c.page == number)
        assert TOPICS[number % 8][2] in on_page and "Orbit Station Manual" not in on_page


def test_a_header_whose_section_number_and_name_change_from_page_to_page_is_furniture(tmp_path: Path) -> None:
    pages = [["Orbit Station Manual", "Written for the crews of the station."]]
    for number in range(2, 8):
        topic = TOPICS[number % len(TOPICS)][0]
        pages.append(
            [f"Orbit Station Manual, Release 2.4 {number}.{number + 5} {topic} and safety", *_body(number)]
        )
    chunks = _chunks(_read(tmp_path, pages))
    assert not any("Release 2.4" in c.text or "and safety" in c.text for c in chunks)
    assert {c.page for c in chunks} == set(range(1, 8))


def test_page_x_of_n_and_a_chapter_title_over_its_pages_are_furniture(tmp_path: Path) -> None:
    chapters = (
        ["Chapter 1 Living aboard"] * 4
        + ["Chapter 2 Leaving the station"] * 3
        + ["Chapter 3 Coming home"] * 2
    )
    pages = [
        [*_body(n), "Station crew handbook", chapter, f"Page {n} of 9"]
        for n, chapter in enumerate(chapters, 1)
    ]
    text = _read(tmp_path, pages, title="Crew handbook").document.text
    for furniture_words in (
        "Page ",
        "of 9",
        "Station crew handbook",
        "Living aboard",
        "Leaving the",
        "Coming home",
    ):
        assert furniture_words not in text
    assert all(TOPICS[n % 8][2] in text for n in range(1, 10))


PREFACE = [
    "Why this manual exists and who keeps it current.",
    "How the chapters are ordered, from arrival to departure.",
    "Which conventions the checklists follow.",
    "Where to send corrections after a mission.",
]


def test_bare_page_numbers_arabic_and_roman_are_furniture_and_other_numbers_are_not(tmp_path: Path) -> None:
    pages = [[numeral, line] for numeral, line in zip(["i", "ii", "iii", "iv"], PREFACE, strict=True)]
    pages += [[str(number), *_body(number)] for number in range(1, 7)]
    pages[6].append("17")  # printed page 3 ends with a count, not with its number
    lines = _read(tmp_path, pages, title="Crew handbook").document.text.split("\n")
    assert not {"i", "ii", "iii", "iv", "1", "2", "3", "4", "5", "6"} & set(lines)
    assert "17" in lines and PREFACE[2] in lines


def test_lines_that_recur_inside_pages_or_at_the_edge_of_two_pages_are_kept(tmp_path: Path) -> None:
    pages = []
    for number in range(1, 9):
        body = _body(number)
        pages.append(
            [
                *body[:2],
                "Check the seals before every undocking.",
                *body[2:],
                *(["end"] if number in (2, 7) else []),
            ]
        )
    text = _read(tmp_path, pages, title="Crew handbook").document.text
    assert text.count("Check the seals before every undocking.") == 8
    assert text.count("\nend") == 2
    assert all(f"{n}.1 " in text for n in range(1, 9))


def test_a_numbered_heading_that_starts_with_the_page_number_is_kept(tmp_path: Path) -> None:
    # headers end with the page number, so a line starting with it is no header
    pages = [[f"Chapter {n // 3 + 1}: Station life {n}", *_body(n)] for n in range(1, 8)]
    pages[0].insert(1, "1 About this manual")
    text = _read(tmp_path, pages, title="Crew handbook").document.text
    assert "1 About this manual" in text and "Station life" not in text
    # nor is a heading under a bare page number
    pages = [[str(n), *_body(n)] for n in range(1, 8)]
    pages[1].insert(1, "2 Station syntax")
    text = _read(tmp_path, pages, title="Crew handbook").document.text
    assert "2 Station syntax" in text and not {"1", "2", "3"} & set(text.split("\n"))


def test_lines_recurring_at_the_edge_with_numbers_that_jump_about_are_kept(tmp_path: Path) -> None:
    # a session's output labels open many pages, numbered as the session goes, not as the pages
    labels = [5, 2, 9, 2, 4, 10, 16, 3]
    pages = [["Station Console Guide", f"(%o{label})", *_body(n)] for n, label in enumerate(labels, 1)]
    text = _read(tmp_path, pages, title="Console guide").document.text
    assert "Station Console Guide" not in text
    assert all(f"(%o{label})" in text for label in labels)


def test_furniture_is_the_lines_at_the_edges_only() -> None:
    pages = [["Manual", *_body(n), "Check seals", *_body(n + 1), f"Page {n}"] for n in range(1, 7)]
    assert furniture(pages) == [{0, 8}] * 6


def test_a_contents_page_is_left_out_of_the_text(tmp_path: Path) -> None:
    contents = [
        "Contents",
        "1 Living aboard 3",
        "1.1 Power budget . . . . . . . . . . . . 3",
        "1.2 Docking . . . . . . . . . . . . . . 4",
        "1.3 Airlock . . . . . . . . . . . . . . 5",
        "2 Leaving the station 6",
        "2.1 Water . . . . . . . . . . . . . . . 6",
    ]
    pages = [["Orbit Station Manual", "Written for the crews of the station."], contents]
    pages += [_body(number) for number in range(3, 7)]
    parsed = _read(tmp_path, pages)
    assert ". . ." not in parsed.document.text and "Leaving the station" not in parsed.document.text
    assert 2 not in {c.page for c in _chunks(parsed)}


def test_contents_page_needs_most_lines_to_be_entries() -> None:
    split_entries = [
        "Table of contents",
        "3.3 Using fonts",
        " . . . . . . . . 50",
        "3.4 Encodings",
        " . . . . . . 52",
    ]
    assert is_contents_page([*split_entries, "3.5 Colours", " .  .  .  .  . 54"])
    prose = [f"Sentence {n} of an ordinary page about the airlock and its seals." for n in range(8)]
    assert not is_contents_page([*prose, "Wait ..... then open. 3", "See below . . . . 4", "Done . . . . 5"])
    assert not is_contents_page(["Intro . . . . 3", "Setup . . . . 4"])


def test_words_broken_at_a_line_end_are_joined_and_hyphenated_words_keep_their_hyphen() -> None:
    pages = [
        [
            "The crew will con-",
            "tinue the checks. A well-known rule: a well-",
            "known fault is logged. The self-test and the self-",
            "check run daily. Re-",
            "Entry is a heading, not a broken word.",
        ],
        ["A word broken over the page: a decom-"],
        ["pression alarm sounds. Use --", "verbose here."],
    ]
    joined = join_broken_words(pages)
    assert joined[0] == [
        "The crew will continue",
        "the checks. A well-known rule: a well-known",
        "fault is logged. The self-test and the self-check",
        "run daily. Re-",
        "Entry is a heading, not a broken word.",
    ]
    assert joined[1:] == [
        ["A word broken over the page: a decompression"],
        ["alarm sounds. Use --", "verbose here."],
    ]


def test_a_paragraph_end_between_two_lines_is_no_broken_word() -> None:
    assert join_broken_words([["A list ends with a dash -", "", "new paragraph."]]) == [
        ["A list ends with a dash -", "", "new paragraph."]
    ]
    assert join_broken_words([["item-", "", "list"]]) == [["item-", "", "list"]]


def test_broken_words_are_joined_in_the_document_text(tmp_path: Path) -> None:
    pages = [
        [
            "Orbit Station Manual",
            "The docking port is inspected before each ar-",
            "rival of a visiting craft.",
        ]
    ]
    pages.append(["Arrival checks", "Every arrival is logged by the crew on duty."])
    parsed = _read(tmp_path, pages)
    assert "before each arrival\nof a visiting craft." in parsed.document.text
    assert any("each arrival" in c.text for c in _chunks(parsed))


_LINE = st.one_of(
    st.sampled_from(
        ["", "Page 3", "iv", "12", "Manual, Release 2", "con-", "tinue here.", "self-", "-", "a --"]
    ),
    st.text(alphabet="ab -.\u00ad1", max_size=20),
)


@settings(max_examples=200, deadline=None)
@given(pages=st.lists(st.lists(_LINE, max_size=8), max_size=8))
def test_joining_broken_words_only_moves_text_and_drops_line_end_hyphens(pages: list[list[str]]) -> None:
    joined = join_broken_words(pages)
    assert len(joined) == len(pages)

    def letters(ps: list[list[str]]) -> str:
        return "".join("".join(lines) for lines in ps).translate({ord(c): None for c in " -\u00ad"})

    assert letters(joined) == letters(pages)
    marked = furniture(pages)
    assert all(i < len(lines) and lines[i].strip() for lines, m in zip(pages, marked, strict=True) for i in m)


def _sections(tmp_path: Path, pages: list[list[str]]) -> set[str]:
    return {c.section for c in _chunks(_read(tmp_path, pages))}


def test_the_rows_of_a_table_are_text_of_their_section_never_headings(tmp_path: Path) -> None:
    # a settings table as a manual prints it: short capitalised rows without end punctuation, some
    # with markup, under the sentence that introduces it
    rows = ["Parameter Options Current Setting", "Ngen <number> 1000000", "Savetrees Yes/No No"]
    rows += ["Checkpoint Yes/No Yes", "Checkfreq <number> 2000", "Starttree Current/Random Current"]
    page = ["Run settings", "Type help mcmc to see the run settings.", *rows, "The checkpoint is written."]
    parsed = _read(tmp_path, [page, _body(2)])
    chunks = _chunks(parsed)
    assert "Run settings" in {c.section for c in chunks}
    assert not {c.section for c in chunks} & set(rows)
    table = next(c for c in chunks if "Checkfreq <number> 2000" in c.text)
    assert "Checkpoint Yes/No Yes" in table.text and table.section == "Run settings"


def test_a_wrapped_line_of_prose_or_a_line_of_code_is_no_heading(tmp_path: Path) -> None:
    # lines of about the document's usual prose width that end without punctuation were wrapped by
    # the layout; a line with an assignment or a prompt is code
    prose = [
        f"Line {n} of the description of the cooling loop runs across the page as usual." for n in range(24)
    ]
    wrapped = "The pumps of the secondary loop are switched off during the night and the"
    page = [
        "Cooling loop",
        *prose[:12],
        wrapped,
        "Valves stay closed until the morning check.",
        "Set the flow as follows.",
        "FLOW_RATE=12",
        "Pumps restart at dawn.",
        *prose[12:],
    ]
    sections = _sections(tmp_path, [page, _body(2)])
    assert "Cooling loop" in sections
    assert wrapped not in sections and "FLOW_RATE=12" not in sections


def test_numbered_headings_are_sections_and_pieces_of_sentences_are_not(tmp_path: Path) -> None:
    # a manual numbers its sections ("2.7.3 C++ Support", "6.2) Changes"); the line that introduces
    # a command ("The exceptions are", "First, we read in the data using") is a piece of a sentence;
    # a footnote starts with its number but ends like a sentence
    page = [
        "Compilers",
        "The build uses the system compilers.",
        "2.7.3 C++ Support",
        "C++ is not used by the program itself.",
        "The exceptions are",
        "Fortran and C compilers on old systems use other flags.",
        "First, we read in the data using",
        "Load data file.",
        "6.2) Changes Between Releases",
        "[The rest of this paragraph is only relevant after release.]",
        "3 Cooling after the run is slower than expected.",
    ]
    sections = _sections(tmp_path, [page, _body(2)])
    assert {"2.7.3 C++ Support", "6.2) Changes Between Releases"} <= sections
    assert not sections & {"The exceptions are", "First, we read in the data using"}
    assert "3 Cooling after the run is slower than expected." not in sections


def test_a_numbered_list_of_short_steps_stays_text_and_a_subsection_run_is_headings(tmp_path: Path) -> None:
    # steps numbered "1 ..." without a full stop, one under the other, are a list; a chapter, its
    # section and its first subsection in a row ("3 ...", "3.1 ...", "3.1.1 ...") are headings
    steps = ["1 Open the coolant valve", "2 Start the circulation pump", "3 Close the bypass line"]
    page = [
        "Cooling loop",
        "The loop is started by hand each morning.",
        *steps,
        "The pump then runs until the evening check.",
        "3 Maintenance",
        "3.1 Filters",
        "3.1.1 Changing the filter cartridge",
        "Filters are changed every second week.",
    ]
    sections = _sections(tmp_path, [page, _body(2)])
    assert not sections & set(steps)
    assert {"3.1 Filters", "3.1.1 Changing the filter cartridge"} <= sections
