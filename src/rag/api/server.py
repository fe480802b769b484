"""Running the API: `serve()` with uvicorn, `app_factory()` for worker processes, log setup.

uvicorn closes idle keep-alive connections but has no deadline for reading a request, and its
`limit_concurrency` counts half-open connections too, so a client that opens connections and
never finishes their headers could hold them for ever and starve everyone else.
`BoundedH11Protocol` adds the two missing bounds: a request (head and body) must arrive within
`request_timeout` seconds of its first byte (else `408` and close), and connections beyond
`max_connections` are answered `503` and closed at once. The deadline ends when the whole request
has arrived, however the client keeps its connection: answering it, the model call included, is
never covered (the model call has its own limit, `model_timeout`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

import h11
import orjson
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from rag.api.app import create_app
from rag.config import Settings, get_settings
from rag.types import StoreStats

log = logging.getLogger("rag.api")


def _raw_error(status: str, type_: str, message: str, extra: bytes = b"") -> bytes:
    """A complete `{"error": ...}` response written straight to the socket (outside any request)."""
    body = orjson.dumps({"error": {"type": type_, "message": message}})
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\n"
        "connection: close\r\n"
    )
    return head.encode() + extra + f"content-length: {len(body)}\r\n\r\n".encode() + body


REQUEST_TIMEOUT_RESPONSE = _raw_error(
    "408 Request Timeout", "request_timeout", "the request did not arrive in time"
)
BUSY_RESPONSE = _raw_error(
    "503 Service Unavailable", "busy", "too many open connections", b"retry-after: 1\r\n"
)


# h11 states of the client once its whole request has arrived: DONE on a keep-alive connection,
# MUST_CLOSE when it sent `Connection: close` (as curl with --no-keepalive and urllib do).
_REQUEST_RECEIVED = frozenset({h11.DONE, h11.MUST_CLOSE})


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Connection bounds for `rag serve`: seconds and counts, per worker process."""

    request_timeout: float = 10.0
    """From a request's first byte until its head and body have arrived."""
    keep_alive: float = 5.0
    """An idle keep-alive connection is closed after this."""
    max_connections: int = 512
    """Open connections beyond this are answered 503 and closed."""


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request read deadline and a cap on open connections."""

    _last_refusal_logged = 0.0  # refusals are logged at most once a second, not once per connection

    def __init__(self, *args: Any, request_timeout: float, max_connections: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            now = time.monotonic()
            if now - BoundedH11Protocol._last_refusal_logged >= 1.0:
                BoundedH11Protocol._last_refusal_logged = now
                log.warning(
                    "refusing connections: %d open, the limit is %d",
                    len(self.connections),
                    self.max_connections,
                )
            transport.write(BUSY_RESPONSE)
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self._between_requests():
            self._arm()
        super().data_received(data)
        if not self._between_requests() and self.conn.their_state in _REQUEST_RECEIVED:
            self._disarm()  # the request is in: answering it (the model call included) is not covered

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._between_requests():
            self._disarm()  # uvicorn's keep-alive timer takes over until the next byte

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the route's pending body read ends as a disconnect
            cycle.message_event.set()
        self.transport.close()


def configure_logging(level: str) -> None:
    """Log to stderr: `rag.access` as bare JSON lines, everything else under `rag` with level and name."""
    access = logging.getLogger("rag.access")
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.propagate = False
    root = logging.getLogger("rag")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(level.upper())


def app_factory() -> FastAPI:
    """Build the app from the environment; uvicorn calls this in every worker process."""
    settings = get_settings()
    configure_logging(settings.log_level)
    return create_app(settings, freeze_heap=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Preflight:
    """What `serve` checked before starting: the store's counts and, with Claude, the model key."""

    stats: StoreStats
    model: str = ""
    """The generation model when its key was accepted; empty offline or when unreachable."""
    model_warning: str = ""
    """Why the model provider could not be reached yet (asks then get 503 until it is back)."""


def preflight(settings: Settings) -> Preflight:
    """Count the store, and with Claude configured probe the key once.

    A rejected key or unknown model raises ConfigError; an unreachable provider is only a warning.
    """
    from rag.store import open_store

    store = open_store(settings)
    try:
        stats = store.stats()
    finally:
        store.close()
    if not settings.use_claude:
        return Preflight(stats=stats)
    from rag.answer.claude import ClaudeGenerator
    from rag.errors import UpstreamUnavailable

    try:
        ClaudeGenerator(settings).check()
    except UpstreamUnavailable as exc:
        return Preflight(stats=stats, model_warning=str(exc))
    return Preflight(stats=stats, model=settings.generation_model)


def serve(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    limits: Limits | None = None,
) -> None:
    """Run the API with uvicorn until stopped. With `workers > 1` each worker builds its own app."""
    limits = limits or Limits()
    configure_logging(settings.log_level)
    protocol = functools.partial(
        BoundedH11Protocol, request_timeout=limits.request_timeout, max_connections=limits.max_connections
    )
    common: dict[str, Any] = {
        "host": host,
        "port": port,
        "access_log": False,
        "log_level": "warning",
        "http": protocol,
        "timeout_keep_alive": limits.keep_alive,
    }
    if workers > 1:
        uvicorn.run("rag.api:app_factory", factory=True, workers=workers, **common)
    else:
        uvicorn.run(create_app(settings, freeze_heap=True), **common)
