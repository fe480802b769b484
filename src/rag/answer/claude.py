"""The Anthropic adapter: Claude with the native Citations API, streamed or not, and compression.

`ClaudeGenerator` sends one `document` block per assembled block and turns the response's
text blocks and their `char_location` citations into draft sentences: `document_index` i
becomes block number n = i + 1 (an index outside the issued documents is passed through,
so verification rejects it as a nonexistent number), `cited_text` becomes the claim's span.
Both paths feed the same `parse.SentenceBuffer`, so a sentence collects the citations of
every content block it overlaps. SDK errors are translated here, once: after the SDK's own
retries, provider trouble becomes `UpstreamUnavailable`, a rejected key `ConfigError`.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import math
import time
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import anthropic
import httpx2
from anthropic.types import TextBlock

from rag.answer.compress import Compression, compression_of, keep_verbatim
from rag.answer.parse import SentenceBuffer
from rag.answer.prompt import (
    COMPRESS_NONE,
    COMPRESS_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    compress_user_text,
    conversation_messages,
    is_refusal,
    user_content,
)
from rag.config import Settings
from rag.errors import ConfigError, RagError, UpstreamRejected, UpstreamUnavailable
from rag.language.text import sentence_spans
from rag.types import INCOMPLETE, Block, Claim, Draft, Generation, Piece, Turn, Usage

log = logging.getLogger(__name__)

# The SDK honours any `retry-after` without a cap. A provider that asks for a longer wait than
# `Settings.model_retry_wait` (10 s by default) is not retried at all: retrying sooner than it asked
# would only be refused again, and the client gets our 503 with the provider's own Retry-After at once,
# on both routes. So one call takes at most about
# (max_retries + 1) * model_timeout + max_retries * model_retry_wait seconds.
# Retry-After given to our own clients when the provider did not send one (seconds).
DEFAULT_RETRY_AFTER = 30.0
_UPSTREAM_STATUSES = frozenset({200, 408, 409, 429})


class _BoundedRetryWait(anthropic.Middleware):
    """Stops the SDK's retry of a response whose `retry-after` is longer than `cap` seconds, keeping
    the provider's wait for our 503."""

    def __init__(self, cap: float) -> None:
        self.cap = cap

    def handle(self, request: Any, call_next: Any) -> Any:
        response = call_next(request)
        _cap_retry_headers(response.http_response.headers, self.cap)
        return response

    async def handle_async(self, request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        _cap_retry_headers(response.http_response.headers, self.cap)
        return response


def _cap_retry_headers(headers: httpx2.Headers, cap: float) -> None:
    wait = _retry_after(headers)
    if wait is not None and wait > cap:
        headers["x-rag-retry-after"] = str(wait)
        headers["x-should-retry"] = "false"  # the SDK obeys it over its own rules


def _retry_after(headers: httpx2.Headers | None) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (number or HTTP date); None when absent or bad."""
    if headers is None:
        return None
    for name, scale in (("x-rag-retry-after", 1.0), ("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


# Provider statuses that retrying cannot fix, as our error types (HTTP 502 to our clients).
_REJECTED_TYPES = {
    400: "upstream_bad_request",
    401: "upstream_auth_failed",
    403: "upstream_auth_failed",
    404: "upstream_model_not_found",
    413: "upstream_request_too_large",
}
# Statuses the provider may recover from, as our error types (HTTP 503 with Retry-After).
_UNAVAILABLE_TYPES = {429: "upstream_rate_limited", 529: "upstream_overloaded"}


def translate_error(exc: Exception, *, model: str = "") -> RagError:
    """One SDK or transport error as our error: UpstreamRejected for a request the provider refuses
    for good, UpstreamUnavailable for trouble that may pass; each with a specific `type`."""
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status in _UPSTREAM_STATUSES or status >= 500:
            return _unavailable_status(exc, status)
        return _rejected_status(exc, status, model)
    if isinstance(exc, anthropic.APITimeoutError):
        return UpstreamUnavailable(
            "the model provider timed out after retries", retry_after=DEFAULT_RETRY_AFTER
        )
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        return UpstreamUnavailable(
            f"the connection to the model provider failed: {type(exc).__name__}",
            retry_after=DEFAULT_RETRY_AFTER,
        )
    if isinstance(exc, anthropic.APIError):
        return UpstreamUnavailable(f"the model provider failed: {exc}", retry_after=DEFAULT_RETRY_AFTER)
    return RagError(f"unexpected model client error: {type(exc).__name__}: {exc}")


def _unavailable_status(exc: anthropic.APIStatusError, status: int) -> UpstreamUnavailable:
    """A status the provider may recover from (status 200: an error event mid-stream), with the
    provider's wait rounded up to whole seconds (at least 1), or DEFAULT_RETRY_AFTER without one."""
    wait = _retry_after(exc.response.headers if status != 200 else None)
    retry_after = max(1.0, math.ceil(wait)) if wait is not None else DEFAULT_RETRY_AFTER
    kind = getattr(exc, "type", None) or f"HTTP {status}"
    where = "mid-stream" if status == 200 else f"status {status}"
    return UpstreamUnavailable(
        f"the model provider is unavailable ({kind}, {where}) after retries",
        retry_after=retry_after,
        type=_UNAVAILABLE_TYPES.get(status, "upstream_unavailable"),
    )


def _rejected_status(exc: anthropic.APIStatusError, status: int, model: str) -> UpstreamRejected:
    """A status retrying cannot fix, with a message that says what to change."""
    type_ = _REJECTED_TYPES.get(status, "upstream_bad_request")
    if type_ == "upstream_auth_failed":
        message = f"ANTHROPIC_API_KEY was rejected by the Anthropic API ({status}); set a valid key"
    elif type_ == "upstream_model_not_found":
        message = f"the Anthropic API does not know model {model!r} (404); check RAG_GENERATION_MODEL"
    else:
        message = f"the Anthropic API rejected the request (status {status}): {exc.message}"
    return UpstreamRejected(message, type=type_)


CLIENT_ERRORS: tuple[type[Exception], ...] = (anthropic.APIError, httpx2.TransportError)


def claim_of(citation: Any) -> Claim:
    """A native citation as a claim: document_index i -> block n = i + 1 (no index -> n = 0, nonexistent),
    with the API's `start_char_index`/`end_char_index` into the document sent (verify checks they hold
    `cited_text` before using them)."""
    index = getattr(citation, "document_index", None)
    n = index + 1 if isinstance(index, int) else 0
    start = getattr(citation, "start_char_index", None)
    end = getattr(citation, "end_char_index", None)
    return Claim(
        n=n,
        cited_text=getattr(citation, "cited_text", None),
        start=start if isinstance(start, int) else None,
        end=end if isinstance(end, int) else None,
    )


CACHE_WRITE_PRICE = 1.25  # times the input price
CACHE_READ_PRICE = 0.1


def cost_of(usage: Usage, price: tuple[float, float] | None) -> float:
    """Estimated USD for `usage` at `price` (USD per million input and output tokens); 0 without one."""
    if price is None:
        return 0.0
    input_price, output_price = price
    tokens_in = (
        usage.input_tokens
        + CACHE_WRITE_PRICE * usage.cache_creation_input_tokens
        + CACHE_READ_PRICE * usage.cache_read_input_tokens
    )
    return round((tokens_in * input_price + usage.output_tokens * output_price) / 1_000_000, 8)


def usage_of(usage: Any, *, retries: int = 0, price: tuple[float, float] | None = None) -> Usage:
    """The SDK's usage object of one response as our Usage (one call, priced at `price`); missing
    counters count as 0."""
    if usage is None:
        return Usage(retries=retries, calls=1)
    counted = Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        retries=retries,
        calls=1,
    )
    return replace(counted, cost_usd=cost_of(counted, price))


def drafts_of(pieces: Iterable[Piece]) -> tuple[Draft, ...]:
    """Sentences from pieces through the same SentenceBuffer the answer core uses."""
    buffer = SentenceBuffer(native=True)
    drafts: list[Draft] = []
    for piece in pieces:
        drafts.extend(buffer.feed(piece))
    drafts.extend(buffer.flush())
    return tuple(drafts)


def client_options(settings: Settings) -> dict[str, Any]:
    if not settings.anthropic_api_key:
        raise ConfigError("ANTHROPIC_API_KEY is not set; set it, or set MOCK=1 to run offline")
    return {
        "api_key": settings.anthropic_api_key,
        "base_url": settings.anthropic_base_url or None,
        "timeout": settings.model_timeout,
        "max_retries": settings.model_max_retries,
        "middleware": [_BoundedRetryWait(settings.model_retry_wait)],
    }


# Prompt caching (anthropic-wire.md 4): writing the cache costs 1.25x the input it holds and a read
# 0.1x, for 5 minutes. A write pays only when a read follows within that time with probability above
# 0.25 / 0.9 = 0.28. A regeneration cannot read what its first call did not write, so what is left is a
# repeat of the same documents (the same question, or one close enough to draw the same blocks).
CACHE_TTL = 300.0
CACHE_REPEAT_WINDOW = 270.0  # seconds: a repeat seen this recently will still find the write alive
CACHE_KEYS = 4096  # prefixes remembered per process


@dataclass(slots=True)
class CachePolicy:
    """Mark the documents for caching only for a repeat: documents sent in the last
    `CACHE_REPEAT_WINDOW` seconds, so a question asked twice writes once and later repeats read. A
    one-off question (most of them) pays no write. Per process; `clock` for tests."""

    clock: Callable[[], float] = time.monotonic
    seen: OrderedDict[str, float] = field(default_factory=OrderedDict)

    def wants(self, model: str, blocks: Sequence[Block]) -> bool:
        key = hashlib.sha256("\0".join([model, *(b.sent_text for b in blocks)]).encode()).hexdigest()
        now = self.clock()
        last = self.seen.pop(key, None)
        self.seen[key] = now
        while len(self.seen) > CACHE_KEYS:
            self.seen.popitem(last=False)
        return last is not None and now - last <= CACHE_REPEAT_WINDOW


class ClaudeGenerator:
    """Generator over the Messages API with native citations (create for answers, stream for SSE)."""

    name = "claude"
    native_citations = True

    def __init__(
        self,
        settings: Settings,
        *,
        client: anthropic.Anthropic | None = None,
        async_client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        self.settings = settings
        self._cache = CachePolicy()
        self._options = client_options(settings) if client is None or async_client is None else {}
        self._client = client
        self._async_client = async_client
        # one async client per event loop: an httpx2 pool must not cross loops
        self._loop_clients: weakref.WeakKeyDictionary[AbstractEventLoop, anthropic.AsyncAnthropic] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def price(self) -> tuple[float, float] | None:
        """USD per million (input, output) tokens of the generation model, None when not in the table."""
        return self.settings.model_prices.get(self.settings.generation_model)

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = anthropic.Anthropic(**self._options)
        return self._client

    def async_client(self) -> anthropic.AsyncAnthropic:
        """The injected async client, or one per running event loop."""
        if self._async_client is not None:
            return self._async_client
        loop = get_running_loop()
        client = self._loop_clients.get(loop)
        if client is None:
            # a plain pool (the SDK's default wrapper schedules its close on whatever loop runs at
            # garbage collection, which fails for a pool bound to a loop that has since closed)
            client = anthropic.AsyncAnthropic(
                **self._options, http_client=anthropic.DefaultAsyncHttpxClient()
            )
            self._loop_clients[loop] = client
        return client

    def request(
        self,
        question: str,
        blocks: Sequence[Block],
        feedback: Sequence[str] = (),
        max_tokens: int | None = None,
        history: Sequence[Turn] = (),
    ) -> dict[str, Any]:
        """The keyword arguments of one Messages call (shared by both routes).

        `history`: the earlier turns of a conversation, sent as user and assistant messages before
        this turn's user message (which alone carries document blocks, so only they are citable).

        The output budget is the answer's (`max_tokens`) plus a reserve for thinking
        (`thinking_tokens`): current models think first by default and thinking counts against
        `max_tokens`, so without the reserve a long thought leaves no room for the answer. The
        documents are marked for caching only when the same documents went out within the cache's
        lifetime (`CachePolicy`)."""
        cache = self._cache.wants(self.settings.generation_model, blocks)
        return {
            "model": self.settings.generation_model,
            "max_tokens": (max_tokens or self.settings.max_tokens) + self.settings.thinking_tokens,
            "system": SYSTEM_PROMPT,
            "messages": [
                *conversation_messages(history),
                {"role": "user", "content": user_content(question, blocks, feedback, cache=cache)},
            ],
        }

    def check(self) -> None:
        """Probe the key with a free token count; raises ConfigError or UpstreamUnavailable."""
        try:
            self.client.messages.count_tokens(
                model=self.settings.generation_model, messages=[{"role": "user", "content": "ping"}]
            )
        except CLIENT_ERRORS as exc:
            error = translate_error(exc, model=self.settings.generation_model)
            if isinstance(error, UpstreamRejected):
                raise ConfigError(str(error)) from None
            raise error from exc

    def generate(
        self,
        question: str,
        blocks: Sequence[Block],
        *,
        feedback: Sequence[str] = (),
        max_tokens: int | None = None,
        history: Sequence[Turn] = (),
    ) -> Generation:
        """One answer, read whole from the same stream `stream` reads (`max_tokens`: another output
        budget than the settings'; `history`: earlier turns, see `request`). Streaming bounds the
        provider's silence (`model_timeout` per read), not the length of a reply that thinks first; SDK
        retries and restarts count in usage."""
        request = self.request(question, blocks, feedback, max_tokens, history)
        return generation_from([p for p in self._pieces_sync(request) if not p.opened])

    def _pieces_sync(self, request: dict[str, Any]) -> Iterator[Piece]:
        """`stream`'s pieces over the sync client (see `_Attempts` for restarts and early ends)."""
        attempts = _Attempts(limit=self.settings.model_max_retries, price=self.price)
        while True:
            reader, opened = EventReader(), None
            try:
                with self.client.messages.stream(**request) as stream:
                    opened = stream
                    attempts.opened(stream)
                    yield Piece(opened=True)
                    for event in stream:
                        for piece in reader.read(event):
                            attempts.content = True
                            yield piece
            except CLIENT_ERRORS as exc:
                end = attempts.failed(exc, opened, model=self.settings.generation_model)
            else:
                end = attempts.ended(reader, opened)
            if end is not None:
                yield end
                return

    async def stream(
        self, question: str, blocks: Sequence[Block], *, history: Sequence[Turn] = ()
    ) -> AsyncIterator[Piece]:
        """Pieces as `messages.stream` delivers them: first an `opened` piece when the response began
        (HTTP 200; the SDK's retries of 429/5xx are behind it), then the content, then one piece with
        the usage and the stop reason.

        Citations of a block are yielded before its text (the API sends them first; when a block's
        text arrives first, that block is held until its citations are in). When a block stops, an
        empty piece with the next index tells the SentenceBuffer the block is complete. A stream that
        fails, or ends without `message_stop`, before any content is restarted (nothing was shown;
        up to `model_max_retries` times); after some content it ends with the stop reason
        "incomplete", so what came is judged and the sentence in progress is not. Raises
        UpstreamUnavailable (or UpstreamRejected) when the call cannot be made. Closing this generator
        early closes the HTTP stream.
        """
        request = self.request(question, blocks, history=history)
        attempts = _Attempts(limit=self.settings.model_max_retries, price=self.price)
        while True:
            reader, opened = EventReader(), None
            try:
                async with self.async_client().messages.stream(**request) as stream:
                    opened = stream
                    attempts.opened(stream)
                    yield Piece(opened=True)
                    async for event in stream:
                        for piece in reader.read(event):
                            attempts.content = True
                            yield piece
            except CLIENT_ERRORS as exc:
                end = attempts.failed(exc, opened, model=self.settings.generation_model)
            else:
                end = attempts.ended(reader, opened)
            if end is not None:
                yield end
                return


def generation_from(pieces: Sequence[Piece]) -> Generation:
    """A whole reply from its pieces (the last one carries the usage and the stop reason)."""
    body = tuple(pieces[:-1]) if pieces else ()
    end = pieces[-1] if pieces else Piece()
    full = "".join(p.text for p in body)
    refused = is_refusal(full)
    return Generation(
        drafts=() if refused else drafts_of(body),
        text=full,
        pieces=body,
        usage=end.usage or Usage(),
        refused=refused,
        stop_reason=end.stop_reason,
    )


@dataclass(slots=True, kw_only=True)
class _Attempts:
    """One model call's attempts, for both clients: the SDK retries HTTP failures itself; a stream
    that breaks or stops short after HTTP 200 but before any content is started again by us (up to
    `limit` times, the same budget), since nothing was shown; after content, the reply ends
    "incomplete". Usage adds up every attempt the provider answered; `retries` counts them all."""

    limit: int
    price: tuple[float, float] | None
    restarts: int = 0
    sdk_retries: int = 0
    usage: Usage = field(default_factory=Usage)
    content: bool = False

    def opened(self, stream: Any) -> None:
        self.sdk_retries += int(stream.response.request.headers.get("x-stainless-retry-count") or 0)

    def _counted(self, usage: Any) -> Usage:
        self.usage = self.usage + usage_of(usage, price=self.price)
        return replace(self.usage, retries=self.sdk_retries + self.restarts)

    def _restart(self) -> bool:
        if self.content or self.restarts >= self.limit:
            return False
        self.restarts += 1
        return True

    def failed(self, exc: Exception, stream: Any, *, model: str) -> Piece | None:
        """The end of a failed attempt (None: start again); raises when nothing came and it cannot be
        started again, or the provider refused the request for good."""
        error = translate_error(exc, model=model)
        if stream is None:  # no response: the SDK has already spent its retries
            raise error from exc
        usage = self._counted(_snapshot_usage(stream))
        if self._restart():
            return None
        if not self.content:
            raise error from exc
        log.warning("the model stream failed after some content: %s", error)
        return Piece(usage=usage, stop_reason=INCOMPLETE)

    def ended(self, reader: EventReader, stream: Any) -> Piece | None:
        """The end of an attempt that ran to its last event (None: start again)."""
        usage = self._counted(_snapshot_usage(stream))
        if reader.finished:
            return Piece(usage=usage, stop_reason=reader.stop_reason)
        if self._restart():
            return None
        return Piece(usage=usage, stop_reason=INCOMPLETE)


@dataclass(slots=True)
class EventReader:
    """The SDK's stream events in, pieces out (no I/O): citations of a block before its text, an empty
    piece with the next index when a block stops, the stop reason and whether `message_stop` came.

    A cited block whose text arrives before any of its citations is held until its citations are in
    (at the latest when it stops), so its sentences never go out without them.
    """

    cited: set[int] = field(default_factory=set)
    claimed: dict[int, int] = field(default_factory=dict)
    held: dict[int, list[str]] = field(default_factory=dict)
    stop_reason: str = ""
    finished: bool = False

    def read(self, event: Any) -> list[Piece]:
        """The pieces one event yields, dispatched on its `type` (unknown types yield nothing)."""
        kind = event.type
        if kind == "content_block_start":
            block = event.content_block
            if block.type == "text" and block.citations is not None:
                self.cited.add(event.index)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(event.index, event.content_block)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
        elif kind == "message_stop":
            self.finished = True
        return []

    def _delta(self, index: int, delta: Any) -> list[Piece]:
        if delta.type == "citations_delta":
            self.claimed[index] = self.claimed.get(index, 0) + 1
            return [Piece(index=index, claims=(claim_of(delta.citation),))]
        if delta.type != "text_delta":
            return []
        if index in self.held or (index in self.cited and not self.claimed.get(index)):
            self.held.setdefault(index, []).append(delta.text)
            return []
        return [Piece(text=delta.text, index=index)]

    def _stop(self, index: int, block: Any) -> list[Piece]:
        pieces: list[Piece] = []
        late = list(getattr(block, "citations", None) or ())[self.claimed.get(index, 0) :]
        if late:
            self.claimed[index] = self.claimed.get(index, 0) + len(late)
            pieces.append(Piece(index=index, claims=tuple(claim_of(c) for c in late)))
        if index in self.held:
            pieces.append(Piece(text="".join(self.held.pop(index)), index=index))
        pieces.append(Piece(index=index + 1))  # the block is complete: its sentences may go
        return pieces


def _snapshot_usage(stream: Any) -> Any:
    """The usage of a stream that failed part-way: what its `message_start` reported, if it came."""
    try:
        return stream.current_message_snapshot.usage
    except (AssertionError, AttributeError, RuntimeError):
        return None


class ClaudeCompressor:
    """Compressor using the cheap model: each block keeps only its question-relevant sentences, verbatim.

    Blocks are compressed concurrently (a thread pool over the sync client, so it works the same
    from sync code and from inside a running event loop). A block reverts to its original text when
    the reply is not verbatim, empty or the call fails; "NONE" keeps the block's first sentence so the
    numbering is unchanged. Verification never sees the compressed text.
    """

    name = "claude"

    def __init__(self, settings: Settings, *, client: anthropic.Anthropic | None = None) -> None:
        self.settings = settings
        self.client = client or anthropic.Anthropic(**client_options(settings))

    def compress(self, question: str, blocks: Sequence[Block]) -> Compression:
        if not blocks:
            return compression_of(blocks, blocks)
        with ThreadPoolExecutor(max_workers=min(8, len(blocks)), thread_name_prefix="compress") as pool:
            results = list(pool.map(lambda b: self._one(question, b), blocks))
        usage = sum((u for _, u in results), Usage())
        return compression_of(blocks, [b for b, _ in results], usage=usage)

    def _one(self, question: str, block: Block) -> tuple[Block, Usage]:
        original = block.chunk.text
        try:
            raw = self.client.messages.with_raw_response.create(
                model=self.settings.compression_model,
                max_tokens=self.settings.max_tokens,
                system=COMPRESS_SYSTEM_PROMPT,
                messages=[{"role": "user", "content": compress_user_text(question, block.sent_text)}],
            )
            message = raw.parse()
        except CLIENT_ERRORS as exc:
            log.warning(
                "compression of block [%d] failed, keeping it whole: %s", block.n, translate_error(exc)
            )
            return block, Usage()
        usage = usage_of(
            message.usage,
            retries=raw.retries_taken,
            price=self.settings.model_prices.get(self.settings.compression_model),
        )
        reply = "".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
        if reply == COMPRESS_NONE:
            spans = sentence_spans(block.sent_text)
            reply = block.sent_text[spans[0][0] : spans[0][1]] if spans else ""
        lines = [line.strip() for line in reply.splitlines() if line.strip()]
        compressed = keep_verbatim(original, " ".join(lines))
        if compressed == original or len(compressed) >= len(block.sent_text):
            return block, usage
        return replace(block, sent_text=compressed), usage
