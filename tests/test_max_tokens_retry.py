"""A reply cut at `max_tokens` is asked for once more with `retry_max_tokens` (issue 12 item 2), on both
routes alike, through the real `anthropic` SDK against the fake Messages API."""

from __future__ import annotations

import asyncio
from typing import Any

from fake_anthropic import FakeAnthropic, Reply, cited, failure, locate, reply, text

from rag.answer.claude import ClaudeGenerator
from rag.answer.events import DoneEvent, Event, SentenceEvent
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.config import load_settings
from rag.store.sqlite import SqliteStore

QUESTION = "How long do deleted projects stay in the trash?"
THINKING = 2048  # the default reserve for thinking, asked for on top of the answer's budget
STAY = "Deleted projects stay in the trash for 30 days. "
RESTORE = "During that time a project manager or an admin can restore the project from **Projects > Trash**"
FULL = reply(
    cited("Deleted projects stay in the trash for 30 days", locate(STAY)),
    text(". "),
    cited("A project manager or an admin can restore a project during that time", locate(RESTORE)),
    text("."),
)
CUT = Reply(
    parts=(
        cited("Deleted projects stay in the trash for 30 days", locate(STAY)),
        text(". A project manager or an admin can restore a pro"),
    ),
    stop_reason="max_tokens",
)


def _pipeline(fake: FakeAnthropic, db: str, **overrides: Any) -> Pipeline:
    settings = load_settings(
        anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, db=db, **overrides
    )
    pipeline = build_pipeline(settings, store=SqliteStore(db))
    assert isinstance(pipeline.generator, ClaudeGenerator)
    return pipeline


def _budgets(fake: FakeAnthropic) -> list[int]:
    """The answer budget of each request (its max_tokens less the thinking reserve)."""
    return [r.body["max_tokens"] - THINKING for r in fake.message_requests()]


def test_a_cut_reply_is_asked_for_again_with_the_larger_budget(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(CUT, FULL)
    answer = _pipeline(fake_anthropic, corpus_db, max_tokens=1000, retry_max_tokens=3000).answer(QUESTION)
    assert _budgets(fake_anthropic) == [1000, 3000]
    assert not answer.cut and len(answer.sentences) == 2
    assert answer.usage.calls == 2  # the cut call was paid for too


def test_without_a_retry_budget_the_cut_answer_stands(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    fake_anthropic.enqueue(CUT)
    answer = _pipeline(fake_anthropic, corpus_db, max_tokens=1000).answer(QUESTION)
    assert _budgets(fake_anthropic) == [1000]
    assert answer.cut and [s.text for s in answer.sentences] == [
        "Deleted projects stay in the trash for 30 days."
    ]


def test_a_failed_retry_keeps_the_verified_part_of_the_cut_reply(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(CUT, failure(400, retry_after_ms=None))
    answer = _pipeline(fake_anthropic, corpus_db, max_tokens=1000, retry_max_tokens=3000).answer(QUESTION)
    assert _budgets(fake_anthropic) == [1000, 3000]
    assert answer.cut and len(answer.sentences) == 1
    assert "larger budget failed" in answer.message


def test_a_reply_stopped_for_another_reason_is_not_retried(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    refused = Reply(parts=CUT.parts, stop_reason="refusal")
    fake_anthropic.enqueue(refused)
    answer = _pipeline(fake_anthropic, corpus_db, max_tokens=1000, retry_max_tokens=3000).answer(QUESTION)
    assert _budgets(fake_anthropic) == [1000] and answer.cut


def test_the_stream_retries_as_ask_does_and_never_shows_a_sentence_twice(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(CUT, FULL)
    pipeline = _pipeline(fake_anthropic, corpus_db, max_tokens=1000, retry_max_tokens=3000)

    async def run() -> list[Event]:
        return [e async for e in pipeline.answer_stream(QUESTION)]

    events = asyncio.run(run())
    done = events[-1]
    assert isinstance(done, DoneEvent) and not done.cut and done.emitted == 2
    assert _budgets(fake_anthropic) == [1000, 3000]
    shown = [e.sentence.text for e in events if isinstance(e, SentenceEvent)]
    assert (
        shown[0] == "Deleted projects stay in the trash for 30 days."
    )  # the longer reply's restatement is not shown again
    assert len(shown) == 2 and done.usage.calls == 2
