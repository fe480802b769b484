"""Realistic Claude replies, set 2 (written from the wire documentation, not from our parser), both routes."""

from __future__ import annotations

from functools import cache

import pytest
from claude_replies2 import Played, load_replies, play_all

CASES = {c["id"]: c for c in load_replies()}


@cache
def _played(db: str) -> tuple[Played, ...]:
    return tuple(play_all(db))


@pytest.fixture(scope="module")
def played(corpus_db: str) -> tuple[Played, ...]:
    return _played(corpus_db)


@pytest.mark.parametrize("route", ["ask", "stream"])
def test_every_realistic_reply_gives_what_a_correct_product_shows(
    played: tuple[Played, ...], route: str
) -> None:
    wrong = {p.id: p.failed for p in played if p.route == route and p.failed}
    assert wrong == {}


def test_most_replies_reach_the_model_with_the_documents_they_need(played: tuple[Played, ...]) -> None:
    # a reply whose documents the question does not retrieve is not judged; they must stay few
    assert sum(1 for p in played if not p.reached) <= 0.2 * len(played)


def test_both_routes_show_the_same_sentences(played: tuple[Played, ...]) -> None:
    ask = {p.id: p.shown for p in played if p.route == "ask" and p.status == 200}
    stream = {p.id: p.shown for p in played if p.route == "stream" and p.id in ask}
    assert stream == {i: ask[i] for i in stream}
