"""An elliptical follow-up's own words (issue 30, precision): the offline reader answers "and for
premium customers?" only with a sentence that says them, in itself or its heading. The standalone
question holds the earlier question's words too, and a sentence about those alone answers the earlier
question, not this one. Inline documents of a domain unlike the fixtures: a chat service's retention
page and a community garden's rules."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rag.answer.events import SentenceEvent
from rag.answer.followup import follow_up_focus, resolve, standalone_question
from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.reader.offline import OfflineGenerator
from rag.store import SqliteStore
from rag.types import Block, Chunk, Turn

RETENTION = """# Message retention

## How long messages are kept

Chat messages are kept for 90 days on the Basic plan.
Customers on the Premium plan can keep chat messages for up to 3 years.
Deleted messages are removed from backups within 30 days.
"""

GARDEN = """# Garden rules

## Plots

A standard plot rents for 40 euros a season.
Watering cans are shared and stay in the shed.
"""

EARLIER = "How long are chat messages kept on Basic?"
FOLLOW_UP = "and for premium customers?"


@pytest.mark.parametrize(
    ("follow_up", "earlier", "expected"),
    [
        (FOLLOW_UP, EARLIER, ("premium", "customers")),
        ("what about part-timers?", "How many days off do full-timers get?", ("part-timers",)),
        ("does it carry over?", "How many days off do full-timers get?", ("carry",)),
        ("how long?", "How many days off do full-timers get?", ()),
        # a self-contained follow-up adds nothing: it is read as it stands
        ("What does a standard plot cost?", EARLIER, ()),
    ],
)
def test_own_words_are_what_an_elliptical_follow_up_adds(
    follow_up: str, earlier: str, expected: tuple
) -> None:
    assert follow_up_focus(follow_up, resolve(follow_up, earlier)) == expected


def test_follow_up_focus_reads_against_the_standalone_earlier_turns() -> None:
    later = "and the deleted ones?"
    assert follow_up_focus(later, standalone_question(later, [EARLIER, FOLLOW_UP])) == ("deleted",)
    assert follow_up_focus(FOLLOW_UP, standalone_question(FOLLOW_UP, [])) == ()


def _block(n: int, text: str, title: str, section: str = "") -> Block:
    chunk = Chunk(chunk_id=f"d{n}#c01", doc_id=f"d{n}", title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.7, sent_text=text)


def test_the_reader_answers_a_follow_up_only_with_a_sentence_saying_its_own_words() -> None:
    text = RETENTION.split("\n\n", 2)[2]
    blocks = [_block(1, text, "Message retention", "How long messages are kept")]
    standalone = resolve(FOLLOW_UP, EARLIER)
    focus = follow_up_focus(FOLLOW_UP, standalone)
    drafts = OfflineGenerator().generate(standalone, blocks, focus=focus).drafts
    assert [d.text for d in drafts] == [
        "Customers on the Premium plan can keep chat messages for up to 3 years."
    ]
    # a heading says the words too: the same sentence under a section naming the plan answers
    under = [_block(1, "Messages are kept for 3 years.", "Message retention", "Premium customers")]
    assert OfflineGenerator().generate(standalone, under, focus=focus).drafts
    # no sentence says them: nothing is answered (the refusal shows the passages)
    basic = [_block(1, "Chat messages are kept for 90 days on the Basic plan.", "Message retention")]
    assert OfflineGenerator().generate(standalone, basic, focus=focus).drafts == ()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    root = tmp_path_factory.mktemp("chat")
    docs = root / "docs"
    docs.mkdir()
    (docs / "retention.md").write_text(RETENTION, encoding="utf-8")
    (docs / "garden.md").write_text(GARDEN, encoding="utf-8")
    path = str(root / "chat.db")
    s = SqliteStore(path)
    ingest_paths(s, [docs], settings=load_settings(db=path, mock=True))
    yield s
    s.close()


def test_a_follow_up_on_both_routes_is_answered_about_what_it_adds(store: SqliteStore) -> None:
    pipeline = build_pipeline(
        load_settings(db=":memory:", mock=True), store=store, generator=OfflineGenerator()
    )
    first = pipeline.answer(EARLIER)
    assert "90 days" in first.text
    history = (Turn(question=EARLIER, answer=first.text),)
    answer = pipeline.answer(FOLLOW_UP, history=history)
    assert "3 years" in answer.text and "90 days" not in answer.text, answer.text

    async def streamed() -> str:
        pieces = []
        async for event in pipeline.answer_stream(FOLLOW_UP, history=history):
            if isinstance(event, SentenceEvent):
                pieces.append(event.sentence.text)
        return " ".join(pieces)

    text = asyncio.run(streamed())
    assert "3 years" in text and "90 days" not in text, text


def test_a_follow_up_whose_search_left_out_its_own_words_is_refused_offline(store: SqliteStore) -> None:
    pipeline = build_pipeline(
        load_settings(db=":memory:", mock=True), store=store, generator=OfflineGenerator()
    )
    history = (Turn(question=EARLIER, answer="Chat messages are kept for 90 days on the Basic plan."),)
    # "deleted messages" replaces "chat messages"; "chat" is left out of the search, so what it finds
    # may answer another question: refused, the closest passages shown
    lost = "what about deleted messages thats not a chat one?"
    answer = pipeline.answer(lost, history=history)
    assert answer.searched_for == "How long are deleted messages kept on Basic?"
    assert answer.abstained and answer.reason == "no_citations", answer.text
    assert "left out its words: chat" in answer.message and answer.closest
    # every word searched for: not refused on that ground
    kept = pipeline.answer("and deleted messages?", history=history)
    assert "left out" not in kept.message
    # the same question with no earlier turn is a single question: never refused so
    assert "left out" not in pipeline.answer(lost).message
