"""HTTP API through httpx (starlette's TestClient) against the app over the bundled corpus."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rag.answer.generate import Generator
from rag.answer.pipeline import build_pipeline
from rag.api import create_app
from rag.api.schemas import AnswerOut, ChunkOut, DocumentOut, ErrorOut, HealthOut, ReadyOut
from rag.config import load_settings
from rag.errors import UpstreamUnavailable
from rag.serialize import chunk_path, with_links
from rag.store import Store, open_store
from rag.types import Block, Chunk, Generation, Piece, StoreStats

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
ANSWERABLE = "How long do deleted projects stay in the trash?"
CONFLICT = "What is the maximum file upload size?"
OFF_TOPIC = "What is the capital of Australia?"
KEY = "s3cret-key"


class UnavailableGenerator:
    """A provider that stays down: both contracts raise UpstreamUnavailable."""

    native_citations = False

    name = "unavailable"

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        raise UpstreamUnavailable("the model provider is overloaded", retry_after=12.5)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        raise UpstreamUnavailable("the model provider is overloaded", retry_after=12.5)
        yield Piece()  # pragma: no cover


class BrokenStore:
    """A store whose reads fail with an internal error (a bug or a lost database)."""

    backend = "broken"

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get_chunk(self, chunk_id: str, **_: Any) -> Chunk:
        raise RuntimeError("secret internals: /srv/db password=hunter2")

    def stats(self, **_: Any) -> StoreStats:
        raise sqlite3.OperationalError("unable to open database file")


@contextmanager
def serve_app(
    db: str,
    *,
    generator: Generator | None = None,
    wrap: Any = None,
    base_url: str = "http://testserver",
    **overrides: Any,
) -> Iterator[TestClient]:
    settings = load_settings(db=db, mock=True, **overrides)
    store = open_store(settings)
    try:
        pipeline = build_pipeline(settings, store=wrap(store) if wrap else store, generator=generator)
        app = create_app(settings, pipeline=pipeline)
        with TestClient(app, base_url=base_url, raise_server_exceptions=False) as client:
            yield client
    finally:
        store.close()


@pytest.fixture
def client(corpus_db: str) -> Iterator[TestClient]:
    with serve_app(corpus_db) as c:
        yield c


def assert_error(response: Any, status: int, type_: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["type"] == type_
    assert body["error"]["message"]
    assert "Traceback" not in response.text
    message: str = body["error"]["message"]
    return message


# ---------------------------------------------------------------- /ask


def test_ask_answerable_question_returns_cited_answer(client: TestClient) -> None:
    response = client.post("/ask", json={"question": ANSWERABLE})
    assert response.status_code == 200
    answer = response.json()
    assert answer["abstained"] is False
    assert answer["reason"] == ""
    assert "30 days" in answer["text"]
    assert answer["sentences"] and all(s["citations"] for s in answer["sentences"])
    for key in ("citations", "closest", "dropped", "usage", "timings", "conflict", "message", "blocks"):
        assert key in answer
    assert answer["trace_id"] == response.headers["x-trace-id"]


def test_ask_names_the_reranker_its_scores_come_from_as_the_stream_does(client: TestClient) -> None:
    answer = client.post("/ask", json={"question": ANSWERABLE}).json()
    assert answer["reranker"] == "lexical"  # offline, no vectors in this store
    stream = client.post("/ask/stream", json={"question": ANSWERABLE}).text
    meta = next(line for line in stream.splitlines() if line.startswith("data:") and '"reranker"' in line)
    assert f'"reranker":"{answer["reranker"]}"' in meta.replace(" ", "")


def test_ask_citation_links_resolve_to_the_cited_span(client: TestClient) -> None:
    answer = client.post("/ask", json={"question": ANSWERABLE}).json()
    for sentence in answer["sentences"]:
        for citation in sentence["citations"]:
            assert citation["chunk_url"] == chunk_path(citation["chunk_id"])
            assert "%23" in citation["chunk_url"]
            assert citation["link"] in (citation["url"], citation["chunk_url"])
            chunk = client.get(citation["chunk_url"]).json()
            assert chunk["text"][citation["start"] : citation["end"]] == citation["cited_text"]


def test_ask_off_topic_question_refuses_low_retrieval_score(client: TestClient) -> None:
    answer = client.post("/ask", json={"question": OFF_TOPIC}).json()
    assert answer["abstained"] is True
    assert answer["reason"] == "low_retrieval_score"
    assert answer["message"]
    assert answer["sentences"] == []


def test_ask_conflicting_sources_refuses_with_both_statements_linked(client: TestClient) -> None:
    answer = client.post("/ask", json={"question": CONFLICT}).json()
    assert answer["reason"] == "conflicting_sources"
    statements = answer["conflict"]["statements"]
    assert len({s["doc_id"] for s in statements}) >= 2
    assert all(s["link"] and s["chunk_url"].startswith("/chunks/") for s in statements)


def test_ask_top_k_in_range_is_accepted(client: TestClient) -> None:
    response = client.post("/ask", json={"question": ANSWERABLE, "top_k": 3})
    assert response.status_code == 200


def test_ask_empty_store_refuses_low_retrieval_score(tmp_path: Path) -> None:
    with serve_app(str(tmp_path / "empty.db")) as c:
        answer = c.post("/ask", json={"question": ANSWERABLE}).json()
        ready = c.get("/readyz").json()
    assert answer["reason"] == "low_retrieval_score"
    assert ready["status"] == "empty"
    assert ready["chunks"] == 0
    assert "rag ingest" in ready["message"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"question": ""}, "empty"),
        ({"question": "   \n\t "}, "empty"),
        ({"question": "x" * 2001}, "2000"),
        ({}, "question"),
        ({"question": 5}, "question"),
        ({"question": ANSWERABLE, "top_k": 0}, "top_k"),
        ({"question": ANSWERABLE, "top_k": 51}, "top_k"),
        ({"question": ANSWERABLE, "top_k": "many"}, "top_k"),
        ([ANSWERABLE], "object"),
    ],
)
def test_ask_invalid_body_returns_422_with_readable_message(
    client: TestClient, body: Any, needle: str
) -> None:
    response = client.post("/ask", json=body)
    type_ = "invalid_question" if needle in ("empty", "2000") else "invalid_request"
    message = assert_error(response, 422, type_)
    assert needle in message.lower()


def test_ask_body_not_json_returns_422(client: TestClient) -> None:
    response = client.post("/ask", content=b"{question: nope", headers={"content-type": "application/json"})
    message = assert_error(response, 422, "invalid_request")
    assert "not valid JSON" in message


def test_ask_question_over_configured_limit_returns_422(corpus_db: str) -> None:
    with serve_app(corpus_db, max_question_chars=20) as c:
        response = c.post("/ask", json={"question": "a" * 21})
    assert "limit is 20" in assert_error(response, 422, "invalid_question")


def test_ask_body_over_64_kb_returns_413(client: TestClient) -> None:
    response = client.post("/ask", json={"question": "x" * 70_000})
    assert_error(response, 413, "payload_too_large")


def test_ask_chunked_body_over_64_kb_returns_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"question": "'
        for _ in range(40):
            yield b"x" * 2048
        yield b'"}'

    response = client.post("/ask", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert_error(response, 413, "payload_too_large")


def test_ask_provider_unavailable_returns_503_with_retry_after(corpus_db: str) -> None:
    with serve_app(corpus_db, generator=UnavailableGenerator()) as c:
        response = c.post("/ask", json={"question": ANSWERABLE})
    assert_error(response, 503, "upstream_unavailable")
    assert response.headers["retry-after"] == "13"


# ---------------------------------------------------------------- trace ids and logs


def test_trace_id_generated_per_request_and_echoed(client: TestClient) -> None:
    first = client.get("/healthz").headers["x-trace-id"]
    second = client.get("/healthz").headers["x-trace-id"]
    assert len(first) == 32 and int(first, 16) >= 0
    assert first != second


def test_trace_id_reuses_valid_request_id_and_passes_it_to_the_pipeline(client: TestClient) -> None:
    response = client.post("/ask", json={"question": ANSWERABLE}, headers={"X-Request-ID": "req-42.a"})
    assert response.headers["x-trace-id"] == "req-42.a"
    assert response.json()["trace_id"] == "req-42.a"


@pytest.mark.parametrize("path", ["/ask", "/ask/stream"])
def test_trace_id_lands_in_the_ask_log(client: TestClient, corpus_db: str, path: str) -> None:
    response = client.post(path, json={"question": ANSWERABLE})
    trace_id = response.headers["x-trace-id"]
    store = open_store(load_settings(db=corpus_db, mock=True))
    try:
        rows = store.ask_log(trace_id)
    finally:
        store.close()
    assert len(rows) == 1
    assert rows[0]["question"] == ANSWERABLE


def test_trace_id_replaces_invalid_request_id(client: TestClient) -> None:
    response = client.get("/healthz", headers={"X-Request-ID": "bad id with spaces"})
    assert response.headers["x-trace-id"] != "bad id with spaces"
    assert len(response.headers["x-trace-id"]) == 32


def test_access_log_writes_one_json_line_per_request(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="rag.access"):
        response = client.post("/ask", json={"question": ANSWERABLE})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "rag.access"]
    assert len(lines) == 1
    entry = lines[0]
    assert entry["trace_id"] == response.headers["x-trace-id"]
    assert entry["route"] == "/ask"
    assert entry["status"] == 200
    assert entry["reason"] == ""
    assert 0 < entry["top_score"] <= 1
    assert entry["blocks"] >= 1
    assert entry["emitted"] == len(response.json()["sentences"])
    assert entry["dropped"] == 0
    assert "retrieve" in entry["timings"]
    assert entry["duration_ms"] > 0


# ---------------------------------------------------------------- chunks and documents


def test_chunks_known_id_returns_text_and_provenance(client: TestClient) -> None:
    chunk_id = client.post("/ask", json={"question": ANSWERABLE}).json()["citations"][0]["chunk_id"]
    response = client.get(chunk_path(chunk_id))
    assert response.status_code == 200
    chunk = response.json()
    assert chunk["chunk_id"] == chunk_id
    for key in ("doc_id", "title", "section", "text", "updated_at", "url", "start_char", "end_char"):
        assert key in chunk
    assert chunk["end_char"] - chunk["start_char"] == len(chunk["text"])


def test_chunks_unknown_id_returns_404(client: TestClient) -> None:
    message = assert_error(client.get(chunk_path("no-such-doc#c99")), 404, "not_found")
    assert "no-such-doc#c99" in message


def test_documents_known_id_returns_chunks_in_order(client: TestClient) -> None:
    chunk_id = client.post("/ask", json={"question": ANSWERABLE}).json()["citations"][0]["chunk_id"]
    doc_id = client.get(chunk_path(chunk_id)).json()["doc_id"]
    document = client.get(f"/documents/{doc_id}").json()
    assert document["doc_id"] == doc_id
    assert "text" not in document
    starts = [c["start_char"] for c in document["chunks"]]
    assert starts == sorted(starts) and len(starts) >= 1
    assert chunk_id in [c["chunk_id"] for c in document["chunks"]]


def test_documents_unknown_id_returns_404(client: TestClient) -> None:
    assert_error(client.get("/documents/no-such-doc"), 404, "not_found")


# ---------------------------------------------------------------- health, readiness, page, docs


def test_healthz_returns_ok(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_counts_and_components(client: TestClient) -> None:
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready"
    assert ready["documents"] >= 20 and ready["chunks"] >= ready["documents"]
    assert ready["generator"] == "offline-extractive"
    assert ready["reranker"]
    assert 0 <= ready["min_score"] <= 1


def test_readyz_store_failure_returns_503(corpus_db: str) -> None:
    with serve_app(corpus_db, wrap=BrokenStore) as c:
        response = c.get("/readyz")
    assert_error(response, 503, "store_unavailable")


def test_internal_error_returns_500_without_stack_trace(
    corpus_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    with serve_app(corpus_db, wrap=BrokenStore) as c, caplog.at_level(logging.ERROR, logger="rag.api"):
        response = c.get(chunk_path("doc#c01"))
    message = assert_error(response, 500, "internal_error")
    assert "hunter2" not in response.text and "secret" not in response.text
    assert response.headers["x-trace-id"] in message
    assert any(r.exc_info and "hunter2" in str(r.exc_info[1]) for r in caplog.records)


def test_unknown_route_returns_404_in_error_shape(client: TestClient) -> None:
    assert "/nope" in assert_error(client.get("/nope"), 404, "not_found")


def test_wrong_method_returns_405_in_error_shape(client: TestClient) -> None:
    assert_error(client.get("/ask"), 405, "method_not_allowed")


def test_index_serves_the_web_page(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "<" in response.text


def test_openapi_documents_every_endpoint_with_an_example(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    expected = {
        "/ask",
        "/ask/stream",
        "/chunks/{chunk_id}",
        "/documents/{doc_id}",
        "/healthz",
        "/readyz",
        "/",
    }
    assert expected <= set(schema["paths"])
    for path in expected:
        for method, operation in schema["paths"][path].items():
            content = operation["responses"]["200"]["content"]
            media = next(iter(content.values()))
            ref = media.get("schema", {}).get("$ref", "")
            named = components.get(ref.rsplit("/", 1)[-1], {})
            assert "example" in media or "examples" in named, f"{method.upper()} {path} has no example"


# ---------------------------------------------------------------- auth and CORS


@pytest.fixture
def keyed(corpus_db: str) -> Iterator[TestClient]:
    with serve_app(corpus_db, api_keys=f"other-key, {KEY}") as c:
        yield c


def test_auth_request_without_key_returns_401(keyed: TestClient) -> None:
    response = keyed.post("/ask", json={"question": ANSWERABLE})
    assert "missing" in assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"


def test_auth_request_with_wrong_key_returns_401(keyed: TestClient) -> None:
    response = keyed.post("/ask", json={"question": ANSWERABLE}, headers={"Authorization": "Bearer nope"})
    assert_error(response, 401, "unauthorized")


def test_auth_request_with_valid_key_is_served(keyed: TestClient) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    assert keyed.post("/ask", json={"question": ANSWERABLE}, headers=headers).status_code == 200
    assert keyed.get("/readyz", headers=headers).status_code == 200


@pytest.mark.parametrize("path", ["/readyz", "/chunks/x%23c01", "/documents/x", "/openapi.json", "/nope"])
def test_auth_every_other_endpoint_needs_the_key(keyed: TestClient, path: str) -> None:
    assert_error(keyed.get(path), 401, "unauthorized")


def test_auth_healthz_and_web_page_stay_public(keyed: TestClient) -> None:
    assert keyed.get("/healthz").status_code == 200
    assert keyed.get("/").status_code == 200
    static = sorted(p.name for p in (ROOT / "src" / "rag" / "static").glob("*") if p.name != "index.html")
    for name in static:
        assert keyed.get(f"/static/{name}").status_code == 200


def test_auth_event_source_may_send_key_in_query(keyed: TestClient) -> None:
    assert keyed.get("/ask/stream", params={"q": ANSWERABLE, "key": KEY}).status_code == 200
    assert_error(keyed.get("/ask/stream", params={"q": ANSWERABLE, "key": "nope"}), 401, "unauthorized")
    assert_error(keyed.get("/readyz", params={"key": KEY}), 401, "unauthorized")


def test_cors_none_by_default(client: TestClient) -> None:
    response = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers


def test_cors_configured_origin_is_allowed(corpus_db: str) -> None:
    with serve_app(corpus_db, cors_origins="https://app.example") as c:
        preflight = c.options(
            "/ask",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
        )
        other = c.get("/healthz", headers={"Origin": "https://evil.example"})
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers


# ---------------------------------------------------------------- links


def test_with_links_prefers_document_url_over_chunk_path() -> None:
    linked = with_links(
        {"a": [{"chunk_id": "d#c01", "url": "https://docs.example/d"}, {"chunk_id": "e/f#c02"}]}
    )
    first, second = linked["a"]
    assert first["link"] == "https://docs.example/d"
    assert first["chunk_url"] == "/chunks/d%23c01"
    assert second["link"] == second["chunk_url"] == "/chunks/e%2Ff%23c02"


# ---------------------------------------------------------------- the documented schemas are the real JSON


@pytest.mark.parametrize("question", [ANSWERABLE, OFF_TOPIC, CONFLICT])
def test_schemas_answer_model_matches_the_answer_json_exactly(client: TestClient, question: str) -> None:
    AnswerOut.model_validate(client.post("/ask", json={"question": question}).json())


def test_schemas_other_models_match_their_json_exactly(client: TestClient) -> None:
    chunk_id = client.post("/ask", json={"question": ANSWERABLE}).json()["citations"][0]["chunk_id"]
    chunk = ChunkOut.model_validate(client.get(chunk_path(chunk_id)).json())
    DocumentOut.model_validate(client.get(f"/documents/{chunk.doc_id}").json())
    HealthOut.model_validate(client.get("/healthz").json())
    ReadyOut.model_validate(client.get("/readyz").json())
    ErrorOut.model_validate(client.get("/nope").json())


@pytest.mark.parametrize("model", [AnswerOut, ChunkOut, DocumentOut, HealthOut, ReadyOut, ErrorOut])
def test_schemas_examples_are_valid_instances(model: type[Any]) -> None:
    examples = model.model_config["json_schema_extra"]["examples"]
    assert examples
    for example in examples:
        model.model_validate(example)


def test_readyz_and_both_ask_routes_fail_alike_when_the_log_database_cannot_be_opened(
    corpus_db: str, tmp_path: Path
) -> None:
    db = tmp_path / "rag.db"
    db.write_bytes(Path(corpus_db).read_bytes())
    (tmp_path / "rag-log.db").mkdir()  # where the log database would be created: not a file
    with serve_app(str(db)) as c:
        ready = c.get("/readyz")
        assert ready.status_code == 503 and "rag-log.db" in ready.json()["error"]["message"]
        for path in ("/ask", "/ask/stream"):
            got = c.post(path, json={"question": ANSWERABLE})
            assert got.status_code == 503, (path, got.text)
            assert got.json()["error"]["type"] == "store_unavailable"
        assert c.get("/ask/stream", params={"q": ANSWERABLE}).status_code == 503
        (tmp_path / "rag-log.db").rmdir()  # the log can be created again: every route recovers
        assert c.get("/readyz").status_code == 200
        assert c.post("/ask", json={"question": ANSWERABLE}).status_code == 200


# --- follow-ups (a conversation's earlier turns) -------------------------------------------------------

LEAVE = "How many days of paid annual leave does a full-time employee get?"
CARRY = "Does it carry over?"


def test_ask_follow_up_searches_for_its_standalone_question(client: TestClient) -> None:
    first = client.post("/ask", json={"question": LEAVE}).json()
    assert first["searched_for"] == LEAVE and "25 days" in first["text"]
    body = {"question": CARRY, "history": [{"question": LEAVE, "answer": first["text"]}]}
    follow = client.post("/ask", json=body).json()
    AnswerOut.model_validate(follow)
    assert follow["question"] == CARRY
    assert follow["searched_for"] == "Does it carry over (paid annual leave)?"
    assert "5 unused days" in follow["text"]
    # each turn is cited from its own blocks only
    issued = {b["chunk_id"] for b in follow["blocks"]}
    assert all(c["chunk_id"] in issued for c in follow["citations"])


def test_ask_history_over_the_limit_is_a_clear_422(corpus_db: str) -> None:
    with serve_app(corpus_db, max_history_turns=2) as c:
        turns = [{"question": LEAVE, "answer": ""}] * 3
        response = c.post("/ask", json={"question": CARRY, "history": turns})
        assert "3 earlier turns; the limit is 2" in assert_error(response, 422, "invalid_question")
        stream = c.post("/ask/stream", json={"question": CARRY, "history": turns})
        assert "the limit is 2" in assert_error(stream, 422, "invalid_question")
        assert c.post("/ask", json={"question": CARRY, "history": turns[:2]}).status_code == 200


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"history": [{"question": "  ", "answer": "x"}]}, "history turn 1: question is empty"),
        ({"history": [{"question": LEAVE, "answer": "x" * 9000}]}, "history turn 1: the answer is 9000"),
        ({"history": [{"question": LEAVE, "extra": 1}]}, ""),
        ({"conversation_id": "no spaces allowed"}, "conversation_id must be"),
        ({"conversation_id": "x" * 65}, "conversation_id must be"),
    ],
)
def test_ask_bad_history_or_conversation_id_is_a_422(
    client: TestClient, body: dict[str, Any], needle: str
) -> None:
    response = client.post("/ask", json={"question": CARRY, **body})
    assert response.status_code == 422, response.text
    assert needle in response.json()["error"]["message"]


def test_ask_log_records_conversation_id_and_turn(corpus_db: str) -> None:
    with serve_app(corpus_db) as c:
        history = [{"question": LEAVE, "answer": ""}]
        body = {"question": CARRY, "history": history, "conversation_id": "conv-7"}
        trace = c.post("/ask", json=body).json()["trace_id"]
        single = c.post("/ask", json={"question": LEAVE}).json()["trace_id"]
    store = open_store(load_settings(db=corpus_db, mock=True))
    try:
        [row] = store.ask_log(trace)
        assert (row["question"], row["conversation_id"], row["turn"]) == (CARRY, "conv-7", 2)
        [row] = store.ask_log(single)
        assert (row["conversation_id"], row["turn"]) == ("", 0)
    finally:
        store.close()


def test_ask_an_earlier_answer_is_never_evidence_nor_a_search_term(client: TestClient) -> None:
    def follow(answer: str) -> dict[str, Any]:
        body = {"question": CARRY, "history": [{"question": LEAVE, "answer": answer}]}
        found = client.post("/ask", json=body).json()
        return {k: v for k, v in found.items() if k not in ("trace_id", "timings")}

    planted = "Unused leave can be sold back to Quillfeather Bank at 400 euros a day."
    assert follow(planted) == follow("Every full-time employee receives 25 days.")
    assert "Quillfeather" not in json.dumps(follow(planted))
