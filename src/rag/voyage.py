"""The Voyage API as this package uses it: the client, the public per-request limits, and one call path
with our own retries and the provider's circuit breaker (shared by embeddings and rerank).

Retries: `RAG_MODEL_MAX_RETRIES` counts retries *after* the first attempt (2 means up to 3
attempts), the same meaning the Anthropic SDK gives its `max_retries`. The `voyageai` SDK's own
`max_retries` counts attempts and retries neither 500 nor connection errors, so its retries are
off (one attempt per SDK call) and `call_voyage` retries here: on 429, any 5xx, timeouts and
connection errors, with exponential backoff and full jitter, honouring `retry-after`. Other
errors (400, 401, 404, 422, a malformed reply) are not retried.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from rag.breaker import CircuitBreaker, breaker_for
from rag.config import VOYAGE_DEFAULT_BASE_URL, Settings, normalise_base_url
from rag.errors import ConfigError, UpstreamRejected, UpstreamUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Public limits (docs.voyageai.com/reference/embeddings-api and /reranker-api).
EMBED_MAX_INPUTS = 1000
# Tokens per embeddings request, by model; a model not listed gets the smallest published limit.
EMBED_MAX_TOKENS = {
    "voyage-4-lite": 1_000_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4": 320_000,
    "voyage-3.5": 320_000,
    "voyage-2": 320_000,
}
EMBED_DEFAULT_MAX_TOKENS = 120_000
RERANK_MAX_DOCUMENTS = 1000
# "query tokens x documents + sum of document tokens" per rerank request.
RERANK_MAX_TOTAL_TOKENS = {"rerank-1": 300_000, "rerank-lite-1": 300_000}
RERANK_DEFAULT_MAX_TOTAL_TOKENS = 600_000
# Share of a token limit a request is filled to: our token count is an estimate, not Voyage's tokenizer.
TOKEN_HEADROOM = 0.9
# UTF-8 bytes per token assumed when estimating Voyage tokens. English averages about 4 characters
# per token with Voyage's tokenizers; 2.5 over-counts, so a batch sized by it stays under the limit.
BYTES_PER_TOKEN = 2.5

# Backoff between attempts: BACKOFF_BASE * 2**retry seconds (full jitter), capped; a server's
# retry-after is honoured up to RETRY_AFTER_MAX.
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
RETRY_AFTER_MAX = 60.0


def voyage_tokens(text: str) -> int:
    """A deliberately high estimate of Voyage's token count for `text` (at least 1)."""
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN))


def embed_token_limit(model: str) -> int:
    """The token budget one embeddings request is filled to for `model` (limit x TOKEN_HEADROOM)."""
    return int(EMBED_MAX_TOKENS.get(model, EMBED_DEFAULT_MAX_TOKENS) * TOKEN_HEADROOM)


def voyage_client(*, api_key: str, base_url: str = "", timeout: float = 60.0) -> Any:
    """A `voyageai.Client` making one attempt per call (retries are `call_voyage`'s).

    `base_url` "" means the SDK default; otherwise it is normalised to end in `/v1`. Imported lazily.
    Raises ConfigError when the optional `voyageai` package (the `voyage` extra) is not installed.
    """
    try:
        from voyageai.client import Client
    except ImportError:
        raise ConfigError(
            "VOYAGE_API_KEY is set but the voyageai package is not installed: "
            "pip install -e '.[voyage]' (make run does it when the key is set), or unset the key"
        ) from None

    return Client(
        api_key=api_key, base_url=normalise_base_url(base_url) or None, timeout=timeout, max_retries=0
    )


def voyage_client_for(settings: Settings) -> Any:
    """The Voyage client the settings describe (key, base URL, model timeout)."""
    return voyage_client(
        api_key=settings.voyage_api_key, base_url=settings.voyage_base_url, timeout=settings.model_timeout
    )


def voyage_breaker(settings: Settings) -> CircuitBreaker:
    """The process-wide breaker for the Voyage API at the configured base URL."""
    where = normalise_base_url(settings.voyage_base_url) or VOYAGE_DEFAULT_BASE_URL
    return breaker_for(
        f"voyage {where}", failures=settings.breaker_failures, cooldown=settings.breaker_cooldown
    )


def http_status(exc: BaseException) -> int | None:
    """The HTTP status a `voyageai` error carries, if any."""
    status = getattr(exc, "http_status", None)
    return int(status) if isinstance(status, int) else None


def is_retryable(exc: BaseException) -> bool:
    """429, any 5xx, a timeout or a lost connection: worth another attempt."""
    status = http_status(exc)
    if status is not None:
        return status == 429 or status >= 500
    return type(exc).__name__ in ("Timeout", "APIConnectionError", "TryAgain", "ServiceUnavailableError")


def retry_after(exc: BaseException) -> float | None:
    """The server's `retry-after` in seconds (capped at RETRY_AFTER_MAX), when it sent a number."""
    headers = getattr(exc, "headers", None) or {}
    try:
        value = headers.get("retry-after")
    except AttributeError:
        return None
    try:
        return min(RETRY_AFTER_MAX, max(0.0, float(value))) if value is not None else None
    except (TypeError, ValueError):
        return None


def backoff(retry: int, exc: BaseException, *, rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number `retry` (0-based): the server's retry-after, else jittered."""
    told = retry_after(exc)
    if told is not None:
        return told
    return float(rng() * min(BACKOFF_MAX, BACKOFF_BASE * 2**retry))


def describe(exc: BaseException) -> str:
    status = http_status(exc)
    text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return f"HTTP {status}: {text}" if status else f"{type(exc).__name__}: {text}"


def call_voyage(
    request: Callable[[], T],
    *,
    what: str,
    retries: int,
    breaker: CircuitBreaker | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`request()` with up to `retries` retries on retryable errors, guarded by `breaker`.

    Raises UpstreamUnavailable when the breaker is open (no request is made) or the retries are
    spent, UpstreamRejected for an error retrying cannot fix (its `type` names a 401 or 404).
    The breaker records one outcome per call, not per attempt.
    """
    if breaker is not None and not breaker.allow():
        raise UpstreamUnavailable(
            f"Voyage {what}: circuit open after repeated failures; retrying in {breaker.retry_in():.0f} s",
            retry_after=max(1.0, breaker.retry_in()),
            type="upstream_circuit_open",
        )
    attempt = 0
    while True:
        try:
            result = request()
        except Exception as exc:
            if is_retryable(exc) and attempt < retries:
                wait = backoff(attempt, exc)
                logger.info(
                    "Voyage %s failed (%s); retry %d/%d in %.2f s",
                    what,
                    describe(exc),
                    attempt + 1,
                    retries,
                    wait,
                )
                attempt += 1
                sleep(wait)
                continue
            if breaker is not None:
                breaker.record_failure(describe(exc))
            raise _translate(exc, what, attempts=attempt + 1) from exc
        if breaker is not None:
            breaker.record_success()
        return result


def _translate(exc: BaseException, what: str, *, attempts: int) -> UpstreamUnavailable | UpstreamRejected:
    status = http_status(exc)
    message = f"Voyage {what} failed after {attempts} attempt(s): {describe(exc)}"
    if is_retryable(exc):
        kind = "upstream_rate_limited" if status == 429 else "upstream_unavailable"
        return UpstreamUnavailable(message, retry_after=retry_after(exc) or 30.0, type=kind)
    if status == 401:
        return UpstreamRejected(message + " (check VOYAGE_API_KEY)", type="upstream_auth_failed")
    if status == 404:
        return UpstreamRejected(
            message + f" (check VOYAGE_BASE_URL: give the API root, e.g. {VOYAGE_DEFAULT_BASE_URL})",
            type="upstream_model_not_found",
        )
    return UpstreamRejected(message)
