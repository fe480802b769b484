"""JSON shapes of the HTTP API: domain dataclasses to the dicts `rag.api.schemas` describes.

Every object naming a chunk gains `chunk_url` (`/chunks/{chunk_id}`, `#` encoded as `%23`) and
`link` (the document URL when there is one, else `chunk_url`), so citations are clickable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import orjson
from fastapi.responses import Response

from rag.answer.events import Event, encode
from rag.serialize import jsonable
from rag.types import Answer, Chunk, Citation, Document

# Stream events whose payload names chunks; their chunk references gain `link` and `chunk_url`.
LINKED_EVENTS = frozenset({"meta", "sentence", "refusal"})


@lru_cache(maxsize=65_536)
def chunk_path(chunk_id: str) -> str:
    """The API path of a chunk, with `#` (and every other reserved character) percent-encoded."""
    return "/chunks/" + quote(chunk_id, safe="")


def with_links(value: Any) -> Any:
    """Add `link` (document URL, else the chunk path) and `chunk_url` to every JSON object naming a chunk."""
    if isinstance(value, dict):
        out = {k: with_links(v) for k, v in value.items()}
        chunk_id = out.get("chunk_id")
        if isinstance(chunk_id, str):
            out["chunk_url"] = chunk_path(chunk_id)
            out["link"] = out.get("url") or out["chunk_url"]
        return out
    if isinstance(value, list):
        return [with_links(v) for v in value]
    return value


def citation_json(c: Citation) -> dict[str, Any]:
    """One citation as `CitationOut` (written out field by field: this is the hot path of /ask)."""
    path = chunk_path(c.chunk_id)
    return {
        "n": c.n,
        "chunk_id": c.chunk_id,
        "title": c.title,
        "url": c.url,
        "link": c.url or path,
        "chunk_url": path,
        "cited_text": c.cited_text,
        "start": c.start,
        "end": c.end,
    }


def answer_json(answer: Answer) -> dict[str, Any]:
    """The Answer as the `AnswerOut` JSON: no full block texts, clickable citations."""
    u = answer.usage
    return {
        "question": answer.question,
        "text": answer.text,
        "sentences": [
            {"text": s.text, "citations": [citation_json(c) for c in s.citations]} for s in answer.sentences
        ],
        "citations": [citation_json(c) for c in answer.citations],
        "abstained": answer.abstained,
        "reason": answer.reason,
        "message": answer.message,
        "conflict": with_links(jsonable(answer.conflict)) if answer.conflict else None,
        "closest": with_links(jsonable(answer.closest)),
        "dropped": [{"text": d.text, "detail": list(d.detail)} for d in answer.dropped],
        "blocks": [
            {"n": b.n, "chunk_id": b.chunk.chunk_id, "title": b.chunk.title, "score": round(b.score, 4)}
            for b in answer.blocks
        ],
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
            "retries": u.retries,
        },
        "timings": answer.timings,
        "trace_id": answer.trace_id,
    }


def chunk_json(chunk: Chunk) -> dict[str, Any]:
    result: dict[str, Any] = with_links(jsonable(chunk))
    return result


def document_json(doc: Document, chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The document's metadata (not its text, nor where it sits on the server) and its chunks."""
    meta = {k: v for k, v in jsonable(doc).items() if k not in ("text", "source_path")}
    return {**meta, "chunks": [chunk_json(c) for c in chunks]}


def json_response(content: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(content), status_code=status, headers=headers, media_type="application/json")


def error_response(
    status: int, type_: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return json_response({"error": {"type": type_, "message": message}}, status, headers)


def encode_event(event: Event) -> bytes:
    """SSE bytes for one event (the `events.encode` framing), chunk references made clickable."""
    if event.name not in LINKED_EVENTS:
        return encode(event)
    data = orjson.dumps(with_links(event.payload()))
    return b"event: " + event.name.encode() + b"\ndata: " + data + b"\n\n"
