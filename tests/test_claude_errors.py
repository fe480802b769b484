"""Provider errors through the real SDK: a specific error type on both routes, never a traceback."""

from __future__ import annotations

import logging

import pytest
from fake_anthropic import FakeAnthropic, failure
from fastapi.testclient import TestClient

from rag.api import create_app
from rag.config import get_settings

QUESTION = "How long do deleted projects stay in the trash?"

CASES = [
    (400, 502, "upstream_bad_request"),
    (401, 502, "upstream_auth_failed"),
    (403, 502, "upstream_auth_failed"),
    (404, 502, "upstream_model_not_found"),
    (413, 502, "upstream_request_too_large"),
    (429, 503, "upstream_rate_limited"),
    (500, 503, "upstream_unavailable"),
    (529, 503, "upstream_overloaded"),
]


def traced(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The project's log records that carry a traceback. Other loggers are left out: asyncio may log
    "Event loop is closed" when an earlier test's client is collected while this one runs."""
    return [r for r in caplog.records if r.exc_info and r.name.split(".")[0] in ("rag", "uvicorn")]


@pytest.fixture
def http(claude_env: FakeAnthropic, corpus_db: str, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("RAG_DB", corpus_db)
    monkeypatch.setenv("RAG_MODEL_MAX_RETRIES", "0")
    get_settings.cache_clear()
    return TestClient(create_app(get_settings()))


@pytest.mark.parametrize(("provider", "status", "type_"), CASES)
def test_provider_error_on_ask_has_its_own_type_and_no_traceback(
    http: TestClient,
    claude_env: FakeAnthropic,
    caplog: pytest.LogCaptureFixture,
    provider: int,
    status: int,
    type_: str,
) -> None:
    claude_env.enqueue(failure(provider, retry_after_ms=None))
    with http, caplog.at_level(logging.WARNING):
        response = http.post("/ask", json={"question": QUESTION})
    assert response.status_code == status
    assert response.json()["error"]["type"] == type_
    assert not traced(caplog)


@pytest.mark.parametrize(("provider", "status", "type_"), CASES)
def test_provider_error_before_the_stream_begins_is_the_same_response_as_on_ask(
    http: TestClient,
    claude_env: FakeAnthropic,
    caplog: pytest.LogCaptureFixture,
    provider: int,
    status: int,
    type_: str,
) -> None:
    claude_env.enqueue(failure(provider, retry_after_ms=None))
    with http, caplog.at_level(logging.WARNING):
        response = http.post("/ask/stream", json={"question": QUESTION})
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["type"] == type_
    assert not traced(caplog)
