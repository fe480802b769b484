"""`GET /examples`: example questions the system answers, as it is configured, for the caller.

Candidates are worded from the headings of the documents the caller may read (`rag.examples`); each
is then asked through the answer core `POST /ask` runs (`QAService.answer`), under the caller's
principal and without writing the ask log or the gap queue, and only those answered (not refused)
are offered. So a chip never shows what the caller could not read, and never one its click refuses.

The answered examples are kept in a pool per (corpus version, reader, the caller's groups): built
once, in a background thread, and reused until an ingest moves the store's `corpus_version()`
(see `ExamplePools` for what is offered while the next one is built).
Cost: a pool asks at most `Settings.example_asks` questions (`RAG_EXAMPLES_ASKS` with the offline
reader; `RAG_EXAMPLES_ASKS_CLAUDE`, small, with Claude, where each is a model call), one document's
candidates until one answers, and stops once `POOL_SIZE` are answered. A request waits at most
`WAIT_SECONDS` for a pool being built, then answers `{"examples": [], "pending": true}`: the page
asks again a moment later. A build a provider failure cut short is kept only `RETRY_SECONDS`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, runtime_checkable

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from rag.access import Principal
from rag.api.middleware import principal_of
from rag.api.responses import json_response
from rag.errors import NotFound, RagError
from rag.examples import Example, answered, candidates, pick
from rag.serialize import jsonable
from rag.types import Answer, Chunk, Document, Heading

# Answered examples kept per pool: the most one request may ask for.
POOL_SIZE = 12
# Headings read from the store per pool (the first sections of up to this many documents), and the
# chunks read of each document reached, for its sections' opening sentences.
HEADINGS_READ = 400
CHUNKS_READ = 200
# Seconds a request waits for a pool being built, and a cut-short pool is kept before a retry.
WAIT_SECONDS = 0.5
RETRY_SECONDS = 60.0
# Audiences whose last pool is kept at most (the oldest dropped first).
MAX_POOLS = 64

log = logging.getLogger("rag.api")


class _Named(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class ExampleStore(Protocol):
    """What the pools read from the store (every backend has it; see `rag.store.base.Store`)."""

    def corpus_version(self) -> str: ...

    def get_document(self, doc_id: str, *, groups: frozenset[str] | None = None) -> Document: ...

    def headings(self, limit: int = 200, *, groups: frozenset[str] | None = None) -> list[Heading]: ...

    def document_chunks(
        self, doc_id: str, *, groups: frozenset[str] | None = None, start: int = 0, limit: int | None = None
    ) -> list[Chunk]: ...


class Asker(Protocol):
    """The answer core, as `rag.answer.pipeline.Pipeline` offers it."""

    @property
    def generator(self) -> _Named: ...

    def answer(self, question: str, *, principal: Principal | None = None, record: bool = True) -> Answer: ...


class ExampleOut(BaseModel):
    question: str
    doc_id: str
    title: str
    section: str


class ExamplesOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "examples": [
                        {
                            "question": "How do I restore a deleted task?",
                            "doc_id": "user-manual",
                            "title": "User Manual",
                            "section": "Tasks > Restoring a deleted task",
                        }
                    ],
                    "pending": False,
                }
            ]
        }
    )

    examples: list[ExampleOut]
    pending: bool = False


@dataclass
class Pool:
    """The answered examples of one corpus version for one audience; `ready` is set once built."""

    version: str
    ready: threading.Event = field(default_factory=threading.Event)
    examples: list[Example] = field(default_factory=list)
    expires: float = math.inf  # monotonic seconds; finite for a build a failure cut short
    asked: int = 0


def _openings(store: ExampleStore, groups: frozenset[str] | None) -> Callable[[str], dict[str, str]]:
    """doc_id -> {section: the text of its first chunk}, from the first `CHUNKS_READ` chunks."""

    def read(doc_id: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for chunk in store.document_chunks(doc_id, groups=groups, limit=CHUNKS_READ):
            found.setdefault(chunk.section, chunk.text)
        return found

    return read


class ExamplePools:
    """Pools of answered example questions, built in the background (see the module): per audience
    (reader, groups) the last pool built and at most one being built.

    While the corpus moves (an ingest; vectors stored by the background embedding), the last pool
    built is offered until the current version's is ready, less any example whose document the
    caller can no longer read; a build for an older version still running is left to finish first,
    so a corpus that keeps moving costs one build at a time, never one per version."""

    def __init__(self, store: ExampleStore, qa: Asker, *, asks: int) -> None:
        self.store, self.qa, self.asks = store, qa, asks
        self._built: dict[tuple[str, frozenset[str] | None], Pool] = {}
        self._building: dict[tuple[str, frozenset[str] | None], Pool] = {}
        self._lock = threading.Lock()

    def pool(self, principal: Principal) -> Pool | None:
        """The pool of the current corpus version for `principal` (being built when new: see
        `Pool.ready`); None while a build for an older version is still running."""
        version = self.store.corpus_version()
        audience = (self.qa.generator.name, principal.reads)
        with self._lock:
            built = self._built.get(audience)
            if built is not None and built.version == version and built.expires > time.monotonic():
                return built
            building = self._building.get(audience)
            if building is not None:
                return building if building.version == version else None
            pool = self._building[audience] = Pool(version=version)
        thread = threading.Thread(
            target=self._build, args=(pool, principal, audience), name="rag-examples", daemon=True
        )
        thread.start()
        return pool

    def _build(self, pool: Pool, principal: Principal, audience: tuple[str, frozenset[str] | None]) -> None:
        groups = principal.reads

        def answers(question: str) -> bool:
            pool.asked += 1
            return not self.qa.answer(question, principal=principal, record=False).abstained

        try:
            headings = self.store.headings(HEADINGS_READ, groups=groups)
            per_doc = candidates(headings, _openings(self.store, groups))
            pool.examples = answered(per_doc, answers, keep=POOL_SIZE, max_asks=self.asks)
        except RagError as exc:  # a provider or the store failed: offer nothing now, try again later
            log.warning("example questions: %s: %s", type(exc).__name__, exc)
            pool.expires = time.monotonic() + RETRY_SECONDS
        except Exception:
            log.exception("example questions could not be built")
            pool.expires = time.monotonic() + RETRY_SECONDS
        finally:
            with self._lock:
                self._built[audience] = pool
                self._building.pop(audience, None)
                if len(self._built) > MAX_POOLS:
                    self._built.pop(next(iter(self._built)))
            pool.ready.set()

    def _readable(self, examples: list[Example], groups: frozenset[str] | None) -> list[Example]:
        """`examples` whose documents `groups` may still read (for a pool of an older version)."""
        kept = []
        for example in examples:
            try:
                self.store.get_document(example.doc_id, groups=groups)
            except NotFound:
                continue
            kept.append(example)
        return kept

    def draw(
        self, principal: Principal, *, limit: int, seed: int, wait: float = WAIT_SECONDS
    ) -> list[Example] | None:
        """At most `limit` answered examples for `principal`, drawn by `seed`; None while none is
        built yet after `wait` seconds (the last pool built, re-checked for access, while the current
        version's is being built)."""
        pool = self.pool(principal)
        if pool is not None and pool.ready.wait(wait):
            return pick(pool.examples, limit=limit, seed=seed)
        with self._lock:
            last = self._built.get((self.qa.generator.name, principal.reads))
        if last is None:
            return None
        return pick(self._readable(last.examples, principal.reads), limit=limit, seed=seed)


def add_example_routes(app: FastAPI, pools: ExamplePools) -> None:
    """Register `GET /examples` on `app`, drawing from `pools`."""

    @app.get("/examples", response_model=None, responses={200: {"model": ExamplesOut}})
    async def examples(
        request: Request,
        limit: Annotated[int, Query(ge=1, le=POOL_SIZE, description="How many questions (1..12).")] = 4,
        seed: Annotated[int, Query(ge=0, le=2**31, description="Another seed draws other documents.")] = 0,
    ) -> Response:
        """Example questions the system answers for the caller, worded from the headings of documents
        it may read, one per document; `pending` while they are still being asked (ask again)."""
        principal = principal_of(request)
        found = await run_in_threadpool(lambda: pools.draw(principal, limit=limit, seed=seed))
        body: dict[str, Any] = {"examples": [jsonable(e) for e in found or []], "pending": found is None}
        return json_response(body)
