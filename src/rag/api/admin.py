"""`/admin`: the content owners' page and its data, behind an admin key.

- `GET /admin`: the page (a static shell, public like `/`; it sends the key with every data call);
- `GET /admin/api/summary`: refusal counts per line, refused questions grouped by similarity (with
  counts and the closest passages), the latest refusals, answers marked wrong, feedback counts;
- `GET /admin/api/traces/{trace_id}`: one ask as logged: question, retrieved chunks with scores,
  the reranker and threshold, the blocks sent, every draft sentence's verdict with its reasons,
  timings, usage, the answer, and any feedback on it;
- `GET /admin/api/export?what=refusals|wrong|asks&format=csv|json`: the same lists as a download.

Who may call: a principal in the `admin` group (`RAG_PRINCIPALS` / `RAG_PRINCIPALS_FILE`), or a
key in `RAG_ADMIN_KEYS` (kept as a stand-in for that group: such a caller reads as a member of
`admin` alone), sent as `Authorization: Bearer <key>` (401 without a key, 403 with a key that
is neither). When neither is configured, the data is open only while no API keys or principals
are set either (a local, unauthenticated setup, read as the anonymous caller); otherwise it is
refused with 403. These paths are outside the API-key middleware: this check is theirs.

An admin sees what its groups may read, nothing more: an ask that used a chunk the admin may not
read keeps its question and outcome, but not its answer, citations, verdicts or those chunks' ids
(`redacted: true`, `redact_asks`); closest matches and retrieved chunks it may not read are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, Response
from starlette.concurrency import run_in_threadpool

from rag.access import ADMIN_GROUP, Principal
from rag.api.middleware import matching_key
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

    def gaps(self, limit: int = 50, *, groups: frozenset[str] | None = None) -> list[Gap]: ...

    def feedback(
        self, limit: int = 50, *, verdict: str | None = None, trace_id: str | None = None
    ) -> list[Feedback]: ...

    def get_chunks(
        self, chunk_ids: Sequence[str], *, groups: frozenset[str] | None = None
    ) -> list[Chunk]: ...


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


# The principal a key in RAG_ADMIN_KEYS stands for when no principal is configured for it.
ADMIN_KEY_PRINCIPAL = Principal(name="admin-key", groups=frozenset({ADMIN_GROUP}))


def admin_principal(request: Request, settings: Settings) -> Principal | Response:
    """The admin calling, or the 401/403 response to send."""
    principals = settings.principal_map()
    admins = {key: p for key, p in principals.items() if p.admin}
    admin_keys = settings.admin_key_list
    if not admin_keys and not admins:
        if not principals:
            return Principal.anonymous()  # local and unauthenticated: reads what everyone may read
        return error_response(
            403,
            "forbidden",
            "the admin pages are closed: give a principal the admin group, or set RAG_ADMIN_KEYS",
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
    key = matching_key(token, tuple(admins))
    if key is not None:
        return admins[key]
    if matching_key(token, admin_keys) is not None:
        return ADMIN_KEY_PRINCIPAL
    return error_response(403, "forbidden", "this key may not open the admin pages")


def redact_asks(
    store: ReviewStore, rows: list[dict[str, Any]], groups: frozenset[str] | None
) -> list[dict[str, Any]]:
    """Ask-log rows as `groups` may see them: a row that used (sent to the model or cited) a chunk
    they may not read loses its answer, citations and verdicts (`redacted: True`); chunk ids they may
    not read leave its blocks and retrieved list. The question, outcome and principal stay."""
    if groups is None:
        return rows
    ids = [cid for row in rows for cid in _used(row)] + [str(r[0]) for row in rows for r in _retrieved(row)]
    readable = {c.chunk_id for c in store.get_chunks(list(dict.fromkeys(ids)), groups=groups)}
    return [_redacted(row, readable) for row in rows]


def _used(row: dict[str, Any]) -> list[str]:
    """The chunk ids an ask-log row sent to the model or cited."""
    ids = [str(b[1]) for b in row.get("blocks") or () if len(b) > 1]
    ids += [str(c.get("chunk_id", "")) for c in row.get("citations") or () if isinstance(c, dict)]
    return [i for i in ids if i]


def _retrieved(row: dict[str, Any]) -> list[Any]:
    """The row's retrieved (chunk id, score) pairs."""
    retrieval = row.get("retrieval")
    return list(retrieval.get("retrieved") or ()) if isinstance(retrieval, dict) else []


def _redacted(row: dict[str, Any], readable: set[str]) -> dict[str, Any]:
    """A copy of `row` as a reader of the chunks `readable` may see it (see `redact_asks`)."""
    row = dict(row)
    if any(cid not in readable for cid in _used(row)):
        row.update(answer="", citations=[], verdicts=[], redacted=True)
    row["blocks"] = [b for b in row.get("blocks") or () if len(b) > 1 and str(b[1]) in readable]
    if isinstance(row.get("retrieval"), dict):
        row["retrieval"] = {
            **row["retrieval"],
            "retrieved": [r for r in _retrieved(row) if str(r[0]) in readable],
        }
    return row


def _titles(
    store: ReviewStore, chunk_ids: list[str], groups: frozenset[str] | None
) -> dict[str, dict[str, Any]]:
    chunks = store.get_chunks(list(dict.fromkeys(chunk_ids)), groups=groups)
    return {c.chunk_id: {"title": c.title, "section": c.section, "doc_id": c.doc_id} for c in chunks}


def summary(store: ReviewStore, groups: frozenset[str] | None = None) -> dict[str, Any]:
    """Everything the admin page shows at first: counts, groups, the latest refusals, wrong answers;
    as `groups` may see it (`redact_asks`; None: everything)."""
    asks = redact_asks(store, store.recent_asks(ASKS_READ), groups)
    refused = [row for row in asks if row["abstained"]]
    refusal_groups = group_refusals(refused, store.gaps(ASKS_READ, groups=groups))
    wrong = store.feedback(ASKS_READ, verdict="wrong")
    logged = _with_wrong_asks(store, {row["trace_id"]: row for row in asks}, wrong, groups)
    titles = _titles(store, [cid for g in refusal_groups for cid, _ in g.closest.most_common(3)], groups)
    verdicts = Counter(f.verdict for f in store.feedback(ASKS_READ))
    return {
        "asks": len(asks),
        "answered": len(asks) - len(refused),
        "refusals": dict(Counter(str(row["reason"]) for row in refused).most_common()),
        "groups": [g.as_json(titles) for g in refusal_groups],
        "recent_refusals": [refusal_row(row) for row in refused[:REFUSALS_SHOWN]],
        "wrong": wrong_answers(wrong, logged),
        "feedback": {"helpful": verdicts.get("helpful", 0), "wrong": verdicts.get("wrong", 0)},
        "window": ASKS_READ,
    }


def _with_wrong_asks(
    store: ReviewStore,
    logged: dict[str, dict[str, Any]],
    wrong: Sequence[Feedback],
    groups: frozenset[str] | None,
) -> dict[str, dict[str, Any]]:
    """`logged` (trace id -> ask row), completed with the latest logged row of each answer marked
    wrong that is not in it (read from the log, as `groups` may see it)."""
    for item in wrong:
        if item.trace_id not in logged:
            rows = redact_asks(store, store.ask_log(item.trace_id), groups)
            if rows:
                logged[item.trace_id] = rows[-1]
    return logged


# The ask-log row's own fields a trace shows first, and the lists it shows last (empty when unset).
TRACE_FIELDS = ("trace_id", "ts", "question", "reason", "abstained", "answer", "top_score", "principal")
TRACE_LISTS: tuple[tuple[str, type[list[Any]] | type[dict[str, Any]]], ...] = (
    ("verdicts", list),
    ("citations", list),
    ("timings", dict),
    ("usage", dict),
)


def trace_view(store: ReviewStore, trace_id: str, groups: frozenset[str] | None = None) -> dict[str, Any]:
    """One ask as logged, with chunk titles, as `groups` may see it (`redact_asks`); raises NotFound
    for a trace id the log does not hold."""
    rows = redact_asks(store, store.ask_log(trace_id), groups)
    if not rows:
        raise NotFound(f"unknown trace {trace_id!r}")
    row = rows[-1]
    retrieval = row.get("retrieval") or {}
    return {
        **{k: row.get(k) for k in TRACE_FIELDS},
        "redacted": bool(row.get("redacted")),
        "reranker": retrieval.get("reranker", ""),
        "threshold": retrieval.get("threshold"),
        **_sent_view(store, row, retrieval, groups),
        **{k: row.get(k) or empty() for k, empty in TRACE_LISTS},
        "feedback": [jsonable(f) for f in store.feedback(100, trace_id=trace_id)],
        "logged": len(rows),
    }


def _sent_view(
    store: ReviewStore, row: dict[str, Any], retrieval: dict[str, Any], groups: frozenset[str] | None
) -> dict[str, list[dict[str, Any]]]:
    """A trace's retrieved chunks (with the block number each was sent as) and its blocks, titled."""
    retrieved = [(str(r[0]), float(r[1])) for r in retrieval.get("retrieved") or ()]
    blocks = [(int(b[0]), str(b[1])) for b in row.get("blocks") or ()]
    titles = _titles(store, [cid for cid, _ in retrieved] + [cid for _, cid in blocks], groups)
    sent = {cid: n for n, cid in blocks}
    return {
        "retrieved": [
            {"chunk_id": cid, "score": score, "sent_as": sent.get(cid), **titles.get(cid, {})}
            for cid, score in retrieved
        ],
        "blocks": [{"n": n, "chunk_id": cid, **titles.get(cid, {})} for n, cid in blocks],
    }


def export_rows(store: ReviewStore, what: str, groups: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """The rows of one export, as `groups` may see them (`redact_asks`)."""
    if what == "refusals":
        refused = redact_asks(store, store.recent_asks(ASKS_READ, abstained=True), groups)
        return [refusal_row(row) for row in refused]
    if what == "wrong":
        wrong = store.feedback(ASKS_READ, verdict="wrong")
        logged = {
            t: rows[-1]
            for t in {f.trace_id for f in wrong}
            if (rows := redact_asks(store, store.ask_log(t), groups))
        }
        return wrong_answers(wrong, logged)
    return [ask_row_flat(row) for row in redact_asks(store, store.recent_asks(ASKS_READ), groups)]


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
        admin = admin_principal(request, settings)
        if isinstance(admin, Response):
            return admin
        return json_response(await run_in_threadpool(summary, store, admin.reads))

    @app.get("/admin/api/traces/{trace_id}", response_model=None)
    async def admin_trace(request: Request, trace_id: str) -> Response:
        """One ask as logged: retrieval with scores and threshold, blocks sent, verdicts, timings, usage."""
        admin = admin_principal(request, settings)
        if isinstance(admin, Response):
            return admin
        return json_response(await run_in_threadpool(trace_view, store, trace_id, admin.reads))

    @app.get("/admin/api/export", response_model=None)
    async def admin_export(
        request: Request,
        what: Annotated[Literal["refusals", "wrong", "asks"], Query()] = "refusals",
        format: Annotated[Literal["csv", "json"], Query()] = "csv",
    ) -> Response:
        """The refusals, the answers marked wrong, or the ask log, as CSV or JSON (a download)."""
        admin = admin_principal(request, settings)
        if isinstance(admin, Response):
            return admin
        rows = await run_in_threadpool(export_rows, store, what, admin.reads)
        name = f"rag-{what}.{format}"
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        if format == "json":
            return json_response(rows, headers=headers)
        return Response(
            to_csv(rows, EXPORT_COLUMNS[what]), media_type="text/csv; charset=utf-8", headers=headers
        )
