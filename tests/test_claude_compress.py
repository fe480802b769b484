"""ClaudeCompressor against the fake Messages API: verbatim guarantee, reverts, concurrency."""

from __future__ import annotations

import asyncio
import re
from datetime import date
from typing import Any

from fake_anthropic import FakeAnthropic, Reply, failure, reply, text

from rag.answer.claude import ClaudeCompressor
from rag.answer.prompt import COMPRESS_SYSTEM_PROMPT
from rag.config import load_settings
from rag.types import Block, Chunk

TEXTS = {
    "uploads": "Uploads are limited to 250 MB per file. The web app shows a progress bar. Colours vary.",
    "trash": "The trash keeps deleted projects for 30 days. Admins can empty it early. The icon is a bin.",
    "billing": "Invoices arrive monthly. Uploads over 250 MB need the enterprise plan. Support is fast.",
}
KEEP = {
    "uploads": "Uploads are limited to 250 MB per file.",
    "trash": "The trash keeps deleted projects for 30 days.",
    "billing": "Uploads over 250 MB need the enterprise plan.",
}
_PASSAGE_RE = re.compile(r"<passage>\n(.*)\n</passage>", re.S)


def _blocks() -> tuple[Block, ...]:
    out = []
    for n, (name, body) in enumerate(TEXTS.items(), start=1):
        chunk = Chunk(
            chunk_id=f"{name}#c01",
            doc_id=name,
            title=name,
            section="",
            text=body,
            updated_at=date(2026, 1, 1),
        )
        out.append(Block(n=n, chunk=chunk, score=0.5, sent_text=body))
    return tuple(out)


def _passage(body: dict[str, Any]) -> str:
    match = _PASSAGE_RE.search(body["messages"][0]["content"])
    assert match is not None
    return match.group(1)


def _name(body: dict[str, Any]) -> str:
    passage = _passage(body)
    return next(name for name, value in TEXTS.items() if value == passage)


def _compressor(fake: FakeAnthropic, **overrides: Any) -> ClaudeCompressor:
    settings = load_settings(
        anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, **overrides
    )
    return ClaudeCompressor(settings)


def test_compress_keeps_relevant_verbatim_sentences_per_block(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.responder = lambda body: reply(text(KEEP[_name(body)]))
    blocks = _blocks()
    result = _compressor(fake_anthropic).compress("How big can uploads be?", blocks)
    assert [b.sent_text for b in result.blocks] == list(KEEP.values())
    assert [b.chunk for b in result.blocks] == [b.chunk for b in blocks]
    assert [b.n for b in result.blocks] == [1, 2, 3]
    assert result.tokens_after < result.tokens_before
    assert result.saving_pct > 0
    requests = fake_anthropic.message_requests()
    assert {r.body["model"] for r in requests} == {"claude-haiku-5-5"}
    assert all(r.body["system"] == COMPRESS_SYSTEM_PROMPT for r in requests)


def test_compress_reply_not_verbatim_reverts_that_block(fake_anthropic: FakeAnthropic) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        name = _name(body)
        return reply(text("Uploads may be as large as 250 MB." if name == "uploads" else KEEP[name]))

    fake_anthropic.responder = respond
    result = _compressor(fake_anthropic).compress("How big can uploads be?", _blocks())
    assert [b.sent_text for b in result.blocks] == [TEXTS["uploads"], KEEP["trash"], KEEP["billing"]]


def test_compress_failed_call_reverts_that_block_only(fake_anthropic: FakeAnthropic) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        name = _name(body)
        return failure(500, retry_after_ms=None) if name == "trash" else reply(text(KEEP[name]))

    fake_anthropic.responder = respond
    result = _compressor(fake_anthropic, model_max_retries=0).compress("Q?", _blocks())
    assert [b.sent_text for b in result.blocks] == [KEEP["uploads"], TEXTS["trash"], KEEP["billing"]]


def test_compress_none_reply_keeps_first_sentence(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.responder = lambda body: reply(text("NONE"))
    result = _compressor(fake_anthropic).compress("Unrelated?", _blocks())
    assert [b.sent_text for b in result.blocks] == [
        "Uploads are limited to 250 MB per file.",
        "The trash keeps deleted projects for 30 days.",
        "Invoices arrive monthly.",
    ]


def test_compress_multiline_reply_joins_kept_sentences(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.responder = lambda body: reply(
        text("The trash keeps deleted projects for 30 days.\nAdmins can empty it early.\n")
        if _name(body) == "trash"
        else text(KEEP[_name(body)])
    )
    result = _compressor(fake_anthropic).compress("Trash?", _blocks())
    assert (
        result.blocks[1].sent_text
        == "The trash keeps deleted projects for 30 days. Admins can empty it early."
    )


def test_compress_blocks_run_concurrently(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.responder = lambda body: Reply(parts=(text(KEEP[_name(body)]),), latency=0.3)
    _compressor(fake_anthropic).compress("Q?", _blocks())
    assert fake_anthropic.max_in_flight == 3


def test_compress_inside_running_event_loop_works(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.responder = lambda body: reply(text(KEEP[_name(body)]))

    async def run() -> list[str]:
        return [b.sent_text for b in _compressor(fake_anthropic).compress("Q?", _blocks()).blocks]

    assert asyncio.run(run()) == list(KEEP.values())


def test_compress_no_blocks_makes_no_call(fake_anthropic: FakeAnthropic) -> None:
    result = _compressor(fake_anthropic).compress("Q?", ())
    assert result.blocks == () and fake_anthropic.requests == []
