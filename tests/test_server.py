"""`rag serve` on loopback under clients that never finish: raw sockets with partial headers or
bodies, more connections than allowed. Every loop here is bounded in count and time."""

from __future__ import annotations

import gc
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from serving import serving

from rag.answer.pipeline import build_pipeline
from rag.api import create_app
from rag.api.server import app_factory
from rag.config import get_settings, load_settings
from rag.language.text import english_frequency

ROOT = Path(__file__).resolve().parent.parent
RAG = Path(sys.executable).parent / "rag"
REQUEST_TIMEOUT = 1.5
MAX_CONNECTIONS = 40
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"


@pytest.fixture(scope="module")
def server(corpus_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real `rag serve` with a short request timeout and a small connection cap; yields its port."""
    if not RAG.is_file():
        pytest.skip("the rag script is not installed beside python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(RAG_DB=corpus_db, MOCK="1", RAG_DENSE="off")  # no background embedding (conftest)

    def argv(port: int) -> list[str]:
        args = ["serve", "--port", str(port), "--request-timeout", str(REQUEST_TIMEOUT)]
        return [str(RAG), *args, "--max-connections", str(MAX_CONNECTIONS)]

    log = tmp_path_factory.mktemp("server") / "server.log"
    with serving(argv, env=env, log=log, cwd=ROOT) as (base, _):
        yield int(base.rsplit(":", 1)[1])


def request(port: int, raw: bytes, timeout: float = 5.0) -> bytes:
    """Send one raw request and read until the server closes (`Connection: close`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        return read_until_closed(sock, timeout)


def read_until_closed(sock: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes; raises TimeoutError if it stays open past `timeout`."""
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


def test_partial_headers_are_closed_within_the_timeout_while_others_are_served(server: int) -> None:
    slow = []
    try:
        for i in range(30):
            sock = socket.create_connection(("127.0.0.1", server), timeout=5)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow-" + str(i).encode())
            slow.append(sock)
        started = time.monotonic()
        assert request(server, HEALTHZ).startswith(b"HTTP/1.1 200 OK")
        for sock in slow:
            answer = read_until_closed(sock, timeout=REQUEST_TIMEOUT + 5)
            assert answer.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < REQUEST_TIMEOUT + 5
    finally:
        for sock in slow:
            sock.close()


def test_silent_connection_and_unfinished_body_are_closed(server: int) -> None:
    with (
        socket.create_connection(("127.0.0.1", server)) as silent,
        socket.create_connection(("127.0.0.1", server)) as body,
    ):
        body.sendall(
            b"POST /ask HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
            b'{"question": "tra'
        )
        assert read_until_closed(silent, timeout=REQUEST_TIMEOUT + 5).startswith(b"HTTP/1.1 408")
        read_until_closed(body, timeout=REQUEST_TIMEOUT + 5)  # closed, whatever it said
    assert request(server, HEALTHZ).startswith(b"HTTP/1.1 200 OK")


def test_connections_beyond_the_limit_get_503_and_the_server_recovers(server: int) -> None:
    held = [socket.create_connection(("127.0.0.1", server), timeout=5) for _ in range(MAX_CONNECTIONS + 5)]
    try:
        time.sleep(0.3)
        refused = 0
        for sock in held[MAX_CONNECTIONS - 2 :]:
            sock.settimeout(0.5)
            try:
                refused += sock.recv(64).startswith(b"HTTP/1.1 503")
            except TimeoutError:
                pass
        assert refused >= 3
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert request(server, HEALTHZ).startswith(b"HTTP/1.1 200 OK")


def test_keep_alive_connection_serves_two_requests_then_times_out(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=10) as sock:
        for _ in range(2):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            reply = b""
            while b'"ok"' not in reply:
                chunk = sock.recv(4096)
                assert chunk
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200 OK")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert read_until_closed(sock, timeout=REQUEST_TIMEOUT + 5).startswith(b"HTTP/1.1 408")


def test_head_on_the_served_page_is_200_without_body(server: int) -> None:
    reply = request(server, b"HEAD / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and body == b""
    assert b"content-security-policy:" in head.lower()


def test_app_startup_warms_the_word_list_before_serving(corpus_db: str) -> None:
    english_frequency.cache_clear()
    app = create_app(load_settings(db=corpus_db, mock=True))
    with TestClient(app) as client:
        assert english_frequency.cache_info().currsize > 0
        assert client.get("/readyz").json()["status"] == "ready"


def test_a_served_app_freezes_its_warm_heap_and_a_built_one_does_not(
    corpus_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rag serve` (either path: one worker or `app_factory` in each worker) freezes what warm-up
    left alive, so a full collection under load does not walk it; an app built by another program
    leaves that program's heap alone."""
    gc.unfreeze()
    try:
        with TestClient(create_app(load_settings(db=corpus_db, mock=True))):
            assert gc.get_freeze_count() == 0
        monkeypatch.setenv("RAG_DB", corpus_db)
        monkeypatch.setenv("MOCK", "1")
        get_settings.cache_clear()
        with TestClient(app_factory()) as client:
            assert gc.get_freeze_count() > 1000
            assert english_frequency.cache_info().currsize > 0  # warmed before the freeze
            assert client.post("/ask", json={"question": "How long is the free trial?"}).status_code == 200
    finally:
        gc.unfreeze()
        get_settings.cache_clear()


class _StatsFail:
    """A store whose counts fail (a broken database), everything else delegated."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stats(self) -> Any:
        raise RuntimeError("database disk image is malformed")


def test_app_starts_even_when_warm_up_fails(corpus_db: str, caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings(db=corpus_db, mock=True)
    pipeline = build_pipeline(settings)
    app = create_app(settings, pipeline=replace(pipeline, store=_StatsFail(pipeline.store)))
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            assert client.get("/healthz").status_code == 200
            assert client.get("/readyz").status_code == 503
    finally:
        pipeline.store.close()
    assert "warm-up incomplete" in caplog.text


@pytest.mark.parametrize("native", [False, True])
def test_warm_up_loads_wordnet_for_every_reader_and_the_parser_only_for_native_citations(
    corpus_db: str, monkeypatch: pytest.MonkeyPatch, native: bool, tmp_path: Path
) -> None:
    from rag.api.app import warm_up
    from rag.language.syntax import Parser
    from rag.language.tools import Tools
    from rag.language.wordnet import WordNet

    loaded: list[str] = []
    monkeypatch.setattr(Parser, "warm", lambda self: loaded.append("parser") or True)
    monkeypatch.setattr(WordNet, "warm", lambda self: loaded.append("wordnet"))
    tools = Tools(wordnet=WordNet(tmp_path), parser=Parser("en_core_web_sm"))
    pipeline = build_pipeline(load_settings(db=corpus_db, mock=True))
    generator = type("Reader", (), {"name": "x", "native_citations": native})()
    try:
        warm_up(replace(pipeline, generator=generator), tools)
    finally:
        pipeline.store.close()
    # WordNet serves the offline generator's paraphrase alignment too; the parser only the support check.
    assert loaded == (["wordnet", "parser"] if native else ["wordnet"])
