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
