"""Routes for the people who ask: example questions and "helpful / wrong" feedback.

- `GET /examples?limit=4&seed=0`: questions worded from the indexed documents' headings
  (`rag.examples`), one per document the caller may read; cached for `EXAMPLES_TTL` seconds per
  (limit, seed, the caller's groups), so no caller sees a question drawn from a document hidden
  from it.
- `POST /feedback`: a verdict (`helpful` or `wrong`) with an optional note on the answer named by its
  trace id (the `X-Trace-Id` of the ask, also in the stream's `meta`). The question is copied from
  the ask log when the trace is there, else taken from the body; the caller's principal name is
  recorded with it. Answers 201 with the stored row (without the question or the principal).
"""

from __future__ import annotations

import threading
import time
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from rag.api.middleware import principal_of
from rag.api.responses import json_response
from rag.examples import Example, example_questions
from rag.serialize import jsonable
from rag.store.base import unstorable
from rag.types import Feedback, Heading

# How long one draw of example questions is reused before the store is read again (seconds).
EXAMPLES_TTL = 60.0
# Headings read from the store per draw (the first sections of up to this many documents).
HEADINGS_READ = 400
MAX_NOTE_CHARS = 2000
TRACE_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"


def _storable(text: str) -> str:
    """`text`, or ValueError (a 422) when no store can hold it (a NUL or a lone surrogate)."""
    if why := unstorable(text):
        raise ValueError(f"text {why}")
    return text


StorableText = Annotated[str, AfterValidator(_storable)]


@runtime_checkable
class FeedbackStore(Protocol):
    """What these routes need from the store (every backend has it; see `rag.store.base.Store`)."""

    def headings(self, limit: int = 200, *, groups: frozenset[str] | None = None) -> list[Heading]: ...

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]: ...

    def add_feedback(self, feedback: Feedback) -> Feedback: ...


class FeedbackIn(BaseModel):
    """Body of `POST /feedback`."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"trace_id": "3f2a9c1e", "verdict": "wrong", "note": "The limit changed in May."}]
        },
    )

    trace_id: str = Field(pattern=TRACE_PATTERN, description="The answer's trace id (X-Trace-Id).")
    verdict: Literal["helpful", "wrong"]
    note: StorableText = Field(
        "", max_length=MAX_NOTE_CHARS, description="Optional: what was wrong or missing (no NUL)."
    )
    question: StorableText = Field(
        "", max_length=MAX_NOTE_CHARS, description="Used when the ask log lacks the trace (no NUL)."
    )


class FeedbackOut(BaseModel):
    """The stored verdict. The question copied from the ask log is not echoed: a trace id can be
    chosen by a client (X-Request-ID), so echoing it could show one caller another's question."""

    id: int
    trace_id: str
    verdict: Literal["helpful", "wrong"]
    note: str
    created_at: str


class ExampleOut(BaseModel):
    question: str
    doc_id: str
    title: str
    section: str


class ExamplesOut(BaseModel):
    examples: list[ExampleOut]


def add_feedback_routes(app: FastAPI, store: FeedbackStore) -> None:
    """Register `/examples` and `/feedback` on `app`, reading and writing `store`."""
    cache: dict[tuple[int, int, frozenset[str] | None], tuple[float, list[Example]]] = {}
    lock = threading.Lock()

    def draw(limit: int, seed: int, groups: frozenset[str] | None) -> list[Example]:
        now = time.monotonic()
        key = (limit, seed, groups)
        with lock:
            hit = cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        examples = example_questions(store.headings(HEADINGS_READ, groups=groups), limit=limit, seed=seed)
        with lock:
            if len(cache) > 256:
                cache.clear()
            cache[key] = (now + EXAMPLES_TTL, examples)
        return examples

    @app.get("/examples", response_model=None, responses={200: {"model": ExamplesOut}})
    async def examples(
        request: Request,
        limit: Annotated[int, Query(ge=1, le=12, description="How many questions (1..12).")] = 4,
        seed: Annotated[int, Query(ge=0, le=2**31, description="Another seed draws other documents.")] = 0,
    ) -> Response:
        """Example questions worded from the headings of documents the caller may read, one per document."""
        found = await run_in_threadpool(draw, limit, seed, principal_of(request).reads)
        return json_response({"examples": [jsonable(e) for e in found]})

    @app.post("/feedback", status_code=201, response_model=None, responses={201: {"model": FeedbackOut}})
    async def feedback(body: FeedbackIn, request: Request) -> Response:
        """Record a person's verdict on one answer, tied to its trace id and the caller's principal."""
        principal = principal_of(request).name

        def save() -> Feedback:
            logged = store.ask_log(body.trace_id)
            question = str(logged[0]["question"]) if logged else body.question.strip()
            record = Feedback(
                trace_id=body.trace_id,
                verdict=body.verdict,
                note=body.note.strip(),
                question=question,
                principal=principal,
            )
            return store.add_feedback(record)

        stored = await run_in_threadpool(save)
        return json_response(
            {k: v for k, v in jsonable(stored).items() if k not in ("question", "principal")}, status=201
        )
