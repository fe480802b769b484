"""Evidence reach: does the passage that answers a question get to the reader at all?

For every answerable question of a labelled set, the whole request path runs twice:
- with Claude configured: a recording reader that stands where Claude would (native citations, so the
  Claude gate threshold and the Claude context budget apply) keeps the blocks it is sent and answers
  nothing, so no model is called; a question *reaches Claude* when one of its labelled chunks is among
  those blocks. A question refused before generation (line 1 or 2) reaches nothing.
- offline: the extractive reader as configured; the question's passage is *shown* when a labelled chunk
  is among the blocks the reader read or, on a refusal, among the closest passages the refusal lists.
The report gives, per set, those shares and the share of refused answerable questions whose passage
is among their closest passages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.answer.pipeline import build_pipeline
from rag.config import Settings
from rag.evals.datasets import GoldenCase, load_golden
from rag.evals.runner import DEFAULT_SET, corpus_store
from rag.types import Answer, Block, Generation, Piece, Turn, Usage


@dataclass(slots=True)
class RecordingReader:
    """A reader with native citations that records the blocks of each call and writes nothing."""

    name: str = "claude"
    native_citations: bool = True
    sent: list[tuple[Block, ...]] = field(default_factory=list)
    histories: list[tuple[Turn, ...]] = field(default_factory=list)  # the earlier turns of each call

    def generate(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        feedback: Sequence[str] = (),
        max_tokens: int | None = None,
        history: Sequence[Turn] = (),
    ) -> Generation:
        self.sent.append(tuple(blocks))
        self.histories.append(tuple(history))
        return Generation(drafts=(), text="", usage=Usage(), stop_reason="end_turn")

    async def stream(
        self, question: str, blocks: Sequence[Block], *, history: Sequence[Turn] = ()
    ) -> AsyncIterator[Piece]:
        self.sent.append(tuple(blocks))
        self.histories.append(tuple(history))
        yield Piece(usage=Usage(), stop_reason="end_turn")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReachCase:
    """One answerable question: whether its passage reached Claude, and what the offline reader did."""

    id: str
    question: str
    to_claude: bool
    claude_refusal: str  # the refusal reason judged before generation with Claude ("" when it called)
    claude_blocks: int
    offline_read: bool  # a labelled chunk was among the blocks the offline reader read
    offline_shown: bool  # ... or among the closest passages of its refusal
    offline_refused: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ReachReport:
    dataset: str
    store: str
    cases: tuple[ReachCase, ...]

    def share(self, attr: str, among: Sequence[ReachCase] | None = None) -> float | None:
        pool = self.cases if among is None else among
        return sum(bool(getattr(c, attr)) for c in pool) / len(pool) if pool else None

    def json(self) -> dict[str, Any]:
        refused = [c for c in self.cases if c.offline_refused]
        return {
            "set": self.dataset,
            "store": self.store,
            "answerable": len(self.cases),
            "reach_claude": self.share("to_claude"),
            "claude_blocks_mean": (
                sum(c.claude_blocks for c in self.cases) / len(self.cases) if self.cases else None
            ),
            "offline_read": self.share("offline_read"),
            "offline_read_or_shown": self.share("offline_shown"),
            "offline_refused": len(refused),
            "refused_with_passage_shown": self.share("offline_shown", refused),
            "missed_claude": [c.id for c in self.cases if not c.to_claude],
        }


def _labelled(case: GoldenCase, chunk_ids: Sequence[str]) -> bool:
    return any(c in case.chunks for c in chunk_ids)


def _offline(case: GoldenCase, answer: Answer) -> tuple[bool, bool]:
    read = _labelled(case, [b.chunk.chunk_id for b in answer.blocks]) and not answer.abstained
    shown = read or (answer.abstained and _labelled(case, [r.chunk_id for r in answer.closest]))
    return read, shown


def run_reach(
    settings: Settings,
    dataset: str | Path = DEFAULT_SET,
    *,
    corpus: str | Path | None = None,
    limit: int | None = None,
) -> ReachReport:
    """Evidence reach of the answerable questions of `dataset` (labelled on `corpus`; None: the bundled
    one), with Claude configured (recorded, never called) and with the offline reader."""
    cases = [c for c in load_golden(dataset, limit=limit) if c.label == "answer"]
    offline_settings = settings.model_copy(update={"anthropic_api_key": "", "mock": True})
    results: list[ReachCase] = []
    with corpus_store(settings, cases, corpus=corpus) as (store, note):
        recorder = RecordingReader()
        claude = build_pipeline(offline_settings, store=store, generator=recorder)
        offline = build_pipeline(offline_settings, store=store)
        for case in cases:
            before = len(recorder.sent)
            claude_answer = claude.answer(case.question)
            sent = recorder.sent[before:]
            blocks = [b.chunk.chunk_id for call in sent for b in call]
            offline_answer = offline.answer(case.question)
            read, shown = _offline(case, offline_answer)
            results.append(
                ReachCase(
                    id=case.id,
                    question=case.question,
                    to_claude=bool(sent) and _labelled(case, blocks),
                    claude_refusal="" if sent else claude_answer.reason,
                    claude_blocks=len(sent[0]) if sent else 0,
                    offline_read=read,
                    offline_shown=shown,
                    offline_refused=offline_answer.abstained,
                )
            )
    return ReachReport(dataset=str(dataset), store=note, cases=tuple(results))
