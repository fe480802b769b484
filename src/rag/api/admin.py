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
are set either and the server is bound to a loopback address (a local, unauthenticated setup,
read as the anonymous caller); otherwise it is refused with 403. These paths are outside the
API-key middleware: this check is theirs.

An admin sees what its groups may read, nothing more: an ask that retrieved, sent or cited a chunk
the admin may not read is only counted (`hidden` in the summary; its trace shows its id alone,
`redacted: true`): its question, outcome, score, reason and principal would tell what that chunk
says (`visible_asks`). Closest matches it may not read are left out of the gap groups.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, Response
from starlette.concurrency import run_in_threadpool

from rag.access import ADMIN_GROUP, Principal
from rag.api.middleware import matching_key
from rag.api.responses import error_response, json_response
from rag.api.schemas import ErrorOut
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


def on_loopback(request: Request) -> bool:
    """True when the request reached a server socket bound to a loopback address (the ASGI
    `server` of the connection; a Unix socket or an unknown address is not loopback)."""
    server = request.scope.get("server")
    host = str(server[0]) if server else ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def admin_principal(request: Request, settings: Settings) -> Principal | Response:
    """The admin calling, or the 401/403 response to send."""
    principals = settings.principal_map()
    admins = {key: p for key, p in principals.items() if p.admin}
    admin_keys = settings.admin_key_list
    if not admin_keys and not admins:
        if not principals and on_loopback(request):
            return Principal.anonymous()  # local and unauthenticated: reads what everyone may read
        if not principals:
            return error_response(
                403,
                "forbidden",
                "the admin pages are closed: without keys they open only on a server bound to a loopback"
                " address (127.0.0.1, ::1); set RAG_ADMIN_KEYS or give a principal the admin group",
            )
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


@dataclass(frozen=True, slots=True)
class Visible:
    """Ask-log rows as an admin may see them: `rows` whose evidence it may read, and the trace ids
    of the others (shown only as a count)."""

    rows: list[dict[str, Any]]
    hidden: frozenset[str] = frozenset()


def visible_asks(store: ReviewStore, rows: list[dict[str, Any]], groups: frozenset[str] | None) -> Visible:
    """The rows whose evidence (every chunk retrieved, sent to the model or cited) `groups` may
    read, whole; the others only by trace id: their question, outcome, score, reason and principal
    would tell what a document the admin may not read says. A chunk no longer stored counts as
    unreadable. `groups` None (the operator) sees every row."""
    if groups is None:
        return Visible(rows)
    ids = [cid for row in rows for cid in _evidence(row)]
    readable = {c.chunk_id for c in store.get_chunks(list(dict.fromkeys(ids)), groups=groups)}
    shown = [row for row in rows if all(cid in readable for cid in _evidence(row))]
    hidden = {str(row.get("trace_id", "")) for row in rows} - {str(row.get("trace_id", "")) for row in shown}
    return Visible(shown, frozenset(hidden))


def _evidence(row: dict[str, Any]) -> list[str]:
    """The chunk ids an ask-log row retrieved, sent to the model or cited."""
    ids = [str(b[1]) for b in row.get("blocks") or () if len(b) > 1]
    ids += [str(c.get("chunk_id", "")) for c in row.get("citations") or () if isinstance(c, dict)]
    retrieval = row.get("retrieval")
    retrieved = retrieval.get("retrieved") or () if isinstance(retrieval, dict) else ()
    ids += [str(r[0]) for r in retrieved if r]
    return [i for i in ids if i]


def _titles(
    store: ReviewStore, chunk_ids: list[str], groups: frozenset[str] | None
) -> dict[str, dict[str, Any]]:
    chunks = store.get_chunks(list(dict.fromkeys(chunk_ids)), groups=groups)
    return {c.chunk_id: {"title": c.title, "section": c.section, "doc_id": c.doc_id} for c in chunks}


def summary(store: ReviewStore, groups: frozenset[str] | None = None) -> dict[str, Any]:
    """Everything the admin page shows at first: counts, groups, the latest refusals, wrong answers;
    as `groups` may see it (`visible_asks`; None: everything). `asks` counts every logged ask,
    `hidden` those whose evidence `groups` may not read; the rest describes the visible ones."""
    logged = store.recent_asks(ASKS_READ)
    seen = visible_asks(store, logged, groups)
    refused = [row for row in seen.rows if row["abstained"]]
    refusal_groups = group_refusals(refused, store.gaps(ASKS_READ, groups=groups))
    by_trace = {row["trace_id"]: row for row in seen.rows}
    more, also_hidden = _wrong_visible(store, by_trace, seen.hidden, groups)
    hidden = seen.hidden | also_hidden
    wrong = [f for f in store.feedback(ASKS_READ, verdict="wrong") if f.trace_id not in hidden]
    titles = _titles(store, [cid for g in refusal_groups for cid, _ in g.closest.most_common(3)], groups)
    verdicts = Counter(f.verdict for f in store.feedback(ASKS_READ))
    return {
        "asks": len(logged),
        "hidden": len(hidden),
        "answered": len(seen.rows) - len(refused),
        "refusals": dict(Counter(str(row["reason"]) for row in refused).most_common()),
        "groups": [g.as_json(titles) for g in refusal_groups],
        "recent_refusals": [refusal_row(row) for row in refused[:REFUSALS_SHOWN]],
        "wrong": wrong_answers(wrong, by_trace | more),
        "feedback": {"helpful": verdicts.get("helpful", 0), "wrong": verdicts.get("wrong", 0)},
        "window": ASKS_READ,
    }


def _wrong_visible(
    store: ReviewStore,
    logged: dict[str, dict[str, Any]],
    hidden: frozenset[str],
    groups: frozenset[str] | None,
) -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    """The latest visible ask-log row (trace id -> row) of each answer marked wrong that `logged`
    does not hold, read from the log; and the trace ids among them `groups` may not see."""
    found: dict[str, dict[str, Any]] = {}
    more: set[str] = set()
    for item in store.feedback(ASKS_READ, verdict="wrong"):
        if item.trace_id in logged or item.trace_id in hidden or item.trace_id in found:
            continue
        seen = visible_asks(store, store.ask_log(item.trace_id), groups)
        if seen.rows:
            found[item.trace_id] = seen.rows[-1]
        more |= seen.hidden
    return found, frozenset(more)


# The ask-log row's own fields a trace shows first, and the lists it shows last (empty when unset).
TRACE_FIELDS = ("trace_id", "ts", "question", "reason", "abstained", "answer", "top_score", "principal")
TRACE_LISTS: tuple[tuple[str, type[list[Any]] | type[dict[str, Any]]], ...] = (
    ("verdicts", list),
    ("citations", list),
    ("timings", dict),
    ("usage", dict),
)


def trace_view(store: ReviewStore, trace_id: str, groups: frozenset[str] | None = None) -> dict[str, Any]:
    """One ask as logged, with chunk titles, as `groups` may see it; an ask whose evidence they may
    not read (`visible_asks`) shows only its id (`redacted: true`). Raises NotFound for a trace id
    the log does not hold."""
    logged = store.ask_log(trace_id)
    if not logged:
        raise NotFound(f"unknown trace {trace_id!r}")
    rows = visible_asks(store, logged, groups).rows
    if not rows:
        return _hidden_trace(trace_id, len(logged))
    row = rows[-1]
    retrieval = row.get("retrieval") or {}
    return {
        **{k: row.get(k) for k in TRACE_FIELDS},
        "redacted": False,
        "reranker": retrieval.get("reranker", ""),
        "threshold": retrieval.get("threshold"),
        **_sent_view(store, row, retrieval, groups),
        **{k: row.get(k) or empty() for k, empty in TRACE_LISTS},
        "feedback": [jsonable(f) for f in store.feedback(100, trace_id=trace_id)],
        "logged": len(rows),
    }


def _hidden_trace(trace_id: str, logged: int) -> dict[str, Any]:
    """The view of an ask the admin may not see: its id and the shape of a trace, nothing else."""
    return {
        **{k: None for k in TRACE_FIELDS},
        "trace_id": trace_id,
        "question": "",
        "answer": "",
        "redacted": True,
        "reranker": "",
        "threshold": None,
        "retrieved": [],
        "blocks": [],
        **{k: empty() for k, empty in TRACE_LISTS},
        "feedback": [],
        "logged": logged,
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
    """The rows of one export, as `groups` may see them: asks whose evidence they may not read, and
    answers marked wrong on such asks, are left out (`visible_asks`)."""
    if what == "refusals":
        refused = visible_asks(store, store.recent_asks(ASKS_READ, abstained=True), groups).rows
        return [refusal_row(row) for row in refused]
    if what == "wrong":
        logged, hidden = _wrong_visible(store, {}, frozenset(), groups)
        wrong = [f for f in store.feedback(ASKS_READ, verdict="wrong") if f.trace_id not in hidden]
        return wrong_answers(wrong, logged)
    return [ask_row_flat(row) for row in visible_asks(store, store.recent_asks(ASKS_READ), groups).rows]


_ADMIN_ERRORS = {
    401: "admin keys are configured and the request sends none",
    403: "the key is not an admin's, or the admin pages are closed (no admin configured; without keys,"
    " a server not bound to loopback)",
    404: "unknown trace id",
    422: "an unknown `what` or `format`",
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": ErrorOut, "description": _ADMIN_ERRORS[s]} for s in statuses}


_EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A download: CSV (one row per item, a header row first) or a JSON array.",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
        },
    },
    **_errors(401, 403, 422),
}


def add_admin_routes(app: FastAPI, store: ReviewStore, settings: Settings, static_dir: Path) -> None:
    """Register the `/admin` page and its data routes."""

    @app.get("/admin", response_class=Response, include_in_schema=False)
    async def admin_page() -> Response:
        page = static_dir / "admin.html"
        if page.is_file():
            return FileResponse(page, media_type="text/html")
        return error_response(404, "not_found", "the admin page is not installed")

    @app.get("/admin/api/summary", response_model=None, responses=_errors(401, 403))
    async def admin_summary(request: Request) -> Response:
        """Refusals by line and grouped by similar questions, the latest refusals, answers marked wrong."""
        admin = admin_principal(request, settings)
        if isinstance(admin, Response):
            return admin
        return json_response(await run_in_threadpool(summary, store, admin.reads))

    @app.get("/admin/api/traces/{trace_id}", response_model=None, responses=_errors(401, 403, 404))
    async def admin_trace(request: Request, trace_id: str) -> Response:
        """One ask as logged: retrieval with scores and threshold, blocks sent, verdicts, timings, usage."""
        admin = admin_principal(request, settings)
        if isinstance(admin, Response):
            return admin
        return json_response(await run_in_threadpool(trace_view, store, trace_id, admin.reads))

    @app.get("/admin/api/export", response_model=None, responses=_EXPORT_RESPONSES)
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
