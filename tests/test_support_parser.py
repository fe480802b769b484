"""The support check's predicate frames from a dependency parser (rag.language.syntax, the `parse` extra).

Sentences are written here about a made-up lending library, not taken from the bundled corpus. Each
case is judged twice: with the parser turned off (`parser="off"`, the check as it was) and on, so a
test shows what the parser changes and fails if the rule is gone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.language import syntax
from rag.language.tools import installed, open_tools
from rag.support import frames as support_frames
from rag.support.check import Decision, check, default_options
from tests.blocks import lending_block

PARSER = installed().parser
needs_parser = pytest.mark.skipif(PARSER is None, reason="the dependency parser is not installed")


_block = lending_block


def _both(sentence: str, span: str) -> tuple[Decision, Decision]:
    """(the decision without the parser, the decision with it)."""
    without = replace(default_options(), tools=open_tools(parser="off"))
    off = check(sentence, [span], [_block(span)], options=without)
    return off, check(sentence, [span], [_block(span)])


def test_without_the_parser_there_are_no_frames() -> None:
    parser = open_tools(parser="off").parser
    assert parser is None and syntax.open_parser("off") is None
    assert support_frames._analyse(parser, "Readers renew loans online.").frames == ()


@needs_parser
def test_frames_give_agent_and_patient_in_active_and_passive_alike() -> None:
    assert PARSER is not None
    active = PARSER.analyse("The porter locks the reading room.").frames
    passive = PARSER.analyse("The reading room is locked by the porter.").frames
    for frames in (active, passive):
        lock = next(f for f in frames if f.head == "lock")
        assert lock.fillers("subj") == {"porter"} and lock.fillers("obj") == {"room"}
        assert not lock.negated
    (never,) = [f for f in PARSER.analyse("The porter never locks the room.").frames if f.head == "lock"]
    assert never.negated


@needs_parser
def test_roles_exchanged_between_agent_and_another_role_are_withheld() -> None:
    span = (
        "Your tutor approves the thesis topic in the portal. "
        "Topics outside the syllabus also need approval from the dean."
    )
    sentence = (
        "The dean approves the thesis topic in the portal, and topics outside the syllabus also need your "
        "tutor's approval."
    )
    off, on = _both(sentence, span)
    assert off.issue is None
    assert on.issue is not None and on.issue.kind == "contradiction" and on.contradicts
    assert "dean" in on.issue and "tutor" in on.issue


@needs_parser
def test_agents_of_a_passive_exchanged_are_withheld() -> None:
    span = "Inter-library loans are requested by the reader and approved by the subject librarian."
    sentence = "Inter-library loans are requested by the subject librarian and approved by the reader."
    off, on = _both(sentence, span)
    assert off.issue is None
    assert on.issue is not None and on.contradicts


@needs_parser
def test_two_arguments_of_one_predicate_taken_from_two_of_its_instances_are_withheld() -> None:
    span = (
        "Renewals take effect immediately and cost nothing. Reservations take effect at the next opening day."
    )
    sentence = "Reservations take effect immediately, while renewals take effect at the next opening day."
    off, on = _both(sentence, span)
    assert off.issue is None
    assert on.issue is not None and on.contradicts


@needs_parser
def test_a_predicate_negated_against_its_span_is_withheld() -> None:
    span = "Guest passes are valid for one month, after which they lapse."
    sentence = "Guest passes are valid for one month, and unused guest passes do not lapse."
    off, on = _both(sentence, span)
    assert off.issue is None
    assert on.issue is not None and on.issue.kind == "contradiction" and "lapse" in on.issue


@needs_parser
def test_an_elided_negated_predicate_is_the_same_claim() -> None:
    span = "Only staff and students can book study rooms; visitors cannot."
    sentence = "Staff and students can reserve study rooms, but visitors cannot book study rooms."
    _, on = _both(sentence, span)
    assert on.issue is None, on.issue


@needs_parser
def test_a_verb_paraphrase_is_not_taken_for_another_subject() -> None:
    span = "The newsletter is sent at most once a week and groups all new arrivals from that week."
    sentence = (
        "The newsletter goes out no more than once per week and bundles all the new arrivals from that week."
    )
    off, on = _both(sentence, span)
    if off.issue is None:
        pytest.skip("WordNet aligned the two verbs here: nothing for the parser to correct")
    assert on.issue is None, on.issue


@needs_parser
@pytest.mark.parametrize(
    ("span", "sentence"),
    [
        ("Readers can renew each loan twice online.", "Each loan can be renewed twice online by readers."),
        ("The porter locks the reading room at 22:00.", "The reading room is locked by the porter at 22:00."),
        ("Fines are not charged on reference books.", "Reference books do not incur fines."),
    ],
)
def test_faithful_restatements_stay_kept(span: str, sentence: str) -> None:
    _, on = _both(sentence, span)
    assert on.issue is None, on.issue
