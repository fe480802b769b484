"""The `Embedder` protocol, what is embedded for a chunk, and `embed_many`, which packs texts from
many documents into requests at an embedder's per-request limits and keeps a bounded number of them
in flight (the Voyage path at ingest; the local encoder embeds in batches of its own, `backfill`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

from rag.errors import UpstreamRejected
from rag.types import Chunk

__all__ = ["FATAL_TYPES", "EmbedRun", "Embedder", "embed_many", "embedding_text", "plan_batches"]

logger = logging.getLogger(__name__)

# Rejections that every later request would meet too (a refused key, a base URL that answers 404):
# an ingest stops at the first one instead of sending the rest.
FATAL_TYPES = frozenset({"upstream_auth_failed", "upstream_model_not_found"})


class Embedder(Protocol):
    """Texts to vectors. `model` names what made a vector (stored with it: vectors of two models are
    never compared); `background` says when chunks are embedded: by a background task after a
    lexical ingest (True: the local encoder, `rag.embeddings.backfill`), or by the ingest itself
    (False: Voyage)."""

    name: str
    model: str
    max_inputs: int
    max_tokens: int
    background: bool

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
