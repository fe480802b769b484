"""The Voyage path, offline: the real `voyageai` client talks to a fake Voyage API on a loopback port.

The client is pointed at the fake with `base_url` (our setting `VOYAGE_BASE_URL`); the fake
answers POST /v1/embeddings and /v1/rerank like the service, from a hashed bag of stemmed terms
with one planted synonym ("automobile" ~ "car"), so dense retrieval can find what BM25 cannot.
"""

import json
import math
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rag.answer.rerank import LexicalReranker, VoyageReranker, make_reranker
from rag.answer.retrieve import retrieve
from rag.config import Settings, load_settings
from rag.ingest.embeddings import VoyageEmbedder, make_embedder, voyage_client
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
from rag.text import terms
from rag.types import Chunk, Scored

DIM = 64
SYNONYMS = {"automobil": "car"}


def _terms(text: str) -> set[str]:
    return {SYNONYMS.get(t, t) for t in terms(text)}


def _vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for term in _terms(text):
        vec[zlib.crc32(term.encode()) % DIM] += 1.0
    return vec


class FakeVoyage(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fail_with: int | None = None
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeVoyage

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.server.fail_with:
            return self._send(self.server.fail_with, {"detail": "fake outage"})
        if self.path == "/v1/embeddings":
            data = [
                {"object": "embedding", "embedding": _vector(t), "index": i}
                for i, t in enumerate(body["input"])
            ]
        elif self.path == "/v1/rerank":
            query = _terms(body["query"])
            scores = [len(query & _terms(doc)) / max(1, len(query)) for doc in body["documents"]]
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            data = [{"index": i, "relevance_score": round(0.05 + 0.9 * scores[i], 4)} for i in order]
        else:
            return self._send(404, {"detail": "not found"})
        self._send(
            200, {"object": "list", "data": data, "model": body.get("model"), "usage": {"total_tokens": 7}}
        )

    def _send(self, status: int, payload: object) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def fake() -> Iterator[FakeVoyage]:
    server = FakeVoyage()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def voyage_settings(fake: FakeVoyage, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("MOCK", "0")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-key")
    monkeypatch.setenv("VOYAGE_BASE_URL", fake.base_url)
    return load_settings(model_max_retries=0, model_timeout=5)


def _client(fake: FakeVoyage) -> Any:
    return voyage_client(api_key="pa-test", base_url=fake.base_url, timeout=5, max_retries=0)


def _scored(chunk_id: str, text: str, lexical: float = 1.0) -> Scored:
    chunk = Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], title="T", section="", text=text)
    return Scored(chunk=chunk, score=0.0, lexical=lexical)


def test_make_embedder_and_reranker_offline_or_mock_are_lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_embedder(load_settings()) is None
    assert isinstance(make_reranker(load_settings()), LexicalReranker)
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-key")  # MOCK=1 still set by conftest
    assert make_embedder(load_settings()) is None
    assert make_reranker(load_settings()).name == "lexical"


def test_make_embedder_and_reranker_with_key_use_voyage(voyage_settings: Settings) -> None:
    assert isinstance(make_embedder(voyage_settings), VoyageEmbedder)
    assert make_reranker(voyage_settings).name == "voyage"


def test_voyage_embedder_sends_input_type_and_returns_vectors_in_order(fake: FakeVoyage) -> None:
    embedder = VoyageEmbedder(client=_client(fake), model="voyage-3.5", batch_size=2)
    vectors = embedder.embed_documents(["red car", "blue sky", "green tree"])
    assert vectors == [_vector("red car"), _vector("blue sky"), _vector("green tree")]
    assert embedder.embed_query("red automobile") == _vector("red car")
    assert [(p, b["input_type"], len(b["input"])) for p, b in fake.requests] == [
        ("/v1/embeddings", "document", 2),
        ("/v1/embeddings", "document", 1),
        ("/v1/embeddings", "query", 1),
    ]


def test_voyage_reranker_uses_service_scores_sorted(fake: FakeVoyage) -> None:
    reranker = VoyageReranker(client=_client(fake), model="rerank-2.5")
    candidates = [_scored("a#c00", "Bananas are yellow."), _scored("b#c00", "Automobiles need fuel.")]
    ranked = reranker.rerank("Does my car need fuel?", candidates, df={}, n_chunks=2)
    assert [(s.chunk.chunk_id, s.score) for s in ranked] == [("b#c00", 0.95), ("a#c00", 0.05)]
    assert fake.requests[0][1]["model"] == "rerank-2.5"


@pytest.mark.parametrize("status", [500, 401, 429])
def test_voyage_reranker_http_error_falls_back_to_lexical_with_warning(
    fake: FakeVoyage, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail_with = status
    reranker = VoyageReranker(client=_client(fake))
    candidates = [_scored("a#c00", "Bananas are yellow."), _scored("b#c00", "The trash keeps projects.")]
    ranked = reranker.rerank("trash projects", candidates, df={"trash": 1, "project": 1}, n_chunks=2)
    expected = LexicalReranker().rerank(
        "trash projects", candidates, df={"trash": 1, "project": 1}, n_chunks=2
    )
    assert ranked == expected
    assert "Voyage rerank failed" in caplog.text


def test_voyage_reranker_unreachable_server_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    server = FakeVoyage()
    url = server.base_url
    server.server_close()  # nothing listens on this port any more
    client = voyage_client(api_key="pa-test", base_url=url, timeout=2, max_retries=0)
    ranked = VoyageReranker(client=client).rerank("x", [_scored("a#c00", "x")], df={}, n_chunks=1)
    assert [s.chunk.chunk_id for s in ranked] == ["a#c00"]
    assert "Voyage rerank failed" in caplog.text


def _write_corpus(root: Path) -> None:
    root.mkdir()
    (root / "garage.md").write_text("## Parking\n\nAutomobiles are parked in the garage overnight.")
    (root / "fruit.md").write_text("## Fruit\n\nBananas are yellow and sweet.")
    (root / "sky.md").write_text("## Weather\n\nThe sky is blue on a clear day.")


def test_ingest_and_retrieve_with_voyage_are_hybrid(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_corpus(tmp_path / "docs")
    store = SqliteStore(str(tmp_path / "v.db"))
    embedder = make_embedder(voyage_settings)
    report = ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=embedder)
    assert report.embedded == 3 == store.stats().embeddings
    assert store.search(terms("Where is my car?"), 10) == []  # BM25 alone cannot find it
    results = retrieve(
        "Where is my car?", store=store, reranker=make_reranker(voyage_settings), embedder=embedder, top_k=2
    )
    assert results[0].chunk.chunk_id == "garage#c00" and results[0].score > results[1].score
    store.close()


def test_ingest_and_retrieve_when_voyage_is_down_fall_back_to_lexical(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write_corpus(tmp_path / "docs")
    fake.fail_with = 503
    store = SqliteStore(str(tmp_path / "v.db"))
    embedder = make_embedder(voyage_settings)
    report = ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=embedder)
    assert len(report.added) == 3 and report.embedded == 0
    results = retrieve(
        "Are bananas yellow?", store=store, reranker=make_reranker(voyage_settings), embedder=embedder
    )
    assert results[0].chunk.chunk_id == "fruit#c00"
    assert results[0].score == pytest.approx(1.0)  # the lexical reranker's full coverage
    assert "embedding failed" in caplog.text and "dense retrieval failed" in caplog.text
    assert math.isfinite(results[0].lexical)
    store.close()


def test_voyage_key_without_the_voyage_extra_is_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from rag.errors import ConfigError

    monkeypatch.setitem(sys.modules, "voyageai", None)
    monkeypatch.setitem(sys.modules, "voyageai.client", None)
    settings = load_settings(voyage_api_key="k", mock=False)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[voyage\]'"):
        make_embedder(settings)
    assert isinstance(make_reranker(settings), LexicalReranker)
