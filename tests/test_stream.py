"""SSE streaming: raw bytes on the wire, event order and payloads, keep-alives, disconnects."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rag.answer.generate import Generator
from rag.answer.pipeline import build_pipeline
from rag.api import create_app
from rag.config import Settings, load_settings
from rag.errors import UpstreamUnavailable
from rag.reader.offline import OfflineGenerator
from rag.store import open_store
from rag.types import Block, Generation, Piece

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
ANSWERABLE = "How long do deleted projects stay in the trash?"
CONFLICT = "What is the maximum file upload size?"
OFF_TOPIC = "What is the capital of Australia?"


def parse_sse(raw: bytes) -> list[tuple[str, Any]]:
    """Split raw SSE bytes into (event, data) pairs; comments come back as ("comment", text)."""
    out: list[tuple[str, Any]] = []
    assert raw.endswith(b"\n\n"), raw[-80:]
    for frame in raw.decode().split("\n\n")[:-1]:
        lines = frame.split("\n")
        if lines[0].startswith(":"):
            out.append(("comment", lines[0][1:].strip()))
            continue
        assert len(lines) == 2, frame
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        out.append((lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])))
    return out


def names(events: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in events if name != "comment"]


class UnsupportedGenerator:
    """Writes fluent claims that no block supports: every sentence must be dropped."""

    native_citations = False

    name = "unsupported"
    TEXT = "Purple elephants dance on the roof at midnight [1]. Violins taste like copper rain [2]. "

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        return Generation(drafts=(), text=self.TEXT)  # the second draft, asked with feedback, is no better

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        for word in self.TEXT.split(" "):
            await asyncio.sleep(0)
            yield Piece(text=word + " ")


class SlowGenerator:
    """The offline answer, after a pause before the first piece (a slow model)."""

    native_citations = False

    name = "slow"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.inner = OfflineGenerator()

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        return self.inner.generate(question, blocks, feedback=feedback)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        yield Piece(opened=True)  # the call is open at once; the model thinks before it writes
        await asyncio.sleep(self.delay)
        async for piece in self.inner.stream(question, blocks):
            yield piece


class FailingGenerator:
    """Sends one good sentence, then the provider goes away."""

    native_citations = False

    name = "failing"

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        raise UpstreamUnavailable("overloaded")

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        await asyncio.sleep(0)
        raise UpstreamUnavailable("the model provider is overloaded", retry_after=5)
        yield Piece()  # pragma: no cover


class BuggyGenerator:
    """Fails with an unexpected error mid-stream (a bug, not a provider outage)."""

    native_citations = False

    name = "buggy"

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        raise AssertionError("the stream never calls generate()")

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        await asyncio.sleep(0)
        raise RuntimeError("secret internals: password=hunter2")
        yield Piece()  # pragma: no cover


class EndlessGenerator:
    """Streams words forever, recording how many pieces were pulled and whether it was closed."""

    name = "endless"
    native_citations = False

    def __init__(self) -> None:
        self.pulled = 0
        self.closed = False

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        raise AssertionError("the stream never calls generate()")

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        try:
            while True:
                await asyncio.sleep(0.002)
                self.pulled += 1
                yield Piece(text="word ")
        finally:
            self.closed = True


def settings_for(db: str, **overrides: Any) -> Settings:
    return load_settings(db=db, mock=True, **overrides)


@contextmanager
def serve_app(db: str, *, generator: Generator | None = None, **overrides: Any) -> Iterator[TestClient]:
    settings = settings_for(db, **overrides)
    store = open_store(settings)
    try:
        pipeline = build_pipeline(settings, store=store, generator=generator)
        with TestClient(create_app(settings, pipeline=pipeline)) as client:
            yield client
    finally:
        store.close()


def stream(client: TestClient, question: str) -> tuple[bytes, list[tuple[str, Any]]]:
    response = client.post("/ask/stream", json={"question": question})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return response.content, parse_sse(response.content)


def test_stream_answered_question_sends_meta_sentences_done(corpus_db: str) -> None:
    with serve_app(corpus_db) as client:
        response = client.post("/ask/stream", json={"question": ANSWERABLE})
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    events = parse_sse(response.content)
    order = names(events)
    assert order[0] == "meta" and order[-1] == "done"
    assert set(order[1:-1]) == {"sentence"}
    meta, done = events[0][1], events[-1][1]
    assert meta["blocks"][0]["n"] >= 1 and meta["context_tokens"] > 0
    assert meta["trace_id"] == response.headers["x-trace-id"]
    assert (
        done["status"] == "answered" and done["emitted"] == order.count("sentence") and done["dropped"] == 0
    )
    sentences = [data for name, data in events if name == "sentence"]
    assert any("30 days" in s["text"] for s in sentences)
    for sentence in sentences:
        assert sentence["citations"]
        for citation in sentence["citations"]:
            assert citation["chunk_url"].startswith("/chunks/") and "%23" in citation["chunk_url"]
            assert citation["end"] - citation["start"] == len(citation["cited_text"])


def test_stream_get_event_source_matches_post(corpus_db: str) -> None:
    with serve_app(corpus_db) as client:
        got = client.get("/ask/stream", params={"q": ANSWERABLE})
        posted = client.post("/ask/stream", json={"question": ANSWERABLE})
    assert got.headers["content-type"].startswith("text/event-stream")
    sentences = [d["text"] for n, d in parse_sse(got.content) if n == "sentence"]
    assert sentences == [d["text"] for n, d in parse_sse(posted.content) if n == "sentence"]


@pytest.mark.parametrize(
    ("question", "reason"), [(OFF_TOPIC, "low_retrieval_score"), (CONFLICT, "conflicting_sources")]
)
def test_stream_pre_generation_refusal_is_first_and_only(corpus_db: str, question: str, reason: str) -> None:
    with serve_app(corpus_db) as client:
        _, events = stream(client, question)
    assert names(events) == ["refusal", "done"]
    refusal, done = events[0][1], events[1][1]
    assert refusal["reason"] == reason and refusal["message"]
    assert done == {
        "status": "abstained",
        "emitted": 0,
        "dropped": 0,
        "cut": False,
        "usage": {**dict.fromkeys(done["usage"], 0)},
        "timings": done["timings"],
    }
    assert set(done["usage"]) >= {"input_tokens", "output_tokens", "calls"}
    if reason == "conflicting_sources":
        assert len({s["doc_id"] for s in refusal["conflict"]["statements"]}) >= 2
    else:
        assert refusal["conflict"] is None
        assert all(c["chunk_url"].startswith("/chunks/") for c in refusal["closest"])


def test_an_offline_refusal_shows_the_same_passages_in_context_on_both_routes(corpus_db: str) -> None:
    # the top passage, the chunks around it in its document, then the rest of the ranking
    question = "Can I get my mobile phone bill reimbursed?"
    with serve_app(corpus_db) as client:
        body = client.post("/ask", json={"question": question}).json()
        _, events = stream(client, question)
    refusal = next(data for name, data in events if name == "refusal")
    assert body["reason"] == refusal["reason"] == "no_citations"
    shown = [c["chunk_id"] for c in body["closest"]]
    assert shown == [c["chunk_id"] for c in refusal["closest"]]
    top_doc = shown[0].split("#")[0]
    assert shown[1].split("#")[0] == top_doc and len(shown) == len(set(shown))


def test_stream_fabricated_citation_arrives_as_dropped_never_as_sentence(corpus_db: str) -> None:
    with serve_app(corpus_db, fabricate="nonexistent") as client:
        _, events = stream(client, ANSWERABLE)
    order = names(events)
    dropped = [d for n, d in events if n == "dropped"]
    sentences = [d["text"] for n, d in events if n == "sentence"]
    assert len(dropped) == 1
    assert any("nonexistent" in line for line in dropped[0]["detail"])
    assert dropped[0]["text"] not in sentences
    assert sentences, "the real sentences still arrive"
    assert order[0] == "meta" and order[-1] == "done"
    assert events[-1][1]["status"] == "answered" and events[-1][1]["dropped"] == 1


def test_stream_every_sentence_dropped_ends_with_no_citations_refusal(corpus_db: str) -> None:
    with serve_app(corpus_db, generator=UnsupportedGenerator()) as client:
        _, events = stream(client, ANSWERABLE)
    order = names(events)
    assert order == ["meta", "dropped", "dropped", "refusal", "done"]
    assert events[-2][1]["reason"] == "no_citations"
    assert events[-1][1]["status"] == "abstained"
    assert events[-1][1]["emitted"] == 0 and events[-1][1]["dropped"] == 2


def test_stream_provider_unreachable_before_anything_is_sent_is_a_503_with_retry_after(
    corpus_db: str,
) -> None:
    with serve_app(corpus_db, generator=FailingGenerator()) as client:
        response = client.post("/ask/stream", json={"question": ANSWERABLE})
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["retry-after"] == "5"
    assert response.json()["error"]["type"] == "upstream_unavailable"


def test_stream_unexpected_error_before_anything_is_sent_is_a_500_without_trace(corpus_db: str) -> None:
    with serve_app(corpus_db, generator=BuggyGenerator()) as client:
        response = client.post("/ask/stream", json={"question": ANSWERABLE})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "internal_error"
    assert b"hunter2" not in response.content and b"Traceback" not in response.content


def test_stream_invalid_question_is_a_422_json_response_not_a_stream(corpus_db: str) -> None:
    with serve_app(corpus_db) as client:
        posted = client.post("/ask/stream", json={"question": "  "})
        got = client.get("/ask/stream", params={"q": ""})
        too_big = client.get("/ask/stream", params={"q": ANSWERABLE, "top_k": 99})
    for response in (posted, got, too_big):
        assert response.status_code == 422
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["error"]["type"] in ("invalid_question", "invalid_request")


def test_stream_slow_generator_gets_keep_alives_before_first_sentence(corpus_db: str) -> None:
    with serve_app(corpus_db, generator=SlowGenerator(0.4), sse_keepalive=0.05) as client:
        raw, events = stream(client, ANSWERABLE)
    order = [name for name, _ in events]
    # a loaded machine may take longer than one keep-alive interval to retrieve: keep-alives may
    # come before `meta` too; what must hold is meta first among events, then keep-alives until
    # the slow generator's first sentence
    meta, first_sentence = order.index("meta"), order.index("sentence")
    assert set(order[:meta]) <= {"comment"}
    assert order[meta + 1 : first_sentence].count("comment") >= 2
    assert set(order[meta + 1 : first_sentence]) == {"comment"}
    assert b": keep-alive\n\n" in raw
    assert names(events)[-1] == "done" and events[-1][1]["status"] == "answered"


async def _run_until_disconnect(app: Any, *, spec_version: str) -> list[bytes]:
    """Drive the ASGI app like a server whose client leaves after the first event."""
    body = json.dumps({"question": ANSWERABLE}).encode()
    sent: list[bytes] = []
    first_chunk = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await first_chunk.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            if first_chunk.is_set() and spec_version >= "2.4":
                raise OSError("connection reset by peer")
            sent.append(message["body"])
            if not message["body"].startswith(b":"):  # leave after the first event, not a keep-alive
                first_chunk.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": spec_version},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/ask/stream",
        "raw_path": b"/ask/stream",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    await asyncio.wait_for(app(scope, receive, send), timeout=10)
    return sent


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
def test_stream_client_disconnect_stops_reading_the_generator(corpus_db: str, spec_version: str) -> None:
    settings = settings_for(corpus_db, sse_keepalive=0.01)
    store = open_store(settings)
    generator = EndlessGenerator()
    try:
        app = create_app(settings, pipeline=build_pipeline(settings, store=store, generator=generator))

        async def scenario() -> tuple[list[bytes], int]:
            sent = await _run_until_disconnect(app, spec_version=spec_version)
            pulled = generator.pulled
            await asyncio.sleep(0.1)
            return sent, pulled

        sent, pulled_at_return = asyncio.run(scenario())
    finally:
        store.close()
    # keep-alive comments may come first (the interval is tiny here); the first event is meta
    frames = [frame for frame in sent if not frame.startswith(b":")]
    assert frames and frames[0].startswith(b"event: meta")
    assert generator.closed
    assert generator.pulled == pulled_at_return, "the generator was read after the client left"
    assert generator.pulled < 500


def test_stream_access_log_line_counts_emitted_and_dropped(
    corpus_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    with serve_app(corpus_db, fabricate="nonexistent") as client, caplog.at_level(logging.INFO, "rag.access"):
        response = client.post("/ask/stream", json={"question": ANSWERABLE})
    events = parse_sse(response.content)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "rag.access"]
    assert len(lines) == 1
    entry = lines[0]
    assert entry["trace_id"] == response.headers["x-trace-id"]
    assert entry["route"] == "/ask/stream" and entry["status"] == 200
    assert entry["emitted"] == names(events).count("sentence")
    assert entry["dropped"] == 1
    assert entry["stream_status"] == "answered" and entry["reason"] == ""
    assert entry["blocks"] >= 1 and 0 < entry["top_score"] <= 1
    assert "generate" in entry["timings"]


# --- follow-ups ---------------------------------------------------------------------------------------

LEAVE = "How many days of paid annual leave does a full-time employee get?"


def test_stream_follow_up_meta_carries_searched_for_and_answers_as_ask_does(corpus_db: str) -> None:
    body = {"question": "Does it carry over?", "history": [{"question": LEAVE, "answer": "25 days."}]}
    with serve_app(corpus_db) as client:
        events = parse_sse(client.post("/ask/stream", json=body).content)
        whole = client.post("/ask", json=body).json()
    assert names(events)[0] == "meta" and names(events)[-1] == "done"
    assert events[0][1]["searched_for"] == "Does it carry over (paid annual leave)?" == whole["searched_for"]
    sentences = [d["text"] for n, d in events if n == "sentence"]
    assert sentences == [s["text"] for s in whole["sentences"]] and any(
        "5 unused days" in s for s in sentences
    )


def test_stream_follow_up_refused_before_generation_names_what_was_searched(corpus_db: str) -> None:
    body = {"question": "And its capital?", "history": [{"question": "Where is Australia?", "answer": ""}]}
    with serve_app(corpus_db) as client:
        events = parse_sse(client.post("/ask/stream", json=body).content)
    assert names(events) == ["refusal", "done"]
    assert events[0][1]["reason"] == "low_retrieval_score"
    assert events[0][1]["searched_for"] == "Where is Australia, its capital?"
