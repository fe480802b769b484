"""Native citations through the real `anthropic` SDK and the fake Messages API: what the parser and
the verifier make of Claude's stream (early sentences, typed markers)."""

from __future__ import annotations

import asyncio
from datetime import date

from fake_anthropic import FakeAnthropic, cite, cited, reply, text

from rag.answer.claude import ClaudeGenerator
from rag.answer.parse import SentenceBuffer
from rag.answer.verify import verify
from rag.config import load_settings
from rag.types import Block, Chunk, Piece

TRASH = (
    "Deleted projects stay in the trash for 30 days. Owners can restore them from the trash. "
    "After 30 days they are removed permanently."
)
BLOCKS = (
    Block(
        n=1,
        chunk=Chunk(
            chunk_id="user-manual#c04",
            doc_id="user-manual",
            title="Lumio User Manual",
            section="Trash",
            text=TRASH,
            updated_at=date(2026, 3, 18),
        ),
        score=0.8,
        sent_text=TRASH,
    ),
)


def _pieces(fake: FakeAnthropic) -> list[Piece]:
    generator = ClaudeGenerator(
        load_settings(anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False)
    )

    async def run() -> list[Piece]:
        return [piece async for piece in generator.stream("How long do deleted projects stay?", BLOCKS)]

    return asyncio.run(run())


def test_first_sentence_of_a_cited_block_is_released_before_the_block_closes(
    fake_anthropic: FakeAnthropic,
) -> None:
    span = "Deleted projects stay in the trash for 30 days. Owners can restore them from the trash. "
    fake_anthropic.enqueue(
        reply(
            cited("Deleted projects stay in the trash for 30 days. Owners can restore them.", cite(0, span))
        )
    )
    pieces = _pieces(fake_anthropic)
    block_closed = next(i for i, p in enumerate(pieces) if p.index == 1 and not p.text and not p.claims)
    buffer = SentenceBuffer(native=True)
    released_at = next(i for i, p in enumerate(pieces) if buffer.feed(p))
    assert released_at < block_closed


def test_markers_typed_by_the_model_give_no_citation_and_the_sentence_is_withheld(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(
        reply(
            text("Deleted projects stay in the trash for 30 days [1]. "),
            cited(
                "Owners can restore them from the trash", cite(0, "Owners can restore them from the trash. ")
            ),
            text("."),
        )
    )
    buffer = SentenceBuffer(native=True)
    drafts = [d for p in _pieces(fake_anthropic) for d in buffer.feed(p)] + buffer.flush()
    assert [d.text for d in drafts] == [
        "Deleted projects stay in the trash for 30 days.",
        "Owners can restore them from the trash.",
    ]
    verdicts = verify(drafts, BLOCKS, min_overlap=0.42)
    assert [v.ok for v in verdicts] == [False, True]
    assert verdicts[0].issues == ("no citation",)
