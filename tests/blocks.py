"""Blocks for the support-check suites: one cited chunk of a small lending policy, as the native
contract sends it (the chunk is the whole block)."""

from __future__ import annotations

from datetime import date

from rag.types import Block, Chunk


def lending_block(text: str) -> Block:
    """Block 1 holding `text` as the chunk `lending#c01` of "Library lending rules"."""
    chunk = Chunk(
        chunk_id="lending#c01",
        doc_id="lending",
        title="Library lending rules",
        section="",
        text=text,
        updated_at=date(2026, 2, 3),
        url="/chunks/lending#c01",
    )
    return Block(n=1, chunk=chunk, score=0.9, sent_text=text)
