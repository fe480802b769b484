"""Bounded load test on loopback: a real `rag serve`, 200 asks from 20 clients while `rag ingest` writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from serving import serving

from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store import open_store

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = (
    "How long do deleted projects stay in the trash?",
    "What is the maximum file upload size?",
    "What is the capital of Australia?",
    "Can I get my mobile phone bill reimbursed?",
    "How do I set up single sign-on?",
    "How long is the free trial?",
)
CLIENTS = 20
ASKS = 200


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    db = tmp_path / "rag.db"
    settings = load_settings(db=str(db), mock=True)
    store = open_store(settings)
    try:
        ingest_paths(store, [str(CORPUS)], settings=settings)
    finally:
        store.close()
    env = {**os.environ, "MOCK": "1", "RAG_DB": str(db)}
    log = tmp_path / "server.log"

    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "rag", "serve", "--host", "127.0.0.1", "--port", str(port)]

    with serving(argv, env=env, log=log, cwd=ROOT, timeout=30) as (base, _):
        banner = log.read_text()
        assert base in banner and "curl" in banner and "/docs" in banner, banner
        yield base, env, log


def test_load_concurrent_asks_during_reingest_all_succeed(
    server: tuple[str, dict[str, str], Path], tmp_path: Path
) -> None:
    base, env, log = server
    copy = tmp_path / "corpus"
    shutil.copytree(CORPUS, copy)
    stop = threading.Event()
    ingests: list[tuple[float, float, int, str]] = []

    def reingest() -> None:
        revision = 0
        while not stop.is_set():
            revision += 1
            # Change every text document so the ingest really rewrites documents and chunks.
            for path in sorted(copy.iterdir()):
                if path.suffix in (".md", ".txt"):
                    with path.open("a", encoding="utf-8") as f:
                        f.write(f"\n\nRevision {revision} of this page was published for review.\n")
            began = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "rag", "ingest", str(copy)],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            ingests.append((began, time.monotonic(), done.returncode, done.stderr[-2000:]))

    def client(worker: int) -> tuple[list[str], int]:
        errors: list[str] = []
        resolved = 0
        with httpx.Client(base_url=base, timeout=30) as http:
            for i in range(ASKS // CLIENTS):
                question = QUESTIONS[(worker + i) % len(QUESTIONS)]
                try:
                    response = http.post("/ask", json={"question": question})
                    if response.status_code != 200:
                        errors.append(f"{question!r}: {response.status_code} {response.text[:200]}")
                        continue
                    for citation in response.json()["citations"]:
                        chunk = http.get(citation["chunk_url"])
                        if chunk.status_code != 200:
                            errors.append(f"{citation['chunk_id']}: {chunk.status_code} {chunk.text[:200]}")
                        resolved += 1
                except httpx.HTTPError as exc:
                    errors.append(f"{question!r}: {type(exc).__name__}: {exc}")
        return errors, resolved

    def watch() -> None:
        # Reads the store like any client: every change of a document hash is an ingest commit.
        store = open_store(load_settings(db=env["RAG_DB"], mock=True))
        try:
            last = store.document_hashes()
            while not stop.is_set():
                time.sleep(0.02)
                now = store.document_hashes()
                if now != last:
                    commits.append(time.monotonic())
                    last = now
        finally:
            store.close()

    commits: list[float] = []
    writer = threading.Thread(target=reingest)
    watcher = threading.Thread(target=watch)
    watcher.start()
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while not commits:  # start asking once an ingest is writing
            assert time.monotonic() < deadline and writer.is_alive(), ingests
            time.sleep(0.01)
        asks_began = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(client, range(CLIENTS)))
        asks_ended = time.monotonic()
    finally:
        stop.set()
        writer.join(timeout=180)
        watcher.join(timeout=30)
    errors = [e for errs, _ in results for e in errs]
    problems = [line for line in log.read_text().splitlines() if not line.startswith("{")]
    assert errors == [], (errors[:10], "\n".join(problems[-80:]))
    assert sum(n for _, n in results) > 0, "no answer carried a citation"
    assert ingests and all(rc == 0 for _, _, rc, _ in ingests), [err for *_, rc, err in ingests if rc]
    assert any(asks_began < t < asks_ended for t in commits), "no ingest commit happened during the asks"
    assert "database is locked" not in log.read_text()
