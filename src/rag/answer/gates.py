"""Refusal lines: the retrieval gate (line 1), the grounding gate (line 3), and the wording of all three.

Line 2 (conflicting sources) is judged by `rag.answer.conflicts`; its wording lives here so the
three messages the user can read are defined in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.types import ChunkRef, Conflict, RefusalReason, Scored, Sentence, Statement

LOW_RETRIEVAL_MESSAGE = (
    "I couldn't find this in the knowledge base. If it should exist, it may not be indexed yet."
)
NO_CITATIONS_MESSAGE = "Relevant documents were found, but none of them directly answers this question."
CONFLICT_INTRO = "The sources disagree"
CONFLICT_OUTRO = "Check which one applies before relying on either."

MESSAGES: dict[RefusalReason, str] = {
    "low_retrieval_score": LOW_RETRIEVAL_MESSAGE,
    "no_citations": NO_CITATIONS_MESSAGE,
    "conflicting_sources": f"{CONFLICT_INTRO}.",
}


def top_score(scored: Sequence[Scored]) -> float:
    """The highest relevance in `scored`, 0.0 when nothing was retrieved."""
    return max((s.score for s in scored), default=0.0)


def retrieval_gate(scored: Sequence[Scored], min_score: float) -> bool:
    """Line 1: True when the best retrieved chunk scores at least `min_score` (the request may go on)."""
    return bool(scored) and top_score(scored) >= min_score


def grounding_gate(sentences: Sequence[Sentence]) -> bool:
    """Line 3: True when at least one sentence kept a verified citation."""
    return any(s.citations for s in sentences)


def closest_refs(scored: Sequence[Scored], k: int = 3) -> tuple[ChunkRef, ...]:
    """The `k` best distinct chunks as references, best first (ties by chunk id)."""
    refs: list[ChunkRef] = []
    seen: set[str] = set()
    for s in sorted(scored, key=lambda s: (-s.score, s.chunk.chunk_id)):
        if len(refs) >= k:
            break
        if s.chunk.chunk_id in seen:
            continue
        seen.add(s.chunk.chunk_id)
        c = s.chunk
        refs.append(
            ChunkRef(
                chunk_id=c.chunk_id,
                title=c.title,
                section=c.section,
                url=c.url,
                score=round(s.score, 4),
                updated_at=c.updated_at,
            )
        )
    return tuple(refs)


def describe_statement(statement: Statement) -> str:
    """`Title (updated YYYY-MM-DD) says 250 MB`: one side of a conflict in words."""
    when = statement.updated_at.isoformat() if statement.updated_at else "date unknown"
    return f"{statement.title} (updated {when}) says {statement.quantity}"


def conflict_message(conflict: Conflict) -> str:
    """Line 2 wording: every side with its source and date, newest first; the person decides."""
    sides = sorted(
        conflict.statements,
        key=lambda s: (s.updated_at is None, -(s.updated_at.toordinal() if s.updated_at else 0), s.n),
    )
    return f"{CONFLICT_INTRO}: " + "; ".join(describe_statement(s) for s in sides) + f". {CONFLICT_OUTRO}"
