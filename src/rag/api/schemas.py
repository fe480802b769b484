"""HTTP request and response models: pydantic lives here and nowhere else in the package.

Requests are validated by these models. Responses are serialised from the domain
dataclasses with `orjson` (see `rag.api`); the response models below describe that JSON
for OpenAPI and carry an example each, so `/docs` shows what every endpoint returns.
Offsets are end-exclusive; block numbers `n` are 1-based and valid for one request only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator
from pydantic.json_schema import models_json_schema

QUESTION = "How many vacation days do new employees get?"
CHUNK_ID = "handbook#c03"
CITED = "New employees receive 20 vacation days per calendar year."


def _examples(*examples: dict[str, Any]) -> ConfigDict:
    return ConfigDict(json_schema_extra={"examples": list(examples)})


class _Out(BaseModel):
    """Response models forbid unknown keys, so a test can prove they describe the JSON exactly."""

    model_config = ConfigDict(extra="forbid")


# A question must hold one character that is neither whitespace (as `str.strip` sees it) nor a
# control character (which `validate_question` turns into a space): the JSON Schema of that rule.
QUESTION_PATTERN = "[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
QUESTION_SCHEMA: dict[str, Any] = {"minLength": 1, "pattern": QUESTION_PATTERN}


class TurnIn(BaseModel):
    """An earlier turn of a conversation, as the client showed it."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        description="The earlier question, as asked (bounded as a question).",
        json_schema_extra=QUESTION_SCHEMA,
    )
    answer: str = Field(
        "",
        description="The answer shown for it (at most RAG_MAX_HISTORY_ANSWER_CHARS characters); context"
        " for what the new question refers to, never evidence.",
    )


class AskRequest(BaseModel):
    """Body of `POST /ask` and `POST /ask/stream`."""

    model_config = ConfigDict(
        extra="forbid",
        **_examples(
            {"question": QUESTION, "top_k": 8},
            {
                "question": "And part-time staff?",
                "conversation_id": "c-2f9a",
                "history": [{"question": QUESTION, "answer": CITED}],
            },
        ),
    )

    question: str = Field(
        description="Not empty, whitespace or control characters only; at most RAG_MAX_QUESTION_CHARS"
        " (2,000) characters once surrounding whitespace is stripped.",
        json_schema_extra=QUESTION_SCHEMA,
    )
    top_k: StrictInt | None = Field(
        None,
        ge=1,
        le=50,
        description="Chunks retrieved and reranked (1..50): a JSON integer (8 or 8.0, as JSON Schema"
        " counts integers), never a string, a bool or a fraction.",
    )
    history: list[TurnIn] = Field(
        default_factory=list,
        description="The earlier turns of this conversation, oldest first (at most RAG_MAX_HISTORY_TURNS,"
        " 8 by default; more is a 422). Stateless: send them with every follow-up. Retrieval searches for"
        " the follow-up's standalone question (`searched_for` in the answer) with the caller's own"
        " groups; only this turn's blocks are cited.",
    )
    conversation_id: str | None = Field(
        None,
        description="The client's id for the conversation, recorded in the ask log with the turn number:"
        " 1 to 64 letters, digits or '.', '_', ':', '-', starting with a letter or digit.",
        json_schema_extra={"pattern": "^(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,63})?$"},
    )

    @field_validator("top_k", mode="before")
    @classmethod
    def _integral_number(cls, value: Any) -> Any:
        """8.0 is the integer 8 in JSON Schema, so it is taken as 8; 8.5 and "8" stay refused."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


class CitationOut(_Out):
    n: int = Field(description="1-based block number as issued for this request.")
    chunk_id: str
    title: str
    url: str = Field(description="The source document's own URL, empty when it has none.")
    link: str = Field(description="Where to open the source: the document URL, else /chunks/{chunk_id}.")
    chunk_url: str = Field(description="The chunk in this API: /chunks/{chunk_id}, '#' encoded as %23.")
    cited_text: str = Field(description="Verbatim substring of the original chunk text.")
    start: int = Field(description="Offset of cited_text in the chunk text.")
    end: int = Field(description="End-exclusive offset of cited_text in the chunk text.")
    page: int | None = Field(default=None, description="1-based page of the cited chunk (PDF), else null.")


class SentenceOut(_Out):
    text: str
    starts: Literal["", "paragraph", "item", "numbered", "header", "row"] = Field(
        "",
        description="Where the sentence starts in the layout: running on, a new paragraph, a list item, a"
        " numbered item, or a table row (a header row comes with the first row under it)",
    )
    citations: list[CitationOut]
    withheld: list[str] = Field(
        default_factory=list, description="Why any other citation of this sentence was not verified."
    )
    number: int | None = Field(None, description="A numbered item's number.")
    cells: list[str] | None = Field(
        None, description='A table row\'s cells as shown ("" for a cell whose citation did not verify).'
    )


class DroppedOut(_Out):
    text: str = Field(description="A sentence withheld because no citation of it verified.")
    detail: list[str] = Field(description="One specific reason per failed citation.")


class MayAnswerOut(_Out):
    start: int = Field(description="Offset of the sentence in the chunk's text.")
    end: int = Field(description="End offset (exclusive).")
    text: str = Field(description="The sentence: it may answer; no model confirmed it.")


class ChunkRefOut(_Out):
    chunk_id: str
    title: str
    section: str
    url: str
    link: str
    chunk_url: str
    score: float = Field(description="Reranker relevance in [0, 1].")
    updated_at: str | None
    may_answer: MayAnswerOut | None = Field(
        None,
        description="Offline refusals: the passage's sentence likeliest to answer, to highlight (no answer).",
    )


class StatementOut(_Out):
    n: int
    chunk_id: str
    doc_id: str
    title: str
    url: str
    link: str
    chunk_url: str
    updated_at: str | None
    text: str
    quantity: str
    value: float
    unit: str
    start: int
    end: int


class ConflictOut(_Out):
    dimension: str
    context: list[str]
    statements: list[StatementOut]
    policy: Literal["present_both", "prefer_newest"]


class UsageOut(_Out):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    retries: int
    calls: int = Field(0, description="Model responses received for this answer.")
    cost_usd: float = Field(0.0, description="Estimated cost in USD from the configured price table.")


class BlockOut(_Out):
    n: int
    chunk_id: str
    title: str
    section: str
    page: int | None = Field(default=None, description="1-based page of a paged source (PDF), else null")
    url: str
    link: str
    chunk_url: str
    updated_at: str | None
    score: float


class AnswerOut(_Out):
    """The answer to one question, or a refusal (`abstained`) with its reason."""

    model_config = _examples(
        {
            "question": QUESTION,
            "text": CITED,
            "sentences": [
                {
                    "text": CITED,
                    "citations": [
                        {
                            "n": 1,
                            "chunk_id": CHUNK_ID,
                            "title": "Employee handbook",
                            "url": "",
                            "link": "/chunks/handbook%23c03",
                            "chunk_url": "/chunks/handbook%23c03",
                            "cited_text": CITED,
                            "start": 0,
                            "end": len(CITED),
                        }
                    ],
                }
            ],
            "citations": [],
            "abstained": False,
            "reason": "",
            "message": "",
            "conflict": None,
            "closest": [],
            "dropped": [],
            "blocks": [
                {
                    "n": 1,
                    "chunk_id": CHUNK_ID,
                    "title": "Employee handbook",
                    "section": "Time off",
                    "url": "",
                    "link": "/chunks/handbook%23c03",
                    "chunk_url": "/chunks/handbook%23c03",
                    "updated_at": "2026-01-15",
                    "score": 0.81,
                }
            ],
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "retries": 0,
            },
            "timings": {"retrieve": 2.1, "generate": 0.4, "verify": 0.3, "total": 3.2},
            "trace_id": "6f1c2a0e9b8d4c7fa2e35b1d0c9e8f7a",
            "reranker": "hybrid",
        },
        {
            "question": "Who won the 1998 football world cup?",
            "text": "",
            "sentences": [],
            "citations": [],
            "abstained": True,
            "reason": "low_retrieval_score",
            "message": "I couldn't find this in the knowledge base.",
            "conflict": None,
            "closest": [],
            "dropped": [],
            "blocks": [],
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "retries": 0,
            },
            "timings": {"retrieve": 1.2, "total": 1.3},
            "trace_id": "0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a",
            "reranker": "lexical",
        },
    )

    question: str
    searched_for: str = Field(
        "",
        description="What retrieval searched for: the question, or a follow-up's standalone question"
        " (the earlier question's subject carried into it).",
    )
    text: str = Field(description="The emitted sentences joined; empty when abstained.")
    sentences: list[SentenceOut]
    citations: list[CitationOut] = Field(description="Every distinct citation, deduplicated.")
    abstained: bool
    reason: Literal[
        "", "low_retrieval_score", "conflicting_sources", "no_citations", "reply_cut", "reply_declined"
    ]
    message: str = Field(description="The refusal wording when abstained, or a note on the answer.")
    cut: bool = Field(
        False, description="The model's reply was cut short; its unfinished sentence is not shown."
    )
    conflict: ConflictOut | None
    closest: list[ChunkRefOut] = Field(description="Closest matches offered with a refusal.")
    dropped: list[DroppedOut]
    blocks: list[BlockOut] = Field(description="The blocks issued to the generator, by number.")
    usage: UsageOut
    timings: dict[str, float] = Field(description="Milliseconds per stage.")
    trace_id: str
    reranker: str = Field(
        "",
        description="The reranker whose scores the blocks and closest matches carry: lexical, hybrid or"
        " voyage (lexical when a Voyage rerank failed and fell back); empty when nothing was retrieved.",
    )


class ChunkOut(_Out):
    """One chunk: the original text with its provenance."""

    model_config = _examples(
        {
            "chunk_id": CHUNK_ID,
            "doc_id": "handbook",
            "title": "Employee handbook",
            "section": "Employee handbook > Time off",
            "text": CITED,
            "updated_at": "2026-03-02",
            "url": "",
            "link": "/chunks/handbook%23c03",
            "chunk_url": "/chunks/handbook%23c03",
            "page": None,
            "start_char": 1520,
            "end_char": 1520 + len(CITED),
        }
    )

    chunk_id: str
    doc_id: str
    title: str
    section: str
    text: str = Field(description="The original chunk text, never rewritten.")
    updated_at: str | None
    url: str
    link: str
    chunk_url: str
    page: int | None
    start_char: int = Field(description="Offset of the chunk in its document's text.")
    end_char: int = Field(description="End-exclusive offset of the chunk in its document's text.")


class DocumentOut(_Out):
    """A document's metadata and its chunks in order."""

    model_config = _examples(
        {
            "doc_id": "handbook",
            "title": "Employee handbook",
            "url": "",
            "updated_at": "2026-03-02",
            "content_hash": "3b5d0c...",
            "access": ["hr"],
            "chunks": [ChunkOut.model_config["json_schema_extra"]["examples"][0]],  # type: ignore[index]
            "next_cursor": None,
        }
    )

    doc_id: str
    title: str
    url: str
    updated_at: str | None
    content_hash: str
    access: list[str] = Field(description="groups that may read it; empty means everyone")
    chunks: list[ChunkOut] = Field(description="One page of the chunks, in order.")
    next_cursor: str | None = Field(description="`cursor` of the next page; null after the last page.")


class HealthOut(_Out):
    model_config = _examples({"status": "ok"})

    status: Literal["ok"]


class EmbeddingOut(_Out):
    """How far the stored chunks are embedded for dense retrieval by the configured model."""

    model: str = Field(description="The embedding model, e.g. local/all-MiniLM-L6-v2 or voyage-3.5.")
    embedded: int = Field(description="Chunks with a vector from this model.")
    total: int = Field(description="All chunks (that the caller may read).")
    state: Literal["running", "waiting", "done", "failed", "incomplete"] = Field(
        description="running: this server embeds in the background (answers use BM25 plus what is"
        " embedded so far); waiting: another process does; done; failed: the encoder failed (answers"
        " use BM25 alone; retried); incomplete: vectors made at ingest are missing (run `rag ingest`)."
    )
    error: str = ""


class ReadyOut(_Out):
    """Readiness: the store answers, and what it holds; which components serve answers."""

    model_config = _examples(
        {
            "status": "ready",
            "message": "",
            "backend": "sqlite",
            "documents": 24,
            "chunks": 180,
            "embeddings": 0,
            "generator": "offline-extractive",
            "reranker": "hybrid",
            "min_score": 0.35,
            "embedding": {
                "model": "local/all-MiniLM-L6-v2",
                "embedded": 120,
                "total": 180,
                "state": "running",
                "error": "",
            },
        },
        {
            "status": "empty",
            "message": "the store holds no documents yet: run `rag ingest PATH`",
            "backend": "sqlite",
            "documents": 0,
            "chunks": 0,
            "embeddings": 0,
            "generator": "offline-extractive",
            "reranker": "lexical",
            "min_score": 0.35,
        },
    )

    status: Literal["ready", "empty"]
    message: str
    backend: str
    documents: int
    chunks: int
    embeddings: int
    generator: str
    reranker: str
    min_score: float
    breakers: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Circuit breaker per model provider in use: state (closed, open, half_open), failures"
        " in a row, failed and short-circuited calls, seconds until a trial call, last error.",
    )
    embedding: EmbeddingOut | None = Field(
        None, description="Dense retrieval's embedding progress; null when retrieval is BM25 only."
    )


class ErrorDetail(_Out):
    type: str = Field(description="Stable machine-readable type, e.g. invalid_question, not_found.")
    message: str = Field(description="Human-readable; never a stack trace.")


class ErrorOut(_Out):
    """Every error response has this shape."""

    model_config = _examples({"error": {"type": "not_found", "message": "unknown chunk 'nope#c01'"}})

    error: ErrorDetail


# --- the events of `/ask/stream`: each `data:` line is one JSON object of the model its event names


class MetaEventOut(_Out):
    """`event: meta`, first: the blocks issued to the generator and the gate that let them through."""

    blocks: list[BlockOut]
    context_tokens: int = Field(description="Estimated tokens of the blocks sent.")
    trace_id: str
    reranker: str = Field(description="lexical, hybrid or voyage: the scale of the blocks' scores.")
    min_score: float = Field(description="The retrieval gate's threshold on that scale.")
    searched_for: str = Field(
        "", description="What retrieval searched for: the question, or a follow-up's standalone question."
    )


class RefusalEventOut(_Out):
    """`event: refusal`: the answer is refused with its reason (before generation, or after it)."""

    reason: Literal[
        "low_retrieval_score", "conflicting_sources", "no_citations", "reply_cut", "reply_declined"
    ]
    message: str
    closest: list[ChunkRefOut]
    conflict: ConflictOut | None
    searched_for: str = Field(
        "", description="What retrieval searched for, on a refusal before generation (no `meta` came first)."
    )


class DoneEventOut(_Out):
    """`event: done`, always last: counts of the sentences emitted and dropped."""

    status: Literal["answered", "abstained", "error"]
    emitted: int
    dropped: int
    cut: bool = Field(description="The model's reply was cut short; its unfinished sentence is not shown.")
    usage: UsageOut
    detail: str = Field("", description="Why the stream ended in error, when it did (absent otherwise).")
    timings: dict[str, float] = Field(
        default_factory=dict, description="Milliseconds per stage (absent when none)."
    )


SSE_EVENTS: dict[str, type[BaseModel]] = {
    "meta": MetaEventOut,
    "sentence": SentenceOut,
    "dropped": DroppedOut,
    "refusal": RefusalEventOut,
    "error": ErrorDetail,
    "done": DoneEventOut,
}
"""Event name -> the model of its `data:` JSON (`rag.answer.events` writes them, in this order)."""

SSE_EXAMPLE = (
    "event: meta\n"
    'data: {"blocks":[{"n":1,"chunk_id":"handbook#c03","title":"Employee handbook","section":"Time off",'
    '"url":"","updated_at":"2026-03-02","score":0.81}],"context_tokens":530,"trace_id":"6f1c..."}\n\n'
    "event: sentence\n"
    'data: {"text":"New employees receive 20 vacation days per calendar year.","citations":[{"n":1,'
    '"chunk_id":"handbook#c03","title":"Employee handbook","url":"","link":"/chunks/handbook%23c03",'
    '"chunk_url":"/chunks/handbook%23c03","cited_text":"...","start":0,"end":48}]}\n\n'
    ": keep-alive\n\n"
    "event: done\n"
    'data: {"status":"answered","emitted":1,"dropped":0}\n\n'
)


def sse_media(description: str) -> dict[str, Any]:
    """The `text/event-stream` media type of a stream route. Before OpenAPI 3.2 its `schema` describes
    one event: `event` is one of the names, `data` a JSON string whose `contentSchema` is that event's
    model (a $ref into the components `with_sse_events` adds)."""
    events = [
        {
            "type": "object",
            "required": ["event", "data"],
            "properties": {
                "event": {"const": name},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": f"#/components/schemas/{model.__name__}"},
                },
            },
        }
        for name, model in SSE_EVENTS.items()
    ]
    return {"schema": {"description": description, "oneOf": events}, "example": SSE_EXAMPLE}


def with_sse_events(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (an OpenAPI document) with the models of every SSE event among its components."""
    _, defs = models_json_schema(
        [(model, "serialization") for model in SSE_EVENTS.values()],
        ref_template="#/components/schemas/{model}",
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, model_schema in defs.get("$defs", {}).items():
        components.setdefault(name, model_schema)
    return schema
