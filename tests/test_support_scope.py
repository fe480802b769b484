"""The support check's scope, polarity, subject and lead-in rules that set 2 of the realistic Claude
replies showed were missing (fixtures/claude_replies2: r101, r118, r123, r124, r126, r127, r132-r135).

Sentences are about a made-up lending library and a made-up boat club, not the bundled corpus. Each
case pairs a faithful restatement that must be kept with a harmful one that must be withheld, so a test
fails whether a rule is gone or fires too widely.
"""

from __future__ import annotations

from datetime import date

import pytest

from rag.language.tools import installed
from rag.support.check import check
from rag.support.figures import missing_figures
from rag.support.leadins import strip_attributions
from rag.types import Block, Chunk
from tests.blocks import lending_block

PARSER = installed().parser
WORDNET = installed().wordnet
needs_parser = pytest.mark.skipif(PARSER is None, reason="the dependency parser is not installed")
needs_wordnet = pytest.mark.skipif(WORDNET is None, reason="WordNet's files are not installed")


def _kept(sentence: str, span: str) -> bool:
    return check(sentence, [span], [lending_block(span)]).issue is None


@pytest.mark.parametrize(
    ("sentence", "span"),
    [
        # "per N" says it of each N
        (
            "Members may borrow up to 12 books each calendar year.",
            "Members may borrow up to 12 books per calendar year.",
        ),
        ("Each loan may be renewed twice for 14 days.", "Loans may be renewed twice for 14 days per loan."),
        # an unrestricted plural says it of every one
        ("The reading room closes early every Friday.", "The reading room closes early on Fridays."),
        (
            "Every loan longer than 4 weeks needs the librarian's approval.",
            "For loans longer than 4 weeks, the librarian's approval is needed.",
        ),
        # a trailing "each" restates a "per"
        ("Members may reserve 3 rooms of 2 hours each.", "Members may reserve 3 rooms, 2 hours per room."),
    ],
)
def test_a_distributive_quantifier_restating_per_or_a_plural_is_kept(sentence: str, span: str) -> None:
    assert _kept(sentence, span)


@pytest.mark.parametrize(
    ("sentence", "span"),
    [
        # a share or a qualifying clause makes the plural some of them
        (
            "Every loan request from the east branch was delayed.",
            "Around 6% of loan requests from the east branch were delayed.",
        ),
        ("The archive keeps all renewal notices.", "The archive keeps renewal notices that mention a fine."),
        (
            "All rare books are lent for one week.",
            "Rare books of the reference collection are lent for one week.",
        ),
        ("Every member receives a reminder by email.", "Some members receive a reminder by email."),
    ],
)
def test_a_quantifier_widening_a_restricted_plural_is_withheld(sentence: str, span: str) -> None:
    assert not _kept(sentence, span)


def test_a_negative_prefix_restates_a_negated_verb() -> None:
    span = "When a closure is unavoidable, it is announced two days in advance on the notice board."
    assert _kept(
        "When a closure can't be avoided, it is announced two days in advance on the notice board.", span
    )
    assert not _kept(
        "When a closure is avoidable, it is announced two days in advance on the notice board.", span
    )


@needs_parser
def test_without_negates_the_verb_it_governs() -> None:
    span = "Overdue items are listed apart, so they are visible but do not distort the loan counts."
    assert _kept(
        "Overdue items are listed apart, so they are visible without distorting the loan counts.", span
    )
    assert not _kept("Overdue items are listed apart, so they are visible and distort the loan counts.", span)


@needs_wordnet
def test_a_hyphenated_word_in_place_of_its_antonym_is_withheld() -> None:
    span = "Every full-time member receives 30 free prints per calendar year."
    assert not _kept("Part-time members receive 30 free prints per calendar year.", span)
    assert _kept("Full-time members receive 30 free prints each calendar year.", span)


@needs_parser
def test_a_subject_the_span_gives_another_role_is_withheld() -> None:
    span = "The head librarian can transfer a reservation to an existing member."
    moved = check("A member can transfer a reservation to another member.", [span], [lending_block(span)])
    assert moved.issue is not None and "'member'" in moved.issue
    assert _kept("The head librarian may transfer a reservation to an existing member.", span)


@needs_parser
def test_one_more_filler_beside_the_spans_own_is_withheld() -> None:
    span = "The lending rules apply to all members in every branch."
    assert not _kept("The lending rules apply to all members and visitors in every branch.", span)
    assert _kept("The lending rules apply to all members in every branch.", span)


def _dated(n: int, doc: str, title: str, updated: date, text: str) -> Block:
    chunk = Chunk(
        chunk_id=f"{doc}#c00", doc_id=doc, title=title, section="", text=text, updated_at=updated, url=""
    )
    return Block(n=n, chunk=chunk, score=0.9, sent_text=text)


def test_each_side_of_a_contrast_sets_its_own_lead_in_aside() -> None:
    new = _dated(1, "fees", "Boat Club Fees", date(2026, 4, 1), "A mooring costs $16 per night.")
    old = _dated(2, "faq", "Members FAQ", date(2025, 8, 15), "A mooring costs $15 per night.")
    sentence = (
        "The Boat Club Fees page (updated 2026-04-01) says a mooring costs $16 per night, while the older"
        " Members FAQ (updated 2025-08-15) still says it costs $15 per night."
    )
    assert strip_attributions(sentence, [new, old]) == (
        "A mooring costs $16 per night, while it costs $15 per night."
    )
    texts = [new.chunk.text, old.chunk.text]
    assert check(sentence, texts, [new, old]).issue is None
    # a date that is not the named document's stays, and is then a figure no span states
    wrong = check(sentence.replace("2025-08-15", "2024-01-09"), texts, [new, old])
    assert "2024-01-09" in wrong.core and missing_figures(wrong.core, texts)


def test_an_inner_lead_in_naming_no_cited_document_stays() -> None:
    block = _dated(1, "fees", "Boat Club Fees", date(2026, 4, 1), "A mooring costs $19 per night in summer.")
    sentence = "In summer, the harbour master says a mooring costs $19 per night."
    assert strip_attributions(sentence, [block]) == sentence


def test_a_negative_word_restated_in_a_longer_clause_is_no_flip() -> None:
    # "nothing" negates the clause it stands in; "if you do nothing" said again with the time added is
    # the same condition, not the other polarity of "you choose a plan" (set 1, r020)
    span = "At the end of the loan you choose a renewal; if you do nothing, the book returns to the shelf."
    assert _kept("If you do nothing at the end of the loan, the book returns to the shelf.", span)
    assert not _kept(
        "At the end of the loan you do not choose a renewal; the book returns to the shelf.", span
    )


@pytest.mark.parametrize(
    ("sentence", "span"),
    [
        # a definition states its whole criterion: "only ... when" restates it
        (
            "A loan is only treated as overdue when the book is not back by its due date.",
            "A loan is treated as overdue when the book is not back by its due date.",
        ),
        (
            "A member only counts as active if they borrowed a book in the last 90 days.",
            "A member counts as active if they borrowed a book in the last 90 days.",
        ),
        # the span bounds the figure "only" stands before
        ("Members can only borrow 4 books at a time.", "Members can borrow up to 4 books at a time."),
        ("Each member can only reserve three titles.", "Each member can reserve at most three titles."),
        # the span says itself that the thing is exclusive or limited
        (
            "Rare books are only lent to members of the reading room.",
            "Rare books are lent to members of the reading room and to no other borrowers.",
        ),
        ("Late fees are only payable at the front desk.", "Late fees are payable solely at the front desk."),
        # "cannot ... unless" is "only ... if"
        (
            "Guests only borrow books if a member vouches for them.",
            "Guests cannot borrow books unless a member vouches for them.",
        ),
    ],
)
def test_support_only_that_restates_its_span_is_kept(sentence: str, span: str) -> None:
    assert _kept(sentence, span)


@pytest.mark.parametrize(
    ("sentence", "span"),
    [
        # "only" says nothing else holds, which the span does not say
        ("Only librarians can renew a loan.", "Librarians can renew a loan."),
        (
            "Rare books are only lent to members of the reading room.",
            "Rare books are lent to members of the reading room.",
        ),
        # a condition that is not a definition is one way among others
        (
            "Fees are only waived when the book is returned within a week.",
            "Fees are waived when the book is returned within a week.",
        ),
        # a figure the span states without a bound, or another figure than the bound
        ("Members can only borrow 4 books at a time.", "Members can borrow 4 books at a time."),
        ("Members can only borrow 2 books at a time.", "Members can borrow up to 4 books at a time."),
    ],
)
def test_support_only_that_adds_a_claim_is_withheld(sentence: str, span: str) -> None:
    assert not _kept(sentence, span)


def test_support_a_without_phrase_of_the_span_left_out_is_an_omission_not_a_negation() -> None:
    span = "Members may borrow up to 12 books per month without a deposit."
    assert _kept("Members may borrow up to 12 books per month.", span)
    assert not _kept("Members may not borrow 12 books per month.", span)
    # a "without" the sentence adds is still compared
    assert not _kept(
        "Members may borrow up to 12 books per month without exception.",
        "Members may borrow up to 12 books per month unless their account is overdue.",
    )
