"""Precision first (issue 28 item 1), ways a sentence looked like an answer without being one: words
that only a link's address holds, a default's value given where a name in code is asked, a command's
help listing read as one long sentence, "since" taken for the topic of "Since which version ...?",
and a sentence answering the asking words for another situation than the asker's. Inline documents
of a domain unlike the fixtures: a radio amateur's logging program."""

from __future__ import annotations

from rag.reader.answer_types import answer_type, asks_default_of_kind, type_match
from rag.reader.answerable import answer_worthy
from rag.reader.offline import OfflineGenerator
from rag.reader.prose import prose
from rag.reader.question import question_terms, read_question, written_figures
from rag.types import Block, Chunk


def block(n: int, text: str, *, title: str = "Logbook manual", section: str = "") -> Block:
    chunk = Chunk(chunk_id=f"d{n}#c01", doc_id=f"d{n}", title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.7, sent_text=text)


def answer(question: str, blocks: list[Block]) -> list[str]:
    return [d.text for d in OfflineGenerator().generate(question, blocks).drafts]


# --- a link's address is not what its sentence says


OTHERS = [
    block(
        2,
        "_Logbook_ keeps one entry per contact, with its band and mode. Each entry has a status.",
        section="Entries",
    ),
    block(
        3,
        "Each export writes an ADIF file that contest software reads. The export code is open.",
        section="Export",
    ),
    block(
        4,
        "_Logbook_ checks every callsign before saving, and returns an error when one is invalid.",
        section="Checks",
    ),
]
LINKED = (
    "_Remark_: besides [regular _Logbook_ exit codes](./the_basics.md) returned by `--check` option,"
    " [Docker exit codes](https://docs.example.com/engine/reference/run/#exit-status) should also be"
    " considered."
)


def test_words_only_in_a_link_address_do_not_answer():
    # "run" and "status" are in the second link's address alone: the sentence says nothing of them
    linked = block(
        1, f"```console\n$ docker run --rm logbook --check .\n```\n\n{LINKED}", section="Usage > Check"
    )
    assert (
        answer("What status code does Logbook return if it runs into an internal error?", [*OTHERS, linked])
        == []
    )


def test_the_link_text_still_counts():
    plain = block(
        1,
        "On an internal error _Logbook_ returns status code 7; see the [exit codes](./codes.md).",
        section="Usage > Check",
    )
    assert answer(
        "What status code does Logbook return if it runs into an internal error?", [*OTHERS, plain]
    ) == ["On an internal error _Logbook_ returns status code 7; see the [exit codes](./codes.md)."]


# --- "which variable ...": the default's value is not the variable


LENGTH = block(
    1,
    "Without a setting in its environment, the logbook cuts printed lines at `72` characters, the default"
    " line width.",
    section="Printing",
)
VARIABLE = block(
    2,
    "Set the `LOGBOOK_LINE_WIDTH` environment variable to change the default line width.",
    section="Environment",
)


def test_a_default_value_is_no_answer_to_which_variable_sets_it():
    assert answer("Which environment variable sets the default line width?", [LENGTH]) == []


def test_the_variable_answers_which_variable_sets_the_default():
    assert answer("Which environment variable sets the default line width?", [LENGTH, VARIABLE]) == [
        "Set the `LOGBOOK_LINE_WIDTH` environment variable to change the default line width."
    ]


def test_the_default_of_the_asked_kind_is_a_value():
    assert asks_default_of_kind("What is the default setting for the band plan?")
    assert asks_default_of_kind("Which export class is used by default?")
    assert not asks_default_of_kind("Which environment variable sets the default line width?")
    assert not asks_default_of_kind("How long is the default line?")  # asks for no name at all


# --- a help listing: each option is a statement of its own

LISTING = """Options:
  -q, --quiet           Print nothing but errors
  --band=BAND           Log on BAND only. Default: 20m.
  --grid
                        Add the Maidenhead locator to each entry
  -s, --show-callsigns  List the callsigns worked (off by default)
"""


def test_each_option_of_a_help_listing_is_its_own_sentence():
    texts = [p.text for p in prose(LISTING)]
    assert "-q, --quiet Print nothing but errors" in texts
    assert "--grid Add the Maidenhead locator to each entry" in texts
    assert "-s, --show-callsigns List the callsigns worked (off by default)" in texts
    units = {p.text: p.unit for p in prose(LISTING)}
    assert len({units[t] for t in texts if t.startswith("-")}) == 4


def test_a_field_line_of_a_listing_is_about_its_own_option():
    default = next(p for p in prose(LISTING) if p.field)
    assert default.text == "Default: 20m."
    assert "--band" in default.entry and "--quiet" not in default.entry and "callsigns" not in default.entry


def test_an_option_named_at_the_start_of_a_wrapped_prose_line_does_not_cut_it():
    texts = [
        p.text for p in prose("To hide the banner pass\n--quiet to the logger. It then prints errors only.")
    ]
    assert texts == ["To hide the banner pass --quiet to the logger.", "It then prints errors only."]


HELP_TAIL = """listed (see --quiet), 'N' can be used to reset
                        the list. (default: 'fE').
  --no-banner           Hide the banner (enabled by default)
  -s, --show-callsigns  List the callsigns worked
  --grid=LOCATOR        Add the Maidenhead locator
                        to each printed entry
"""


def test_a_help_listing_is_no_answer_as_one_run_of_options():
    # the tail of a long help output, cut by the chunker: "default" belongs to the banner option alone
    listing = block(1, HELP_TAIL, section="Command line > Complete help output")
    assert answer("Which locator does the logbook add to printed entries by default?", [listing]) == []


# --- the question's frame and its situation


def test_since_frames_the_asked_time_and_is_no_topic():
    assert question_terms("Since which version does the exporter merge log files?") == [
        "version",
        "export",
        "merg",
        "log",
        "file",
    ]


RENAME_OTHERS = [
    block(
        5,
        "The exporter writes one file per band. It is *always* necessary to review the **candidate files**"
        " that the exporter produces.",
        section="What does the exporter detect?",
    ),
    block(6, "Renaming a band in the settings keeps its entries.", section="Bands"),
]


def test_a_sentence_saying_nothing_of_the_asker_s_situation_is_no_answer():
    # "what the exporter produces", said of no rename at all
    assert answer("If I rename a contact in my log, what does the exporter produce?", RENAME_OTHERS) == []


def test_a_sentence_about_the_situation_answers():
    renames = block(
        7, "A contact renamed in the log makes the exporter produce a delete and add pair.", section="Renames"
    )
    assert answer(
        "If I rename a contact in my log, what does the exporter produce?", [*RENAME_OTHERS, renames]
    ) == ["A contact renamed in the log makes the exporter produce a delete and add pair."]


# --- "how often" asks for a rate


def test_how_often_asks_for_a_rate_and_a_count_of_something_else_is_none():
    two_runs = block(
        1,
        "By default, the logbook runs two checks in parallel, and computes band statistics on all entries.",
        section="Statistics",
    )
    assert answer("How often does the logbook compute its band statistics by default?", [two_runs]) == []
    rate = block(2, "Band statistics are computed every 500 entries.", section="Statistics")
    assert answer("How often does the logbook compute its band statistics?", [two_runs, rate]) == [
        "Band statistics are computed every 500 entries."
    ]
    nightly = block(3, "The logbook backs up its band statistics nightly.", section="Backups")
    assert answer("How often are the band statistics backed up?", [nightly]) == [
        "The logbook backs up its band statistics nightly."
    ]


def test_what_hours_asks_for_times_of_day():
    question = "What hours do the contest logging restrictions apply?"
    assert answer_type(question) == "date"
    assert type_match("There are six contest zones, labelled A to F.", "date", question) == 0.0
    assert type_match("Restrictions apply from 8:00 am to 6:00 pm on weekends.", "date", question) == 1.0
    hours = block(
        2, "Contest logging restrictions apply from 8:00 am to 6:00 pm on weekends.", section="Contests"
    )
    assert answer(question, [hours]) == [
        "Contest logging restrictions apply from 8:00 am to 6:00 pm on weekends."
    ]


# --- what an API reference prints is not a statement


def test_a_signature_alone_is_no_answer():
    text = (
        "logbook-filters.indent(s: str, width: int = 4, first: bool = False) → str\n\n"
        "Indent each line of the text by the given width."
    )
    reference = block(1, text, title="Template filters", section="List of builtin filters")
    ask = read_question("How does the logbook indent filter handle lines?", [reference], None)
    assert ask is not None
    signature, description = prose(text)
    assert not answer_worthy(ask, signature, 1.0)
    assert answer_worthy(ask, description, 1.0)


def test_an_expression_is_one_figure_and_no_release():
    assert written_figures("In a logbook template, how is 3**3**3 grouped?") == {"3**3**3"}
    changelog = block(
        1,
        "Changed in version 3.1: Added the `case_sensitive` parameter to template grouping.",
        title="Templates",
    )
    assert answer("In a logbook template, how is 3**3**3 grouped?", [changelog]) == []
