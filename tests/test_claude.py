"""ClaudeGenerator against the fake Messages API, through the real `anthropic` SDK (create and stream)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import date
from typing import Any

import anthropic
import pytest
from fake_anthropic import FakeAnthropic, Reply, cite, cited, failure, reply, text

from rag.answer.claude import ClaudeGenerator
from rag.answer.parse import SentenceBuffer
from rag.answer.prompt import REFUSAL_TEXT, SYSTEM_PROMPT
from rag.answer.verify import verify
from rag.config import Settings, load_settings
from rag.errors import ConfigError, UpstreamRejected, UpstreamUnavailable
from rag.types import Block, Chunk, Draft, Piece, Usage

UPLOADS = (
    "Workspace owners can upload files of up to 250 MB each. "
    "Larger files are rejected with a clear error message. "
    "Uploads count against the workspace storage quota."
)
TRASH = (
    "Deleted projects stay in the trash for 30 days. "
    "After 30 days they are removed permanently and cannot be restored."
)
BILLING = "Invoices are issued on the first business day of each month. Payment is due within 14 days."


def _block(n: int, doc: str, text_: str) -> Block:
    chunk = Chunk(
        chunk_id=f"{doc}#c01",
        doc_id=doc,
        title=doc.title(),
        section="Limits",
        text=text_,
        updated_at=date(2026, 5, 12),
        url=f"https://example.test/{doc}",
    )
    return Block(n=n, chunk=chunk, score=0.8, sent_text=text_)


BLOCKS = (_block(1, "admin-guide", UPLOADS), _block(2, "user-manual", TRASH), _block(3, "billing", BILLING))

CITED_ANSWER = reply(
    text("According to the admin guide, "),
    cited(
        "files can be up to 250 MB each", cite(0, "Workspace owners can upload files of up to 250 MB each. ")
    ),
    text(" and "),
    cited("larger files are rejected", cite(0, "Larger files are rejected with a clear error message. ")),
    text(". "),
    cited(
        "Deleted projects stay in the trash for 30 days",
        cite(1, "Deleted projects stay in the trash for 30 days. "),
    ),
    text("."),
    thinking=True,
)


def _settings(fake: FakeAnthropic, **overrides: Any) -> Settings:
    return load_settings(anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, **overrides)


def _generator(fake: FakeAnthropic, **overrides: Any) -> ClaudeGenerator:
    return ClaudeGenerator(_settings(fake, **overrides))


def _collect(
    gen: ClaudeGenerator, question: str = "How big can uploads be?", blocks: Sequence[Block] = BLOCKS
) -> list[Piece]:
    async def run() -> list[Piece]:
        return [p async for p in gen.stream(question, blocks)]

    return asyncio.run(run())


def _drafts(pieces: Sequence[Piece]) -> tuple[Draft, ...]:
    buffer = SentenceBuffer(native=True)
    out: list[Draft] = []
    for piece in pieces:
        out.extend(buffer.feed(piece))
    out.extend(buffer.flush())
    return tuple(out)


def _claims(drafts: Sequence[Draft]) -> list[list[tuple[int, str | None]]]:
    return [[(c.n, c.cited_text) for c in d.claims] for d in drafts]


EXPECTED_CLAIMS = [
    [
        (1, "Workspace owners can upload files of up to 250 MB each. "),
        (1, "Larger files are rejected with a clear error message. "),
    ],
    [(2, "Deleted projects stay in the trash for 30 days. ")],
]


# -- the fake itself --------------------------------------------------------------------


def test_fake_anthropic_replies_parse_under_strict_sdk_validation(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER, CITED_ANSWER)
    gen = _generator(fake_anthropic)
    strict = anthropic.Anthropic(
        api_key="test", base_url=fake_anthropic.base_url, _strict_response_validation=True
    )
    message = strict.messages.create(**gen.request("Q?", BLOCKS))
    assert [b.type for b in message.content][:2] == ["thinking", "text"]
    assert message.content[2].citations[0].start_char_index == 0  # type: ignore[union-attr]

    async def run() -> str:
        client = anthropic.AsyncAnthropic(
            api_key="test", base_url=fake_anthropic.base_url, _strict_response_validation=True
        )
        async with client.messages.stream(**gen.request("Q?", BLOCKS)) as stream:
            final = await stream.get_final_message()
        return "".join(b.text for b in final.content if b.type == "text")

    assert asyncio.run(run()) == "".join(b.text for b in message.content if b.type == "text")


def test_fake_anthropic_flags_request_breaking_the_contract(fake_anthropic: FakeAnthropic) -> None:
    gen = _generator(fake_anthropic)
    request = gen.request("Q?", BLOCKS)
    request["messages"][0]["content"][0]["citations"] = {"enabled": False}
    fake_anthropic.enqueue(CITED_ANSWER)
    anthropic.Anthropic(api_key="test", base_url=fake_anthropic.base_url).messages.create(**request)
    assert fake_anthropic.violations == ["request 1: document 0 does not enable citations"]
    fake_anthropic.violations.clear()


# -- messages.create ----------------------------------------------------------------------


def test_generate_sends_documents_system_prompt_and_settings_model(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER)
    _generator(
        fake_anthropic, generation_model="claude-opus-5-5", max_tokens=300, thinking_tokens=1000
    ).generate("Q?", BLOCKS)
    (request,) = fake_anthropic.message_requests()
    assert request.body["model"] == "claude-opus-5-5"
    assert request.body["max_tokens"] == 1300  # the answer's 300 and the thinking reserve
    assert request.body["system"] == SYSTEM_PROMPT
    assert [d["source"]["data"] for d in request.documents()] == [b.sent_text for b in BLOCKS]
    assert request.headers["authorization"] == "Bearer test"
    assert request.stream  # read whole from a stream: the read timeout bounds silence, not length


def test_generate_cited_answer_over_several_text_blocks_gives_sentences_with_claims(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(CITED_ANSWER)
    generation = _generator(fake_anthropic).generate("How big can uploads be?", BLOCKS)
    assert [d.text for d in generation.drafts] == [
        "According to the admin guide, files can be up to 250 MB each and larger files are rejected.",
        "Deleted projects stay in the trash for 30 days.",
    ]
    assert _claims(generation.drafts) == EXPECTED_CLAIMS
    assert generation.text.startswith("According to the admin guide, files")
    assert not generation.refused
    verdicts = verify(generation.drafts, BLOCKS, min_overlap=0.42)
    assert all(v.ok for v in verdicts)
    assert verdicts[0].citations[0].chunk_id == "admin-guide#c01"
    first = verdicts[0].citations[0]
    assert UPLOADS[first.start : first.end] == first.cited_text


def test_generate_real_span_not_supporting_sentence_is_dropped_by_verify(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(
        reply(
            cited(
                "Refunds are paid to the original card within five working days",
                cite(2, "Invoices are issued on the first business day of each month. "),
            ),
            text("."),
        )
    )
    generation = _generator(fake_anthropic).generate("How are refunds paid?", BLOCKS)
    assert _claims(generation.drafts) == [
        [(3, "Invoices are issued on the first business day of each month. ")]
    ]
    (verdict,) = verify(generation.drafts, BLOCKS, min_overlap=0.42)
    assert not verdict.ok
    assert any("overlap" in issue for issue in verdict.issues)


def test_generate_document_index_beyond_issued_documents_is_rejected(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        reply(
            cited(
                "Uploads are limited to 250 MB each",
                cite(7, "Workspace owners can upload files of up to 250 MB each."),
            ),
            text("."),
        )
    )
    generation = _generator(fake_anthropic).generate("How big can uploads be?", BLOCKS)
    assert [c.n for c in generation.drafts[0].claims] == [8]
    (verdict,) = verify(generation.drafts, BLOCKS, min_overlap=0.42)
    assert not verdict.ok
    assert any("[8]" in issue for issue in verdict.issues)


def test_generate_cited_text_not_in_original_chunk_is_rejected(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        reply(
            cited("Uploads can be up to 250 MB each", cite(0, "Uploads can be up to 2 GB each.")),
            text("."),
        )
    )
    generation = _generator(fake_anthropic).generate("How big can uploads be?", BLOCKS)
    (verdict,) = verify(generation.drafts, BLOCKS, min_overlap=0.42)
    assert not verdict.ok and verdict.issues


def test_generate_answer_without_citations_gives_claimless_drafts(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(reply(text("Uploads are probably limited to about 1 GB. Ask your admin.")))
    generation = _generator(fake_anthropic).generate("How big can uploads be?", BLOCKS)
    assert [d.claims for d in generation.drafts] == [(), ()]
    assert not any(v.ok for v in verify(generation.drafts, BLOCKS, min_overlap=0.42))
    assert not generation.refused


def test_generate_model_refusal_wording_is_an_abstention(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(reply(text(REFUSAL_TEXT), thinking=True))
    generation = _generator(fake_anthropic).generate("Who founded the company?", BLOCKS)
    assert generation.refused
    assert generation.drafts == ()
    assert generation.text == REFUSAL_TEXT


def test_generate_529_twice_then_success_answers_and_counts_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), CITED_ANSWER)
    generation = _generator(fake_anthropic, model_max_retries=2).generate("Q?", BLOCKS)
    assert len(generation.drafts) == 2
    assert generation.usage.retries == 2
    assert [r.retry_count for r in fake_anthropic.message_requests()] == [0, 1, 2]


def test_generate_529_until_retries_spent_raises_upstream_unavailable(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(529, retry_after_ms=5, retry_after="7"), failure(529), failure(529))
    with pytest.raises(UpstreamUnavailable) as info:
        _generator(fake_anthropic, model_max_retries=2).generate("Q?", BLOCKS)
    assert "overloaded_error" in str(info.value)
    assert info.value.retry_after == 1.0  # the last response said 5 ms; clients are told at least 1 s
    assert len(fake_anthropic.message_requests()) == 3


def test_generate_retry_after_seconds_passed_to_upstream_error(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(429, retry_after_ms=None, retry_after="7"))
    with pytest.raises(UpstreamUnavailable) as info:
        _generator(fake_anthropic, model_max_retries=0).generate("Q?", BLOCKS)
    assert info.value.retry_after == 7.0


def test_generate_retry_after_longer_than_our_wait_is_not_retried_but_reported(
    fake_anthropic: FakeAnthropic,
) -> None:
    # retrying sooner than the provider asked would be refused again: the caller gets its wait at once
    fake_anthropic.enqueue(failure(529, retry_after_ms=None, retry_after="3600"))
    started = time.perf_counter()
    with pytest.raises(UpstreamUnavailable) as info:
        _generator(fake_anthropic, model_max_retries=2, model_retry_wait=0.01).generate("Q?", BLOCKS)
    assert time.perf_counter() - started < 30
    assert info.value.retry_after == 3600.0
    assert len(fake_anthropic.message_requests()) == 1


def test_generate_retry_after_within_our_wait_is_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(529, retry_after_ms=None, retry_after="1"), CITED_ANSWER)
    generation = _generator(fake_anthropic, model_max_retries=1, model_retry_wait=5).generate("Q?", BLOCKS)
    assert generation.usage.retries == 1


def test_generate_rejected_key_raises_upstream_auth_failed(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(401, retry_after_ms=None))
    with pytest.raises(UpstreamRejected, match="ANTHROPIC_API_KEY was rejected") as caught:
        _generator(fake_anthropic).generate("Q?", BLOCKS)
    assert caught.value.type == "upstream_auth_failed" and caught.value.status == 502


def test_generator_without_key_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        ClaudeGenerator(load_settings(anthropic_api_key="", mock=False))


def test_generate_unreachable_server_raises_upstream_unavailable() -> None:
    settings = load_settings(
        anthropic_api_key="test", anthropic_base_url="http://127.0.0.1:9", mock=False, model_max_retries=0
    )
    with pytest.raises(UpstreamUnavailable, match="connection"):
        ClaudeGenerator(settings).generate("Q?", BLOCKS)


def test_generate_caches_only_a_repeat_and_reads_it_the_time_after(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER, CITED_ANSWER, CITED_ANSWER)
    gen = _generator(fake_anthropic)
    once, repeat, again = (gen.generate("Q?", BLOCKS).usage for _ in range(3))
    requests = fake_anthropic.message_requests()
    assert not any("cache_control" in d for d in requests[0].documents())  # a one-off writes nothing
    assert once.cache_creation_input_tokens == 0 and once.cache_read_input_tokens == 0
    assert repeat.cache_creation_input_tokens > 0  # the same documents again: worth a write
    assert again.cache_read_input_tokens == repeat.cache_creation_input_tokens
    assert once.input_tokens > 0 and once.output_tokens > 0


def test_cache_policy_forgets_documents_sent_longer_ago_than_the_cache_lives() -> None:
    from rag.answer.claude import CACHE_REPEAT_WINDOW, CachePolicy

    now = [0.0]
    policy = CachePolicy(clock=lambda: now[0])
    assert not policy.wants("m", BLOCKS)
    now[0] = CACHE_REPEAT_WINDOW - 1
    assert policy.wants("m", BLOCKS)
    now[0] += CACHE_REPEAT_WINDOW + 1
    assert not policy.wants("m", BLOCKS)
    assert not policy.wants("other-model", BLOCKS)


def test_generate_check_probes_key_with_count_tokens(fake_anthropic: FakeAnthropic) -> None:
    _generator(fake_anthropic).check()
    assert [r.path for r in fake_anthropic.requests] == ["/v1/messages/count_tokens"]


# -- messages.stream ----------------------------------------------------------------------


def test_stream_cited_answer_gives_same_drafts_as_generate(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER, CITED_ANSWER)
    gen = _generator(fake_anthropic)
    pieces = _collect(gen)
    assert _drafts(pieces) == gen.generate("How big can uploads be?", BLOCKS).drafts
    assert _claims(_drafts(pieces)) == EXPECTED_CLAIMS
    assert fake_anthropic.message_requests()[0].stream
    assert fake_anthropic.message_requests()[0].headers.get("x-stainless-helper-method") == "stream"


def test_stream_claims_precede_their_block_text_and_usage_comes_last(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER)
    pieces = _collect(_generator(fake_anthropic))
    first_text = {}
    for i, p in enumerate(pieces):
        if p.text:
            first_text.setdefault(p.index, i)
    for i, p in enumerate(pieces):
        if p.claims:
            assert i < first_text[p.index]
    assert pieces[-1].usage is not None and pieces[-1].text == "" and not pieces[-1].claims
    assert all(p.usage is None for p in pieces[:-1])
    assert "".join(p.text for p in pieces) == "".join(part.text for part in CITED_ANSWER.parts)


def test_stream_sentence_ready_before_the_message_ends(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER)

    async def run() -> tuple[int, int]:
        buffer = SentenceBuffer(native=True)
        seen = first_draft_at = 0
        async for piece in _generator(fake_anthropic).stream("Q?", BLOCKS):
            seen += 1
            if buffer.feed(piece) and not first_draft_at:
                first_draft_at = seen
        return first_draft_at, seen

    first_draft_at, total = asyncio.run(run())
    assert 0 < first_draft_at < total - 5


def test_stream_text_before_citations_is_held_until_the_block_has_them(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply(parts=CITED_ANSWER.parts, citations_last=True), CITED_ANSWER)
    gen = _generator(fake_anthropic)
    late, early = _collect(gen), _collect(gen)
    for pieces in (late, early):
        first_text: dict[int, int] = {}
        for i, p in enumerate(pieces):
            if p.text:
                first_text.setdefault(p.index, i)
        assert all(i < first_text[p.index] for i, p in enumerate(pieces) if p.claims)
    assert _drafts(late) == _drafts(early)
    assert _claims(_drafts(late)) == EXPECTED_CLAIMS


def test_stream_model_refusal_text_is_one_draft_recognised_as_refusal(fake_anthropic: FakeAnthropic) -> None:
    from rag.answer.prompt import is_refusal

    fake_anthropic.enqueue(reply(text(REFUSAL_TEXT)))
    drafts = _drafts(_collect(_generator(fake_anthropic)))
    assert len(drafts) == 1 and is_refusal(drafts[0].text)


def test_stream_529_twice_then_success_counts_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), CITED_ANSWER)
    pieces = _collect(_generator(fake_anthropic, model_max_retries=2))
    usage = pieces[-1].usage
    assert usage is not None and usage.retries == 2
    assert _claims(_drafts(pieces)) == EXPECTED_CLAIMS


def test_stream_529_until_retries_spent_raises_upstream_unavailable(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(failure(529), failure(529), failure(529))
    with pytest.raises(UpstreamUnavailable, match="overloaded"):
        _collect(_generator(fake_anthropic, model_max_retries=2))


def _until_error(gen: ClaudeGenerator) -> tuple[list[Piece], BaseException | None]:
    pieces: list[Piece] = []

    async def run() -> None:
        async for piece in gen.stream("Q?", BLOCKS):
            pieces.append(piece)

    try:
        asyncio.run(run())
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return pieces, exc
    return pieces, None


def test_stream_cut_after_two_sentences_keeps_earlier_pieces_and_ends_incomplete(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(
        Reply(parts=CITED_ANSWER.parts + (text(" More text that never ends"),), cut_after=7)
    )
    pieces, error = _until_error(_generator(fake_anthropic))
    assert error is None  # what came is judged; the answer says it was cut
    assert pieces[-1].stop_reason == "incomplete"
    assert _claims(_drafts(pieces)) == EXPECTED_CLAIMS
    assert len(fake_anthropic.message_requests()) == 1  # content had come: no restart


def test_stream_sse_error_event_mid_answer_ends_incomplete(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply(parts=CITED_ANSWER.parts, error_after=5))
    pieces, error = _until_error(_generator(fake_anthropic))
    assert error is None
    assert pieces[-1].stop_reason == "incomplete"
    assert [d.text for d in _drafts(pieces)][0].startswith("According to the admin guide")


def test_stream_sse_error_before_any_content_is_restarted(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply(parts=CITED_ANSWER.parts, error_after=0), CITED_ANSWER)
    pieces, error = _until_error(_generator(fake_anthropic))
    assert error is None
    assert pieces[-1].stop_reason == "end_turn"
    assert _claims(_drafts(pieces)) == EXPECTED_CLAIMS
    usage = pieces[-1].usage
    assert usage is not None and usage.calls == 2 and usage.retries == 1  # both attempts were answered


def test_stream_error_before_content_raises_once_restarts_are_spent(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply(parts=CITED_ANSWER.parts, error_after=0, sticky=True))
    pieces, error = _until_error(_generator(fake_anthropic, model_max_retries=1))
    assert isinstance(error, UpstreamUnavailable)
    assert "overloaded_error" in str(error) and "mid-stream" in str(error)
    assert len(fake_anthropic.message_requests()) == 2
    assert not any(p.text for p in pieces)


def test_stream_ending_without_message_stop_ends_incomplete_with_its_usage(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(Reply(parts=CITED_ANSWER.parts, cut_after=99))
    pieces, error = _until_error(_generator(fake_anthropic))
    assert error is None
    assert pieces and all(p.usage is None for p in pieces[:-1])
    last = pieces[-1].usage  # what the stream used before it broke is still reported
    assert pieces[-1].stop_reason == "incomplete"
    assert last is not None and last.calls == 1 and last.input_tokens > 0


def test_stream_closed_early_closes_the_http_stream(fake_anthropic: FakeAnthropic) -> None:
    long_answer = reply(
        *(cited(f"Sentence {i} about uploads. ", cite(0, UPLOADS)) for i in range(40)), token_delay=0.01
    )
    fake_anthropic.enqueue(long_answer)

    async def run() -> None:
        stream = _generator(fake_anthropic).stream("Q?", BLOCKS)
        async for piece in stream:
            if piece.text:
                break
        await stream.aclose()  # type: ignore[attr-defined]

    asyncio.run(run())
    deadline = time.monotonic() + 5
    while not fake_anthropic.disconnects and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_anthropic.disconnects == 1


def test_stream_usage_reports_cache_tokens(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(CITED_ANSWER, CITED_ANSWER, CITED_ANSWER)
    gen = _generator(fake_anthropic)
    once, repeat, again = (_collect(gen)[-1].usage for _ in range(3))
    assert isinstance(once, Usage) and isinstance(repeat, Usage) and isinstance(again, Usage)
    assert once.cache_creation_input_tokens == 0
    assert again.cache_read_input_tokens == repeat.cache_creation_input_tokens > 0
    assert once.output_tokens > 1  # the cumulative message_delta count, not message_start's 1


def test_serve_with_rejected_key_exits_with_clear_message_before_serving(
    fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from fake_anthropic import REJECTED_KEY

    from rag.cli import main

    monkeypatch.delenv("MOCK", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", REJECTED_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    result = CliRunner().invoke(main, ["serve", "--port", "1"])
    assert result.exit_code == 1
    assert "ANTHROPIC_API_KEY was rejected" in result.output
    assert "Traceback" not in result.output
    assert "web page" not in result.output


def test_generate_repeated_sentence_is_highlighted_where_the_api_says(fake_anthropic: FakeAnthropic) -> None:
    repeated = "Exports run every night."
    body = f"{repeated} Backups are kept for a week. {repeated} Restores take an hour."
    second = body.rindex(repeated)
    blocks = (_block(1, "ops-guide", body),)
    fake_anthropic.enqueue(
        reply(cited("Exports run every night", cite(0, repeated, second, second + len(repeated))), text("."))
    )
    generation = _generator(fake_anthropic).generate("When do exports run?", blocks)
    claims = [c for piece in generation.pieces for c in piece.claims]
    assert [(c.start, c.end) for c in claims] == [(second, second + len(repeated))]
    (verdict,) = verify(generation.drafts, blocks, min_overlap=0.42)
    assert verdict.ok
    assert [(c.start, c.end) for c in verdict.citations] == [(second, second + len(repeated))]
