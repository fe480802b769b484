"""Pure ASGI middleware for the HTTP API: security headers, request context and access log,
HEAD for every GET, API keys, body size.

Pure ASGI (no `BaseHTTPMiddleware`) so streamed responses pass through unbuffered. Order,
outermost first: `SecurityHeaders` -> `RequestContext` -> `HeadAsGet` -> CORS -> `ApiKeyAuth`
-> `BodyLimit` -> routes.
"""

from __future__ import annotations

import codecs
import hmac
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl

import orjson
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag.access import Principal
from rag.serialize import usage_json
from rag.types import Answer, Block, ChunkRef

MAX_BODY_BYTES = 64 * 1024
TRACE_KEY = "rag.trace_id"
ACCESS_KEY = "rag.access"
# The caller's rag.access.Principal, set by ApiKeyAuth on every request.
PRINCIPAL_KEY = "rag.principal"
TRACE_HEADER = b"x-trace-id"
# A caller's X-Request-ID is reused as the trace id only when it is short and plain.
REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# One policy for the page and the API: scripts, styles and requests from this origin only (no
# inline script or style anywhere), no plugins, no framing. `data:` images for the empty favicon.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

log = logging.getLogger("rag.api")
access_log = logging.getLogger("rag.access")


AnswerOutcome = Literal["answered", "abstained", "error"]


@dataclass(slots=True)
class RequestNote:
    """What one request adds to its access-log line, at `scope["rag.access"]`: the routes record the
    answer (`/ask`'s, or the fold of the events a stream sent) and the error handler the error; the
    metrics read the same note, so they and the log cannot disagree."""

    trace_id: str
    answer: Answer | None = None
    streamed: bool = False  # /ask/stream: the line counts what the stream sent, as far as it got
    error: str = ""  # the type of the error that ended the request
    disconnected: bool = False
    aborted: bool = False

    def record(self, answer: Answer) -> None:
        """Note the request's answer: `/ask`'s, or the stream's fold of the events it sent."""
        self.answer = answer

    @property
    def reason(self) -> str | None:
        """The refusal reason the line records ("" answered); None before the answer got that far."""
        answer = self.answer
        if answer is None or (self.streamed and not answer.abstained and answer.status is None):
            return None
        return answer.reason

    @property
    def finished(self) -> Answer | None:
        """The answer whose timings and usage the line records: `/ask`'s, or a stream's after `done`."""
        answer = self.answer
        if answer is None or (self.streamed and answer.status is None):
            return None
        return answer

    @property
    def outcome(self) -> AnswerOutcome | None:
        """How the ask ended; None when it was rejected before answering (a 422 from the schema)."""
        answer = self.answer
        if self.error or (answer is not None and (answer.error or answer.status == "error")):
            return "error"
        reason = self.reason
        if reason is None:
            return None
        return "abstained" if reason else "answered"

    def fields(self) -> dict[str, Any]:
        """The line's fields after the request's own (trace id, method, route, path, status)."""
        out = _stream_fields(self.answer) if self.streamed else _answer_fields(self.answer)
        if self.error:
            out["error"] = self.error
        if self.disconnected:
            out["disconnected"] = True
        if self.aborted:
            out["aborted"] = True
        return out


def _top_score(found: Sequence[Block | ChunkRef]) -> float | None:
    return round(max(f.score for f in found), 4) if found else None


def _answer_fields(answer: Answer | None) -> dict[str, Any]:
    """`/ask`'s answer on the access line."""
    if answer is None:
        return {}
    return {
        "reason": answer.reason,
        "top_score": _top_score(answer.blocks or answer.closest),
        "blocks": len(answer.blocks),
        "emitted": len(answer.sentences),
        "dropped": len(answer.dropped),
        "timings": answer.timings,
        "usage": usage_json(answer.usage),
    }


def _stream_fields(answer: Answer | None) -> dict[str, Any]:
    """A stream's answer on the access line, in the order its events came: the counts, then `meta`'s
    blocks, the refusal, the provider error, and `done`'s status, timings and usage."""
    if answer is None:
        return {"emitted": 0, "dropped": 0}
    out: dict[str, Any] = {"emitted": len(answer.sentences), "dropped": len(answer.dropped)}
    if answer.issued:
        out.update(blocks=len(answer.blocks), top_score=_top_score(answer.blocks))
    if answer.abstained:
        out["reason"] = answer.reason
        out.setdefault("top_score", _top_score(answer.closest))
    if answer.error:
        out["error"] = answer.error
    if answer.status is not None:
        out["stream_status"] = answer.status
        out.setdefault("reason", "")
        out.update(timings=answer.timings, usage=usage_json(answer.usage))
    return out


async def send_error(
    send: Send, status: int, type_: str, message: str, headers: dict[str, str] | None = None
) -> None:
    """Send a complete `{"error": {"type", "message"}}` response straight through ASGI."""
    body = orjson.dumps({"error": {"type": type_, "message": message}})
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class RequestContext:
    """Give each request a trace id (echoed as `X-Trace-Id`), write one JSON access line, catch the rest.

    Routes note their answer (reason, top score, blocks, emitted, dropped, timings) on the
    `RequestNote` at `scope["rag.access"]`; it is logged on `rag.access` when the response ends,
    streams included. An exception that escapes every handler is logged with its traceback
    and answered with a 500 that carries no stack trace.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        requested = Headers(scope=scope).get("x-request-id", "")
        trace_id = requested if REQUEST_ID_RE.fullmatch(requested) else uuid.uuid4().hex
        note = RequestNote(trace_id=trace_id)
        scope[TRACE_KEY] = trace_id
        scope[ACCESS_KEY] = note
        status = 0

        async def send_with_trace(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (TRACE_HEADER, trace_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_trace)
        except (ClientDisconnect, OSError):
            note.disconnected = True
        except Exception:
            log.exception("unhandled error (trace %s) on %s %s", trace_id, scope["method"], scope["path"])
            if status == 0:
                await send_error(
                    send_with_trace, 500, "internal_error", f"internal error; quote trace id {trace_id}"
                )
            else:
                note.aborted = True
        finally:
            route = scope.get("route")
            entry = {
                "trace_id": trace_id,
                "method": scope["method"],
                "route": getattr(route, "path", scope["path"]),
                "path": scope["path"],
                "status": status,
                **note.fields(),
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            }
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(orjson.dumps(entry).decode())


def principal_of(request: HTTPConnection) -> Principal:
    """The caller ApiKeyAuth put in the request's scope; anonymous, reading only what everyone may
    read, when unset."""
    principal = request.scope.get(PRINCIPAL_KEY)
    return principal if isinstance(principal, Principal) else Principal.anonymous()


def key_matches(token: str, keys: tuple[str, ...]) -> bool:
    """Constant-time comparison against every configured key (no early exit on a match)."""
    return matching_key(token, keys) is not None


def matching_key(token: str, keys: tuple[str, ...]) -> str | None:
    """The configured key equal to `token`, compared in constant time against every key (no early exit)."""
    found: str | None = None
    for key in keys:
        if hmac.compare_digest(token.encode(), key.encode()) and token:
            found = key
    return found


class ApiKeyAuth:
    """Require `Authorization: Bearer <key>` on every path for which `protected(path)` is true, and put
    the key's principal at `scope["rag.principal"]`.

    `keys` maps each key to its principal (a plain tuple of keys: principals with no groups). With
    no keys configured, every request is `Principal.anonymous()`: it reads only the documents
    everyone may read. `GET /ask/stream` also accepts `?key=<key>`, because `EventSource` cannot
    send headers.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        keys: tuple[str, ...] | Mapping[str, Principal],
        protected: Callable[[str], bool],
    ) -> None:
        self.app = app
        self.principals: dict[str, Principal] = (
            dict(keys)
            if isinstance(keys, Mapping)
            else {k: Principal(name=f"key-{i}") for i, k in enumerate(keys, 1)}
        )
        self.keys = tuple(self.principals)
        self.protected = protected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[PRINCIPAL_KEY] = Principal.anonymous()
        if scope["type"] != "http" or not self.keys or not self.protected(scope["path"]):
            await self.app(scope, receive, send)
            return
        token = _sent_key(scope)
        key = matching_key(token.strip(), self.keys)
        if key is None:
            message = "invalid API key" if token else "missing API key: send Authorization: Bearer <key>"
            await send_error(send, 401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
            return
        scope[PRINCIPAL_KEY] = self.principals[key]
        await self.app(scope, receive, send)


def _sent_key(scope: Scope) -> str:
    """The key a request sends: its `Authorization: Bearer` token, else (`GET /ask/stream` only, for
    `EventSource`) its `?key=`; "" when none."""
    authorization = Headers(scope=scope).get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        token = ""
    if not token and scope["method"] == "GET" and scope["path"] == "/ask/stream":
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        token = query.get("key", "")
    return token


class BodyLimit:
    """Refuse bodies over `max_bytes` with 413: by Content-Length, and while reading chunked bodies;
    and a JSON body that is not UTF-8 with 422 (Python's JSON reader would also take UTF-16 and
    UTF-32, whose ASCII characters come with NUL bytes, never valid in JSON text)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await send_error(send, 413, "payload_too_large", self._message())
            return
        received = 0
        utf8 = codecs.getincrementaldecoder("utf-8")() if _json_body(scope) else None

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                received += len(body)
                # Raised inside the route's body read; the HTTP exception handler renders them.
                if received > self.max_bytes:
                    raise HTTPException(413, self._message())
                if utf8 is not None:
                    _check_utf8(utf8, body, final=not message.get("more_body", False))
            return message

        await self.app(scope, counting_receive, send)

    def _message(self) -> str:
        return f"request body over {self.max_bytes // 1024} KB"


def _json_body(scope: Scope) -> bool:
    return "json" in Headers(scope=scope).get("content-type", "").lower()


def _check_utf8(decoder: codecs.IncrementalDecoder, body: bytes, *, final: bool) -> None:
    """Raise the 422 for a JSON body part that is not UTF-8 text or holds a NUL byte."""
    try:
        decoder.decode(body, final=final)
    except UnicodeDecodeError:
        raise HTTPException(422, "request body is not valid UTF-8 JSON") from None
    if b"\0" in body:
        raise HTTPException(
            422, "request body is not UTF-8 JSON: it holds NUL bytes (UTF-16 or UTF-32 text?)"
        )


class SecurityHeaders:
    """Add the security headers (CSP, nosniff, referrer policy, no framing) to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class HeadAsGet:
    """Answer `HEAD` wherever `GET` works: run the GET route, send its status and headers, no body.

    A streamed GET keeps running after the headers are sent; its later body messages are dropped.
    Where GET is not allowed, HEAD gets the same 404 or 405.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        finished = False

        async def headers_only(message: Message) -> None:
            nonlocal finished
            if finished:
                return
            if message["type"] == "http.response.body":
                finished = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
