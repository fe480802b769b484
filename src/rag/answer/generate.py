"""Generate: the `Generator` protocol every reader implements, and the choice of reader.

The reader is what reads the numbered blocks and writes the answer: Claude with native citations
(`rag.answer.claude`) when a key is set and MOCK is off, else the offline extractive reader
(`rag.reader`). A generator returns sentences with *unverified* claims; verification happens
later, always against the original chunk text. The English tools the offline reader and the support
check consult, and the support check's options, are built from `Settings` here (`tools_for`,
`support_options`), once per pipeline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from rag.config import Settings
from rag.language.tools import Tools, open_tools
from rag.reader.offline import OfflineGenerator
from rag.support.check import CheckOptions
from rag.support.decision import active_model
from rag.types import Block, Generation, Piece, Turn


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
        history: Sequence[Turn] = (),
    ) -> Generation:
        """One complete answer. `feedback` holds specific reasons from a failed first draft; `max_tokens`
        overrides the output budget (a model's; the retry of a cut reply); `history`: the earlier turns
        of a conversation (context for what `question` refers to, never evidence). The pipeline passes
        `max_tokens` and `history` only when it has them, so a generator without them still works for
        single questions."""
        ...

    def stream(
        self, question: str, blocks: Sequence[Block], *, history: Sequence[Turn] = ()
    ) -> AsyncIterator[Piece]:
        """The answer as pieces, in order, as they are produced (`history` as for `generate`)."""
        ...


def tools_for(settings: Settings) -> Tools:
    """The English tools the settings name (`RAG_WORDNET_DIR`, `RAG_PARSER`, `RAG_ENCODER`,
    `RAG_ENCODER_DIR`); opening them reads no data."""
    return open_tools(
        wordnet_dir=settings.wordnet_dir,
        parser=settings.parser,
        encoder=settings.encoder,
        encoder_dir=settings.encoder_dir,
    )


def support_options(settings: Settings, tools: Tools) -> CheckOptions:
    """The support check with `tools`, the decision model `RAG_SUPPORT_MODEL` leaves in use and the
    alignment by meaning `RAG_SUPPORT_WORD_SIMILARITY` asks for."""
    return CheckOptions(
        tools=tools,
        model=active_model(settings.support_model),
        min_word_similarity=settings.support_word_similarity,
    )


def make_generator(settings: Settings, tools: Tools | None = None) -> Generator:
    """The reader the settings ask for: Claude when a key is set and MOCK is off, offline otherwise
    (with `tools`; None: those the settings name)."""
    if settings.use_claude:
        from rag.answer.claude import ClaudeGenerator

        return ClaudeGenerator(settings)
    return OfflineGenerator(
        settings.fabricate,
        meaning=settings.offline_meaning,
        tools=tools if tools is not None else tools_for(settings),
    )
