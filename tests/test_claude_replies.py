"""Realistic Claude replies (written from the wire documentation, not from our parser), both routes."""

from __future__ import annotations

from functools import cache

import pytest
from claude_replies import Outcome, load_replies, play_all, summary

CASES = {c["id"]: c for c in load_replies()}


@cache
def _outcomes(db: str) -> tuple[Outcome, ...]:
    return tuple(play_all(db))


@pytest.fixture(scope="module")
def outcomes(corpus_db: str) -> tuple[Outcome, ...]:
    return _outcomes(corpus_db)


def test_claude_replies_both_routes_show_the_same_sentences(outcomes: tuple[Outcome, ...]) -> None:
    ask = {o.id: o.shown for o in outcomes if o.route == "ask"}
    stream = {o.id: o.shown for o in outcomes if o.route == "stream"}
    assert ask == stream


def test_claude_replies_cut_by_max_tokens_say_so_and_hide_the_cut_sentence(
    outcomes: tuple[Outcome, ...],
) -> None:
    cut = [o for o in outcomes if CASES[o.id]["stop_reason"] == "max_tokens" and o.reached]
    assert cut and all(o.cut for o in cut)
    for o in cut:
        last = CASES[o.id]["blocks"][-1]["text"].strip()
        assert not any(s.endswith(last[-12:]) for s in o.shown), (o.id, o.shown)


def test_claude_replies_summary_counts_every_reply(outcomes: tuple[Outcome, ...]) -> None:
    figures = summary(outcomes)
    for route in ("ask", "stream"):
        row = figures[route]
        assert row["replies"] + row["not_reached"] + row["unmapped"] + row["conflict_refused"] == len(CASES)
        # r015 asks what a plan includes: its contested price is withheld and the rest shown
        assert row["conflict_refused"] == 0
        assert row["contested"] <= 1


def test_claude_replies_show_the_right_sentences_and_withhold_the_harmful_ones(
    outcomes: tuple[Outcome, ...],
) -> None:
    # Floors at the figures measured after the support check (docs/eval.md): a regression fails.
    row = summary(outcomes)["ask"]
    assert row["shown_recall"] >= 0.95
    assert row["withheld_leaked"] <= 1


def test_claude_replies_every_faithful_sentence_is_shown_and_no_harmful_one(
    outcomes: tuple[Outcome, ...],
) -> None:
    # issue 27's "done when", on the replies that reach Claude with every document they cite
    scored = [o for o in outcomes if o.reached and o.mapped]
    assert {o.id: o.missed for o in scored if o.missed} == {}
    assert {o.id: o.leaked for o in scored if o.leaked} == {}
