"""A model that takes its time: a real `rag serve` at its default request timeout (10 s) in front of the
real SDK and the fake Messages API. The request-read timeout guards against slow clients only; it never
covers the model call, whichever way the client keeps its connection."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fake_anthropic import FakeAnthropic, Reply, cited, failure, locate, reply, text
from serving import serving

ROOT = Path(__file__).resolve().parent.parent
RAG = Path(sys.executable).parent / "rag"
QUESTION = {"question": "How long do deleted projects stay in the trash?"}
STAY = "Deleted projects stay in the trash for 30 days. "
# Longer than `rag serve`'s default --request-timeout (10 s), as a reply is when the model thinks first.
SLOW = 15.0
CLOSE = {"connection": "close"}  # what urllib and `curl --no-keepalive` send: h11 then ends in MUST_CLOSE


@pytest.fixture
def claude_server(
    fake_anthropic: FakeAnthropic, corpus_db: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[str]:
    """`rag serve` with its default limits, answering through the fake; yields its base URL."""
    if not RAG.is_file():
        pytest.skip("the rag script is not installed beside python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_") and k != "MOCK"}
    env.update(
        RAG_DB=corpus_db,
        RAG_DENSE="off",  # no background embedding (conftest)
        ANTHROPIC_API_KEY="test",
        ANTHROPIC_BASE_URL=fake_anthropic.base_url,
        **getattr(request, "param", {}),
    )
    argv = lambda port: [str(RAG), "serve", "--port", str(port)]  # noqa: E731
    with serving(argv, env=env, log=tmp_path / "serve.log", timeout=120) as (base, _):
        yield base


def _slow_answer() -> Reply:
    stay = cited("Deleted projects stay in the trash for 30 days", locate(STAY))
    return reply(stay, text("."), latency=SLOW)


def test_a_reply_that_starts_after_15_s_is_answered_on_both_routes(
    claude_server: str, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(_slow_answer(), _slow_answer())
    results: dict[str, object] = {}

    def ask() -> None:
        results["ask"] = httpx.post(f"{claude_server}/ask", json=QUESTION, headers=CLOSE, timeout=60)

    def stream() -> None:
        started = time.monotonic()
        arrivals: list[tuple[float, bytes]] = []
        url = f"{claude_server}/ask/stream"
        with httpx.stream("POST", url, json=QUESTION, headers=CLOSE, timeout=60) as r:
            for chunk in r.iter_raw():
                arrivals.append((time.monotonic() - started, chunk))
            results["stream_status"] = r.status_code
        results["stream"] = arrivals

    threads = [threading.Thread(target=ask), threading.Thread(target=stream)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)

    answer = results["ask"]
    assert isinstance(answer, httpx.Response)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"] == "Deleted projects stay in the trash for 30 days."
    assert results["stream_status"] == 200
    arrivals = results["stream"]
    assert isinstance(arrivals, list)
    body = b"".join(chunk for _, chunk in arrivals)
    assert b"event: sentence" in body and b"event: done" in body and b'"status":"answered"' in body
    # while the model was silent the connection was kept alive, before the answer came
    keepalives = [at for at, chunk in arrivals if b": keep-alive" in chunk]
    assert keepalives and min(keepalives) < SLOW


def test_a_provider_that_asks_for_a_longer_wait_than_ours_is_not_retried_on_either_route(
    claude_server: str, fake_anthropic: FakeAnthropic
) -> None:
    # retry-after 30 s is past RAG_MODEL_RETRY_WAIT (10 s): a retry sooner would be refused again, so
    # both routes answer 503 with the provider's wait at once, after one request each
    fake_anthropic.enqueue(*(failure(429, retry_after_ms=None, retry_after="30") for _ in range(2)))
    before = len(fake_anthropic.message_requests())
    started = time.monotonic()
    answered = httpx.post(f"{claude_server}/ask", json=QUESTION, headers=CLOSE, timeout=60)
    streamed = httpx.post(f"{claude_server}/ask/stream", json=QUESTION, headers=CLOSE, timeout=60)
    for response in (answered, streamed):
        assert response.status_code == 503, response.text
        assert response.json()["error"]["type"] == "upstream_rate_limited"
        assert response.headers["retry-after"] == "30"
    assert len(fake_anthropic.message_requests()) - before == 2
    assert time.monotonic() - started < 10
