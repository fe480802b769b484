"""Dense embeddings for hybrid retrieval: the `Embedder` protocol, the Voyage implementation, and
`embed_many`, which packs texts from many documents into requests at the API's per-request limits
and keeps a bounded number of them in flight.

Offline (no `VOYAGE_API_KEY`, or `MOCK=1`) there is no embedder: `make_embedder` returns None
and retrieval is lexical only. Every vector is stored with the model that made it (`Embedder.model`),
so vectors of two models are never compared.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag.breaker import CircuitBreaker
from rag.config import Settings
from rag.errors import UpstreamRejected
from rag.types import Chunk
from rag.voyage import (
    EMBED_MAX_INPUTS,
    call_voyage,
    embed_token_limit,
    voyage_breaker,
    voyage_client,
    voyage_client_for,
    voyage_tokens,
)

__all__ = [
    "EmbedRun",
    "Embedder",
    "VoyageEmbedder",
    "embed_many",
    "embedding_text",
    "make_embedder",
    "plan_batches",
    "voyage_client",
]

logger = logging.getLogger(__name__)

# Rejections that every later request would meet too (a refused key, a base URL that answers 404):
# an ingest stops at the first one instead of sending the rest.
FATAL_TYPES = frozenset({"upstream_auth_failed", "upstream_model_not_found"})


class Embedder(Protocol):
    name: str
    model: str
    max_inputs: int
    max_tokens: int

    def count_tokens(self, text: str) -> int:
        """An estimate of the provider's token count for `text`, never below it."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of one dimension), in ONE request: the caller sizes the
        batch within `max_inputs` and `max_tokens` (`plan_batches`)."""
        ...

    def embed_query(self, text: str) -> list[float]: ...


def embedding_text(chunk: Chunk) -> str:
    """What is embedded or reranked for a chunk: its provenance line, then its original text."""
    where = f"{chunk.title} > {chunk.section}" if chunk.section else chunk.title
    return f"{where}\n\n{chunk.text}"


def plan_batches(
    texts: Sequence[str], *, max_inputs: int, max_tokens: int, count: Callable[[str], int]
) -> list[range]:
    """Consecutive index ranges covering `texts`, each within `max_inputs` texts and `max_tokens` tokens.

    Greedy and order-keeping. A single text over `max_tokens` goes alone (the API truncates it).
    """
    batches: list[range] = []
    start = tokens = 0
    for i, text in enumerate(texts):
        n = count(text)
        if i > start and (i - start >= max_inputs or tokens + n > max_tokens):
            batches.append(range(start, i))
            start, tokens = i, 0
        tokens += n
    if start < len(texts):
        batches.append(range(start, len(texts)))
    return batches


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedRun:
    """What `embed_many` did: texts embedded and not, requests made, and the distinct errors seen."""

    embedded: int = 0
    failed: int = 0
    requests: int = 0
    errors: tuple[str, ...] = ()


def embed_many(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    on_batch: Callable[[range, list[list[float]]], None],
    concurrency: int = 4,
) -> EmbedRun:
    """Embed `texts` in requests packed to the embedder's limits, at most `concurrency` in flight.

    `on_batch(indices, vectors)` runs in the calling thread as each request completes, so a
    failure later in the run keeps what was already stored. A failed request (after its retries)
    is counted and the run goes on; a rejected key or a base URL that answers 404 (FATAL_TYPES)
    stops the run and is raised once the requests in flight finish.
    """
    batches = iter(
        plan_batches(
            texts, max_inputs=embedder.max_inputs, max_tokens=embedder.max_tokens, count=embedder.count_tokens
        )
    )
    workers = max(1, concurrency)
    tally = _Tally()
    running: dict[Future[list[list[float]]], range] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed") as pool:

        def fill() -> None:
            """Send the next batches until `workers` are in flight; none after a fatal rejection."""
            while tally.fatal is None and len(running) < workers:
                batch = next(batches, None)
                if batch is None:
                    return
                running[pool.submit(embedder.embed_documents, [texts[i] for i in batch])] = batch

        fill()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                tally.take(future, running.pop(future), on_batch)
            fill()
    if tally.fatal is not None:
        raise tally.fatal
    return EmbedRun(
        embedded=tally.embedded,
        failed=len(texts) - tally.embedded,
        requests=tally.requests,
        errors=tuple(tally.errors),
    )


@dataclass(slots=True)
class _Tally:
    """What the completed requests of one `embed_many` run came to so far."""

    embedded: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    fatal: UpstreamRejected | None = None

    def take(
        self,
        future: Future[list[list[float]]],
        batch: range,
        on_batch: Callable[[range, list[list[float]]], None],
    ) -> None:
        """Count one completed request: hand its vectors to `on_batch`, or note why it failed."""
        self.requests += 1
        try:
            vectors = future.result()
        except Exception as exc:  # a failed request: its texts stay without vectors
            if isinstance(exc, UpstreamRejected) and exc.type in FATAL_TYPES:
                self.fatal = self.fatal or exc
            elif str(exc) not in self.errors:
                self.errors.append(str(exc))
            return
        on_batch(batch, vectors)
        self.embedded += len(batch)


class VoyageEmbedder:
    """Voyage `embed` with input_type "document" at ingest and "query" at question time.

    `client` is anything with the `voyageai.Client.embed` signature (tests pass a real client
    pointed at a loopback fake server). Each call is one request with `call_voyage`'s retries
    and breaker; failures raise UpstreamUnavailable or UpstreamRejected.
    """

    name = "voyage"

    def __init__(
        self,
        *,
        client: Any,
        model: str = "voyage-3.5",
        retries: int = 2,
        breaker: CircuitBreaker | None = None,
        max_inputs: int = EMBED_MAX_INPUTS,
        max_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.retries = retries
        self.breaker = breaker
        self.max_inputs = max_inputs
        self.max_tokens = max_tokens if max_tokens is not None else embed_token_limit(model)

    @classmethod
    def from_settings(cls, settings: Settings) -> VoyageEmbedder:
        return cls(
            client=voyage_client_for(settings),
            model=settings.voyage_embed_model,
            retries=settings.model_max_retries,
            breaker=voyage_breaker(settings),
        )

    def count_tokens(self, text: str) -> int:
        return voyage_tokens(text)

    def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        def request() -> list[list[float]]:
            result = self.client.embed(texts, model=self.model, input_type=input_type)
            vectors = [[float(x) for x in vector] for vector in result.embeddings]
            if len(vectors) != len(texts) or len({len(v) for v in vectors}) != 1 or not vectors[0]:
                raise ValueError(
                    f"malformed reply: {len(vectors)} embeddings of dimensions "
                    f"{sorted({len(v) for v in vectors})} for {len(texts)} texts"
                )
            return vectors

        return call_voyage(request, what="embed", retries=self.retries, breaker=self.breaker)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(list(texts), "document") if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query")[0]


def make_embedder(settings: Settings) -> Embedder | None:
    """The Voyage embedder when a key is set and MOCK is off; None otherwise (lexical retrieval only)."""
    return VoyageEmbedder.from_settings(settings) if settings.use_voyage else None
