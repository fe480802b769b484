"""Server-sent events for `/ask/stream`: keep-alives, clickable payloads, cancellation on disconnect."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import anyio
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from rag.answer.events import (
    KEEPALIVE,
    DoneEvent,
    DroppedEvent,
    ErrorEvent,
    Event,
    MetaEvent,
    RefusalEvent,
    SentenceEvent,
    encode,
)
from rag.errors import RagError
from rag.serialize import usage_json

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

log = logging.getLogger("rag.api")


def note_event(details: dict[str, Any], event: Event) -> None:
    """Add what `event` says to the access-log details (blocks, top score, counts, reason, timings)."""
    if isinstance(event, MetaEvent):
        scores = [b.score for b in event.blocks]
        details["blocks"] = len(scores)
        details["top_score"] = round(max(scores), 4) if scores else None
    elif isinstance(event, SentenceEvent):
        details["emitted"] = details.get("emitted", 0) + 1
    elif isinstance(event, DroppedEvent):
        details["dropped"] = details.get("dropped", 0) + 1
    elif isinstance(event, RefusalEvent):
        details["reason"] = event.reason
        if "top_score" not in details:
            scores = [c.score for c in event.closest]
            details["top_score"] = round(max(scores), 4) if scores else None
    elif isinstance(event, ErrorEvent):
        details["error"] = event.type
    elif isinstance(event, DoneEvent):
        details["stream_status"] = event.status
        details.setdefault("reason", "")
        details["timings"] = event.timings
        details["usage"] = usage_json(event.usage)


async def _next_event(iterator: AsyncIterator[Event]) -> Event | None:
    try:
        return await anext(iterator)
    except StopAsyncIteration:
        return None


async def sse_stream(
    events: AsyncIterator[Event], *, keepalive: float, details: dict[str, Any]
) -> AsyncGenerator[bytes, None]:
    """Encode `events` as SSE; a keep-alive comment after every `keepalive` seconds without an event.

    The next event is awaited in a task, so a keep-alive never cancels the pipeline. When
    the consumer stops (client gone), the pending pull is cancelled and `events` closed.
    """
    iterator = aiter(events)
    pending: asyncio.Task[Event | None] | None = None
    sent_done = False
    try:
        while True:
            if pending is None:
                pending = asyncio.create_task(_next_event(iterator))
            done, _ = await asyncio.wait((pending,), timeout=keepalive)
            if not done:
                yield KEEPALIVE
                continue
            task, pending = pending, None
            try:
                event = task.result()
            except Exception as exc:
                # The status line is already sent: end the stream with an error event, never a trace.
                if isinstance(exc, RagError):  # an expected fault (the store is gone): its own type
                    error = ErrorEvent(type=exc.type, message=str(exc))
                else:
                    log.exception("stream failed (trace %s)", details.get("trace_id", ""))
                    error = ErrorEvent(type="internal_error", message="internal error while answering")
                details["error"] = error.type
                if sent_done:
                    return  # the client has its whole answer; `done` is always the last event
                yield encode(error)
                yield encode(
                    DoneEvent(
                        status="error", emitted=details.get("emitted", 0), dropped=details.get("dropped", 0)
                    )
                )
                return
            if event is None:
                return
            note_event(details, event)
            sent_done = sent_done or isinstance(event, DoneEvent)
            yield encode(event)
    finally:
        with anyio.CancelScope(shield=True):
            if pending is not None:
                pending.cancel()
                await asyncio.wait((pending,))
                if not pending.cancelled():
                    pending.exception()  # retrieved, so asyncio does not warn about it
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()


class EventStreamResponse(StreamingResponse):
    """`text/event-stream` response that always closes its body generator, however the response ends."""

    def __init__(self, body: AsyncGenerator[bytes, None]) -> None:
        super().__init__(body, headers=SSE_HEADERS, media_type="text/event-stream")
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._body.aclose()
