"""The Voyage path, offline: the real `voyageai` client talks to the fake Voyage API (tests/fake_voyage.py).

Covers batching across documents within the public limits, retries (what the setting counts),
complete-or-visibly-incomplete embedding and its resume, the embedding model stored with each
vector, the circuit breaker and `/readyz`, the base URL with or without `/v1`, and the lexical
fallback of the reranker.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_voyage import MAX_INPUTS, FakeVoyage, fake_vector
from fastapi.testclient import TestClient

from rag.answer.gates import gate_threshold
from rag.answer.pipeline import build_pipeline
from rag.answer.rerank import LexicalReranker, VoyageReranker, make_reranker
from rag.answer.retrieve import candidates_for, retrieve
from rag.api.app import create_app
from rag.breaker import CircuitBreaker, reset_breakers
from rag.cli import main
from rag.config import Settings, load_settings, normalise_base_url
from rag.embeddings import VoyageEmbedder, embed_many, make_embedder, plan_batches, voyage_client
from rag.errors import ConfigError, UpstreamRejected, UpstreamUnavailable
from rag.ingest.indexer import EXIT_EMBEDDINGS_INCOMPLETE, ingest_paths
from rag.language.text import terms
from rag.store.sqlite import SqliteStore
from rag.types import Chunk, Scored
from rag.voyage import backoff, call_voyage, voyage_tokens


@pytest.fixture(autouse=True)
def _fresh_breakers() -> Iterator[None]:
    reset_breakers()
    yield
    reset_breakers()


@pytest.fixture
def fake() -> Iterator[FakeVoyage]:
    server = FakeVoyage().start()
    yield server
    server.stop()


def voyage_env(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("MOCK", "0")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-key")
    monkeypatch.setenv("VOYAGE_BASE_URL", base_url)
    monkeypatch.setenv("RAG_DENSE", "auto")  # conftest turns dense retrieval off


@pytest.fixture
def voyage_settings(fake: FakeVoyage, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    voyage_env(monkeypatch, fake.base_url)
    return load_settings(model_max_retries=0, model_timeout=5, db=str(tmp_path / "v.db"))


def _client(fake: FakeVoyage, timeout: float = 5) -> Any:
    return voyage_client(api_key="pa-test", base_url=fake.base_url, timeout=timeout)


def _scored(chunk_id: str, text: str, lexical: float = 1.0) -> Scored:
    chunk = Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], title="T", section="", text=text)
    return Scored(chunk=chunk, score=0.0, lexical=lexical)


def _write_corpus(root: Path) -> None:
    root.mkdir()
    (root / "garage.md").write_text("## Parking\n\nAutomobiles are parked in the garage overnight.")
    (root / "fruit.md").write_text("## Fruit\n\nBananas are yellow and sweet.")
    (root / "sky.md").write_text("## Weather\n\nThe sky is blue on a clear day.")


def _write_many(root: Path, n: int, sections: int = 5) -> None:
    root.mkdir()
    for i in range(n):
        body = "\n\n".join(
            f"## Topic {j}\n\nItem {i} part {j} covers widget {i * 7 + j} and gadget {i + j}. " * 3
            for j in range(sections)
        )
        (root / f"doc{i:04d}.md").write_text(f"# Document {i}\n\n{body}\n")


def _vectors(store: SqliteStore) -> dict[str, tuple[str, bytes]]:
    with store._connection() as conn:
        rows = conn.execute("SELECT chunk_id, model, vector FROM embeddings").fetchall()
    return {chunk_id: (model, vector) for chunk_id, model, vector in rows}


# ---------------------------------------------------------------- wiring


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
    embedder = VoyageEmbedder(client=_client(fake), model="voyage-3.5")
    vectors = embedder.embed_documents(["red car", "blue sky", "green tree"])
    assert vectors == [fake_vector("red car"), fake_vector("blue sky"), fake_vector("green tree")]
    assert embedder.embed_query("red automobile") == fake_vector("red car")
    assert [(p, b["input_type"], len(b["input"])) for p, b in fake.requests] == [
        ("/v1/embeddings", "document", 3),
        ("/v1/embeddings", "query", 1),
    ]


# ---------------------------------------------------------------- 1. batching within the limits


def test_plan_batches_respects_inputs_and_tokens_and_keeps_order() -> None:
    texts = ["a" * n for n in (5, 5, 5, 12, 1, 1, 1, 1)]
    batches = plan_batches(texts, max_inputs=3, max_tokens=10, count=len)
    assert [list(b) for b in batches] == [[0, 1], [2], [3], [4, 5, 6], [7]]
    assert plan_batches(["xx"] * 7, max_inputs=3, max_tokens=100, count=len) == [
        range(0, 3),
        range(3, 6),
        range(6, 7),
    ]
    assert plan_batches([], max_inputs=3, max_tokens=10, count=len) == []


def test_voyage_token_estimate_is_above_the_fakes_count_for_any_text() -> None:
    from fake_voyage import count_tokens

    for text in ["", "a", "plain English words here", "naïve café 東京 ✓" * 20, "x" * 10_000]:
        assert voyage_tokens(text) >= count_tokens(text)


def test_ingest_of_2000_documents_makes_few_requests_within_limits(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_many(tmp_path / "many", 2000, sections=2)
    store = SqliteStore(voyage_settings.db)
    report = ingest_paths(
        store, [tmp_path / "many"], settings=voyage_settings, embedder=make_embedder(voyage_settings)
    )
    sent = fake.embed_requests()
    assert len(report.added) == 2000
    assert report.embedded == store.stats().embeddings == store.stats().chunks >= 4000
    assert report.embed_missing == 0 and report.embed_requests == len(sent)
    assert len(sent) <= 12  # 4,000+ chunks at <= 1,000 inputs per request (2,000 before batching)
    assert all(len(body["input"]) <= MAX_INPUTS and body["input_type"] == "document" for body in sent)
    assert set(fake.statuses) == {200}  # no request broke a limit
    assert fake.max_in_flight <= voyage_settings.embed_concurrency
    store.close()


def test_embed_many_keeps_at_most_concurrency_requests_in_flight(fake: FakeVoyage) -> None:
    fake.delay = 0.05
    embedder = VoyageEmbedder(client=_client(fake), max_inputs=2)
    stored: list[int] = []
    run = embed_many(
        embedder, [f"text {i}" for i in range(20)], on_batch=lambda b, v: stored.extend(b), concurrency=3
    )
    assert run.requests == 10 == len(fake.requests) and run.embedded == 20 == len(stored)
    assert 1 < fake.max_in_flight <= 3


# ---------------------------------------------------------------- 2. complete or visibly incomplete


def test_retries_count_after_the_first_attempt_for_500_and_429(fake: FakeVoyage) -> None:
    fake.script.extend([500, 429])
    embedder = VoyageEmbedder(client=_client(fake), retries=2)
    assert embedder.embed_query("car") == fake_vector("car")
    assert fake.statuses == [500, 429, 200]
    fake.always = 500
    with pytest.raises(UpstreamUnavailable, match="after 3 attempt"):
        embedder.embed_query("car")
    assert len(fake.requests) == 3 + 3  # RAG_MODEL_MAX_RETRIES=2: three attempts in all


def test_client_errors_and_malformed_replies_are_not_retried(fake: FakeVoyage) -> None:
    fake.script.append(400)
    embedder = VoyageEmbedder(client=_client(fake), retries=2)
    with pytest.raises(UpstreamRejected):
        embedder.embed_query("car")
    fake.script.append("malformed")
    with pytest.raises(UpstreamRejected, match="malformed reply"):
        embedder.embed_documents(["a", "b"])
    assert len(fake.requests) == 2


class _Error(Exception):
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(f"fake {status}")
        self.http_status = status
        self.headers = headers


def test_backoff_honours_retry_after_else_grows_exponentially() -> None:
    assert backoff(0, _Error(429, {"retry-after": "7"})) == 7.0
    assert backoff(3, _Error(503, {"retry-after": "soon"}), rng=lambda: 1.0) == 4.0
    assert backoff(0, _Error(500, {}), rng=lambda: 1.0) < backoff(2, _Error(500, {}), rng=lambda: 1.0)
    waits: list[float] = []
    attempts = iter([_Error(429, {"retry-after": "2"}), None])

    def request() -> str:
        error = next(attempts)
        if error is not None:
            raise error
        return "ok"

    assert call_voyage(request, what="embed", retries=1, sleep=waits.append) == "ok"
    assert waits == [2.0]


def test_failed_requests_leave_chunks_visibly_missing_and_next_ingest_fills_exactly_them(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_many(tmp_path / "docs", 30, sections=4)
    settings = voyage_settings.model_copy(update={"embed_concurrency": 1})
    store = SqliteStore(settings.db)
    embedder = VoyageEmbedder(client=_client(fake), max_inputs=20, retries=0)
    fake.fail_after = 2  # requests 3, 4, ... fail with 500
    first = ingest_paths(store, [tmp_path / "docs"], settings=settings, embedder=embedder)
    total = store.stats().chunks
    assert first.embedded == 40 and first.embed_missing == total - 40 > 0
    assert "INCOMPLETE" in first.summary() and f"{total - 40} chunks lack vectors" in first.summary()
    kept = _vectors(store)
    fake.fail_after = None
    fake.requests.clear()
    second = ingest_paths(store, [tmp_path / "docs"], settings=settings, embedder=embedder)
    assert second.unchanged == 30 and second.embedded == total - 40 and second.embed_missing == 0
    sent = [text for body in fake.embed_requests() for text in body["input"]]
    assert len(sent) == total - 40  # exactly the missing ones, none twice
    now = _vectors(store)
    assert len(now) == total and all(now[cid] == kept[cid] for cid in kept)
    fake.requests.clear()
    third = ingest_paths(store, [tmp_path / "docs"], settings=settings, embedder=embedder)
    assert third.embed_requests == 0 == len(fake.requests)
    store.close()


def test_cli_ingest_exits_nonzero_and_says_how_many_chunks_lack_vectors(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_corpus(tmp_path / "docs")
    monkeypatch.setenv("RAG_DB", voyage_settings.db)
    monkeypatch.setenv("RAG_MODEL_MAX_RETRIES", "1")
    fake.always = 500
    result = CliRunner().invoke(main, ["ingest", str(tmp_path / "docs")])
    assert result.exit_code == EXIT_EMBEDDINGS_INCOMPLETE, result.output
    assert "3 added" in result.output and "3 chunks lack vectors" in result.output
    assert len(fake.requests) == 2  # one request for all three chunks, retried once
    fake.always = None
    again = CliRunner().invoke(main, ["ingest", str(tmp_path / "docs"), "--json"])
    assert again.exit_code == 0, again.output
    report = json.loads(again.output)
    assert report["embedded"] == 3 and report["embed_missing"] == 0


def test_vectors_record_their_model_and_a_model_change_reembeds(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write_corpus(tmp_path / "docs")
    store = SqliteStore(voyage_settings.db)
    old = VoyageEmbedder(client=_client(fake), model="voyage-3")
    ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=old)
    assert store.embedding_counts() == [("voyage-3", 64, 3)]
    new = VoyageEmbedder(client=_client(fake), model="voyage-3.5")
    reranker = LexicalReranker()
    with caplog.at_level(logging.WARNING):
        results = retrieve("Where is my car?", store=store, reranker=reranker, embedder=new)
    assert results == []  # voyage-3 vectors are never compared with a voyage-3.5 query
    assert "dense retrieval is off" in caplog.text and "voyage-3 (3 vectors)" in caplog.text
    report = ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=new)
    assert report.embedded == 3 and store.embedding_counts() == [("voyage-3.5", 64, 3)]
    assert "re-embedding 3 chunks" in caplog.text
    pool = candidates_for("Where is my car?", store=store, embedder=new)
    assert [s.chunk.chunk_id for s in pool][0] == "garage#c00"
    store.close()


def test_ingest_and_retrieve_with_voyage_are_hybrid(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_corpus(tmp_path / "docs")
    store = SqliteStore(voyage_settings.db)
    embedder = make_embedder(voyage_settings)
    report = ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=embedder)
    assert report.embedded == 3 == store.stats().embeddings and report.embed_requests == 1
    assert store.search(terms("Where is my car?"), 10) == []  # BM25 alone cannot find it
    results = retrieve(
        "Where is my car?", store=store, reranker=make_reranker(voyage_settings), embedder=embedder, top_k=2
    )
    assert results[0].chunk.chunk_id == "garage#c00" and results[0].score > results[1].score
    assert results[0].scorer == "voyage"
    store.close()


# ---------------------------------------------------------------- 3. breaker and fallback


@pytest.mark.parametrize("mode", [500, 401, 429, "malformed"])
def test_voyage_reranker_failure_falls_back_to_lexical_scores_named_lexical(
    fake: FakeVoyage, mode: int | str, caplog: pytest.LogCaptureFixture
) -> None:
    fake.always = mode
    reranker = VoyageReranker(client=_client(fake), retries=0)
    candidates = [_scored("a#c00", "Bananas are yellow."), _scored("b#c00", "The trash keeps projects.")]
    ranked = reranker.rerank("trash projects", candidates, df={"trash": 1, "project": 1}, n_chunks=2)
    expected = LexicalReranker().rerank(
        "trash projects", candidates, df={"trash": 1, "project": 1}, n_chunks=2
    )
    assert ranked == expected and {s.scorer for s in ranked} == {"lexical"}
    assert "Voyage rerank failed" in caplog.text and reranker.fallbacks == 1


def test_voyage_reranker_uses_service_scores_sorted(fake: FakeVoyage) -> None:
    reranker = VoyageReranker(client=_client(fake), model="rerank-2.5")
    candidates = [_scored("a#c00", "Bananas are yellow."), _scored("b#c00", "Automobiles need fuel.")]
    ranked = reranker.rerank("Does my car need fuel?", candidates, df={}, n_chunks=2)
    assert [(s.chunk.chunk_id, s.score) for s in ranked] == [("b#c00", 0.95), ("a#c00", 0.05)]
    assert fake.requests[0][1]["model"] == "rerank-2.5"


def test_voyage_reranker_sends_at_most_the_documents_the_api_accepts(fake: FakeVoyage) -> None:
    reranker = VoyageReranker(client=_client(fake))
    candidates = [_scored(f"d{i}#c00", f"Document {i} about cars.") for i in range(1200)]
    ranked = reranker.rerank("cars", candidates, df={}, n_chunks=1200)
    assert len(fake.requests[0][1]["documents"]) == 1000 and fake.statuses == [200]
    assert len(ranked) == 1200 and {s.scorer for s in ranked} == {"voyage"}


def test_breaker_opens_after_repeated_failures_and_skips_the_provider_until_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker("test", failures=2, cooldown=10, clock=lambda: now[0])
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise _Error(503, {})

    for _ in range(2):
        with pytest.raises(UpstreamUnavailable):
            call_voyage(failing, what="rerank", retries=0, breaker=breaker)
    assert breaker.state == "open"
    with pytest.raises(UpstreamUnavailable) as caught:
        call_voyage(failing, what="rerank", retries=0, breaker=breaker)
    assert caught.value.type == "upstream_circuit_open" and len(calls) == 2
    now[0] = 10.0
    assert breaker.state == "half_open"
    assert call_voyage(lambda: "ok", what="rerank", retries=0, breaker=breaker) == "ok"
    assert breaker.state == "closed" and breaker.snapshot()["short_circuited"] == 1


def test_half_open_trial_failure_reopens_the_breaker() -> None:
    now = [0.0]
    breaker = CircuitBreaker("test", failures=1, cooldown=5, clock=lambda: now[0])
    breaker.record_failure("boom")
    now[0] = 6.0
    assert breaker.allow() and not breaker.allow()  # one trial at a time
    breaker.record_failure("still down")
    assert breaker.state == "open" and breaker.retry_in() == 5.0


def test_slow_voyage_trips_the_breaker_so_later_asks_fall_back_without_calling(
    fake: FakeVoyage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    voyage_env(monkeypatch, fake.base_url)
    settings = load_settings(model_timeout=0.3, model_max_retries=0, breaker_failures=2, breaker_cooldown=600)
    fake.always, fake.slow_seconds = "slow", 1.0
    reranker = VoyageReranker.from_settings(settings)
    candidates = [_scored("a#c00", "Bananas are yellow.")]
    for _ in range(5):
        ranked = reranker.rerank("bananas", candidates, df={"banana": 1}, n_chunks=1)
        assert ranked[0].scorer == "lexical"
    assert len(fake.requests) == 2 and reranker.fallbacks == 5  # the last three never left the process


def test_readyz_reports_the_breaker_state(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_corpus(tmp_path / "docs")
    settings = voyage_settings.model_copy(update={"breaker_failures": 2, "breaker_cooldown": 600.0})
    store = SqliteStore(settings.db)
    ingest_paths(store, [tmp_path / "docs"], settings=settings, embedder=make_embedder(settings))
    pipeline = build_pipeline(settings, store=store)
    with TestClient(create_app(settings, pipeline=pipeline)) as client:
        ready = client.get("/readyz").json()
        assert [b["state"] for b in ready["breakers"].values()] == ["closed"]
        healthy = pipeline.answer("Are bananas yellow?")
        assert (healthy.reranker, healthy.min_score) == ("voyage", gate_threshold("voyage", "offline"))
        fake.always = 503
        for _ in range(3):
            assert client.post("/ask", json={"question": "Are bananas yellow?"}).status_code == 200
        fallen = pipeline.answer("Are bananas yellow?")
        assert (fallen.reranker, fallen.min_score) == ("lexical", gate_threshold("lexical", "offline"))
        ready = client.get("/readyz").json()
    (breaker,) = ready["breakers"].values()
    assert breaker["state"] == "open" and breaker["short_circuited"] >= 1 and "503" in breaker["last_error"]
    store.close()


# ---------------------------------------------------------------- 4. base URL


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_base_url_works_with_or_without_v1(
    fake: FakeVoyage, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    voyage_env(monkeypatch, fake.root + suffix)
    settings = load_settings(model_max_retries=0)
    assert settings.voyage_base_url == fake.root + "/v1"
    assert make_embedder(settings).embed_query("car") == fake_vector("car")  # type: ignore[union-attr]
    assert normalise_base_url("") == ""


def test_base_url_that_is_not_a_url_fails_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOYAGE_BASE_URL", "api.voyageai.com")
    with pytest.raises(ConfigError, match="VOYAGE_BASE_URL"):
        load_settings()


def test_base_url_answering_404_fails_the_first_ingest_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeVoyage(prefix="/api/v1").start()  # the API lives elsewhere: /v1/... answers 404
    try:
        _write_corpus(tmp_path / "docs")
        voyage_env(monkeypatch, server.root)
        monkeypatch.setenv("RAG_DB", str(tmp_path / "v.db"))
        result = CliRunner().invoke(main, ["ingest", str(tmp_path / "docs")])
    finally:
        server.stop()
    assert result.exit_code == 1
    assert "VOYAGE_BASE_URL" in result.output and "404" in result.output
    assert len(server.requests) == 1  # no retries, no further batches


def test_ingest_when_voyage_is_down_stores_documents_and_retrieval_falls_back(
    voyage_settings: Settings, fake: FakeVoyage, tmp_path: Path
) -> None:
    _write_corpus(tmp_path / "docs")
    fake.always = 503
    store = SqliteStore(voyage_settings.db)
    embedder = make_embedder(voyage_settings)
    report = ingest_paths(store, [tmp_path / "docs"], settings=voyage_settings, embedder=embedder)
    assert len(report.added) == 3 and report.embedded == 0 and report.embed_missing == 3
    embeds = len(fake.embed_requests())
    results = retrieve(
        "Are bananas yellow?", store=store, reranker=make_reranker(voyage_settings), embedder=embedder
    )
    assert results[0].chunk.chunk_id == "fruit#c00" and results[0].scorer == "lexical"
    assert results[0].score == pytest.approx(1.0)  # the lexical reranker's full coverage
    assert len(fake.embed_requests()) == embeds  # no stored vector to compare with: no question embedding
    store.close()


def test_voyage_key_without_the_voyage_extra_is_a_one_line_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from rag.errors import ConfigError

    monkeypatch.setitem(sys.modules, "voyageai", None)
    monkeypatch.setitem(sys.modules, "voyageai.client", None)
    settings = load_settings(voyage_api_key="k", mock=False, dense="auto")
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[voyage\]'"):
        make_embedder(settings)
    assert isinstance(make_reranker(settings), LexicalReranker)
