"""The support check's alignment through WordNet (rag.language.wordnet, the `lexical` extra).

Sentences are written here about a made-up lending library, not taken from the bundled corpus.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from rag.language.tools import installed, open_tools
from rag.support.check import CheckOptions, Decision, check, default_options
from rag.types import Block, Chunk

WORDNET = installed().wordnet
needs_wordnet = pytest.mark.skipif(WORDNET is None, reason="WordNet's files are not installed")


def _block(text: str, title: str = "Library lending rules") -> Block:
    chunk = Chunk(
        chunk_id="lending#c01",
        doc_id="lending",
        title=title,
        section="",
        text=text,
        updated_at=date(2026, 2, 3),
        url="/chunks/lending#c01",
    )
    return Block(n=1, chunk=chunk, score=0.9, sent_text=text)


def _verdict(sentence: str, span: str, options: CheckOptions | None = None) -> Decision:
    return check(sentence, [span], [_block(span)], options=options)


@needs_wordnet
def test_wordnet_reads_senses_antonyms_and_usual_parts_of_speech() -> None:
    wordnet = WORDNET
    assert wordnet is not None
    assert "refuse" in wordnet.synonyms("rejected")
    assert "upload" in wordnet.antonyms("downloads")
    assert wordnet.base_forms("rejected", "verb") == ("reject",)
    assert wordnet.usual_parts_of_speech("borrower") == frozenset({"noun"})
    assert wordnet.usual_parts_of_speech("sent") == frozenset({"verb"})
    assert wordnet.synonyms("qwertyzzz") == frozenset()


SPAN = "A reservation that is not collected within 5 days is cancelled and its requester is notified."


@needs_wordnet
def test_a_synonym_counts_as_found_and_is_kept() -> None:
    span = (
        "Overdue books are refused at the desk; books borrowed before the rule was introduced keep no fine."
    )
    sentence = (
        "Overdue books are rejected at the desk; books borrowed before the rule was introduced keep no fine."
    )
    assert _verdict(sentence, span).issue is None


@needs_wordnet
def test_a_noun_in_place_of_the_spans_noun_is_another_subject() -> None:
    sentence = (
        "A reservation that is not collected within 5 days is cancelled and the branch librarian is notified."
    )
    verdict = _verdict(sentence, SPAN)
    assert verdict.issue is not None and verdict.issue.kind == "other_subject"
    assert "requester" in verdict.issue
    # the same sentence with the span's own noun is kept: the rule is about the substitution
    assert _verdict(sentence.replace("the branch librarian", "its requester"), SPAN).issue is None


@needs_wordnet
def test_an_antonym_in_place_of_the_spans_word_contradicts_it() -> None:
    span = "Members can download the catalogue from the reading room terminals."
    verdict = _verdict("Members can upload the catalogue from the reading room terminals.", span)
    assert verdict.issue is not None and verdict.issue.kind == "contradiction" and verdict.contradicts


@needs_wordnet
def test_a_name_in_place_of_the_spans_name_is_another_subject() -> None:
    span = "The reading rooms in Leeds open at 9:00 on weekdays."
    verdict = _verdict("The reading rooms in York open at 9:00 on weekdays.", span)
    assert verdict.issue is not None and verdict.issue.kind == "other_subject"


@needs_wordnet
def test_a_compound_preposition_is_not_a_subject() -> None:
    span = "Each member may borrow 12 books, in addition to the books held on reserve for their course."
    sentence = "Each member may borrow 12 books, on top of the books held on reserve for their course."
    assert _verdict(sentence, span).issue is None


def test_without_wordnet_the_check_runs_on_stems_alone() -> None:
    stems = replace(default_options(), tools=open_tools(wordnet_dir="off"))
    sentence = (
        "A reservation that is not collected within 5 days is cancelled and the branch librarian is notified."
    )
    verdict = _verdict(sentence, SPAN, stems)
    assert verdict.issue is None  # the substitution needs WordNet's parts of speech; stems alone pass it
    assert _verdict("A reservation that is collected within 5 days is cancelled.", SPAN, stems).contradicts
