"""Compression: shrink what each block sends to the model, with a verbatim guarantee.

Only `Block.sent_text` changes; `Block.chunk` keeps the original, which verification
always reads. Any compressed sentence that is not verbatim in the original makes the
block revert to the original text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from rag.answer.assemble import context_tokens
from rag.language.text import sentence_spans, term_set
from rag.types import Block, Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Compression:
    """Compressed blocks and the estimated context tokens before and after."""

    blocks: tuple[Block, ...]
    tokens_before: int
    tokens_after: int
    usage: Usage = field(default_factory=Usage)

    @property
    def saving_pct(self) -> float:
        """Share of tokens saved, in percent (0.0 when nothing was sent)."""
        if self.tokens_before <= 0:
            return 0.0
        return round(100.0 * (self.tokens_before - self.tokens_after) / self.tokens_before, 1)

    def report(self) -> str:
        return (
            f"{self.tokens_before} tokens before -> {self.tokens_after} after, saving {self.saving_pct:.0f}%"
        )


class Compressor(Protocol):
    name: str

    def compress(self, question: str, blocks: Sequence[Block]) -> Compression:
        """Blocks with the same numbers and chunks, `sent_text` possibly shortened."""
        ...


def keep_verbatim(original: str, compressed: str) -> str:
    """`compressed` when every one of its sentences occurs verbatim in `original`, else `original`."""
    if not compressed.strip():
        return original
    for start, end in sentence_spans(compressed):
        if compressed[start:end] not in original:
            return original
    return compressed


def compression_of(
    before: Sequence[Block], after: Sequence[Block], *, usage: Usage | None = None
) -> Compression:
    """Package compressed blocks with their before/after token estimates and the model's usage."""
    return Compression(
        blocks=tuple(after),
        tokens_before=context_tokens(before),
        tokens_after=context_tokens(after),
        usage=usage or Usage(),
    )


class ExtractiveCompressor:
    """Keeps the sentences of each block that share a content term with the question.

    A block always keeps at least its best sentence (most shared terms, earliest on
    ties), so no block is emptied. Sentences keep their original order and spelling.
    """

    name = "extractive"

    def compress(self, question: str, blocks: Sequence[Block]) -> Compression:
        wanted = term_set(question)
        out = []
        for block in blocks:
            text = block.sent_text
            spans = sentence_spans(text)
            if not spans:
                out.append(block)
                continue
            shared = [len(term_set(text[s:e]) & wanted) for s, e in spans]
            keep = [i for i, k in enumerate(shared) if k > 0]
            if not keep:
                keep = [max(range(len(spans)), key=lambda i: (shared[i], -i))]
            compressed = " ".join(text[spans[i][0] : spans[i][1]] for i in keep)
            out.append(replace(block, sent_text=keep_verbatim(block.chunk.text, compressed)))
        return compression_of(blocks, out)
