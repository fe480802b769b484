"""Typed stream events and the pure SSE encoder.

Order on the wire: `meta`, then `sentence`/`dropped` as they are verified, or a
`refusal`; an `error` when the provider fails; always a final `done`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from rag.serialize import jsonable
from rag.types import Block, ChunkRef, Conflict, DoneStatus, Dropped, RefusalReason, Sentence

EventName = Literal["meta", "sentence", "dropped", "refusal", "error", "done"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Meta:
    blocks: tuple[Block, ...]
    context_tokens: int
    trace_id: str = ""
    name: EventName = "meta"

    def payload(self) -> dict[str, Any]:
        return {
            "blocks": [
                {
                    "n": b.n,
                    "chunk_id": b.chunk.chunk_id,
                    "title": b.chunk.title,
                    "section": b.chunk.section,
                    "url": b.chunk.url,
                    "updated_at": jsonable(b.chunk.updated_at),
                    "score": round(b.score, 4),
                }
                for b in self.blocks
            ],
            "context_tokens": self.context_tokens,
            "trace_id": self.trace_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SentenceOut:
    sentence: Sentence
    name: EventName = "sentence"

    def payload(self) -> dict[str, Any]:
        return dict(jsonable(self.sentence))


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedOut:
    dropped: Dropped
    name: EventName = "dropped"

    def payload(self) -> dict[str, Any]:
        return {"text": self.dropped.text, "detail": list(self.dropped.detail)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    reason: RefusalReason
    message: str
    closest: tuple[ChunkRef, ...] = ()
    conflict: Conflict | None = None
    name: EventName = "refusal"

    def payload(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "message": self.message,
            "closest": jsonable(self.closest),
            "conflict": jsonable(self.conflict),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEvent:
    type: str
    message: str
    name: EventName = "error"

    def payload(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    status: DoneStatus
    emitted: int
    dropped: int
    detail: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    name: EventName = "done"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "emitted": self.emitted, "dropped": self.dropped}
        if self.detail:
            out["detail"] = self.detail
        if self.timings:
            out["timings"] = self.timings
        return out


Event = Meta | SentenceOut | DroppedOut | Refusal | ErrorEvent | Done

KEEPALIVE = b": keep-alive\n\n"


def encode(event: Event) -> bytes:
    """One event as SSE bytes: `event: <name>` and one `data:` line of JSON, then a blank line."""
    data = orjson.dumps(event.payload())
    return b"event: " + event.name.encode() + b"\ndata: " + data + b"\n\n"
