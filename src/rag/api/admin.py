"""`/admin`: the content owners' page and its data, behind an admin key.

- `GET /admin`: the page (a static shell, public like `/`; it sends the key with every data call);
- `GET /admin/api/summary`: refusal counts per line, refused questions grouped by similarity (with
  counts and the closest passages), the latest refusals, answers marked wrong, feedback counts;
- `GET /admin/api/traces/{trace_id}`: one ask as logged: question, retrieved chunks with scores,
  the reranker and threshold, the blocks sent, every draft sentence's verdict with its reasons,
  timings, usage, the answer, and any feedback on it;
- `GET /admin/api/export?what=refusals|wrong|asks&format=csv|json`: the same lists as a download.

Who may call: when `RAG_ADMIN_KEYS` is set, `Authorization: Bearer <admin key>` (401 without a
key, 403 with a key that is not an admin key). When it is empty, the data is open only while no
`RAG_API_KEYS` are set either (a local, unauthenticated setup); otherwise it is refused with 403.
These paths are outside the API-key middleware: this check is theirs. (Principals with an `admin`
group replace the key list when document-level access lands.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, Response
from starlette.concurrency import run_in_threadpool

from rag.api.middleware import key_matches
from rag.api.responses import error_response, json_response
from rag.config import Settings
from rag.errors import NotFound
from rag.review import ask_row_flat, group_refusals, refusal_row, to_csv, wrong_answers
from rag.serialize import jsonable
from rag.types import Chunk, Feedback, Gap

ADMIN_PREFIX = "/admin"
# Ask-log rows read per summary or export (newest first).
ASKS_READ = 1000
REFUSALS_SHOWN = 50
EXPORT_COLUMNS = {
    "refusals": ("trace_id", "ts", "question", "reason", "top_score", "threshold", "reranker", "closest"),
    "wrong": ("created_at", "trace_id", "question", "note", "reason", "answer"),
    "asks": (
        "trace_id", "ts", "question", "reason", "abstained", "top_score", "threshold", "answer",
        "model_calls", "input_tokens", "output_tokens", "total_ms",
    ),
}  # fmt: skip


@runtime_checkable
class ReviewStore(Protocol):
    """What the admin routes read from the store (every backend has it; see `rag.store.base.Store`)."""

    def recent_asks(self, limit: int = 200, *, abstained: bool | None = None) -> list[dict[str, Any]]: ...

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]: ...

    def gaps(self, limit: int = 50) -> list[Gap]: ...

    def feedback(
        self, limit: int = 50, *, verdict: str | None = None, trace_id: str | None = None
    ) -> list[Feedback]: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


def admin_refusal(request: Request, settings: Settings) -> Response | None:
    """None when the caller may read the admin data, else the 401/403 response to send."""
    admin_keys = settings.admin_key_list
    if not admin_keys:
        if not settings.api_key_list:
            return None
        return error_response(
            403, "forbidden", "the admin pages are closed: set RAG_ADMIN_KEYS to the keys that may open them"
        )
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if not token:
        return error_response(
            401,
            "unauthorized",
            "missing admin key: send Authorization: Bearer <key>",
            {"WWW-Authenticate": "Bearer"},
        )
    if not key_matches(token, admin_keys):
        return error_response(403, "forbidden", "this key may not open the admin pages")
    return None


def _titles(store: ReviewStore, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
    chunks = store.get_chunks(list(dict.fromkeys(chunk_ids)))
    return {c.chunk_id: {"title": c.title, "section": c.section, "doc_id": c.doc_id} for c in chunks}


def summary(store: ReviewStore) -> dict[str, Any]:
    """Everything the admin page shows at first: counts, groups, the latest refusals, wrong answers."""
    asks = store.recent_asks(ASKS_READ)
    refused = [row for row in asks if row["abstained"]]
    groups = group_refusals(refused, store.gaps(ASKS_READ))
    wrong = store.feedback(ASKS_READ, verdict="wrong")
    logged = {row["trace_id"]: row for row in asks}
    for item in wrong:
        if item.trace_id not in logged:
            rows = store.ask_log(item.trace_id)
            if rows:
                logged[item.trace_id] = rows[-1]
    titles = _titles(store, [cid for g in groups for cid, _ in g.closest.most_common(3)])
    verdicts = Counter(f.verdict for f in store.feedback(ASKS_READ))
    return {
        "asks": len(asks),
        "answered": len(asks) - len(refused),
        "refusals": dict(Counter(str(row["reason"]) for row in refused).most_common()),
        "groups": [g.as_json(titles) for g in groups],
        "recent_refusals": [refusal_row(row) for row in refused[:REFUSALS_SHOWN]],
        "wrong": wrong_answers(wrong, logged),
        "feedback": {"helpful": verdicts.get("helpful", 0), "wrong": verdicts.get("wrong", 0)},
        "window": ASKS_READ,
    }


def trace_view(store: ReviewStore, trace_id: str) -> dict[str, Any]:
    """One ask as logged, with chunk titles; raises NotFound for a trace id the log does not hold."""
    rows = store.ask_log(trace_id)
    if not rows:
        raise NotFound(f"unknown trace {trace_id!r}")
    row = rows[-1]
    retrieval = row.get("retrieval") or {}
    retrieved = [(str(r[0]), float(r[1])) for r in retrieval.get("retrieved") or ()]
    blocks = [(int(b[0]), str(b[1])) for b in row.get("blocks") or ()]
    titles = _titles(store, [cid for cid, _ in retrieved] + [cid for _, cid in blocks])
    sent = {cid: n for n, cid in blocks}
    return {
        **{
            k: row.get(k)
            for k in ("trace_id", "ts", "question", "reason", "abstained", "answer", "top_score")
        },
        "reranker": retrieval.get("reranker", ""),
        "threshold": retrieval.get("threshold"),
        "retrieved": [
            {"chunk_id": cid, "score": score, "sent_as": sent.get(cid), **titles.get(cid, {})}
            for cid, score in retrieved
        ],
        "blocks": [{"n": n, "chunk_id": cid, **titles.get(cid, {})} for n, cid in blocks],
        "verdicts": row.get("verdicts") or [],
        "citations": row.get("citations") or [],
        "timings": row.get("timings") or {},
        "usage": row.get("usage") or {},
        "feedback": [jsonable(f) for f in store.feedback(100, trace_id=trace_id)],
        "logged": len(rows),
    }


def export_rows(store: ReviewStore, what: str) -> list[dict[str, Any]]:
    if what == "refusals":
        return [refusal_row(row) for row in store.recent_asks(ASKS_READ, abstained=True)]
    if what == "wrong":
        wrong = store.feedback(ASKS_READ, verdict="wrong")
        logged = {t: rows[-1] for t in {f.trace_id for f in wrong} if (rows := store.ask_log(t))}
        return wrong_answers(wrong, logged)
    return [ask_row_flat(row) for row in store.recent_asks(ASKS_READ)]


def add_admin_routes(app: FastAPI, store: ReviewStore, settings: Settings, static_dir: Path) -> None:
    """Register the `/admin` page and its data routes."""

    @app.get("/admin", response_class=Response, include_in_schema=False)
    async def admin_page() -> Response:
        page = static_dir / "admin.html"
        if page.is_file():
            return FileResponse(page, media_type="text/html")
        return error_response(404, "not_found", "the admin page is not installed")

    @app.get("/admin/api/summary", response_model=None)
    async def admin_summary(request: Request) -> Response:
        """Refusals by line and grouped by similar questions, the latest refusals, answers marked wrong."""
        if (refused := admin_refusal(request, settings)) is not None:
            return refused
        return json_response(await run_in_threadpool(summary, store))

    @app.get("/admin/api/traces/{trace_id}", response_model=None)
    async def admin_trace(request: Request, trace_id: str) -> Response:
        """One ask as logged: retrieval with scores and threshold, blocks sent, verdicts, timings, usage."""
        if (refused := admin_refusal(request, settings)) is not None:
            return refused
        return json_response(await run_in_threadpool(trace_view, store, trace_id))

    @app.get("/admin/api/export", response_model=None)
    async def admin_export(
        request: Request,
        what: Annotated[Literal["refusals", "wrong", "asks"], Query()] = "refusals",
        format: Annotated[Literal["csv", "json"], Query()] = "csv",
    ) -> Response:
        """The refusals, the answers marked wrong, or the ask log, as CSV or JSON (a download)."""
        if (refused := admin_refusal(request, settings)) is not None:
            return refused
        rows = await run_in_threadpool(export_rows, store, what)
        name = f"rag-{what}.{format}"
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        if format == "json":
            return json_response(rows, headers=headers)
        return Response(
            to_csv(rows, EXPORT_COLUMNS[what]), media_type="text/csv; charset=utf-8", headers=headers
        )
