"""Server-sent events for `/ask/stream`: keep-alives, clickable payloads, cancellation on disconnect."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

import anyio
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from rag.answer.core import fold
from rag.answer.events import KEEPALIVE, DoneEvent, ErrorEvent, Event, encode
from rag.api.middleware import RequestNote
from rag.errors import RagError
from rag.types import Answer

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

log = logging.getLogger("rag.api")


async def _next_event(iterator: AsyncIterator[Event]) -> Event | None:
    try:
        return await anext(iterator)
    except StopAsyncIteration:
        return None


async def sse_stream(
    events: AsyncIterator[Event], *, keepalive: float, note: RequestNote, waiting: bool = False
) -> AsyncGenerator[bytes, None]:
    """Encode `events` as SSE; a keep-alive comment after every `keepalive` seconds without an event
    (and first of all when `waiting`: the response starts while its first event is still awaited).

    The next event is awaited in a task, so a keep-alive never cancels the pipeline. When
    the consumer stops (client gone), the pending pull is cancelled and `events` closed. A failure
    of `events` ends the stream with an `error` and a `done` (unless `done` was sent). The events
    sent, folded, go on `note` when the stream ends, however it ends.
    """
    iterator = aiter(events)
    pending: asyncio.Task[Event | None] | None = None
    sent: list[Event] = []
    sent_done = False
    try:
        if waiting:
            yield KEEPALIVE
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
                for frame in _failed(exc, note, sent, sent_done=sent_done):
                    yield frame
                return
            if event is None:
                return
            sent.append(event)
            sent_done = sent_done or isinstance(event, DoneEvent)
            yield encode(event)
    finally:
        note.record(_folded(sent))
        with anyio.CancelScope(shield=True):
            await _close(iterator, pending)


def _folded(sent: Sequence[Event]) -> Answer:
    """The events the client was sent, folded (`core.fold`): what its access line and the metrics
    read. The ask log reads the pipeline's own fold, which also holds an event made but never sent
    (a client gone, or a HEAD request, which ends after its first frame)."""
    return fold(Answer(question=""), sent)


def _failed(exc: Exception, note: RequestNote, sent: Sequence[Event], *, sent_done: bool) -> list[bytes]:
    """The frames that end a stream whose events failed with `exc`: an `error`, then a `done` counting
    the sentences `sent`; nothing more once `done` was sent. The error's type goes on `note`."""
    if isinstance(exc, RagError):  # an expected fault (the store is gone): its own type
        error = ErrorEvent(type=exc.type, message=str(exc))
    else:
        log.exception("stream failed (trace %s)", note.trace_id)
        error = ErrorEvent(type="internal_error", message="internal error while answering")
    note.error = error.type
    if sent_done:
        return []  # the client has its whole answer; `done` is always the last event
    answer = _folded(sent)
    done = DoneEvent(status="error", emitted=len(answer.sentences), dropped=len(answer.dropped))
    return [encode(error), encode(done)]


async def _close(iterator: AsyncIterator[Event], pending: asyncio.Task[Event | None] | None) -> None:
    """Cancel the pull in flight (its outcome retrieved, so asyncio does not warn) and close `iterator`."""
    if pending is not None:
        pending.cancel()
        await asyncio.wait((pending,))
        if not pending.cancelled():
            pending.exception()
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
