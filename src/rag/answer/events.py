"""Typed answer events and the pure SSE encoder.

The answer core produces these for both routes: `/ask/stream` sends them as they come,
`/ask` folds them into an `Answer`. Order: `meta`, then `sentence`/`dropped` as they are
verified, or a `refusal`; an `error` when the provider fails; always a final `done`.
Payloads come from `rag.serialize`, the one JSON shape of every domain value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from rag.serialize import block_json, dropped_json, linked, sentence_json, usage_json
from rag.types import Block, ChunkRef, Conflict, DoneStatus, Dropped, RefusalReason, Sentence, Usage

EventName = Literal["meta", "sentence", "dropped", "refusal", "error", "done"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaEvent:
    """The blocks issued to the generator, the gate that let them through, and the trace id."""

    blocks: tuple[Block, ...]
    context_tokens: int
    trace_id: str = ""
    reranker: str = ""
    min_score: float = 0.0
    searched_for: str = ""  # what retrieval searched for (a follow-up's standalone question)
    name: EventName = "meta"

    def payload(self) -> dict[str, Any]:
        return {
            "blocks": [block_json(b) for b in self.blocks],
            "context_tokens": self.context_tokens,
            "trace_id": self.trace_id,
            "reranker": self.reranker,
            "min_score": self.min_score,
            "searched_for": self.searched_for,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SentenceEvent:
    """A verified sentence, with the reasons for any of its citations that failed (`withheld`)."""

    sentence: Sentence
    name: EventName = "sentence"

    def payload(self) -> dict[str, Any]:
        return sentence_json(self.sentence)


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedEvent:
    """A sentence withheld from the user, with its reasons; `claim`: it stated something checkable
    (it cited a block, or holds a figure or a name), so a second draft may put it right."""

    dropped: Dropped
    claim: bool = False
    name: EventName = "dropped"

    def payload(self) -> dict[str, Any]:
        return dropped_json(self.dropped)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalEvent:
    reason: RefusalReason
    message: str
    closest: tuple[ChunkRef, ...] = ()
    conflict: Conflict | None = None
    searched_for: str = ""  # what retrieval searched for (a refusal before generation has no `meta`)
    name: EventName = "refusal"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "reason": self.reason,
            "message": self.message,
            "closest": linked(self.closest),
            "conflict": linked(self.conflict),
        }
        if self.searched_for:
            out["searched_for"] = self.searched_for
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEvent:
    type: str
    message: str
    name: EventName = "error"

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class DoneEvent:
    """The end: counts, whether the model's reply was cut short, usage and timings."""

    status: DoneStatus
    emitted: int
    dropped: int
    detail: str = ""
    cut: bool = False
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)
    name: EventName = "done"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "emitted": self.emitted,
            "dropped": self.dropped,
            "cut": self.cut,
            "usage": usage_json(self.usage),
        }
        if self.detail:
            out["detail"] = self.detail
        if self.timings:
            out["timings"] = self.timings
        return out


Event = MetaEvent | SentenceEvent | DroppedEvent | RefusalEvent | ErrorEvent | DoneEvent

KEEPALIVE = b": keep-alive\n\n"


def encode(event: Event) -> bytes:
    """One event as SSE bytes: `event: <name>` and one `data:` line of JSON, then a blank line."""
    data = orjson.dumps(event.payload())
    return b"event: " + event.name.encode() + b"\ndata: " + data + b"\n\n"


def event_json(event: Event) -> dict[str, Any]:
    """One event as a JSON object (`rag ask --stream --json` prints one per line)."""
    return {"event": event.name, "data": event.payload()}


__all__ = [
    "KEEPALIVE",
    "DoneEvent",
    "DroppedEvent",
    "ErrorEvent",
    "Event",
    "MetaEvent",
    "RefusalEvent",
    "SentenceEvent",
    "encode",
    "event_json",
]
