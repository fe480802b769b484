"""`GET /metrics`: operators' counters and histograms in the Prometheus text format (prometheus_client).

Every series lives in one registry per app (so two apps in one process never share counts):

- `rag_http_requests_total{route,method,status}` and `rag_http_request_duration_seconds{route}`:
  every request, by route template (`/chunks/{chunk_id:path}`, never the raw path; `unmatched` for
  unknown paths), including 401s, 413s and streams (timed to their last byte);
- `rag_answers_total{outcome}` (answered, abstained, error) and `rag_refusals_total{reason}`, from
  `POST /ask` and both stream routes;
- `rag_stage_duration_seconds{stage}`: the answer's `timings` (retrieve ... verify, total);
- `rag_model_calls_total`, `rag_model_tokens_total{kind}` (input, output, cache_creation,
  cache_read), `rag_model_retries_total`, `rag_model_cost_usd_total`: the answer's `usage`.

The answer's figures are read from the request's `RequestNote` (`scope["rag.access"]`), which
the access log reads too, so the metrics and the log cannot disagree.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, get_args

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag.answer.pipeline import STAGES
from rag.api.middleware import ACCESS_KEY, RequestNote
from rag.types import RefusalReason, Usage

ANSWER_ROUTES = frozenset({"/ask", "/ask/stream"})
# Method label values; anything else a client sends is counted as "other" (bounded label sets only).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OUTCOMES = ("answered", "abstained", "error")
# Token kind label -> the `Usage` field that counts it.
TOKEN_KINDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_creation": "cache_creation_input_tokens",
    "cache_read": "cache_read_input_tokens",
}
# Whole requests: from a cached 404 to a slow model answer.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Pipeline stages: sub-millisecond assembly to a model call of tens of seconds.
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The app's Prometheus series; `observe(...)` records one finished request."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "rag_http_requests", "HTTP requests by route template, method and status.",
            ["route", "method", "status"], registry=r,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "rag_http_request_duration_seconds", "Time from request to last response byte.",
            ["route"], buckets=REQUEST_BUCKETS, registry=r,
        )  # fmt: skip
        self.answers = Counter("rag_answers", "Answers by outcome.", ["outcome"], registry=r)
        self.refusals = Counter("rag_refusals", "Refusals by reason (refusal line).", ["reason"], registry=r)
        self.stage_seconds = Histogram(
            "rag_stage_duration_seconds", "Pipeline stage latency, from the answer's timings.",
            ["stage"], buckets=STAGE_BUCKETS, registry=r,
        )  # fmt: skip
        self.model_calls = Counter("rag_model_calls", "Model responses received.", registry=r)
        self.model_tokens = Counter("rag_model_tokens", "Model tokens by kind.", ["kind"], registry=r)
        self.model_retries = Counter("rag_model_retries", "Model call retries by the SDK.", registry=r)
        self.model_cost = Counter("rag_model_cost_usd", "Estimated model cost in USD.", registry=r)
        # Every label value known up front appears at 0 (a dashboard's rate() has a series from the
        # start), and its child is looked up once, not per request.
        self._outcomes = {o: self.answers.labels(outcome=o) for o in OUTCOMES}
        self._reasons = {r: self.refusals.labels(reason=r) for r in get_args(RefusalReason) if r}
        self._tokens = {kind: (key, self.model_tokens.labels(kind=kind)) for kind, key in TOKEN_KINDS.items()}
        self._stages = {stage: self.stage_seconds.labels(stage=stage) for stage in STAGES}
        self._routes: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(
        self, *, route: str, method: str, status: int, seconds: float, note: RequestNote | None
    ) -> None:
        key = (route, method, status)
        children = self._routes.get(key)
        if children is None:  # label lookups cost more than the update: once per route, method, status
            children = (
                self.requests.labels(route=route, method=method, status=str(status)),
                self.request_seconds.labels(route=route),
            )
            if len(self._routes) < 10_000:
                self._routes[key] = children
        children[0].inc()
        children[1].observe(seconds)
        if route in ANSWER_ROUTES and note is not None:
            self._observe_answer(note)

    def _observe_answer(self, note: RequestNote) -> None:
        outcome = note.outcome
        if outcome is None:
            return  # rejected before answering (422, 401): counted as a request only
        self._outcomes[outcome].inc()
        if reason := note.reason:
            (self._reasons.get(reason) or self.refusals.labels(reason=reason)).inc()
        answer = note.finished
        if answer is not None:
            self._observe_timings(answer.timings)
            self._observe_usage(answer.usage)

    def _observe_timings(self, timings: Mapping[str, float]) -> None:
        for stage, histogram in self._stages.items():
            value = timings.get(stage)
            if value is not None and value >= 0:
                histogram.observe(value / 1000)

    def _observe_usage(self, usage: Usage) -> None:
        if usage.calls > 0:
            self.model_calls.inc(usage.calls)
        if usage.retries > 0:
            self.model_retries.inc(usage.retries)
        for field, counter in self._tokens.values():
            if (tokens := getattr(usage, field)) > 0:
                counter.inc(tokens)
        # rounded as the usage JSON rounds it (six places)
        if (cost := round(usage.cost_usd, 6)) > 0:
            self.model_cost.inc(cost)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Times every request and hands it to `Metrics.observe` when the response ends (pure ASGI,
    outermost, so streams pass through unbuffered and 401s and 500s are counted too)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            note = scope.get(ACCESS_KEY)
            route = getattr(scope.get("route"), "path", None)
            if route is None:
                route = "/static" if scope["path"].startswith("/static/") else "unmatched"
            self.metrics.observe(
                route=route,
                method=scope["method"] if scope["method"] in METHODS else "other",
                status=status or 500,
                seconds=time.perf_counter() - started,
                note=note if isinstance(note, RequestNote) else None,
            )


def install_metrics(app: FastAPI) -> Metrics:
    """Add the metrics middleware (call after every other `add_middleware`) and `GET /metrics`."""
    metrics = Metrics()
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
    async def metrics_route() -> Response:
        """Counters and histograms in the Prometheus text exposition format."""
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return metrics
