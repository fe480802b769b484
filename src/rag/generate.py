"""Generators: the `Generator` protocol and the offline extractive generator.

A generator receives the question and the numbered blocks and returns sentences
with *unverified* claims; verification happens later, always against the original
chunk text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from rag.types import Block, Generation, Piece


class Generator(Protocol):
    name: str

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        """One complete answer. `feedback` holds specific reasons from a failed first draft."""
        ...

    def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        """The answer as pieces, in order, as they are produced."""
        ...
