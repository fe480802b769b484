from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from rag.answer.compress import Compression, compression_of
from rag.answer.events import (
    DoneEvent,
    DroppedEvent,
    ErrorEvent,
    Event,
    MetaEvent,
    RefusalEvent,
    SentenceEvent,
)
from rag.answer.gates import CLOSEST_SHOWN
from rag.answer.pipeline import STAGES, Pipeline, build_pipeline, validate_question
from rag.cli.render import format_answer
from rag.config import Settings, load_settings
from rag.errors import InvalidQuestion, UpstreamUnavailable
from rag.reader.offline import OfflineGenerator
from rag.store import SqliteStore, Store
from rag.types import Answer, AskRecord, Block, Generation, Piece, Usage

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"

ANSWERABLE = "How long do deleted projects stay in the trash?"
OFF_TOPIC = "What is the capital of Australia?"
NEAR_MISS = "Can I get my mobile phone bill reimbursed?"
CONFLICT = "What is the maximum file upload size?"


class RecordingStore:
    """The real store, with every ask-log record and gap kept for inspection."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.asks: list[AskRecord] = []
        self.gap_calls: list[tuple[str, float, tuple[str, ...]]] = []

    def log_ask(self, record: AskRecord) -> None:
        self.asks.append(record)
        self.inner.log_ask(record)

    def add_gap(self, question: str, top_score: float, closest: Sequence[str], principal: str = "") -> None:
        self.gap_calls.append((question, top_score, tuple(closest)))
        self.inner.add_gap(question, top_score, closest, principal)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class CountingGenerator:
    """Wraps a generator and counts its calls; records the feedback each call received."""

    native_citations = False

    name = "counting"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.feedback: list[tuple[str, ...]] = []
        self.closed = False

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        self.calls += 1
        self.feedback.append(tuple(feedback))
        result: Generation = self.inner.generate(question, blocks, feedback=feedback)
        return result

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        self.calls += 1
        try:
            async for piece in self.inner.stream(question, blocks):
                yield piece
        finally:
            self.closed = True


class FailingGenerator:
    """Streams one good sentence, then the provider fails."""

    native_citations = False

    name = "failing"

    def __init__(self) -> None:
        self.offline = OfflineGenerator()

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        raise UpstreamUnavailable("model provider unavailable (overloaded)")

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        async for piece in self.offline.stream(question, blocks):
            yield piece
        raise UpstreamUnavailable("model provider unavailable (overloaded)")


def make(
    corpus_db: str, generator: Any = None, **overrides: Any
) -> tuple[Pipeline, RecordingStore, CountingGenerator]:
    settings: Settings = load_settings(db=corpus_db, **overrides)
    store = RecordingStore(SqliteStore(corpus_db))
    counting = CountingGenerator(generator or OfflineGenerator(settings.fabricate))
    pipeline = build_pipeline(settings, store=store, generator=counting)  # type: ignore[arg-type]
    return pipeline, store, counting


def events(pipeline: Pipeline, question: str) -> list[Event]:
    async def run() -> list[Event]:
        return [e async for e in pipeline.answer_stream(question)]

    return asyncio.run(run())


def assert_fully_cited(answer: Answer, store: Store) -> None:
    assert answer.sentences
    for sentence in answer.sentences:
        assert sentence.citations, sentence.text
        for c in sentence.citations:
            text = store.get_chunk(c.chunk_id).text
            assert text[c.start : c.end] == c.cited_text
            assert c.cited_text


def test_pipeline_answerable_question_returns_verbatim_cited_answer(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db)
    answer = pipeline.answer(ANSWERABLE)
    assert not answer.abstained, answer
    assert "30 days" in answer.text
    assert_fully_cited(answer, store)
    assert answer.citations
    assert len(answer.trace_id) == 32
    assert set(answer.timings) == set(STAGES)
    assert answer.timings["regenerate"] == 0.0 and answer.timings["generate"] > 0


def test_pipeline_off_topic_refuses_low_score_without_generator_call(corpus_db: str) -> None:
    pipeline, store, counting = make(corpus_db)
    answer = pipeline.answer(OFF_TOPIC)
    assert answer.abstained
    assert answer.reason == "low_retrieval_score"
    assert answer.message.startswith("I couldn't find this in the knowledge base.")
    assert counting.calls == 0
    assert store.gap_calls and store.gap_calls[0][0] == OFF_TOPIC
    assert any(g.question == OFF_TOPIC for g in store.gaps(10))


def test_pipeline_near_miss_refuses_no_citations_above_gate(corpus_db: str) -> None:
    pipeline, _, counting = make(corpus_db)
    answer = pipeline.answer(NEAR_MISS)
    assert answer.reason == "no_citations", answer.text
    assert answer.abstained
    assert counting.calls >= 1
    assert answer.closest and answer.closest[0].score >= pipeline.gate_score
    assert answer.sentences == ()


def test_a_refusal_shows_the_passages_ranked_below_the_ones_the_reader_read(corpus_db: str) -> None:
    # the offline reader reads its five best blocks; the refusal hands over those and the next ones,
    # best first, each once
    # (the top passage's neighbours, shown after it, are left out here: see the next test)
    pipeline, _, counting = make(corpus_db, refusal_neighbours=0)
    answer = pipeline.answer(NEAR_MISS)
    assert answer.reason == "no_citations"
    read = [b.chunk.chunk_id for b in answer.blocks]
    shown = [r.chunk_id for r in answer.closest]
    assert len(read) == pipeline.settings.max_blocks == 5
    assert len(shown) == CLOSEST_SHOWN > len(read) and len(set(shown)) == len(shown)
    assert set(read) <= set(shown)
    assert [r.score for r in answer.closest] == sorted((r.score for r in answer.closest), reverse=True)


def test_an_offline_refusal_shows_the_top_passage_with_the_chunks_around_it(corpus_db: str) -> None:
    # a chunk boundary can cut the top passage off the sentences that answer: the chunk before and
    # after it in its document come right after it, in document order, each once
    ranked = make(corpus_db, refusal_neighbours=0)[0].answer(NEAR_MISS).closest
    answer = make(corpus_db)[0].answer(NEAR_MISS)
    store = SqliteStore(corpus_db)
    try:
        near = store.adjacent_chunks([ranked[0].chunk_id], width=1)
    finally:
        store.close()
    added = [
        c.chunk_id
        for c in sorted(near, key=lambda c: c.start_char)
        if c.chunk_id not in {r.chunk_id for r in ranked}
    ]
    assert added, "the top passage has a neighbour the ranking did not show"
    shown = [r.chunk_id for r in answer.closest]
    assert shown == [ranked[0].chunk_id, *added, *(r.chunk_id for r in ranked[1:])]
    assert all(r.score > 0 and r.title for r in answer.closest)
    assert all(
        r.chunk_id.split("#")[0] == ranked[0].chunk_id.split("#")[0]
        for r in answer.closest[1 : 1 + len(added)]
    )


def test_a_greeting_before_a_question_changes_neither_the_search_nor_the_answer(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    plain = pipeline.answer("How long do deleted projects stay in the trash?")
    greeted = pipeline.answer(
        "Hi! Thanks for the help earlier. How long do deleted projects stay in the trash?"
    )
    assert not plain.abstained
    assert greeted.searched_for == "How long do deleted projects stay in the trash?"
    assert greeted.text == plain.text


def test_pipeline_conflicting_limit_refuses_naming_both_documents(corpus_db: str) -> None:
    pipeline, _, counting = make(corpus_db)
    answer = pipeline.answer(CONFLICT)
    assert answer.reason == "conflicting_sources"
    assert answer.conflict is not None
    assert {s.doc_id for s in answer.conflict.statements} >= {"admin-guide", "api-reference"}
    assert "2026-05-12" in answer.message and "2025-10-03" in answer.message
    titles = {s.title for s in answer.conflict.statements}
    assert all(t in answer.message for t in titles)
    assert counting.calls == 0
    # each side's passage carries the score and section it was retrieved with, not 0.0 and ""
    assert {r.chunk_id for r in answer.closest} == {s.chunk_id for s in answer.conflict.statements}
    retrieved = {b.chunk.chunk_id: b for b in answer.blocks}
    for ref in answer.closest:
        assert ref.score == retrieved[ref.chunk_id].score > 0.0
        assert ref.section == retrieved[ref.chunk_id].chunk.section != ""


def test_pipeline_prefer_newest_answers_from_newer_document(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db, conflict_policy="prefer_newest")
    answer = pipeline.answer(CONFLICT)
    assert not answer.abstained
    assert answer.conflict is not None and answer.conflict.policy == "prefer_newest"
    older = min(answer.conflict.statements, key=lambda s: s.updated_at or date.min)
    assert older.chunk_id not in {b.chunk.chunk_id for b in answer.blocks}
    assert [b.n for b in answer.blocks] == list(range(1, len(answer.blocks) + 1))
    assert "250 MB" in answer.text and "100 MB" not in answer.text
    assert "newest" in answer.message
    assert_fully_cited(answer, store)


@pytest.mark.parametrize(("mode", "reason_word"), [("nonexistent", "nonexistent"), ("unrelated", "overlap")])
def test_pipeline_fabrication_rejected_then_regenerated_answer_passes(
    corpus_db: str, mode: str, reason_word: str
) -> None:
    pipeline, store, counting = make(corpus_db, fabricate=mode)
    answer = pipeline.answer(ANSWERABLE)
    assert counting.calls == 2
    assert counting.feedback[0] == ()
    assert any(reason_word in line for line in counting.feedback[1])
    assert any(reason_word in d for dropped in answer.dropped for d in dropped.detail)
    assert not answer.abstained
    assert_fully_cited(answer, store)
    assert answer.timings["regenerate"] > 0
    verdicts = store.asks[-1].verdicts
    assert any(v.startswith("draft 1 dropped") for v in verdicts)
    assert not any(v.startswith("draft 2 dropped") for v in verdicts)


def test_pipeline_every_answer_sentence_has_verified_citation(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db)
    questions = [ANSWERABLE, OFF_TOPIC, NEAR_MISS, CONFLICT, "How long is the free trial?"]
    for question in questions:
        answer = pipeline.answer(question)
        if not answer.abstained:
            assert_fully_cited(answer, store)
        else:
            assert answer.sentences == () and answer.text == ""


def test_pipeline_ask_log_records_blocks_and_verdicts(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db)
    answer = pipeline.answer(ANSWERABLE, trace_id="t-123")
    record = store.asks[-1]
    assert record.trace_id == "t-123" == answer.trace_id
    assert record.blocks == tuple((b.n, b.chunk.chunk_id) for b in answer.blocks)
    assert record.citations == answer.citations
    assert record.verdicts and record.answer_text == answer.text


def test_validate_question_empty_or_too_long_raises() -> None:
    with pytest.raises(InvalidQuestion, match="empty"):
        validate_question("  \n ", 2000)
    with pytest.raises(InvalidQuestion, match="2000"):
        validate_question("x" * 2001, 2000)
    assert validate_question("  hi  ", 10) == "hi"
    assert validate_question("what  does\tthe   Team plan cost?", 100) == "what does the Team plan cost?"


WEBHOOK = "If my webhook endpoint is down, does Lumio retry the delivery?"
OUTAGE = "How long did the SSO sign-in outage in December 2025 last?"
TEAM = "What does the Team plan cost per user on annual billing?"


@pytest.mark.parametrize(
    ("typed", "careful"),
    [
        ("if my webhook endpoint is down, does Lumio retry the delivery", WEBHOOK),  # no question mark
        ("If my webhook endpoint is down, does Lumio retry the delivery pls?", WEBHOOK),
        (OUTAGE.upper(), OUTAGE),  # all in capitals
        ("What does the  Team  plan cost per user on annual billing?", TEAM),  # runs of spaces
        (TEAM.lower(), TEAM),  # the plan named under the section "Team", typed without its capital
    ],
)
def test_a_question_typed_carelessly_gets_the_answer_of_the_question_typed_with_care(
    corpus_db: str, typed: str, careful: str
) -> None:
    pipeline, _, _ = make(corpus_db)
    expected = pipeline.answer(careful)
    assert not expected.abstained
    assert pipeline.answer(typed).text == expected.text


def test_pipeline_empty_question_raises_invalid_question(corpus_db: str) -> None:
    pipeline, _, counting = make(corpus_db)
    with pytest.raises(InvalidQuestion):
        pipeline.answer("   ")
    assert counting.calls == 0


def test_pipeline_provider_failure_raises_upstream_unavailable(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db, generator=FailingGenerator())
    with pytest.raises(UpstreamUnavailable):
        pipeline.answer(ANSWERABLE)


def test_pipeline_compression_keeps_verified_citations(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db, compress=True)
    answer = pipeline.answer(ANSWERABLE)
    assert not answer.abstained
    assert answer.timings["compress"] > 0
    before, after = answer.timings["compress_tokens_before"], answer.timings["compress_tokens_after"]
    assert 0 < after < before
    assert answer.timings["compress_saving_pct"] == round(100 * (before - after) / before, 1)
    assert_fully_cited(answer, store)


def test_pipeline_without_compression_reports_no_compression_figures(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    assert not any(k.startswith("compress_") for k in pipeline.answer(ANSWERABLE).timings)


# streaming


def test_stream_answerable_events_meta_sentences_done(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db)
    evs = events(pipeline, ANSWERABLE)
    assert isinstance(evs[0], MetaEvent)
    assert isinstance(evs[-1], DoneEvent) and evs[-1].status == "answered"
    sentences = [e for e in evs if isinstance(e, SentenceEvent)]
    assert sentences and evs[-1].emitted == len(sentences)
    assert all(isinstance(e, SentenceEvent | DroppedEvent) for e in evs[1:-1])
    for e in sentences:
        for c in e.sentence.citations:
            assert store.get_chunk(c.chunk_id).text[c.start : c.end] == c.cited_text
    assert store.asks[-1].answer_text


def test_stream_off_topic_refusal_then_done_only(corpus_db: str) -> None:
    pipeline, _, counting = make(corpus_db)
    evs = events(pipeline, OFF_TOPIC)
    assert [type(e) for e in evs] == [RefusalEvent, DoneEvent]
    assert isinstance(evs[0], RefusalEvent) and evs[0].reason == "low_retrieval_score"
    assert isinstance(evs[1], DoneEvent) and evs[1].status == "abstained"
    assert counting.calls == 0


def test_stream_conflict_refusal_then_done_only(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    evs = events(pipeline, CONFLICT)
    assert [type(e) for e in evs] == [RefusalEvent, DoneEvent]
    assert isinstance(evs[0], RefusalEvent) and evs[0].reason == "conflicting_sources"
    assert evs[0].conflict is not None


def test_stream_near_miss_meta_then_no_citations_refusal(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    evs = events(pipeline, NEAR_MISS)
    assert isinstance(evs[0], MetaEvent)
    assert isinstance(evs[-2], RefusalEvent) and evs[-2].reason == "no_citations"
    assert isinstance(evs[-1], DoneEvent) and evs[-1].status == "abstained" and evs[-1].emitted == 0
    assert not any(isinstance(e, SentenceEvent) for e in evs)


def test_stream_fabrication_dropped_then_regenerated_as_ask_does(corpus_db: str) -> None:
    pipeline, _, counting = make(corpus_db, fabricate="nonexistent")
    evs = events(pipeline, ANSWERABLE)
    dropped = [e for e in evs if isinstance(e, DroppedEvent)]
    assert dropped and "nonexistent" in " ".join(dropped[0].dropped.detail)
    assert isinstance(evs[-1], DoneEvent) and evs[-1].status == "answered"
    assert counting.calls == 2 and any("nonexistent" in line for line in counting.feedback[-1])
    streamed = [e.sentence.text for e in evs if isinstance(e, SentenceEvent)]
    assert streamed == [s.text for s in pipeline.answer(ANSWERABLE).sentences]


def test_stream_provider_failure_error_then_done_with_emitted_count(corpus_db: str) -> None:
    pipeline, store, _ = make(corpus_db, generator=FailingGenerator())
    evs = events(pipeline, ANSWERABLE)
    assert isinstance(evs[-2], ErrorEvent) and evs[-2].type == "upstream_unavailable"
    done = evs[-1]
    assert isinstance(done, DoneEvent) and done.status == "error"
    emitted = sum(isinstance(e, SentenceEvent) for e in evs)
    assert done.emitted == emitted and str(emitted) in done.detail
    assert store.asks[-1].question == ANSWERABLE


def test_stream_consumer_stops_early_closes_generator_and_logs(corpus_db: str) -> None:
    pipeline, store, counting = make(corpus_db)

    async def first_two() -> list[Event]:
        stream = pipeline.answer_stream(ANSWERABLE, trace_id="early")
        out = [await stream.__anext__(), await stream.__anext__()]
        await stream.aclose()  # type: ignore[attr-defined]
        return out

    got = asyncio.run(first_two())
    assert isinstance(got[0], MetaEvent)
    assert counting.closed
    assert store.asks[-1].trace_id == "early"


def test_format_answer_refusal_lists_closest_matches(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    text = format_answer(pipeline.answer(NEAR_MISS))
    assert text.startswith("Refused (no_citations)")
    assert "Closest matches:" in text


class MeteredCompressor:
    """A real compressor (keeps blocks unchanged) whose model usage is a known figure."""

    name = "metered"

    def compress(self, question: str, blocks: Sequence[Block]) -> Compression:
        return compression_of(blocks, blocks, usage=Usage(input_tokens=1003, output_tokens=17))


def test_pipeline_answer_usage_includes_the_compressor_model_calls(corpus_db: str) -> None:
    pipeline, _, _ = make(corpus_db)
    pipeline.compressor = MeteredCompressor()
    answer = pipeline.answer(ANSWERABLE)
    assert not answer.abstained
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (1003, 17)
