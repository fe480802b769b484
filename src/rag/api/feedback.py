"""The route for the people who ask to say how an answer did ("helpful / wrong"); example questions
are `rag.api.examples`.

- `POST /feedback`: a verdict (`helpful` or `wrong`) with an optional note on the answer named by its
  trace id (the `X-Trace-Id` of the ask, also in the stream's `meta`). The question is copied from
  the ask log when the trace is there, else taken from the body; the caller's principal name is
  recorded with it. Answers 201 with the stored row (without the question or the principal).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from rag.api.middleware import principal_of
from rag.api.responses import json_response
from rag.serialize import jsonable
from rag.store.base import unstorable
from rag.types import Feedback

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


def add_feedback_routes(app: FastAPI, store: FeedbackStore) -> None:
    """Register `/feedback` on `app`, reading and writing `store`."""

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
