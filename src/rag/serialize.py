"""Domain values to JSON: the one serializer behind `/ask`, the SSE events, `rag ask --json` and logs.

`jsonable` converts any domain dataclass generically (logs, eval reports). The `*_json`
functions give the public shapes described by `rag.api.schemas`: every object naming a chunk
gains `chunk_url` (`/chunks/{chunk_id}`, `#` encoded as `%23`) and `link` (the document URL when
there is one, else `chunk_url`), so citations are clickable wherever they are shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import orjson

from rag.types import Answer, Block, Chunk, Citation, Document, Dropped, Sentence, Usage

_SHAPES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _shape(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A dataclass's field names and the derived properties (`header`, `ok`) `jsonable` adds."""
    shape = _SHAPES.get(cls)
    if shape is None:
        fields = tuple(f.name for f in dataclasses.fields(cls))
        derived = tuple(name for name in ("header", "ok") if isinstance(getattr(cls, name, None), property))
        shape = _SHAPES[cls] = (fields, derived)
    return shape


def jsonable(value: Any) -> Any:
    """Recursively convert domain dataclasses, tuples and dates to JSON-ready values."""
    cls = type(value)
    if hasattr(cls, "__dataclass_fields__") and not isinstance(value, type):
        fields, derived = _shape(cls)  # read once per class, not per value
        out = {name: jsonable(getattr(value, name)) for name in fields}
        for name in derived:
            out[name] = getattr(value, name)
        return out
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """`value` as JSON bytes; domain dataclasses go through `jsonable`."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(jsonable(value), option=option)


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


def linked(value: Any) -> Any:
    """A domain value (dataclass, tuple of them, None) as JSON with clickable chunk references."""
    return with_links(jsonable(value))


def citation_json(c: Citation) -> dict[str, Any]:
    """One citation (written out field by field: this is the hot path of /ask)."""
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
        "page": c.page,
    }


def sentence_json(s: Sentence) -> dict[str, Any]:
    out: dict[str, Any] = {
        "text": s.text,
        "starts": s.starts,
        "citations": [citation_json(c) for c in s.citations],
        "withheld": list(s.withheld),
    }
    if s.starts == "numbered":
        out["number"] = s.number
    if s.cells:
        out["cells"] = list(s.cells)
    return out


def dropped_json(d: Dropped) -> dict[str, Any]:
    return {"text": d.text, "detail": list(d.detail)}


def block_json(b: Block) -> dict[str, Any]:
    """A block as issued, without its text: number, chunk, provenance and score."""
    chunk = b.chunk
    path = chunk_path(chunk.chunk_id)
    return {
        "n": b.n,
        "chunk_id": chunk.chunk_id,
        "title": chunk.title,
        "section": chunk.section,
        "page": chunk.page,
        "url": chunk.url,
        "link": chunk.url or path,
        "chunk_url": path,
        "updated_at": chunk.updated_at.isoformat() if chunk.updated_at else None,
        "score": round(b.score, 4),
    }


def usage_json(u: Usage) -> dict[str, int | float]:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "retries": u.retries,
        "calls": u.calls,
        "cost_usd": round(u.cost_usd, 6),
    }


def answer_json(answer: Answer) -> dict[str, Any]:
    """The Answer as the public JSON: no full block texts, clickable citations."""
    return {
        "question": answer.question,
        "searched_for": answer.searched_for or answer.question,
        "text": answer.text,
        "sentences": [sentence_json(s) for s in answer.sentences],
        "citations": [citation_json(c) for c in answer.citations],
        "abstained": answer.abstained,
        "reason": answer.reason,
        "message": answer.message,
        "cut": answer.cut,
        "conflict": linked(answer.conflict),
        "closest": linked(answer.closest),
        "dropped": [dropped_json(d) for d in answer.dropped],
        "blocks": [block_json(b) for b in answer.blocks],
        "usage": usage_json(answer.usage),
        "timings": answer.timings,
        "trace_id": answer.trace_id,
        "reranker": answer.reranker,
    }


def chunk_json(chunk: Chunk) -> dict[str, Any]:
    result: dict[str, Any] = linked(chunk)
    return result


def document_json(doc: Document, chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The document's metadata (not its text, nor where it sits on the server) and its chunks."""
    meta = {k: v for k, v in jsonable(doc).items() if k not in ("text", "source_path")}
    return {**meta, "chunks": [chunk_json(c) for c in chunks]}
