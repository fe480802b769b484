"""`create_app(settings)`: the routes, the error handlers and the middleware stack.

Routes: `POST /ask`, `POST /ask/stream` and `GET /ask/stream?q=` (SSE), `GET /chunks/{chunk_id}`,
`GET /documents/{doc_id}`, `GET /healthz`, `GET /readyz`, `GET /` (the web page), `/static/*`,
the API reference at `/docs` (a local page over `/openapi.json`: no CDN). `HEAD` works wherever
`GET` does, and every response carries the security headers (`middleware.SECURITY_HEADERS`).
Errors are `{"error": {"type", "message"}}` with the status of the `RagError` (or 422 for a
malformed request, 404 for an unknown route, 413 for a body over 64 KB, 500 without a stack trace).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route

from rag import __version__
from rag.access import Principal
from rag.answer.events import Event
from rag.answer.generate import tools_for
from rag.answer.pipeline import (
    Pipeline,
    build_pipeline,
    validate_conversation_id,
    validate_history,
    validate_question,
)
from rag.api.admin import ReviewStore, add_admin_routes, is_admin_path
from rag.api.examples import ExamplePools, ExampleStore, add_example_routes
from rag.api.feedback import FeedbackStore, add_feedback_routes
from rag.api.metrics import install_metrics
from rag.api.middleware import (
    ACCESS_KEY,
    TRACE_KEY,
    ApiKeyAuth,
    BodyLimit,
    HeadAsGet,
    RequestContext,
    RequestNote,
    SecurityHeaders,
    principal_of,
)
from rag.api.responses import error_response, json_response
from rag.api.schemas import (
    QUESTION_SCHEMA,
    AnswerOut,
    AskRequest,
    ChunkOut,
    DocumentOut,
    ErrorOut,
    HealthOut,
    ReadyOut,
    sse_media,
    with_sse_events,
)
from rag.api.stream import EventStreamResponse, sse_stream
from rag.breaker import breaker_states
from rag.config import Settings
from rag.embeddings import Embedder
from rag.embeddings.backfill import Backfill
from rag.errors import RagError, StoreUnavailable, UpstreamUnavailable
from rag.language.tools import Tools, installed
from rag.serialize import answer_json, chunk_json, document_json
from rag.store import StoreReader
from rag.types import Answer, Chunk, Document, StoreStats, Turn

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
# `GET /documents/{doc_id}` pages its chunks: at most this many per page, and no more chunk text
# than this (a 2,000-page PDF was one 90 MB response)
MAX_DOCUMENT_PAGE = 500
DOCUMENT_PAGE_CHARS = 1_000_000
PUBLIC_PATHS = frozenset({"/", "/docs", "/healthz", "/favicon.ico"})
STATUS_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}
PLACEHOLDER_PAGE = (
    "<!doctype html><meta charset=utf-8><title>rag</title>"
    "<p>The web page is not installed. The API is up: see <a href=/docs>/docs</a>.</p>"
)

log = logging.getLogger("rag.api")


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Reader(_Named, Protocol):
    @property
    def native_citations(self) -> bool: ...


class QAService(Protocol):
    """What the API needs from `rag.pipeline.Pipeline` (tests inject their own implementations)."""

    @property
    def store(self) -> StoreReader: ...

    @property
    def generator(self) -> _Reader: ...

    @property
    def reranker(self) -> _Named: ...

    @property
    def gate_score(self) -> float:
        """The retrieval gate's threshold in [0, 1]."""
        ...

    def answer(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
        history: Sequence[Turn] = (),
        conversation_id: str = "",
        record: bool = True,
    ) -> Answer:
        """`record=False`: a probe (an example question), kept out of the ask log and the gap queue."""
        ...

    def answer_stream(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
        history: Sequence[Turn] = (),
        conversation_id: str = "",
    ) -> AsyncIterator[Event]: ...


def _conversation(body: AskRequest | None, settings: Settings) -> tuple[tuple[Turn, ...], str]:
    """The earlier turns and conversation id of a body (none for `GET /ask/stream`), validated before
    any work (InvalidQuestion: 422)."""
    if body is None:
        return (), ""
    turns = [Turn(question=t.question, answer=t.answer) for t in body.history]
    return validate_history(turns, settings), validate_conversation_id(body.conversation_id)


def _trace_id(request: Request) -> str:
    return str(request.scope.get(TRACE_KEY, ""))


def _note(request: Request) -> RequestNote:
    """The request's access-log note (`RequestContext` sets it; made here when an app runs without)."""
    note = request.scope.get(ACCESS_KEY)
    if not isinstance(note, RequestNote):
        note = request.scope[ACCESS_KEY] = RequestNote(trace_id=_trace_id(request))
    return note


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        401: "API keys are configured and the request has none or a wrong one",
        404: "Unknown id",
        410: "A chunk id whose text was replaced or removed (an id never names other text)",
        413: "Request body over 64 KB",
        422: "Empty, whitespace-only or over-long question, body not JSON, wrong types, top_k out of range",
        503: "The model provider stayed unavailable (see Retry-After) or the store is unreachable",
    }
    return {s: {"model": ErrorOut, "description": descriptions[s]} for s in statuses}


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            parts.append("request body is not valid JSON")
            continue
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(dict.fromkeys(parts)) or "invalid request"


def _document_page(chunks: list[Chunk]) -> list[Chunk]:
    """The first of `chunks` whose text fits `DOCUMENT_PAGE_CHARS` together (always at least one)."""
    total = 0
    for n, chunk in enumerate(chunks):
        total += len(chunk.text)
        if total > DOCUMENT_PAGE_CHARS and n:
            return chunks[:n]
    return chunks


def _allowed_methods(request: Request) -> str:
    """The `Allow` header of a path: the methods of every route it matches, HEAD wherever GET is."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] is not Match.NONE:
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def _query_not_utf8(request: Request) -> Response | None:
    """The 422 for a query string whose percent-decoded bytes are not UTF-8 (Starlette would put
    U+FFFD in their place and answer another question), else None."""
    raw: bytes = request.scope.get("query_string", b"")
    try:
        unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError as exc:
        return error_response(
            422, "invalid_request", f"query string is not valid UTF-8 (bad byte at offset {exc.start})"
        )
    return None


def _install_error_handlers(app: FastAPI) -> None:
    async def rag_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RagError)
        headers = None
        if isinstance(exc, UpstreamUnavailable):
            headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
        _note(request).error = exc.type
        return error_response(exc.status, exc.type, str(exc), headers)

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, "invalid_request", _validation_message(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 400:
            # FastAPI's only 400: a body it could not decode; the documented status is 422.
            if isinstance(exc.__cause__, RecursionError):
                return error_response(
                    422, "invalid_request", "request body is JSON nested too deeply to read"
                )
            return error_response(422, "invalid_request", "request body is not valid UTF-8 JSON")
        if exc.status_code == 405:
            # Starlette names the methods of the first route matching the path; every route of it counts
            headers = {**(exc.headers or {}), "Allow": _allowed_methods(request)}
            return error_response(
                405, "method_not_allowed", f"{exc.detail}: {request.method} {request.url.path}", headers
            )
        type_ = STATUS_TYPES.get(exc.status_code, "http_error")
        message = str(exc.detail)
        if exc.status_code in (404, 405) and request.scope.get("route") is None:
            message = f"{message}: {request.method} {request.url.path}"
        return error_response(exc.status_code, type_, message, exc.headers)

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error (trace %s)", _trace_id(request), exc_info=exc)
        return error_response(500, "internal_error", f"internal error; quote trace id {_trace_id(request)}")

    app.add_exception_handler(RagError, rag_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)


def warm_up(qa: QAService, tools: Tools | None = None, embedder: Embedder | None = None) -> None:
    """Load what the first ask would otherwise load lazily (the general-English word list behind the
    lexical reranker, the store's connection, WordNet's index when `tools` has it, and, for a generator
    with native citations, the dependency parser of the support check), so the first request after
    start is not the slow one. WordNet serves both paths (the support check's alignment and the
    offline generator's paraphrase alignment); the parser serves only the support check, which judges
    only native citations, so an offline server does not load it (seconds and about 130 MB).
    `tools`: those the pipeline was built with (None: the installed ones). With a background
    `embedder` (the local encoder, which questions are embedded by), its weights load too (a second
    or two); a provider's embedder is never called.

    Never calls a model provider. A failure is logged, not raised: `/readyz` reports the store's state.
    """
    from rag.language.text import english_frequency

    tools = tools if tools is not None else installed()
    try:
        english_frequency("the")
        if tools.wordnet is not None:
            tools.wordnet.warm()
        if qa.generator.native_citations and tools.parser is not None:
            tools.parser.warm()
        if embedder is not None and embedder.background:
            embedder.embed_query("warm-up")
        qa.store.stats()
    except Exception as exc:
        log.warning("warm-up incomplete: %s: %s", type(exc).__name__, exc)


def settle_heap() -> None:
    """Collect once, then move every object alive to the permanent generation (`gc.freeze`).

    What a server holds after warm-up (routes, models, word lists, compiled patterns, caches) lives
    as long as the process, yet every full collection would walk all of it with the GIL held: about
    50 ms of CPU (`benchmarks/bench_http.py`), during which every request in flight waits, which
    showed in the p99 of `/ask`. Frozen, a full collection walks only what requests made since: well
    under a millisecond.
    Objects are still freed by reference counting; only cycles among frozen objects stay.
    """
    gc.collect()
    gc.freeze()


def _protected(path: str) -> bool:
    # /admin checks its own (admin) keys: see rag.api.admin.
    return path not in PUBLIC_PATHS and not path.startswith("/static/") and not is_admin_path(path)


def create_app(
    settings: Settings,
    *,
    pipeline: QAService | None = None,
    freeze_heap: bool = False,
    backfill: Backfill | None = None,
) -> FastAPI:
    """The FastAPI app over `pipeline` (built from `settings`, with its store, when not given).

    `freeze_heap`: after warm-up, `settle_heap()` (for a server process, which `rag serve` is; not
    for an app built inside another program or a test, whose heap is not the app's alone).
    `backfill`: the background embedding the app runs from start to shutdown and `/readyz` reports;
    by default the owned pipeline's, when its embedder embeds in the background (the local encoder):
    the chunks a lexical ingest left without its vectors get them while the app serves."""
    built: Pipeline | None = None
    if pipeline is None:
        built = pipeline = build_pipeline(settings)  # owned: its store closes with the app
    qa: QAService = pipeline
    embedder = built.embedder if built is not None else None
    if backfill is None and built is not None and embedder is not None and embedder.background:
        backfill = Backfill(built.store, embedder)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # uvicorn accepts connections only after this, so /readyz never answers before warm-up.
        await run_in_threadpool(warm_up, qa, tools_for(settings), embedder)
        if freeze_heap:
            settle_heap()
        if backfill is not None:
            backfill.start()
        yield
        if backfill is not None:
            await run_in_threadpool(backfill.stop)
        if built is not None:
            built.store.close()

    app = FastAPI(
        title="rag",
        version=__version__,
        summary="Grounded answers from your own documents, every sentence tied to a verified source span.",
        description=(
            "Chunk ids contain `#`: send it URL-encoded as `%23` (`/chunks/doc-010%23c02`); citations "
            "carry a ready `link`. When `RAG_API_KEYS` is set, every endpoint but `/healthz` and the web "
            "page needs `Authorization: Bearer <key>`; `GET /ask/stream` (for `EventSource`) also "
            "accepts `?key=<key>`."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _install_error_handlers(app)
    app.add_middleware(BodyLimit)
    app.add_middleware(ApiKeyAuth, keys=settings.principal_map(), protected=_protected)
    if settings.cors_origin_list:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origin_list),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Trace-Id", "Retry-After"],
        )
    app.add_middleware(HeadAsGet)
    app.add_middleware(RequestContext)
    app.add_middleware(SecurityHeaders)
    install_metrics(app)
    # The feedback and admin routes need more of the store than the read interface: every backend
    # has it; a test double without it simply has no such routes.
    if isinstance(qa.store, FeedbackStore):
        add_feedback_routes(app, qa.store)
    if isinstance(qa.store, ExampleStore):
        add_example_routes(app, ExamplePools(qa.store, qa, asks=settings.example_asks))
    if isinstance(qa.store, ReviewStore):
        add_admin_routes(app, qa.store, settings, STATIC_DIR)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")

    async def start_stream(
        request: Request, question: str, top_k: int | None, body: AskRequest | None = None
    ) -> Response:
        # Validation and the log's database happen here, before the first byte, so a bad question is a
        # 422 JSON response and a log that cannot be written a 503, as on `POST /ask`; and the first
        # event is awaited for one keep-alive interval before the response begins, so a model provider
        # that cannot be reached is a 503 JSON response with Retry-After, as on /ask (the stream sends
        # `meta` only once the model call is open). A call still opening after that (a provider slow to
        # answer) starts the stream with a keep-alive; a failure after that point is its `error` event.
        question = validate_question(question, settings.max_question_chars)
        history, conversation_id = _conversation(body, settings)
        await run_in_threadpool(qa.store.check_log)
        note = _note(request)
        note.streamed = True
        events = aiter(
            qa.answer_stream(
                question,
                top_k=top_k,
                trace_id=_trace_id(request),
                principal=principal_of(request),
                history=history,
                conversation_id=conversation_id,
            )
        )
        first = asyncio.ensure_future(anext(events, None))
        opened, _ = await asyncio.wait((first,), timeout=settings.sse_keepalive)
        if opened:
            first.result()  # a failure to open is raised here, before any byte: a JSON error response
        return EventStreamResponse(
            sse_stream(
                _resumed(first, events), keepalive=settings.sse_keepalive, note=note, waiting=not opened
            )
        )

    stream_doc: dict[int | str, dict[str, Any]] = {
        200: {
            "description": "Server-sent events, in order: meta, then sentence and dropped as each is"
            " verified, or a refusal; error when the provider fails; done, always last. Each `data:` line"
            " is one JSON object, of the schema the event's name selects; `: keep-alive` comments"
            " come while the model is silent.",
            "content": {"text/event-stream": sse_media("One event: its name and its JSON data")},
        },
        **_errors(401, 413, 422, 503),
    }

    @app.post(
        "/ask", response_model=None, responses={200: {"model": AnswerOut}, **_errors(401, 413, 422, 503)}
    )
    async def ask(body: AskRequest, request: Request) -> Response:
        """Answer a question from the knowledge base, or refuse with a reason."""
        question = validate_question(body.question, settings.max_question_chars)
        history, conversation_id = _conversation(body, settings)

        def answer_logged() -> Answer:
            qa.store.check_log()  # before the work, as the stream does: both fail alike without the log
            return qa.answer(
                question,
                top_k=body.top_k,
                trace_id=_trace_id(request),
                principal=principal_of(request),
                history=history,
                conversation_id=conversation_id,
            )

        answer = await run_in_threadpool(answer_logged)
        _note(request).record(answer)
        return json_response(answer_json(answer))

    @app.post("/ask/stream", response_model=None, response_class=StreamingResponse, responses=stream_doc)
    async def ask_stream(body: AskRequest, request: Request) -> Response:
        """Stream the answer as server-sent events; each sentence arrives whole and verified."""
        return await start_stream(request, body.question, body.top_k, body)

    @app.get("/ask/stream", response_model=None, response_class=StreamingResponse, responses=stream_doc)
    async def ask_stream_get(
        request: Request,
        q: Annotated[
            str,
            Query(
                description="The question (not empty, whitespace or control characters only).",
                examples=["How many vacation days do I get?"],
                json_schema_extra=QUESTION_SCHEMA,
            ),
        ],
        top_k: Annotated[int | None, Query(ge=1, le=50, description="Chunks retrieved (1..50).")] = None,
        key: Annotated[
            str | None, Query(description="API key, for EventSource clients that cannot send headers.")
        ] = None,
    ) -> Response:
        """The same stream for `EventSource`: `new EventSource('/ask/stream?q=...')`; `q` in UTF-8."""
        if (refused := _query_not_utf8(request)) is not None:
            return refused
        return await start_stream(request, q, top_k)

    @app.get(
        "/chunks/{chunk_id:path}",
        response_model=None,
        responses={200: {"model": ChunkOut}, **_errors(401, 404, 410, 503)},
    )
    async def get_chunk(chunk_id: str, request: Request) -> Response:
        """One chunk's original text with its provenance. Encode `#` in the id as `%23`. A chunk the
        caller may not read answers 404, exactly as an unknown id."""
        chunk = await run_in_threadpool(
            lambda: qa.store.get_chunk(chunk_id, groups=principal_of(request).reads)
        )
        return json_response(chunk_json(chunk))

    @app.get(
        "/documents/{doc_id:path}",
        response_model=None,
        responses={200: {"model": DocumentOut}, **_errors(401, 404, 503)},
    )
    async def get_document(
        doc_id: str,
        request: Request,
        limit: Annotated[
            int, Query(ge=1, le=MAX_DOCUMENT_PAGE, description="Chunks in this page (1..500).")
        ] = MAX_DOCUMENT_PAGE,
        cursor: Annotated[
            str, Query(pattern=r"^[0-9]{1,9}$", description="`next_cursor` of the page before; 0 first.")
        ] = "0",
    ) -> Response:
        """A document's metadata and a page of its chunks in order (at most `limit`, and at most
        about 1 MB of chunk text); `next_cursor` reads the next page, null after the last. 404 for
        a document the caller may not read."""
        groups = principal_of(request).reads
        start = int(cursor)

        def load() -> tuple[Document, list[Chunk]]:
            return qa.store.get_document(doc_id, groups=groups, text=False), qa.store.document_chunks(
                doc_id, groups=groups, start=start, limit=limit + 1
            )

        doc, chunks = await run_in_threadpool(load)
        page = _document_page(chunks[:limit])
        more = len(page) < len(chunks)
        return json_response(
            {**document_json(doc, page), "next_cursor": str(start + len(page)) if more else None}
        )

    @app.get("/healthz", response_model=None, responses={200: {"model": HealthOut}})
    async def healthz() -> Response:
        """The process is up (no dependency is checked)."""
        return json_response({"status": "ok"})

    @app.get("/readyz", response_model=None, responses={200: {"model": ReadyOut}, **_errors(401, 503)})
    async def readyz(request: Request) -> Response:
        """The store answers a real query now: counts of the documents and chunks the caller may read,
        and the generator and reranker in use, with the state of each provider's circuit breaker
        (`open`: its calls are skipped and answers use the offline fallback until `retry_in` seconds
        pass), and dense retrieval's embedding progress (`embedding`: model, embedded, total, state;
        null when retrieval is BM25 only); 503 `store_unavailable` when the database is missing,
        replaced by a broken file, unreadable, corrupt or unreachable, and when the database the ask
        log is written to cannot be opened."""
        groups = principal_of(request).reads

        def read() -> tuple[StoreStats, dict[str, Any] | None]:
            stats = qa.store.stats(groups=groups)
            qa.store.check_log()  # every ask writes the log: ready only when its database opens
            return stats, _embedding(groups)

        try:
            stats, embedding = await run_in_threadpool(read)
        except StoreUnavailable as exc:
            return error_response(exc.status, exc.type, str(exc))
        except Exception as exc:
            log.warning("readiness check failed: %s: %s", type(exc).__name__, exc)
            return error_response(
                503, "store_unavailable", f"the store is unreachable ({type(exc).__name__})"
            )
        empty = stats.chunks == 0
        return json_response(
            {
                "status": "empty" if empty else "ready",
                "message": "the store holds no documents yet: run `rag ingest PATH`" if empty else "",
                "backend": stats.backend,
                "documents": stats.documents,
                "chunks": stats.chunks,
                "embeddings": stats.embeddings,
                "generator": qa.generator.name,
                "reranker": qa.reranker.name,
                "min_score": qa.gate_score,
                "breakers": breaker_states(),
                "embedding": embedding,
            }
        )

    def _embedding(groups: frozenset[str] | None) -> dict[str, Any] | None:
        """Dense retrieval's progress: the background task's, else (vectors made at ingest) the store's."""
        if backfill is not None:
            return backfill.progress(groups=groups).json()
        if built is None or embedder is None:
            return None
        embedded, total = built.store.embedding_progress(embedder.model, groups=groups)
        state = "done" if embedded >= total else "incomplete"
        return {"model": embedder.model, "embedded": embedded, "total": total, "state": state, "error": ""}

    @app.get(
        "/",
        response_class=HTMLResponse,
        responses={200: {"content": {"text/html": {"example": "<!doctype html>..."}}}},
    )
    async def index() -> Response:
        """The web page (public, so it can load and then send an API key)."""
        page = STATIC_DIR / "index.html"
        if page.is_file():
            return FileResponse(page, media_type="text/html")
        return HTMLResponse(PLACEHOLDER_PAGE)

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def docs() -> Response:
        """The API reference: a local page that renders `/openapi.json` (works offline)."""
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            with_sse_events(schema)
            if settings.api_key_list:
                schema.setdefault("components", {})["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer"}
                }
                for path, operations in schema.get("paths", {}).items():
                    if _protected(path):
                        for operation in operations.values():
                            operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


async def _resumed(
    first: asyncio.Future[Event | None], rest: AsyncIterator[Event]
) -> AsyncGenerator[Event, None]:
    """The events of a stream whose first one is being (or was) taken by `first`; closing this
    cancels that pull if it is still running, then closes `rest`."""
    try:
        event = await first
        if event is None:
            return
        yield event
        async for event in rest:
            yield event
    finally:
        if not first.done():
            first.cancel()
            with contextlib.suppress(BaseException):
                await first
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()
