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
import logging
import math
import time
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import AsyncIterator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
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
    is_refusal,
    user_content,
)
from rag.config import Settings
from rag.errors import ConfigError, RagError, UpstreamUnavailable
from rag.text import sentence_spans
from rag.types import Block, Claim, Draft, Generation, Piece, Usage

log = logging.getLogger(__name__)

# The SDK honours any `retry-after` without a cap; waits longer than this are shortened so one
# call takes at most about (max_retries + 1) * model_timeout + max_retries * MAX_RETRY_WAIT seconds.
MAX_RETRY_WAIT = 10.0
# Retry-After given to our own clients when the provider did not send one (seconds).
DEFAULT_RETRY_AFTER = 30.0
_UPSTREAM_STATUSES = frozenset({200, 408, 409, 429})


class _BoundedRetryWait(anthropic.Middleware):
    """Shortens the provider's `retry-after` to MAX_RETRY_WAIT, keeping the original for our 503."""

    def handle(self, request: Any, call_next: Any) -> Any:
        response = call_next(request)
        _cap_retry_headers(response.http_response.headers)
        return response

    async def handle_async(self, request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        _cap_retry_headers(response.http_response.headers)
        return response


def _cap_retry_headers(headers: httpx2.Headers) -> None:
    wait = _retry_after(headers)
    if wait is not None and wait > MAX_RETRY_WAIT:
        headers["x-rag-retry-after"] = str(wait)
        headers["retry-after-ms"] = str(int(MAX_RETRY_WAIT * 1000))


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


def translate_error(exc: Exception, *, model: str = "") -> RagError:
    """One SDK or transport error as our error: ConfigError for keys and models, else UpstreamUnavailable."""
    if isinstance(exc, anthropic.AuthenticationError):
        return ConfigError("ANTHROPIC_API_KEY was rejected by the Anthropic API (401); set a valid key")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return ConfigError(f"ANTHROPIC_API_KEY is not permitted to use this API (403): {exc.message}")
    if isinstance(exc, anthropic.NotFoundError):
        return ConfigError(
            f"the Anthropic API does not know model {model!r} (404); check RAG_GENERATION_MODEL"
        )
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status in _UPSTREAM_STATUSES or status >= 500:
            wait = _retry_after(exc.response.headers if status != 200 else None)
            retry_after = max(1.0, math.ceil(wait)) if wait is not None else DEFAULT_RETRY_AFTER
            kind = getattr(exc, "type", None) or f"HTTP {status}"
            where = "mid-stream" if status == 200 else f"status {status}"
            return UpstreamUnavailable(
                f"the model provider is unavailable ({kind}, {where}) after retries", retry_after=retry_after
            )
        return RagError(f"the Anthropic API rejected the request (status {status}): {exc.message}")
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


_CLIENT_ERRORS: tuple[type[Exception], ...] = (anthropic.APIError, httpx2.TransportError)


def claim_of(citation: Any) -> Claim:
    """A native citation as a claim: document_index i -> block n = i + 1; no index -> n = 0 (nonexistent)."""
    index = getattr(citation, "document_index", None)
    n = index + 1 if isinstance(index, int) else 0
    return Claim(n=n, cited_text=getattr(citation, "cited_text", None))


def usage_of(usage: Any, *, retries: int = 0) -> Usage:
    """The SDK's usage object as our Usage; missing cache counters count as 0."""
    if usage is None:
        return Usage(retries=retries)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        retries=retries,
    )


def pieces_of(content: Iterable[Any]) -> list[Piece]:
    """A complete message's text blocks as pieces, index = content index, as `stream` yields them:
    claims first, then the text, then an empty piece with the next index (the block is complete).
    Thinking and other non-text blocks are skipped but keep their index.
    """
    pieces: list[Piece] = []
    for index, block in enumerate(content):
        if getattr(block, "type", None) != "text":
            continue
        claims = tuple(claim_of(c) for c in block.citations or ())
        if claims:
            pieces.append(Piece(index=index, claims=claims))
        if block.text:
            pieces.append(Piece(text=block.text, index=index))
        pieces.append(Piece(index=index + 1))
    return pieces


def drafts_of(pieces: Iterable[Piece]) -> tuple[Draft, ...]:
    """Sentences from pieces through the same SentenceBuffer the streaming path uses."""
    buffer = SentenceBuffer(native=True)
    drafts: list[Draft] = []
    for piece in pieces:
        drafts.extend(buffer.feed(piece))
    drafts.extend(buffer.flush())
    return tuple(drafts)


def generation_of(message: Any, *, retries: int = 0) -> Generation:
    """A `Message` as a Generation: all text blocks concatenated, drafts with native claims, usage."""
    content = list(message.content)
    full = "".join(b.text for b in content if getattr(b, "type", None) == "text")
    refused = is_refusal(full)
    drafts = () if refused else drafts_of(pieces_of(content))
    return Generation(
        drafts=drafts, text=full, usage=usage_of(message.usage, retries=retries), refused=refused
    )


def _client_options(settings: Settings) -> dict[str, Any]:
    if not settings.anthropic_api_key:
        raise ConfigError("ANTHROPIC_API_KEY is not set; set it, or set MOCK=1 to run offline")
    return {
        "api_key": settings.anthropic_api_key,
        "base_url": settings.anthropic_base_url or None,
        "timeout": settings.model_timeout,
        "max_retries": settings.model_max_retries,
        "middleware": [_BoundedRetryWait()],
    }


class ClaudeGenerator:
    """Generator over the Messages API with native citations (create for answers, stream for SSE)."""

    name = "claude"
    native_citations = True  # the SentenceBuffer takes citations from the API's objects only

    def __init__(
        self,
        settings: Settings,
        *,
        client: anthropic.Anthropic | None = None,
        async_client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        self.settings = settings
        self._options = _client_options(settings) if client is None or async_client is None else {}
        self._client = client
        self._async_client = async_client
        # one async client per event loop: an httpx2 pool must not cross loops
        self._loop_clients: weakref.WeakKeyDictionary[AbstractEventLoop, anthropic.AsyncAnthropic] = (
            weakref.WeakKeyDictionary()
        )

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

    def request(self, question: str, blocks: Sequence[Block], feedback: Sequence[str] = ()) -> dict[str, Any]:
        """The keyword arguments of one Messages call (shared by create and stream)."""
        return {
            "model": self.settings.generation_model,
            "max_tokens": self.settings.max_tokens,
            "system": SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": user_content(question, blocks, feedback)}],
        }

    def check(self) -> None:
        """Probe the key with a free token count; raises ConfigError or UpstreamUnavailable."""
        try:
            self.client.messages.count_tokens(
                model=self.settings.generation_model, messages=[{"role": "user", "content": "ping"}]
            )
        except _CLIENT_ERRORS as exc:
            raise translate_error(exc, model=self.settings.generation_model) from exc

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        """One answer via `messages.create`; retries taken by the SDK are counted in usage."""
        try:
            raw = self.client.messages.with_raw_response.create(**self.request(question, blocks, feedback))
            message = raw.parse()
        except _CLIENT_ERRORS as exc:
            raise translate_error(exc, model=self.settings.generation_model) from exc
        return generation_of(message, retries=raw.retries_taken)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        """Pieces as `messages.stream` delivers them, then one usage piece.

        Citations of a block are yielded before its text (the API sends them first; when a
        block's text arrives first, that block is held until its citations are in). When a
        block stops, an empty piece with the next index tells the SentenceBuffer the block is
        complete, so a sentence ending in it need not wait for the next block. Raises
        UpstreamUnavailable when the stream fails or ends without `message_stop`; closing
        this generator early closes the HTTP stream.
        """
        finished = False
        retries = 0
        usage: Any = None
        try:
            async with self.async_client().messages.stream(**self.request(question, blocks)) as stream:
                retries = int(stream.response.request.headers.get("x-stainless-retry-count") or 0)
                cited: set[int] = set()
                claimed: dict[int, int] = {}
                held: dict[int, list[str]] = {}
                async for sdk_event in stream:
                    event: Any = sdk_event  # dispatched on `type`, which mypy cannot narrow
                    kind = event.type
                    if kind == "content_block_start":
                        block = event.content_block
                        if block.type == "text" and block.citations is not None:
                            cited.add(event.index)
                    elif kind == "content_block_delta":
                        delta, index = event.delta, event.index
                        if delta.type == "text_delta":
                            if index in held or (index in cited and not claimed.get(index)):
                                held.setdefault(index, []).append(delta.text)
                            else:
                                yield Piece(text=delta.text, index=index)
                        elif delta.type == "citations_delta":
                            claimed[index] = claimed.get(index, 0) + 1
                            yield Piece(index=index, claims=(claim_of(delta.citation),))
                    elif kind == "content_block_stop":
                        index = event.index
                        late = list(getattr(event.content_block, "citations", None) or ())[
                            claimed.get(index, 0) :
                        ]
                        if late:
                            claimed[index] = claimed.get(index, 0) + len(late)
                            yield Piece(index=index, claims=tuple(claim_of(c) for c in late))
                        if index in held:
                            yield Piece(text="".join(held.pop(index)), index=index)
                        yield Piece(index=index + 1)  # the block is complete: its sentences may go
                    elif kind == "message_stop":
                        finished = True
                usage = stream.current_message_snapshot.usage
        except _CLIENT_ERRORS as exc:
            raise translate_error(exc, model=self.settings.generation_model) from exc
        if not finished:
            raise UpstreamUnavailable(
                "the model stream ended before message_stop", retry_after=DEFAULT_RETRY_AFTER
            )
        yield Piece(usage=usage_of(usage, retries=retries))


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
        self.client = client or anthropic.Anthropic(**_client_options(settings))
        self.usage = Usage()

    def compress(self, question: str, blocks: Sequence[Block]) -> Compression:
        if not blocks:
            return compression_of(blocks, blocks)
        with ThreadPoolExecutor(max_workers=min(8, len(blocks)), thread_name_prefix="compress") as pool:
            results = list(pool.map(lambda b: self._one(question, b), blocks))
        self.usage = sum((u for _, u in results), Usage())
        return compression_of(blocks, [b for b, _ in results], usage=self.usage)

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
        except _CLIENT_ERRORS as exc:
            log.warning(
                "compression of block [%d] failed, keeping it whole: %s", block.n, translate_error(exc)
            )
            return block, Usage()
        usage = usage_of(message.usage, retries=raw.retries_taken)
        reply = "".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
        if reply == COMPRESS_NONE:
            spans = sentence_spans(block.sent_text)
            reply = block.sent_text[spans[0][0] : spans[0][1]] if spans else ""
        lines = [line.strip() for line in reply.splitlines() if line.strip()]
        compressed = keep_verbatim(original, " ".join(lines))
        if compressed == original or len(compressed) >= len(block.sent_text):
            return block, usage
        return replace(block, sent_text=compressed), usage
