"""The small-model judge: what the rules leave undecided, how a ruling is read, and the call through
the real SDK against the fake Messages API on both routes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import (
    FakeAnthropic,
    Part,
    Reply,
    cited,
    failure,
    judge_items,
    locate,
    reply,
    text,
    verdicts,
)

from rag.answer.core import Core
from rag.answer.events import DroppedEvent, Event, SentenceEvent
from rag.answer.parse import SentenceBuffer
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.config import load_settings
from rag.store.sqlite import SqliteStore
from rag.support.check import check
from rag.support.judge import Ruling, Rulings, read_rulings
from rag.types import Answer, Block, Chunk, Claim, Piece

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
QUESTION = "How long do deleted projects stay in the trash? Please answer in German."
STAY = "Deleted projects stay in the trash for 30 days."
RESTORE = "During that time a project manager or an admin can restore the project from **Projects > Trash**"
GERMAN_STAY = "Gelöschte Projekte bleiben 30 Tage lang im Papierkorb"
GERMAN_RESTORE = (
    "In dieser Zeit kann ein Projektmanager oder ein Admin das Projekt über Projects > Trash wiederherstellen"
)
GERMAN = reply(
    cited(GERMAN_STAY, locate(STAY)),
    text(". "),
    cited(GERMAN_RESTORE, locate(RESTORE)),
    text("."),
    usage={"input_tokens": 2000, "output_tokens": 200},
)
ENGLISH = reply(cited("Deleted projects stay in the trash for 30 days", locate(STAY)), text("."))
SUPPORTED = verdicts((1, True, "says the same in German"), (2, True, "says the same in German"))


def _pipeline(fake: FakeAnthropic, db: str, **overrides: Any) -> Pipeline:
    settings = load_settings(
        anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, db=db, **overrides
    )
    return build_pipeline(settings, store=SqliteStore(db))


def _stream(pipeline: Pipeline, question: str = QUESTION) -> list[Event]:
    async def run() -> list[Event]:
        return [e async for e in pipeline.answer_stream(question)]

    return asyncio.run(run())


def _shown(events: list[Event]) -> list[str]:
    return [e.sentence.text for e in events if isinstance(e, SentenceEvent)]


def _both(pipeline: Pipeline) -> tuple[Answer, list[Event]]:
    return pipeline.answer(QUESTION), _stream(pipeline)


# -- what the rules leave undecided ------------------------------------------------------------


def _block(span: str) -> Block:
    chunk = Chunk(
        chunk_id="m#1", doc_id="m", title="User Manual", section="Trash", text=span, end_char=len(span)
    )
    return Block(n=1, chunk=chunk, score=1.0, sent_text=span)


def test_check_leaves_a_german_restatement_undecided() -> None:
    decision = check(f"{GERMAN_STAY}.", [STAY], [_block(STAY)])
    assert decision.issue is not None and decision.issue.kind == "low_overlap"
    assert decision.undecided


@pytest.mark.parametrize(
    "sentence",
    [
        "Deleted projects do not stay in the trash for 30 days.",  # a contradiction
        "Gelöschte Projekte bleiben 60 Tage lang im Papierkorb.",  # a figure the span does not state
        "It's also included in the Team plan, so smaller teams can restore it too.",  # another subject
    ],
)
def test_check_decides_contradictions_figures_and_other_subjects_itself(sentence: str) -> None:
    decision = check(sentence, [STAY], [_block(STAY)])
    assert decision.issue is not None
    assert not decision.undecided


def test_a_core_without_a_judge_withholds_an_undecided_sentence_at_once() -> None:
    core = Core(blocks=[_block(STAY)], min_overlap=0.42, buffer=SentenceBuffer(native=True))
    pieces = [
        Piece(index=0, claims=(Claim(n=1, cited_text=STAY),)),
        Piece(index=0, text=f"{GERMAN_STAY}."),
        Piece(index=1),
    ]
    events = [e for p in pieces for e in core.feed(p)] + core.close()
    assert [type(e) for e in events] == [DroppedEvent]
    assert core.judge_items() == []


# -- how a ruling is read ----------------------------------------------------------------------


def test_read_rulings_keeps_the_asked_ids_in_order() -> None:
    given = {
        "verdicts": [
            {"id": 2, "supported": False, "reason": "no"},
            {"id": 1, "supported": True, "reason": "yes"},
        ]
    }
    assert read_rulings(given, [1, 2]) == (
        Ruling(id=1, supported=True, reason="yes"),
        Ruling(id=2, supported=False, reason="no"),
    )


@pytest.mark.parametrize(
    "given",
    [
        None,
        {"verdicts": "all supported"},
        {"verdicts": [{"id": "1", "supported": True, "reason": "x"}]},
        {"verdicts": [{"id": True, "supported": True, "reason": "x"}]},
        {"verdicts": [{"id": 1, "supported": "yes", "reason": "x"}]},
        {"verdicts": [{"id": 1, "supported": True}]},
        {"verdicts": [{"id": 7, "supported": True, "reason": "an id not asked"}]},
        {
            "verdicts": [
                {"id": 1, "supported": True, "reason": "x"},
                {"id": 1, "supported": False, "reason": "y"},
            ]
        },
    ],
)
def test_read_rulings_gives_no_ruling_for_a_malformed_or_contradictory_entry(given: object) -> None:
    assert read_rulings(given, [1]) == ()


# -- through the SDK, both routes ----------------------------------------------------------------


def test_judge_supported_german_reply_is_shown_on_both_routes_in_one_call(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(GERMAN, GERMAN)
    fake_anthropic.enqueue_judge(SUPPORTED, SUPPORTED)
    answer, events = _both(_pipeline(fake_anthropic, corpus_db))
    wanted = [f"{GERMAN_STAY}.", f"{GERMAN_RESTORE}."]
    assert [s.text for s in answer.sentences] == wanted
    assert _shown(events) == wanted
    assert all(s.citations for s in answer.sentences)
    judged = fake_anthropic.judge_requests()
    assert len(judged) == 2  # one per answer, both sentences in it
    for request in judged:
        items = judge_items(request.body)
        assert [i["sentence"] for i in items] == wanted
        assert STAY in items[0]["passages"][0]["text"]  # the original chunk text
        assert items[0]["passages"][0]["updated"]
        body = request.body
        assert body["model"] == "claude-haiku-5-5"
        assert body["tool_choice"] == {
            "type": "tool",
            "name": "record_verdicts",
            "disable_parallel_tool_use": True,
        }
        assert body["thinking"] == {"type": "disabled"}
        assert "temperature" not in body  # Haiku 5.5 answers 400 to one (wire 5)


def test_judge_usage_is_in_the_answer_once_at_its_own_price(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    judge_usage = {"input_tokens": 1000, "output_tokens": 100}
    fake_anthropic.enqueue(GERMAN, GERMAN)
    supported = verdicts((1, True, "same"), (2, True, "same"), usage=judge_usage)
    fake_anthropic.enqueue_judge(supported, supported)
    answer, events = _both(_pipeline(fake_anthropic, corpus_db))
    done = events[-1]
    for usage in (answer.usage, done.usage):
        assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 3000, 300)
        # Sonnet 5.5 at $2/$10 for the answer, Haiku 5.5 at $0.10/$0.50 for the judge
        assert usage.cost_usd == pytest.approx((2000 * 2 + 200 * 10 + 1000 * 0.1 + 100 * 0.5) / 1e6)


def test_judge_rejection_withholds_with_its_reason_and_asks_again(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    rejected = verdicts((1, False, "the passage says 30 days of trash, fine"), (2, False, "adds a menu path"))
    fake_anthropic.enqueue(GERMAN, ENGLISH, GERMAN, ENGLISH)
    fake_anthropic.enqueue_judge(rejected, rejected)
    answer, events = _both(_pipeline(fake_anthropic, corpus_db))
    english = ["Deleted projects stay in the trash for 30 days."]
    assert [s.text for s in answer.sentences] == english and _shown(events) == english
    details = [d for e in events if isinstance(e, DroppedEvent) for d in e.dropped.detail]
    assert any("judged unsupported by claude-haiku-5-5: adds a menu path" in d for d in details)
    assert [d.detail for d in answer.dropped] == [
        d.dropped.detail for d in events if isinstance(d, DroppedEvent)
    ]
    second = fake_anthropic.message_requests()[1].body["messages"][0]["content"][-1]["text"]
    assert "adds a menu path" in second  # the regeneration's feedback names the judge's reason


@pytest.mark.parametrize(
    "judge_reply",
    [
        failure(529, sticky=True),
        failure(429, sticky=True),
        Reply(latency=1.5, tool_use={"verdicts": []}, stop_reason="tool_use"),  # past the judge's timeout
        Reply(tool_use={"verdicts": "supported"}, stop_reason="tool_use"),  # malformed input
        verdicts((3, True, "an id not asked")),  # the ids asked are missing
        Reply(parts=(Part(text="Both are supported."),)),  # no tool used
    ],
    ids=["529", "429", "timeout", "malformed", "missing-ids", "no-tool"],
)
def test_judge_failure_leaves_the_sentences_withheld_and_the_answer_stands(
    fake_anthropic: FakeAnthropic, corpus_db: str, judge_reply: Reply
) -> None:
    fake_anthropic.enqueue(GERMAN, ENGLISH, GERMAN, ENGLISH)
    fake_anthropic.enqueue_judge(judge_reply, judge_reply)
    pipeline = _pipeline(fake_anthropic, corpus_db, judge_timeout=0.5, model_max_retries=0)
    answer, events = _both(pipeline)
    english = ["Deleted projects stay in the trash for 30 days."]
    assert [s.text for s in answer.sentences] == english and _shown(events) == english
    assert not answer.abstained and not answer.error
    details = [d for e in events if isinstance(e, DroppedEvent) for d in e.dropped.detail]
    assert details and all("overlap" in d for d in details)  # the rules' reasons stand
    if judge_reply.sticky:
        fake_anthropic.enqueue_judge()  # a sticky reply is never "unused"


def test_contradiction_never_reaches_the_judge(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    negated = reply(cited("Deleted projects do not stay in the trash for 30 days", locate(STAY)), text("."))
    fake_anthropic.enqueue(negated, ENGLISH, negated, ENGLISH)
    answer, events = _both(_pipeline(fake_anthropic, corpus_db))
    assert fake_anthropic.judge_requests() == []
    assert any("negat" in d for d in answer.dropped[0].detail)
    assert _shown(events) == [s.text for s in answer.sentences]


def test_judged_sentence_keeps_its_place_between_verified_ones_on_both_routes(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    mixed = reply(
        cited("Deleted projects stay in the trash for 30 days", locate(STAY)),
        text(". "),
        cited(GERMAN_RESTORE, locate(RESTORE)),
        text(". "),
        cited("A project manager or an admin can restore the project from Projects > Trash", locate(RESTORE)),
        text("."),
    )
    fake_anthropic.enqueue(mixed, mixed)
    one = verdicts((1, True, "same in German"))
    fake_anthropic.enqueue_judge(one, one)
    answer, events = _both(_pipeline(fake_anthropic, corpus_db))
    wanted = [
        "Deleted projects stay in the trash for 30 days.",
        f"{GERMAN_RESTORE}.",
        "A project manager or an admin can restore the project from Projects > Trash.",
    ]
    assert [s.text for s in answer.sentences] == wanted
    assert _shown(events) == wanted
    assert [len(judge_items(r.body)) for r in fake_anthropic.judge_requests()] == [1, 1]


def test_judge_off_or_offline_makes_no_judge(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    assert _pipeline(fake_anthropic, corpus_db, judge="off").judge is None
    assert build_pipeline(load_settings(mock=True, db=corpus_db), store=SqliteStore(corpus_db)).judge is None


def test_rulings_of_a_failed_call_hold_none() -> None:
    assert Rulings(failure="timeout").of(1) is None
