"""The HTTP API's safe defaults: odd input never gives a 500, documented statuses for malformed
bodies, security headers, HEAD wherever GET works, a local API reference, no server paths."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.api import create_app
from rag.api.middleware import CONTENT_SECURITY_POLICY
from rag.config import load_settings

STATIC = Path(__file__).resolve().parent.parent / "src" / "rag" / "static"
ANSWERABLE = "How long do deleted projects stay in the trash?"
ODD_QUESTIONS = [
    "How long do deleted projects stay in the trash? \ud800",
    "\udfff trash",
    "trash \x00 days",
    "trash\x07\x1b[31m\x7f\x85 days",
    "\u202etrash\u202c \u200fdays\u200e",
    "\U0001f600" * 2000,
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 trash",
    "\x00\x01\x02",
    "\ufeff\ufffe\uffff",
]


@pytest.fixture(scope="module")
def client(corpus_db: str) -> Iterator[TestClient]:
    app = create_app(load_settings(db=corpus_db, mock=True, api_keys="", anthropic_api_key=""))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def stream_events(body: str) -> list[str]:
    return [line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event: ")]


@pytest.mark.parametrize("question", ODD_QUESTIONS)
def test_ask_odd_question_gets_an_answer_or_422(client: TestClient, question: str) -> None:
    body = json.dumps({"question": question})  # ASCII escapes: lone surrogates travel as \ud800
    response = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["error"]["type"] in ("invalid_question", "invalid_request")
    else:
        assert "\x00" not in response.json()["question"]


@pytest.mark.parametrize("question", ODD_QUESTIONS)
def test_ask_stream_odd_question_gets_a_whole_stream_or_422(client: TestClient, question: str) -> None:
    body = json.dumps({"question": question})
    response = client.post("/ask/stream", content=body, headers={"content-type": "application/json"})
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200:
        events = stream_events(response.text)
        assert events.count("done") == 1 and events[-1] == "done"
        assert "error" not in events


def test_ask_lone_surrogate_is_422_naming_the_problem(client: TestClient) -> None:
    body = '{"question": "How long do deleted projects stay in the trash? \\ud800"}'
    response = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert "surrogate" in response.json()["error"]["message"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60))
def test_ask_any_json_string_is_answered_or_422(client: TestClient, question: str) -> None:
    body = json.dumps({"question": question})
    response = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert response.status_code in (200, 422), response.text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"question": "trash \xff"}', "application/json"),
        (b"\xfe\xff\x00{", "application/json"),
        (b"not json", "application/json"),
        (b"", "application/json"),
        (b"[1, 2]", "application/json"),
        (b'{"question": 5}', "application/json"),
        (b'{"question": "trash", "top_k": "many"}', "application/json"),
        (b"question=trash", "application/x-www-form-urlencoded"),
    ],
)
def test_ask_malformed_body_is_422_in_error_shape(client: TestClient, body: bytes, content_type: str) -> None:
    for path in ("/ask", "/ask/stream"):
        response = client.post(path, content=body, headers={"content-type": content_type})
        assert response.status_code == 422, (path, response.text)
        assert response.json()["error"]["type"] == "invalid_request"


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/docs", "/static/app.js", "/ask", "/nope"])
def test_every_response_carries_the_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_pages_hold_no_inline_script_or_style() -> None:
    for page in ("index.html", "docs.html"):
        html = (STATIC / page).read_text(encoding="utf-8")
        assert "<style" not in html and " style=" not in html and "javascript:" not in html
        for tag in html.split("<script")[1:]:
            assert tag.split(">", 1)[0].strip().startswith("src="), page
            assert tag.split(">", 1)[1].startswith("</script>"), page


@pytest.mark.parametrize(
    "path",
    ["/", "/healthz", "/readyz", "/docs", "/openapi.json", "/static/app.js", "/chunks/user-manual%23c06"],
)
def test_head_works_wherever_get_does(client: TestClient, path: str) -> None:
    get = client.get(path)
    head = client.head(path)
    assert get.status_code == head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


def test_head_where_get_is_not_allowed_is_405_or_404(client: TestClient) -> None:
    assert client.head("/ask").status_code == 405
    assert client.head("/nope").status_code == 404


def test_head_on_the_stream_sends_headers_only(client: TestClient) -> None:
    response = client.head("/ask/stream", params={"q": ANSWERABLE})
    assert response.status_code == 200 and response.content == b""
    assert response.headers["content-type"].startswith("text/event-stream")


def test_docs_page_is_local_and_names_no_cdn(client: TestClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    assert "/static/docs.js" in response.text
    for asset in ("docs.html", "docs.js", "docs.css"):
        text = (STATIC / asset).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert client.get("/static/docs.js").status_code == 200
    assert client.get("/redoc").status_code == 404


def test_documents_response_holds_no_server_path(client: TestClient, corpus_db: str) -> None:
    response = client.get("/documents/user-manual")
    assert response.status_code == 200
    text = response.text
    assert "source_path" not in response.json()
    assert str(Path(corpus_db).parent) not in text and str(STATIC.parent.parent.parent) not in text
    assert "source_path" not in json.dumps(client.get("/openapi.json").json()["components"]["schemas"])


@pytest.fixture
def pg_client(tmp_path: Path) -> Iterator[TestClient]:
    """The app over a PostgreSQL store in a fresh schema holding the bundled corpus."""
    import os
    import uuid
    from urllib.parse import quote

    url = os.environ.get("RAG_TEST_DATABASE_URL", "")
    if not url:
        pytest.skip("RAG_TEST_DATABASE_URL is not set")
    psycopg = pytest.importorskip("psycopg")
    from rag.answer.pipeline import build_pipeline
    from rag.ingest.indexer import ingest_paths
    from rag.store.postgres import PgStore, wait_ready

    if not wait_ready(url, timeout=3):
        pytest.skip("PostgreSQL is unreachable")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    store = PgStore(f"{url}{sep}options={quote(f'-csearch_path={schema},public')}", max_size=4)
    try:
        config = load_settings(db=str(tmp_path / "unused.db"), mock=True, api_keys="", anthropic_api_key="")
        ingest_paths(
            store, [str(Path(__file__).resolve().parent.parent / "fixtures" / "corpus")], settings=config
        )
        app = create_app(config, pipeline=build_pipeline(config, store=store))
        with TestClient(app, raise_server_exceptions=False) as test_client:
            yield test_client
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.postgres
def test_ask_odd_questions_on_postgres_get_an_answer_or_422(pg_client: TestClient) -> None:
    for question in ODD_QUESTIONS:
        body = json.dumps({"question": question})
        for path in ("/ask", "/ask/stream"):
            response = pg_client.post(path, content=body, headers={"content-type": "application/json"})
            assert response.status_code in (200, 422), (question[:20], path, response.text)
            if path == "/ask/stream" and response.status_code == 200:
                assert stream_events(response.text).count("done") == 1


class _LogFails:
    """A store whose ask-log write fails (it runs after the stream's `done`); the rest delegated."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def log_ask(self, record: Any) -> None:
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")


def test_stream_never_sends_anything_after_done(corpus_db: str) -> None:
    from dataclasses import replace

    from rag.answer.pipeline import build_pipeline

    config = load_settings(db=corpus_db, mock=True, api_keys="", anthropic_api_key="")
    pipeline = build_pipeline(config)
    app = create_app(config, pipeline=replace(pipeline, store=_LogFails(pipeline.store)))
    try:
        with TestClient(app, raise_server_exceptions=False) as test_client:
            response = test_client.post("/ask/stream", json={"question": ANSWERABLE})
    finally:
        pipeline.store.close()
    events = stream_events(response.text)
    assert events[-1] == "done" and events.count("done") == 1 and "error" not in events


def test_docs_page_is_public_while_the_schema_needs_the_key(corpus_db: str) -> None:
    app = create_app(load_settings(db=corpus_db, mock=True, api_keys="k1", anthropic_api_key=""))
    with TestClient(app) as keyed:
        assert keyed.get("/docs").status_code == 200
        assert keyed.get("/openapi.json").status_code == 401
        assert keyed.get("/openapi.json", headers={"Authorization": "Bearer k1"}).status_code == 200
        assert keyed.head("/readyz").status_code == 401


def test_ask_too_deeply_nested_body_is_422_saying_so(client: TestClient) -> None:
    body = "[" * 30000 + "]" * 30000
    got = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert got.status_code == 422 and "nested" in got.json()["error"]["message"]


@pytest.mark.parametrize("top_k", ["true", '"8"', "8.5", "false"])
def test_ask_top_k_must_be_a_json_integer(client: TestClient, top_k: str) -> None:
    body = f'{{"question": "{ANSWERABLE}", "top_k": {top_k}}}'
    got = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert got.status_code == 422 and "top_k" in got.json()["error"]["message"]


def test_ask_top_k_integral_number_is_an_integer_as_json_schema_counts_it(client: TestClient) -> None:
    body = f'{{"question": "{ANSWERABLE}", "top_k": 3.0}}'
    got = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert got.status_code == 200, got.text


def test_ask_stream_get_with_invalid_utf8_in_the_query_is_422(client: TestClient) -> None:
    got = client.get("/ask/stream?q=%FF%FE")
    assert got.status_code == 422 and "UTF-8" in got.json()["error"]["message"]
    assert client.get("/ask/stream", params={"q": "trash days é", "top_k": 3}).status_code == 200


def test_options_and_other_methods_on_the_stream_list_get_and_post(client: TestClient) -> None:
    for method in ("OPTIONS", "PUT"):
        got = client.request(method, "/ask/stream")
        assert got.status_code == 405
        assert set(got.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST", "HEAD"}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "latin-1"])
def test_ask_json_body_in_another_encoding_is_422(client: TestClient, encoding: str) -> None:
    body = json.dumps({"question": ANSWERABLE + " é"}, ensure_ascii=False).encode(encoding)
    got = client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert got.status_code == 422 and got.json()["error"]["type"] == "invalid_request"
    assert "UTF-8" in got.json()["error"]["message"]
