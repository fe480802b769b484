"""The pipeline on the Claude path: real SDK -> fake Messages API, bundled corpus, answer() and stream."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, cite, cited, failure, locate, reply, text

from rag.answer.claude import ClaudeGenerator
from rag.answer.events import (
    DoneEvent,
    DroppedEvent,
    Event,
    MetaEvent,
    RefusalEvent,
    SentenceEvent,
)
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.answer.prompt import COMPRESS_SYSTEM_PROMPT, REFUSAL_TEXT
from rag.config import Settings, load_settings
from rag.errors import UpstreamUnavailable
from rag.store.sqlite import SqliteStore
from rag.types import Turn

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
QUESTION = "How long do deleted projects stay in the trash?"
STAY = "Deleted projects stay in the trash for 30 days. "
RESTORE = "During that time a project manager or an admin can restore the project from **Projects > Trash**"
UNRELATED = "Lumio emails all admins 30 days before the configured certificate expires. "

GOOD = reply(
    text("Per the user manual, "),
    cited("deleted projects stay in the trash for 30 days", locate(STAY)),
    text(". "),
    cited("A project manager or an admin can restore a project during that time", locate(RESTORE)),
    text("."),
    thinking=True,
)


def _settings(fake: FakeAnthropic, db: str, **overrides: Any) -> Settings:
    return load_settings(
        anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, db=db, **overrides
    )


def _pipeline(fake: FakeAnthropic, db: str, **overrides: Any) -> Pipeline:
    settings = _settings(fake, db, **overrides)
    pipeline = build_pipeline(settings, store=SqliteStore(db))
    assert isinstance(pipeline.generator, ClaudeGenerator)
    return pipeline


def _events(pipeline: Pipeline, question: str = QUESTION) -> list[Event]:
    async def run() -> list[Event]:
        return [e async for e in pipeline.answer_stream(question)]

    return asyncio.run(run())


def _question_texts(fake: FakeAnthropic) -> list[str]:
    return [r.body["messages"][0]["content"][-1]["text"] for r in fake.message_requests()]


# -- answer() ----------------------------------------------------------------------------


def test_pipeline_answer_cited_over_several_text_blocks(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(GOOD)
    answer = _pipeline(fake_anthropic, corpus_db).answer(QUESTION)
    assert not answer.abstained
    assert [s.text for s in answer.sentences] == [
        "Per the user manual, deleted projects stay in the trash for 30 days.",
        "A project manager or an admin can restore a project during that time.",
    ]
    for sentence in answer.sentences:
        (citation,) = sentence.citations
        chunk = next(b.chunk for b in answer.blocks if b.n == citation.n)
        assert chunk.chunk_id == citation.chunk_id and chunk.doc_id == "user-manual"
        assert chunk.text[citation.start : citation.end] == citation.cited_text
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    assert len(fake_anthropic.message_requests()) == 1


def test_pipeline_answer_unsupported_span_dropped_then_regenerated(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    bad = reply(
        cited("Deleted projects stay in the trash for 30 days", locate(STAY)),
        text(". "),
        cited("Invoices are always paid by corporate card", locate(STAY)),
        text("."),
    )
    fake_anthropic.enqueue(bad, GOOD)
    answer = _pipeline(fake_anthropic, corpus_db).answer(QUESTION)
    assert not answer.abstained
    assert [d.text for d in answer.dropped] == ["Invoices are always paid by corporate card."]
    assert "overlap" in " ".join(answer.dropped[0].detail)
    first, second = _question_texts(fake_anthropic)
    assert "previous answer" not in first
    assert "Your previous answer had these problems:" in second and "overlap" in second
    assert len(answer.sentences) == 2


def test_pipeline_answer_document_index_beyond_issued_is_rejected(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    beyond = reply(cited("Deleted projects stay in the trash for 30 days", cite(41, STAY)), text("."))
    fake_anthropic.enqueue(beyond, beyond)
    answer = _pipeline(fake_anthropic, corpus_db).answer(QUESTION)
    assert answer.abstained and answer.reason == "no_citations"
    assert any("[42]" in d for dropped in answer.dropped for d in dropped.detail)


def test_pipeline_answer_without_citations_refuses_no_citations(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    uncited = reply(text("Deleted projects stay in the trash for 30 days."))
    fake_anthropic.enqueue(uncited, uncited)
    answer = _pipeline(fake_anthropic, corpus_db).answer(QUESTION)
    assert answer.abstained and answer.reason == "no_citations"
    assert answer.sentences == ()


def test_pipeline_answer_model_refusal_is_abstention_without_regeneration(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(reply(text(REFUSAL_TEXT), thinking=True))
    answer = _pipeline(fake_anthropic, corpus_db).answer(QUESTION)
    assert answer.abstained and answer.reason == "no_citations"
    assert answer.dropped == ()
    assert len(fake_anthropic.message_requests()) == 1


def test_pipeline_answer_529_twice_then_success_counts_retries(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), GOOD)
    answer = _pipeline(fake_anthropic, corpus_db, model_max_retries=2).answer(QUESTION)
    assert not answer.abstained
    assert answer.usage.retries == 2


def test_pipeline_answer_529_until_retries_spent_raises_upstream_unavailable(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), failure(529))
    with pytest.raises(UpstreamUnavailable):
        _pipeline(fake_anthropic, corpus_db, model_max_retries=2).answer(QUESTION)


def test_pipeline_answer_reports_cache_usage(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    fake_anthropic.enqueue(GOOD, GOOD, GOOD)
    pipeline = _pipeline(fake_anthropic, corpus_db)
    once, repeat, again = (pipeline.answer(QUESTION).usage for _ in range(3))
    assert once.cache_creation_input_tokens == 0 and once.cache_read_input_tokens == 0
    assert repeat.cache_creation_input_tokens > 0 and repeat.cache_read_input_tokens == 0
    assert again.cache_read_input_tokens == repeat.cache_creation_input_tokens


def test_pipeline_answer_low_retrieval_makes_no_model_call(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    answer = _pipeline(fake_anthropic, corpus_db).answer("What is the capital of Australia?")
    assert answer.abstained and answer.reason == "low_retrieval_score"
    assert fake_anthropic.requests == []


def test_pipeline_answer_with_compression_cites_original_offsets(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if body["system"] == COMPRESS_SYSTEM_PROMPT:
            passage = body["messages"][0]["content"]
            return reply(text(STAY.strip() if STAY in passage else "NONE"))
        return reply(cited("Deleted projects stay in the trash for 30 days", locate(STAY.strip())), text("."))

    fake_anthropic.responder = respond
    answer = _pipeline(fake_anthropic, corpus_db, compress=True).answer(QUESTION)
    assert not answer.abstained
    compressions = [
        r for r in fake_anthropic.message_requests() if r.body["system"] == COMPRESS_SYSTEM_PROMPT
    ]
    assert len(compressions) == len(answer.blocks)
    assert {r.body["model"] for r in compressions} == {"claude-haiku-5-5"}
    manual = next(b for b in answer.blocks if b.chunk.doc_id == "user-manual")
    assert manual.sent_text == STAY.strip()
    citation = answer.sentences[0].citations[0]
    assert manual.chunk.text[citation.start : citation.end] == citation.cited_text
    assert citation.start > 0  # offsets point into the original chunk, not the compressed text
    assert answer.timings.get("compress", 0) > 0
    assert [s.text for s in answer.sentences] == ["Deleted projects stay in the trash for 30 days."]


# -- answer_stream() -----------------------------------------------------------------------


def test_pipeline_stream_cited_answer_emits_verified_sentences(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(GOOD)
    events = _events(_pipeline(fake_anthropic, corpus_db))
    assert isinstance(events[0], MetaEvent)
    sentences = [e.sentence for e in events if isinstance(e, SentenceEvent)]
    assert [s.text for s in sentences] == [
        "Per the user manual, deleted projects stay in the trash for 30 days.",
        "A project manager or an admin can restore a project during that time.",
    ]
    assert all(s.citations and s.citations[0].chunk_id.startswith("user-manual#") for s in sentences)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert (done.status, done.emitted, done.dropped, done.cut) == ("answered", 2, 0, False)
    assert done.usage.calls == 1 and done.usage.output_tokens > 0


def test_pipeline_stream_unsupported_span_dropped_then_regenerated_as_ask_does(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    wrong = reply(
        cited("Deleted projects stay in the trash for 30 days", locate(STAY)),
        text(". "),
        cited("Invoices are always paid by corporate card", locate(STAY)),
        text("."),
    )
    fake_anthropic.enqueue(wrong, wrong)
    events = _events(_pipeline(fake_anthropic, corpus_db))
    kinds = [e.name for e in events]
    # the second draft says the same: its restated sentence and its withheld one are not sent again
    assert kinds == ["meta", "sentence", "dropped", "done"]
    assert len(fake_anthropic.message_requests()) == 2
    feedback = _question_texts(fake_anthropic)[1]
    assert "Invoices are always paid by corporate card" in feedback


def test_pipeline_stream_document_index_beyond_issued_is_dropped(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    beyond = reply(cited("Deleted projects stay in the trash for 30 days", cite(41, STAY)), text("."))
    fake_anthropic.enqueue(beyond, beyond)
    events = _events(_pipeline(fake_anthropic, corpus_db))
    dropped = [e for e in events if isinstance(e, DroppedEvent)]
    assert dropped and any("[42]" in d for d in dropped[0].dropped.detail)
    refusal = next(e for e in events if isinstance(e, RefusalEvent))
    assert refusal.reason == "no_citations"


def test_pipeline_stream_without_citations_refuses(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    uncited = reply(text("Deleted projects stay in the trash for 30 days."))
    fake_anthropic.enqueue(uncited, uncited)
    events = _events(_pipeline(fake_anthropic, corpus_db))
    assert [e.name for e in events] == ["meta", "dropped", "refusal", "done"]
    assert events[-1].status == "abstained"  # type: ignore[union-attr]


def test_pipeline_stream_model_refusal_is_abstention(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    fake_anthropic.enqueue(reply(text(REFUSAL_TEXT)))
    events = _events(_pipeline(fake_anthropic, corpus_db))
    assert [e.name for e in events] == ["meta", "refusal", "done"]
    assert events[1].reason == "no_citations"  # type: ignore[union-attr]


def test_pipeline_stream_529_twice_then_success(fake_anthropic: FakeAnthropic, corpus_db: str) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), GOOD)
    events = _events(_pipeline(fake_anthropic, corpus_db, model_max_retries=2))
    assert events[-1].status == "answered"  # type: ignore[union-attr]


def test_pipeline_stream_529_until_spent_raises_before_anything_is_sent(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), failure(529))
    with pytest.raises(UpstreamUnavailable) as raised:
        _events(_pipeline(fake_anthropic, corpus_db, model_max_retries=2))
    assert raised.value.type == "upstream_overloaded"


def test_pipeline_stream_cut_after_two_sentences_keeps_them(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(
        Reply(
            parts=GOOD.parts[:-1]
            + (text(". Also, "), cited("trashed projects", locate(STAY)), text(" are purged.")),
            cut_after=5,
            thinking=True,
        )
    )
    events = _events(_pipeline(fake_anthropic, corpus_db))
    assert [e.name for e in events] == ["meta", "sentence", "sentence", "done"]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "answered" and done.emitted == 2
    assert done.cut
    assert done.usage.calls == 1 and done.usage.input_tokens > 0  # the usage of the cut stream is kept


def test_pipeline_max_tokens_reply_never_shows_its_cut_sentence_on_either_route(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    cut = Reply(
        parts=GOOD.parts[:-1] + (text(". Restored projects come back from the trash f"),),
        stop_reason="max_tokens",
    )
    fake_anthropic.enqueue(cut, cut)
    pipeline = _pipeline(fake_anthropic, corpus_db)
    answer = pipeline.answer(QUESTION)
    events = _events(pipeline)
    shown = [e.sentence.text for e in events if isinstance(e, SentenceEvent)]
    assert shown == [s.text for s in answer.sentences]
    assert not any("come back" in s for s in shown)
    assert len(shown) == 2
    assert answer.cut
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.cut and done.status == "answered"


def test_document_titles_are_shortened_in_the_request_only() -> None:
    from rag.answer.prompt import MAX_TITLE_CHARS, document_blocks
    from rag.types import Block, Chunk

    title = "A very long handbook title " * 20
    chunk = Chunk(chunk_id="hb#c01", doc_id="hb", title=title, section="", text="Text.")
    (doc,) = document_blocks([Block(n=1, chunk=chunk, score=0.9, sent_text="Text.")])
    assert len(doc["title"]) <= MAX_TITLE_CHARS and doc["title"].endswith("…")


def test_pipeline_stream_sse_error_event_after_first_sentence(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(Reply(parts=GOOD.parts, error_after=4))
    events = _events(_pipeline(fake_anthropic, corpus_db))
    assert [e.name for e in events] == ["meta", "sentence", "done"]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.cut and done.status == "answered"


def test_pipeline_stream_reports_cache_usage_in_ask_log(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    fake_anthropic.enqueue(GOOD, GOOD, GOOD)
    pipeline = _pipeline(fake_anthropic, corpus_db)
    logged: list[Any] = []
    original = pipeline.store.log_ask
    pipeline.store.log_ask = lambda record: (logged.append(record), original(record))[1]  # type: ignore[method-assign]
    for _ in range(3):
        _events(pipeline)
    assert logged[0].usage.cache_creation_input_tokens == 0
    assert logged[1].usage.cache_creation_input_tokens > 0
    assert logged[2].usage.cache_read_input_tokens == logged[1].usage.cache_creation_input_tokens


# -- over HTTP, configured from the environment only ---------------------------------------


def test_http_ask_503_with_retry_after_when_claude_stays_overloaded(
    claude_env: FakeAnthropic, corpus_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app
    from rag.config import get_settings

    monkeypatch.setenv("RAG_DB", corpus_db)
    monkeypatch.setenv("RAG_MODEL_MAX_RETRIES", "1")
    # a retry-after of 1 s is waited for and retried once; the provider is still overloaded
    monkeypatch.setenv("RAG_MODEL_RETRY_WAIT", "2")
    get_settings.cache_clear()
    claude_env.enqueue(
        failure(529, retry_after_ms=None, retry_after="1"), failure(529, retry_after_ms=None, retry_after="4")
    )
    with TestClient(create_app(get_settings())) as http:
        response = http.post("/ask", json={"question": QUESTION})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "4"
    assert response.json()["error"]["type"] == "upstream_overloaded"


def test_http_ask_stream_answers_through_claude_from_environment(
    claude_env: FakeAnthropic, corpus_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app
    from rag.config import get_settings

    monkeypatch.setenv("RAG_DB", corpus_db)
    get_settings.cache_clear()
    claude_env.enqueue(GOOD)
    with TestClient(create_app(get_settings())) as http:
        body = http.post("/ask/stream", json={"question": QUESTION}).text
    names = [line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event: ")]
    assert names == ["meta", "sentence", "sentence", "done"]
    assert '"status":"answered"' in body


def test_answer_usage_carries_calls_and_estimated_cost_from_the_price_table(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    from rag.answer.claude import cost_of

    fake_anthropic.enqueue(GOOD)
    pipeline = _pipeline(fake_anthropic, corpus_db, model_prices={"claude-sonnet-5-5": (3.0, 15.0)})
    usage = pipeline.answer(QUESTION).usage
    assert usage.calls == 1 and usage.output_tokens > 0
    expected = (
        usage.input_tokens * 3.0
        + usage.cache_creation_input_tokens * 3.0 * 1.25
        + usage.cache_read_input_tokens * 3.0 * 0.1
        + usage.output_tokens * 15.0
    ) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected) and usage.cost_usd > 0
    assert cost_of(usage, None) == 0.0


# -- follow-ups: the earlier turns go to Claude as conversation messages --------------------------------

EARLIER = Turn(question=QUESTION, answer="Deleted projects stay in the trash for 30 days.")
FOLLOW_UP = "Who can restore them?"
CAN_RESTORE = reply(
    cited("A project manager or an admin can restore a project during that time", locate(RESTORE)),
    text("."),
)


def _assert_conversation_sent(fake: FakeAnthropic, follow_up: str, earlier: Turn) -> None:
    """Every generation request: the earlier turn as plain user and assistant messages, then this turn's
    user message alone carrying the documents and the question as asked."""
    requests = fake.message_requests()
    assert requests
    for request in requests:
        messages = request.body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[0]["content"] == f"Question: {earlier.question}"
        assert messages[1]["content"] == earlier.answer
        *docs, question = messages[2]["content"]
        assert docs and all(d["type"] == "document" for d in docs)
        assert question["text"] == f"Question: {follow_up}"


def test_pipeline_follow_up_sends_earlier_turns_and_cites_only_this_turns_blocks(
    fake_anthropic: FakeAnthropic, corpus_db: str
) -> None:
    pipeline = _pipeline(fake_anthropic, corpus_db)
    fake_anthropic.enqueue(CAN_RESTORE)
    fake_anthropic.enqueue(CAN_RESTORE)
    answer = pipeline.answer(FOLLOW_UP, history=(EARLIER,), conversation_id="c-1")

    async def run() -> list[Event]:
        return [e async for e in pipeline.answer_stream(FOLLOW_UP, history=(EARLIER,))]

    events = asyncio.run(run())
    _assert_conversation_sent(fake_anthropic, FOLLOW_UP, EARLIER)
    assert (
        answer.question == FOLLOW_UP
        and answer.searched_for == "Who can restore them (deleted projects stay)?"
    )
    assert [s.text for s in answer.sentences] == [
        "A project manager or an admin can restore a project during that time."
    ]
    issued = {b.chunk.chunk_id for b in answer.blocks}
    assert answer.citations and all(c.chunk_id in issued for c in answer.citations)
    meta = next(e for e in events if isinstance(e, MetaEvent))
    assert meta.searched_for == answer.searched_for
    streamed = [e.sentence.text for e in events if isinstance(e, SentenceEvent)]
    assert streamed == [s.text for s in answer.sentences]


def test_http_follow_up_through_claude_on_both_routes(
    claude_env: FakeAnthropic, corpus_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from rag.api import create_app
    from rag.config import get_settings

    monkeypatch.setenv("RAG_DB", corpus_db)
    get_settings.cache_clear()
    claude_env.enqueue(CAN_RESTORE)
    claude_env.enqueue(CAN_RESTORE)
    body = {
        "question": FOLLOW_UP,
        "history": [{"question": EARLIER.question, "answer": EARLIER.answer}],
        "conversation_id": "c-2",
    }
    with TestClient(create_app(get_settings())) as http:
        ask = http.post("/ask", json=body).json()
        stream = http.post("/ask/stream", json=body).text
    _assert_conversation_sent(claude_env, FOLLOW_UP, EARLIER)
    assert ask["searched_for"] == "Who can restore them (deleted projects stay)?"
    assert "can restore a project" in ask["text"]
    assert '"searched_for":"Who can restore them (deleted projects stay)?"' in stream
    assert '"status":"answered"' in stream
