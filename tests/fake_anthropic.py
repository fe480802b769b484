"""A fake Anthropic Messages API on a loopback port, for driving the real `anthropic` SDK offline.

It speaks the wire format of `shared/anthropic-wire.md`: JSON messages and SSE streams
(`message_start`, `content_block_start`, `citations_delta`, `text_delta`, `content_block_stop`,
`ping`, `message_delta`, `message_stop`, `error`), error statuses with `retry-after-ms`, and
`count_tokens`. Each test scripts its replies with `enqueue(...)`; every request is recorded and
checked against the product's contract (documents with citations on all, `cache_control` (when present) on
the last only, the system prompt, a model). The `fake_anthropic` fixture fails the test at teardown
when a check failed or a scripted reply was never used.

A judge request (the small-model judge's system prompt, `rag.support.judge`) is answered from its own
queue (`enqueue_judge(...)`, or `judge_responder`), with a `tool_use` content block and stop reason
`tool_use` (wire 2.1); it is checked as the documentation says the API would: one tool with an object
input schema, no documents, no temperature for the models that refuse one, no forced tool_choice
beside thinking (5.x models think unless it is turned off, and Sonnet 5.5 may not turn it off).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rag.answer.prompt import COMPRESS_SYSTEM_PROMPT, SYSTEM_PROMPT
from rag.config import get_settings
from rag.support.judge import SYSTEM_PROMPT as JUDGE_SYSTEM_PROMPT
from rag.support.judge import TOOL_NAME as JUDGE_TOOL

CHARS_PER_TOKEN = 4
# Fake tokenizer for usage figures (see anthropic-wire.md §8: ~2.5 chars per token on 5.x models).
CHARS_PER_INPUT_TOKEN = 2.5


@dataclass(frozen=True)
class Cite:
    """A scripted `char_location` citation; offsets are found in the request's document when omitted.

    `document_index=None` cites the first issued document whose text contains `cited_text`.
    """

    document_index: int | None
    cited_text: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Part:
    """One scripted text content block (cited when `cites` is non-empty)."""

    text: str
    cites: tuple[Cite, ...] = ()


@dataclass(frozen=True)
class Reply:
    """One scripted response. `status != 200` sends an error body; the stream options apply to SSE only.

    `cut_after`: abort the connection after that many text blocks (no `message_stop`, broken body).
    `error_after`: send an SSE `error` event (`error_event_type`, wire §3.3) after that many text blocks.
    `eof_after`: end the body cleanly after that many text blocks, with no `message_delta` and no
    `message_stop` (a stream that stops short without breaking the connection).
    `latency`: seconds to wait before answering (JSON or SSE).
    `think_latency`: SSE only: seconds between `message_start` (sent at once) and the first content,
    with a `ping` every second, as when the model thinks before it writes.
    `citations_last`: send a block's `citations_delta`s after its text (the docs' illustrative order).
    `sticky`: the reply stays at the head of the queue and answers every later request (a provider
    that stays down); it is never counted as unused.
    `stream_only`: the shape exists only on a stream (an SSE error, an early end): a non-streaming
    request for it is a violation.
    `tool_use`: the input of one `tool_use` content block (`tool_name`), after the text parts.
    """

    parts: tuple[Part, ...] = ()
    thinking: bool = False
    status: int = 200
    error_type: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    usage: dict[str, int] | None = None
    stop_reason: str = "end_turn"
    cut_after: int | None = None
    error_after: int | None = None
    token_delay: float | None = None
    citations_last: bool = False
    latency: float = 0.0
    think_latency: float = 0.0
    error_event_type: str = "overloaded_error"
    eof_after: int | None = None
    sticky: bool = False
    stream_only: bool = False
    tool_use: dict[str, Any] | None = None
    tool_name: str = JUDGE_TOOL


Script = Reply | Callable[[dict[str, Any]], Reply]


# A key the fake rejects with 401 (how tests exercise "invalid key" handling).
REJECTED_KEY = "rejected-key"


def text(value: str) -> Part:
    return Part(text=value)


def cited(value: str, *cites: Cite) -> Part:
    return Part(text=value, cites=cites)


def cite(document_index: int, cited_text: str, start: int | None = None, end: int | None = None) -> Cite:
    return Cite(document_index=document_index, cited_text=cited_text, start=start, end=end)


def locate(cited_text: str) -> Cite:
    """A citation of whichever issued document holds `cited_text` (a violation when none does)."""
    return Cite(document_index=None, cited_text=cited_text)


def reply(*parts: Part, **options: Any) -> Reply:
    return Reply(parts=tuple(parts), **options)


def failure(
    status: int = 529, *, retry_after_ms: int | None = 5, retry_after: str | None = None, sticky: bool = False
) -> Reply:
    """An error response; `retry-after-ms` is small by default so the SDK's retries are fast. `sticky`:
    it answers every later request too (a provider that stays down)."""
    error_type = {
        400: "invalid_request_error",
        401: "authentication_error",
        429: "rate_limit_error",
        500: "api_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    headers: list[tuple[str, str]] = []
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", str(retry_after_ms)))
    if retry_after is not None:
        headers.append(("retry-after", retry_after))
    return Reply(status=status, error_type=error_type, headers=tuple(headers), sticky=sticky)


def verdicts(*entries: tuple[int, bool, str], **options: Any) -> Reply:
    """A judge reply: the `record_verdicts` tool used with (id, supported, reason) for each entry."""
    given = [{"id": i, "supported": ok, "reason": why} for i, ok, why in entries]
    return Reply(tool_use={"verdicts": given}, stop_reason="tool_use", **options)


def judge_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The sentences a judge request asks about, read back from its user turn (the JSON after the
    line that introduces them)."""
    content = (body.get("messages") or [{}])[0].get("content")
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])
    _, _, payload = text.partition("passages it cites:\n")
    items: list[dict[str, Any]] = json.loads(payload) if payload else []
    return items


@dataclass
class JudgeRecorder:
    """A judge responder that records every item asked and answers each with `supported` (default:
    rejected, so what the product shows is as without a judge)."""

    supported: bool = False
    asked: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        items = judge_items(body)
        self.asked.extend(items)
        return verdicts(*((item["id"], self.supported, "recorded") for item in items))


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    violations: list[str] = field(default_factory=list)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def judge(self) -> bool:
        return _system_text(self.body) == JUDGE_SYSTEM_PROMPT

    @property
    def retry_count(self) -> int:
        return int(self.headers.get("x-stainless-retry-count", "0") or 0)

    def documents(self) -> list[dict[str, Any]]:
        return _documents(self.body)


def _documents(body: dict[str, Any]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            docs.extend(b for b in content if isinstance(b, dict) and b.get("type") == "document")
    return docs


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system if isinstance(system, str) else ""


def check_request(body: dict[str, Any]) -> list[str]:
    """The product's request contract; returns the violations (empty when the request is fine)."""
    problems: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is not set")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] <= 0:
        problems.append("max_tokens is not a positive integer")
    system = _system_text(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or messages[0].get("role") != "user":
        problems.append("messages must start with a user turn")
    docs = _documents(body)
    if system == SYSTEM_PROMPT:
        if not docs:
            problems.append("generation request without document blocks")
        for i, doc in enumerate(docs):
            source = doc.get("source") or {}
            if source.get("type") != "text" or source.get("media_type") != "text/plain":
                problems.append(f"document {i} is not a plain-text source")
            if not source.get("data"):
                problems.append(f"document {i} has no text")
            if (doc.get("citations") or {}).get("enabled") is not True:
                problems.append(f"document {i} does not enable citations")
            if not doc.get("title"):
                problems.append(f"document {i} has no title")
            if "context" in doc and not isinstance(doc["context"], str):
                problems.append(f"document {i} context is not a string")
            has_cache = "cache_control" in doc
            if has_cache and (doc.get("cache_control") or {}).get("type") != "ephemeral":
                problems.append(f"document {i} has a cache_control that is not ephemeral")
            if has_cache and i != len(docs) - 1:
                problems.append(f"document {i} has cache_control but is not the last")
        problems.extend(_conversation_problems(messages))
        content = messages[-1].get("content") if isinstance(messages, list) and messages else None
        if not isinstance(content, list) or not any(
            isinstance(b, dict) and b.get("type") == "text" and b.get("text") for b in content
        ):
            problems.append("generation request without a question text block")
    elif system == COMPRESS_SYSTEM_PROMPT:
        if docs:
            problems.append("compression request must not send document blocks")
    elif system == JUDGE_SYSTEM_PROMPT:
        problems.extend(_judge_problems(body, docs))
    else:
        problems.append("system prompt missing or unknown")
    if "output_config" in body or "output_format" in body:
        problems.append("citations cannot be combined with structured outputs")
    return problems


def _conversation_problems(messages: Any) -> list[str]:
    """Earlier turns of a conversation (wire 1.1): user and assistant alternate, ending with the user
    turn that carries this turn's documents; no earlier message carries a document (nothing in an
    earlier turn is citable) and none is empty."""
    if not isinstance(messages, list) or not messages:
        return []
    problems: list[str] = []
    for i, message in enumerate(messages):
        role = "user" if i % 2 == 0 else "assistant"
        if message.get("role") != role:
            problems.append(f"message {i} should be a {role} turn")
        if i < len(messages) - 1:
            content = message.get("content")
            if not content:
                problems.append(f"message {i} is empty")
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "document" for b in content
            ):
                problems.append(f"message {i} (an earlier turn) carries a document block")
    return problems


# wire 5: Sonnet 5.5 and Haiku 5.5 answer 400 to a non-default temperature; Sonnet 5.5 to a forced tool
# choice and to thinking turned off; 5.x models think by default (wire 2.1), and thinking may not be on
# when tool_choice forces a tool.
_FIXED_SAMPLING = frozenset({"claude-sonnet-5-5", "claude-haiku-5-5"})
_NO_FORCED_TOOL = frozenset({"claude-sonnet-5-5"})
_THINKS_BY_DEFAULT_RE = re.compile(r"^claude-[a-z]+-5(?:-|$)")


def _judge_problems(body: dict[str, Any], docs: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    model = str(body.get("model"))
    if docs:
        problems.append("judge request must not send document blocks")
    tools = body.get("tools")
    if not isinstance(tools, list) or len(tools) != 1 or not isinstance(tools[0], dict):
        return [*problems, "judge request must offer exactly one tool"]
    tool = tools[0]
    if tool.get("name") != JUDGE_TOOL or (tool.get("input_schema") or {}).get("type") != "object":
        problems.append("judge tool must be record_verdicts with an object input_schema")
    choice = body.get("tool_choice") or {"type": "auto"}
    forced = choice.get("type") in ("any", "tool")
    if choice.get("type") == "tool" and choice.get("name") != JUDGE_TOOL:
        problems.append("tool_choice names a tool that is not offered")
    thinking = (body.get("thinking") or {}).get("type")
    if model in _NO_FORCED_TOOL and (forced or thinking == "disabled"):
        problems.append(f"{model} answers 400 to a forced tool_choice or thinking turned off")
    thinks = thinking not in ("disabled", None) or (thinking is None and _THINKS_BY_DEFAULT_RE.match(model))
    if forced and thinks:
        problems.append("thinking may not be enabled when tool_choice forces tool use")
    if model in _FIXED_SAMPLING and any(k in body for k in ("temperature", "top_p", "top_k")):
        problems.append(f"{model} answers 400 to a non-default temperature, top_p or top_k")
    return problems


class FakeAnthropic:
    """The server: `base_url`, `enqueue(...)`, `requests`, `violations`; start() and stop() it."""

    def __init__(self, *, token_delay: float = 0.0, cache_min_tokens: int = 512) -> None:
        self.token_delay = token_delay
        self.cache_min_tokens = cache_min_tokens
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.judge_responder: Callable[[dict[str, Any]], Reply] | None = None
        self.disconnects = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Script] = deque()
        self._judge_queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._cached_prefixes: set[str] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def enqueue(self, *scripts: Script) -> None:
        """Replies for the next requests, in order; a callable receives the request body."""
        with self._lock:
            self._queue.extend(scripts)

    def enqueue_judge(self, *scripts: Script) -> None:
        """Replies for the next judge requests, in order (a queue of their own)."""
        with self._lock:
            self._judge_queue.extend(scripts)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet (a sticky one at the head is never "unused")."""
        queued = [*self._queue, *self._judge_queue]
        return sum(1 for script in queued if not (isinstance(script, Reply) and script.sticky))

    def message_requests(self) -> list[Recorded]:
        """The generation and compression calls (judge calls: `judge_requests`)."""
        return [r for r in self.requests if r.path == "/v1/messages" and not r.judge]

    def judge_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/messages" and r.judge]

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler --------------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> Reply:
        judge = _system_text(body) == JUDGE_SYSTEM_PROMPT
        queue = self._judge_queue if judge else self._queue
        with self._lock:
            script = queue[0] if queue else None
            if not (isinstance(script, Reply) and script.sticky) and queue:
                queue.popleft()
        if script is None:
            responder = self.judge_responder if judge else self.responder
            if responder is None:
                what = "judge request" if judge else "request"
                self.violations.append(f"unexpected {what}: no scripted reply left")
                return Reply(status=500, error_type="api_error", headers=(("x-should-retry", "false"),))
            script = responder
        return script(body) if callable(script) else script

    def _usage(self, body: dict[str, Any], output_tokens: int) -> dict[str, int]:
        """Input usage with the prompt-caching suggestion of anthropic-wire.md §4."""
        system = _system_text(body)
        prefix_parts = [system]
        rest_parts: list[str] = []
        cached_seen = False
        for message in body.get("messages") or []:
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
            for block in blocks:
                data = json.dumps(block, sort_keys=True)
                (rest_parts if cached_seen else prefix_parts).append(data)
                if isinstance(block, dict) and block.get("cache_control"):
                    cached_seen = True
        if not cached_seen:
            rest_parts, prefix_parts = prefix_parts + rest_parts, []
        prefix_tokens = _tokens("".join(prefix_parts))
        rest_tokens = _tokens("".join(rest_parts))
        created = read = 0
        if prefix_parts and prefix_tokens >= self.cache_min_tokens:
            key = hashlib.sha256((str(body.get("model")) + "".join(prefix_parts)).encode()).hexdigest()
            with self._lock:
                if key in self._cached_prefixes:
                    read = prefix_tokens
                else:
                    self._cached_prefixes.add(key)
                    created = prefix_tokens
        else:
            rest_tokens += prefix_tokens if prefix_parts else 0
        return {
            "input_tokens": rest_tokens,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens,
        }


def _tokens(value: str) -> int:
    return math.ceil(len(value) / CHARS_PER_INPUT_TOKEN) if value else 0


def _citation(c: Cite, docs: list[dict[str, Any]], violations: list[str]) -> dict[str, Any]:
    start, end = c.start, c.end
    title = None
    index = c.document_index
    if index is None:
        datas = [(d.get("source") or {}).get("data") or "" for d in docs]
        index = next((i for i, data in enumerate(datas) if c.cited_text in data), len(docs))
        if index == len(docs):
            violations.append(f"scripted citation not found in any issued document: {c.cited_text!r}")
    if 0 <= index < len(docs):
        doc = docs[index]
        title = doc.get("title")
        data = (doc.get("source") or {}).get("data") or ""
        found = data.find(c.cited_text)
        if start is None and found >= 0:
            start = found
    start = 0 if start is None else start
    end = start + len(c.cited_text) if end is None else end
    return {
        "type": "char_location",
        "cited_text": c.cited_text,
        "document_index": index,
        "document_title": title,
        "start_char_index": start,
        "end_char_index": end,
        "file_id": None,
    }


def _message_json(
    reply_: Reply, body: dict[str, Any], usage: dict[str, int], violations: list[str]
) -> dict[str, Any]:
    docs = _documents(body)
    content: list[dict[str, Any]] = []
    if reply_.thinking:
        content.append({"type": "thinking", "thinking": "", "signature": "EsECCokBFAKE"})
    for part in reply_.parts:
        block: dict[str, Any] = {"type": "text", "text": part.text}
        if part.cites:
            block["citations"] = [_citation(c, docs, violations) for c in part.cites]
        content.append(block)
    if reply_.tool_use is not None:
        tool_id = "toolu_01Fake" + hashlib.sha1(json.dumps(reply_.tool_use).encode()).hexdigest()[:12]
        content.append(
            {"type": "tool_use", "id": tool_id, "name": reply_.tool_name, "input": reply_.tool_use}
        )
    return {
        "id": "msg_01Fake" + hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16],
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": reply_.stop_reason,
        "stop_sequence": None,
        "stop_details": None,
        "usage": usage,
    }


def _output_tokens(reply_: Reply) -> int:
    tool = len(json.dumps(reply_.tool_use)) if reply_.tool_use is not None else 0
    return max(
        1, sum(math.ceil(len(p.text) / CHARS_PER_TOKEN) for p in reply_.parts) + tool // CHARS_PER_TOKEN
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeAnthropic

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        pass

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        record = Recorded(path=path, headers={k.lower(): v for k, v in self.headers.items()}, body=body)
        with fake._lock:
            fake.requests.append(record)
        if not (self.headers.get("authorization") or self.headers.get("x-api-key")):
            record.violations.append("request without credentials")
        if path == "/v1/messages/count_tokens":
            if REJECTED_KEY in (self.headers.get("authorization") or ""):
                self._json(401, _error_body("authentication_error", "invalid x-api-key"))
                return
            self._json(200, {"input_tokens": _tokens(json.dumps(body))})
            return
        if path != "/v1/messages":
            self._json(404, _error_body("not_found_error", f"no route {path}"))
            return
        record.violations.extend(check_request(body))
        if record.violations:
            with fake._lock:
                fake.violations.extend(f"request {len(fake.requests)}: {v}" for v in record.violations)
        reply_ = fake._next(body)
        with fake._lock:
            fake._in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        try:
            if reply_.latency:
                time.sleep(reply_.latency)
            self._respond(reply_, body)
        finally:
            with fake._lock:
                fake._in_flight -= 1

    def _respond(self, reply_: Reply, body: dict[str, Any]) -> None:
        fake = self.server_fake
        if reply_.status != 200:
            self._json(
                reply_.status,
                _error_body(reply_.error_type or "api_error", "scripted failure"),
                reply_.headers,
            )
            return
        usage = reply_.usage or fake._usage(body, _output_tokens(reply_))
        if body.get("stream"):
            if reply_.tool_use is not None:
                with fake._lock:
                    fake.violations.append(
                        "a tool_use reply met a streaming request (the judge does not stream)"
                    )
            self._stream(reply_, body, usage)
            return
        if reply_.stream_only:
            with fake._lock:
                fake.violations.append("a reply that exists only on a stream met a non-streaming request")
        self._json(200, _message_json(reply_, body, usage, fake.violations), reply_.headers)

    def _json(self, status: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, event: str, payload: dict[str, Any]) -> None:
        frame = f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()
        self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
        self.wfile.flush()

    def _stream(self, reply_: Reply, body: dict[str, Any], usage: dict[str, int]) -> None:
        fake = self.server_fake
        delay = fake.token_delay if reply_.token_delay is None else reply_.token_delay
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake_stream")
        for name, value in reply_.headers:
            self.send_header(name, value)
        self.end_headers()
        message = _message_json(reply_, body, usage, fake.violations)
        start_usage = {**usage, "output_tokens": 1}
        try:
            self._chunk(
                "message_start",
                {
                    "type": "message_start",
                    "message": {**message, "content": [], "stop_reason": None, "usage": start_usage},
                },
            )
            self._think(reply_.think_latency)
            index = 0
            if reply_.thinking:
                self._chunk(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                )
                self._chunk(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "signature_delta", "signature": "EsECCokBFAKE"},
                    },
                )
                self._chunk("content_block_stop", {"type": "content_block_stop", "index": 0})
                index = 1
            blocks = [b for b in message["content"] if b["type"] == "text"]
            for done, block in enumerate(blocks):
                if reply_.error_after is not None and done == reply_.error_after:
                    self._chunk("error", _error_body(reply_.error_event_type, "scripted mid-stream error"))
                    self._end()
                    return
                if reply_.eof_after is not None and done == reply_.eof_after:
                    self._end()
                    return
                if reply_.cut_after is not None and done == reply_.cut_after:
                    self._cut()
                    return
                start_block: dict[str, Any] = {"type": "text", "text": ""}
                if "citations" in block:
                    start_block["citations"] = []
                self._chunk(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start_block},
                )
                if done == 0:
                    self._chunk("ping", {"type": "ping"})
                if not reply_.citations_last:
                    self._citations(block, index)
                value = block["text"]
                for pos in range(0, len(value), CHARS_PER_TOKEN):
                    if delay:
                        time.sleep(delay)
                    self._chunk(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": value[pos : pos + CHARS_PER_TOKEN]},
                        },
                    )
                if reply_.citations_last:
                    self._citations(block, index)
                self._chunk("content_block_stop", {"type": "content_block_stop", "index": index})
                index += 1
            if reply_.error_after is not None and reply_.error_after >= len(blocks):
                self._chunk("error", _error_body(reply_.error_event_type, "scripted mid-stream error"))
                self._end()
                return
            if reply_.eof_after is not None and reply_.eof_after >= len(blocks):
                self._end()
                return
            if reply_.cut_after is not None and reply_.cut_after >= len(blocks):
                self._cut()
                return
            self._chunk(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "type": "message_delta",
                        "stop_reason": reply_.stop_reason,
                        "stop_sequence": None,
                        "stop_details": None,
                    },
                    "usage": usage,
                },
            )
            self._chunk("message_stop", {"type": "message_stop"})
            self._end()
        except (BrokenPipeError, ConnectionResetError):
            with fake._lock:
                fake.disconnects += 1
            self.close_connection = True

    def _think(self, seconds: float) -> None:
        """Wait `seconds` after `message_start`, sending a `ping` every second (the SDK skips them)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            self._chunk("ping", {"type": "ping"})

    def _citations(self, block: dict[str, Any], index: int) -> None:
        for citation in block.get("citations", []):
            self._chunk(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "citations_delta", "citation": citation},
                },
            )

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        """Break the connection mid-body: the client sees an incomplete chunked response."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_fake"}


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A started fake Messages API; fails the test if a request broke the contract or a reply went unused."""
    fake = FakeAnthropic().start()
    try:
        yield fake
    finally:
        fake.stop()
    assert not fake.violations, f"fake Anthropic saw contract violations: {fake.violations}"
    assert not fake.pending, f"{fake.pending} scripted replies were never requested"


@pytest.fixture
def claude_env(fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """The Claude path's environment: ANTHROPIC_API_KEY=test, ANTHROPIC_BASE_URL at the fake, MOCK unset."""
    monkeypatch.delenv("MOCK", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    get_settings.cache_clear()
    yield fake_anthropic
    get_settings.cache_clear()
