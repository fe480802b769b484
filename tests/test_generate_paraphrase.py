"""The offline generator's paraphrase alignment: a question word no block writes is covered by a word
one WordNet link away (rag.reader.question, ALIGN_WEIGHT; WordNet from the optional `lexical` extra)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.language.tools import Tools, installed
from rag.reader.offline import OfflineGenerator
from rag.types import Block, Chunk

WORDNET = installed().wordnet
needs_wordnet = pytest.mark.skipif(WORDNET is None, reason="WordNet's files are not installed")


def block(n: int, text: str, section: str = "") -> Block:
    chunk = Chunk(
        chunk_id=f"doc-{n:03d}#c01", doc_id=f"doc-{n:03d}", title="Handbook", section=section, text=text
    )
    return Block(n=n, chunk=chunk, score=0.5, sent_text=text)


NURSERY = [
    block(
        1,
        "Seed trays are watered twice a day from a fine rose. Trays stay on the heated bench until the "
        "first true leaves appear.",
    ),
    block(
        2,
        "Seedlings that have not sprouted after 21 days are discarded and the compost is reused.",
        section="Propagation > Failed sowings",
    ),
    block(3, "Cuttings root best in a mix of grit and peat. Label every tray with the sowing date."),
    block(4, "The greenhouse vents open automatically above 26 degrees."),
]
APIARY = [
    block(1, "Each hive is named after the field it stands in."),
    block(2, "Smokers are lit with pine needles before every inspection."),
    block(3, "Queens are marked with a dot of paint on the thorax."),
    block(4, "Frames of capped honey are spun in the extractor in August."),
]
DISCARDED = "Seedlings that have not sprouted after 21 days are discarded and the compost is reused."


def answer(question: str, blocks: list[Block], tools: Tools | None = None) -> list[str]:
    return [d.text for d in OfflineGenerator(tools=tools).generate(question, blocks).drafts]


@needs_wordnet
def test_wordnet_related_follows_senses_derivations_hypernyms_and_phrases() -> None:
    wordnet = WORDNET
    assert wordnet is not None
    delete = wordnet.related("delete", 4)
    assert {"erase", "deletion", "remove"} <= delete  # same sense, derived form, direct hypernym
    assert "prime" not in wordnet.related("number")  # a hyponym ("prime number") is not followed
    assert wordnet.phrase_lemma(("thrown", "away"), "verb") == "throw away"
    assert wordnet.phrase_lemma(("thrown", "seedlings"), "verb") == ""


@needs_wordnet
def test_question_word_no_block_writes_is_covered_by_a_linked_word() -> None:
    # "thrown away" is not written anywhere; "discarded" shares its sense
    assert answer("How long until dud seedlings get thrown away?", NURSERY) == [DISCARDED]


@needs_wordnet
def test_without_wordnet_the_paraphrase_covers_nothing() -> None:
    # the sentence encoder would match the paraphrase by meaning (tests/test_generate_meaning.py)
    words_alone = replace(installed(), wordnet=None, meaning=None)
    assert answer("How long until dud seedlings get thrown away?", NURSERY, words_alone) == []


@needs_wordnet
def test_paraphrase_never_stands_for_the_subject() -> None:
    # the blocks write "cuttings": a sentence about seedlings being discarded is another subject's fact
    assert answer("How long until cuttings get thrown away?", NURSERY) == []


@needs_wordnet
def test_yes_no_question_needs_its_rarest_word_itself() -> None:
    assert answer("Are dud seedlings thrown away?", NURSERY) == []


@needs_wordnet
def test_a_link_to_a_common_word_is_no_paraphrase() -> None:
    # "number" and "name" share a sense, but "name" is too common a word to show a shared meaning
    assert answer("How are hives numbered?", APIARY) == []


LEDGERS = [
    block(1, "Ledgers kept for a decade are moved to the cold store in the basement."),
    block(2, "Invoices are filed by supplier name and month."),
    block(3, "The archive room is open on weekdays from nine to five."),
    block(4, "Receipts under five pounds need no signature."),
]


@needs_wordnet
def test_a_number_word_never_aligns() -> None:
    # WordNet links "ten" to "decade", "tenner" and "spot": a sense link says nothing about a value,
    # so a number is matched by itself only
    assert answer("Where are ledgers moved after ten years?", LEDGERS) == []
