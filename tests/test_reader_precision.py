"""Precision first (issue 28 item 1): the offline reader gives a sentence as the answer only when it,
with its label and context, says every subject word of the question; a sentence that leaves one
unsaid is about another subject as often as not, and is shown on the refusal instead. Small inline
documents of domains unlike the fixtures: a ferry operator's help pages, a museum's visitor guide."""

from __future__ import annotations

from rag.reader.offline import OfflineGenerator
from rag.reader.question import read_question
from rag.types import Block, Chunk


def block(n: int, text: str, *, title: str, section: str = "") -> Block:
    chunk = Chunk(chunk_id=f"d{n}#c01", doc_id=f"d{n}", title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.7, sent_text=text)


def answer(question: str, blocks: list[Block]) -> list[str]:
    return [d.text for d in OfflineGenerator().generate(question, blocks).drafts]


TERMINAL = block(
    1,
    "Free Wi-Fi is available in every terminal lounge, with no time limit. Lockers cost $4 a day.",
    title="At the terminal",
)
FARES = block(2, "A single adult fare on the ferries is $9. Children under five travel free.", title="Fares")
BOOKING = block(3, "Book ferries online or at the ticket desk.", title="Booking")


def test_a_sentence_about_another_subject_sharing_the_other_words_is_no_answer():
    # "ferries" is the subject; the sentence says the same thing about the terminal lounges
    assert answer("Is there free Wi-Fi on the ferries?", [TERMINAL, FARES, BOOKING]) == []


def test_the_same_sentence_answers_when_it_names_the_asked_subject():
    lounge = "Is there free Wi-Fi in the terminal lounge?"
    assert answer(lounge, [TERMINAL, FARES]) == [
        "Free Wi-Fi is available in every terminal lounge, with no time limit."
    ]


def test_a_heading_or_title_may_name_the_subject_for_the_sentence():
    hours = block(
        3,
        "It opens at 09:30 and closes at 17:00 every day except Monday.",
        title="Sculpture garden",
        section="Opening hours",
    )
    assert answer("When does the sculpture garden open?", [hours, FARES]) != []


def test_everyday_words_of_the_question_may_go_unsaid():
    # "get" and "need" ask about the subject without naming one
    ticket = block(4, "Season tickets cost $60 and include unlimited crossings.", title="Fares")
    ask = read_question("How much does a season ticket include for commuters?", [ticket], None)
    assert ask is not None and "includ" in ask.generic
    assert "commut" not in ask.generic


def test_likely_sentence_marks_the_sentence_sharing_the_rarest_question_words():
    from rag.reader.likely import likely_sentence

    text = "Lockers are by the gate. Wi-Fi on the ferries is free for an hour. Lockers cost $4."
    start, end = likely_sentence("Is Wi-Fi free on the ferries?", text) or (0, 0)
    assert text[start:end] == "Wi-Fi on the ferries is free for an hour."
    assert likely_sentence("Where is the car park?", text) is None


def test_an_offline_refusal_says_no_model_read_the_passages_and_marks_what_may_answer(tmp_path):
    from rag.answer.gates import NO_CITATIONS_MESSAGE
    from rag.answer.messages import OFFLINE_NO_CITATIONS_MESSAGE
    from rag.answer.pipeline import build_pipeline
    from rag.config import load_settings
    from rag.ingest.indexer import ingest_paths
    from rag.serialize import answer_json
    from rag.store.sqlite import SqliteStore

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "terminal.md").write_text(
        "# At the terminal\n\nFree Wi-Fi is available in every terminal lounge, with no time limit.\n"
        "Lockers cost $4 a day.\n"
    )
    (docs / "fares.md").write_text("# Fares\n\nA single adult fare on the ferries is $9.\n")
    (docs / "booking.md").write_text("# Booking\n\nBook ferries online or at the ticket desk.\n")
    db = str(tmp_path / "f.db")
    settings = load_settings(db=db, mock=True)
    store = SqliteStore(db)
    try:
        ingest_paths(store, [str(docs)], settings=settings)
        answer = build_pipeline(settings, store=store).answer("Is there free Wi-Fi on the ferries?")
    finally:
        store.close()
    assert answer.abstained and answer.reason == "no_citations"
    assert answer.message == OFFLINE_NO_CITATIONS_MESSAGE != NO_CITATIONS_MESSAGE
    assert "ANTHROPIC_API_KEY" in answer.message
    marked = [r.may_answer for r in answer.closest if r.may_answer is not None]
    assert any("Wi-Fi" in m.text for m in marked)
    shown = answer_json(answer)["closest"]
    assert any(c["may_answer"] and c["may_answer"]["start"] >= 0 for c in shown)


def test_a_default_named_for_another_thing_does_not_answer_a_default_question():
    # the entry of the engine setting also states the default typeface: not the engine's default
    engine = block(
        5,
        "The typesetting engine builds the printed guide. Since version 2.0, the default typeface is"
        " Garamond, which covers Latin and Greek.",
        title="Print options",
        section="print_engine",
    )
    assert answer("Which engine does the printed guide use if I don't choose one?", [engine, FARES]) == []
    stated = block(6, "The default engine is lualatex, which handles Unicode.", title="Print options")
    assert answer("Which engine does the printed guide use if I don't choose one?", [stated]) != []
