"""Embedding after a lexical ingest: the stored chunks that lack a vector from the embedder's model get
one, a batch at a time, each batch committed as it completes.

`rag serve` runs a `Backfill` in a background thread (`start`): answers never wait for it, and read
BM25 plus whatever is embedded so far. `rag ingest --embed` runs one in the foreground (`run`). A
stopped or killed run resumes where it stopped: the work is whatever still lacks a vector. Several
processes over one store never embed the same chunks: only the holder of the store's lease on the
model embeds (`claim_embedding`), renewed with every batch; a holder that dies frees it after
`LEASE_SECONDS`. A failing encoder stops nothing else: the failure is logged and reported
(`EmbedProgress.state` "failed"), retried after `RETRY_SECONDS`, and retrieval stays lexical.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rag.embeddings.batching import Embedder, embedding_text
from rag.types import Chunk

__all__ = ["Backfill", "EmbedProgress", "EmbeddingStore"]

logger = logging.getLogger(__name__)

# A holder that stops renewing its lease (a killed process) frees the work after this long.
LEASE_SECONDS = 120.0
# How often an idle task looks for chunks a later ingest added, or a waiting one for a free lease.
POLL_SECONDS = 5.0
# How long a task waits after a failed batch before trying again.
RETRY_SECONDS = 60.0

State = Literal["running", "waiting", "done", "failed"]


class EmbeddingStore(Protocol):
    """The part of `rag.store.Store` a backfill uses."""

    def chunks_missing_embeddings(self, model: str, limit: int | None = None) -> list[Chunk]: ...

    def put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> int: ...

    def embedding_progress(self, model: str, *, groups: frozenset[str] | None = None) -> tuple[int, int]: ...

    def claim_embedding(
        self, model: str, holder: str, seconds: float, *, now: float | None = None
    ) -> bool: ...

    def release_embedding(self, model: str, holder: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedProgress:
    """How far the chunks are embedded by `model`: `embedded` of `total`, and what the task is doing
    ("waiting": another process holds the lease and embeds them)."""

    model: str
    embedded: int
    total: int
    state: State
    error: str = ""

    def json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "embedded": self.embedded,
            "total": self.total,
            "state": self.state,
            "error": self.error,
        }


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Backfill:
    """Embeds `store`'s chunks lacking a vector from `embedder.model`, `batch` at a time (the
    embedder's `max_inputs` when None)."""

    def __init__(
        self,
        store: EmbeddingStore,
        embedder: Embedder,
        *,
        batch: int | None = None,
        lease: float = LEASE_SECONDS,
        poll: float = POLL_SECONDS,
        retry: float = RETRY_SECONDS,
        holder: str | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = max(1, batch if batch is not None else embedder.max_inputs)
        self.lease = lease
        self.poll = poll
        self.retry = retry
        self.holder = holder or _holder()
        self.embedded = 0  # chunks this task embedded
        self.error = ""
        self._waiting = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def model(self) -> str:
        return self.embedder.model

    def step(self) -> int:
        """Embed one batch under the lease: the number of chunks embedded, 0 when none lack a vector or
        another holder has the lease (`waiting`). The embedder's exceptions propagate (the lease is
        given up first)."""
        embedded, total = self.store.embedding_progress(self.model)
        if embedded >= total:  # nothing to do: no write, no lease
            self._waiting = False
            return 0
        if not self.store.claim_embedding(self.model, self.holder, self.lease):
            self._waiting = True
            return 0
        self._waiting = False
        chunks = self.store.chunks_missing_embeddings(self.model, limit=self.batch)
        if not chunks:
            self.store.release_embedding(self.model, self.holder)
            return 0
        try:
            vectors = self.embedder.embed_documents([embedding_text(c) for c in chunks])
        except Exception:
            self.store.release_embedding(self.model, self.holder)
            raise
        self.store.put_embeddings(self.model, [(c.chunk_id, v) for c, v in zip(chunks, vectors, strict=True)])
        self.embedded += len(chunks)
        self.error = ""
        return len(chunks)

    def progress(self, *, groups: frozenset[str] | None = None) -> EmbedProgress:
        """Counts from the store now (what `groups` may read) and the task's state."""
        embedded, total = self.store.embedding_progress(self.model, groups=groups)
        state: State
        if self.error:
            state = "failed"
        elif embedded >= total:
            state = "done"
        else:
            state = "waiting" if self._waiting else "running"
        return EmbedProgress(model=self.model, embedded=embedded, total=total, state=state, error=self.error)

    def run(self, *, on_batch: Callable[[EmbedProgress], None] | None = None) -> int:
        """Embed in this thread until no chunk lacks a vector (waiting while another holder embeds);
        `on_batch` gets the progress after each batch and each wait. Returns the chunks this run
        embedded; the embedder's exceptions propagate."""
        started = self.embedded
        while not self._stop.is_set():
            done = self.step()
            if on_batch is not None:
                on_batch(self.progress())
            if done:
                continue
            if not self._waiting:
                break
            self._stop.wait(self.poll)
        return self.embedded - started

    def start(self) -> None:
        """Embed in a background (daemon) thread until `stop`, watching for chunks later ingests add."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="rag-embed", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                done = self.step()
            except Exception as exc:  # a failing encoder or store: report it, answers stay lexical
                if str(exc) != self.error:
                    logger.warning("background embedding (%s) failed: %s", self.model, exc)
                self.error = str(exc) or type(exc).__name__
                self._stop.wait(self.retry)
                continue
            if not done:
                self._stop.wait(self.poll)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the background thread (after the batch in progress) and give up the lease."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        try:
            self.store.release_embedding(self.model, self.holder)
        except Exception as exc:  # a store already closed or unreachable: the lease expires by itself
            logger.debug("embedding lease not released: %s", exc)
