"""`GET /metrics`: the Prometheus text format, parsed back with prometheus_client's own parser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from test_api import ANSWERABLE, CONFLICT, KEY, OFF_TOPIC, serve_app

from rag.reader.offline import OfflineGenerator
from rag.types import Block, Generation, Piece, Usage

USAGE = Usage(
    input_tokens=120,
    output_tokens=30,
    cache_creation_input_tokens=7,
    cache_read_input_tokens=50,
    retries=2,
    calls=1,
)


class MeteredGenerator:
    """The offline generator, reporting a fixed model usage per call (as a provider would)."""

    native_citations = False
    name = "metered"

    def __init__(self) -> None:
        self.inner = OfflineGenerator()

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        return replace(self.inner.generate(question, blocks, feedback=feedback), usage=USAGE)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        async for piece in self.inner.stream(question, blocks):
            yield piece
        yield Piece(usage=USAGE)


def samples(client: TestClient, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CONTENT_TYPE_LATEST
    out = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def client(corpus_db: str) -> Iterator[TestClient]:
    with serve_app(corpus_db, generator=MeteredGenerator()) as c:
        yield c


def test_metrics_count_requests_by_route_template_and_status(client: TestClient) -> None:
    client.post("/ask", json={"question": ANSWERABLE})
    client.post("/ask", json={"question": "  "})
    client.get("/chunks/no-such%23c01")
    client.get("/nowhere/at/all")
    client.request("BREW", "/nowhere")
    found = samples(client)
    assert value(found, "rag_http_requests_total", route="unmatched", method="other", status="404") == 1
    assert value(found, "rag_http_requests_total", route="/ask", method="POST", status="200") == 1
    assert value(found, "rag_http_requests_total", route="/ask", method="POST", status="422") == 1
    assert (
        value(found, "rag_http_requests_total", route="/chunks/{chunk_id:path}", method="GET", status="404")
        == 1
    )
    assert value(found, "rag_http_requests_total", route="unmatched", method="GET", status="404") == 1
    assert value(found, "rag_http_request_duration_seconds_count", route="/ask") == 2


def test_metrics_count_refusals_by_reason_on_both_routes(client: TestClient) -> None:
    client.post("/ask", json={"question": OFF_TOPIC})
    client.post("/ask/stream", json={"question": CONFLICT}).read()
    client.get("/ask/stream", params={"q": OFF_TOPIC}).read()
    found = samples(client)
    assert value(found, "rag_refusals_total", reason="low_retrieval_score") == 2
    assert value(found, "rag_refusals_total", reason="conflicting_sources") == 1
    assert value(found, "rag_refusals_total", reason="no_citations") == 0
    assert value(found, "rag_answers_total", outcome="abstained") == 3
    assert value(found, "rag_answers_total", outcome="answered") == 0


def test_metrics_stage_histograms_and_model_usage_from_answers(client: TestClient) -> None:
    answer = client.post("/ask", json={"question": ANSWERABLE}).json()
    assert not answer["abstained"]
    client.post("/ask/stream", json={"question": ANSWERABLE}).read()
    found = samples(client)
    assert value(found, "rag_answers_total", outcome="answered") == 2
    for stage in ("retrieve", "generate", "verify", "total"):
        assert value(found, "rag_stage_duration_seconds_count", stage=stage) == 2, stage
    total_ms = answer["timings"]["total"]
    assert value(found, "rag_stage_duration_seconds_sum", stage="total") >= total_ms / 1000
    assert value(found, "rag_model_calls_total") == 2 * USAGE.calls
    assert value(found, "rag_model_retries_total") == 2 * USAGE.retries
    assert value(found, "rag_model_tokens_total", kind="input") == 2 * USAGE.input_tokens
    assert value(found, "rag_model_tokens_total", kind="output") == 2 * USAGE.output_tokens
    assert value(found, "rag_model_tokens_total", kind="cache_read") == 2 * USAGE.cache_read_input_tokens
    assert (
        value(found, "rag_model_tokens_total", kind="cache_creation") == 2 * USAGE.cache_creation_input_tokens
    )


def test_metrics_two_apps_keep_separate_counts(corpus_db: str) -> None:
    with serve_app(corpus_db) as first, serve_app(corpus_db) as second:
        first.post("/ask", json={"question": OFF_TOPIC})
        assert value(samples(first), "rag_refusals_total", reason="low_retrieval_score") == 1
        assert value(samples(second), "rag_refusals_total", reason="low_retrieval_score") == 0


def test_metrics_need_the_api_key_when_keys_are_set_and_count_the_401(corpus_db: str) -> None:
    with serve_app(corpus_db, api_keys=KEY) as c:
        assert c.get("/metrics").status_code == 401
        found = samples(c, Authorization=f"Bearer {KEY}")
        assert value(found, "rag_http_requests_total", route="unmatched", method="GET", status="401") == 1
