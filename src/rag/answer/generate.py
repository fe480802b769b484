"""Generate: the `Generator` protocol every reader implements, and the choice of reader.

The reader is what reads the numbered blocks and writes the answer: Claude with native citations
(`rag.answer.claude`) when a key is set and MOCK is off, else the offline extractive reader
(`rag.reader`). A generator returns sentences with *unverified* claims; verification happens
later, always against the original chunk text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from rag.config import Settings
from rag.reader.offline import OfflineGenerator
from rag.types import Block, Generation, Piece


class Generator(Protocol):
    """Writes an answer from numbered blocks. `native_citations`: its citations are structured
    claims per content block (the only citations then); otherwise `[n]` markers in its text."""

    name: str
    native_citations: bool

    def generate(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        feedback: Sequence[str] = (),
        max_tokens: int | None = None,
    ) -> Generation:
        """One complete answer. `feedback` holds specific reasons from a failed first draft; `max_tokens`
        overrides the output budget (a model's; the retry of a cut reply)."""
        ...

    def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        """The answer as pieces, in order, as they are produced."""
        ...


def make_generator(settings: Settings) -> Generator:
    """The reader the settings ask for: Claude when a key is set and MOCK is off, offline otherwise."""
    if settings.use_claude:
        from rag.answer.claude import ClaudeGenerator

        return ClaudeGenerator(settings)
    return OfflineGenerator(settings.fabricate, meaning=settings.offline_meaning)
