"""PostgreSQL vs SQLite on the 10,000-document generated corpus, and one vs two `rag serve` replicas.

Needs a server: RAG_BENCH_DATABASE_URL (or RAG_TEST_DATABASE_URL), e.g.
postgresql://rag:rag@127.0.0.1:5432/rag_test; prints a reason and returns without one. Works in
its own schema `rag_bench` (dropped and recreated). Targets (issue 8): PostgreSQL retrieval
median under 25 ms. Prints figures and ratios; asserts nothing. RAG_BENCH_PG_DOCS overrides the
corpus size (default 10,000) for a quick run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from benchmarks import bm25_reference
from benchmarks.corpus_gen import generate, questions
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.language.text import terms
from rag.store import SqliteStore, Store
from rag.store.postgres import PgStore, wait_ready

DOCS = int(os.environ.get("RAG_BENCH_PG_DOCS", "10000"))
SCHEMA = "rag_bench"
QUESTIONS = 200
TARGET_RETRIEVE_MS = 25.0
CLIENTS = 32
LOAD_SECONDS = 10.0
BENCH_DIR = Path(os.environ.get("RAG_BENCH_DIR", Path(tempfile.gettempdir()) / "rag-bench"))


def database_url() -> str:
    return os.environ.get("RAG_BENCH_DATABASE_URL") or os.environ.get("RAG_TEST_DATABASE_URL", "")


def schema_url(url: str, schema: str) -> str:
    """`url` with `search_path` set to `schema` (then public, where extensions live)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema},public')}"


def reset_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")


def vacuum(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def ensure_corpus() -> Path:
    folder = BENCH_DIR / f"corpus-{DOCS}"
    marker = folder / ".complete"
    if not marker.exists():
        generate(folder, DOCS)
        marker.touch()
    return folder


def timed_ingest(store: Store, corpus: Path) -> float:
    settings = load_settings(mock=True)
    started = time.perf_counter()
    report = ingest_paths(store, [corpus], settings=settings)
    seconds = time.perf_counter() - started
    print(
        f"  {store.backend:8s} ingest: {len(report.added)} docs, {report.chunks_written} chunks"
        f" in {seconds:.1f} s"
        f" ({len(report.added) / seconds:.0f} docs/s)"
    )
    return seconds


def retrieval_ms(store: Store, asked: list[str]) -> list[float]:
    reranker = LexicalReranker()
    for q in asked[:10]:  # warm caches and prepared statements
        retrieve(q, store=store, reranker=reranker)
    out = []
    for q in asked:
        started = time.perf_counter()
        retrieve(q, store=store, reranker=reranker)
        out.append((time.perf_counter() - started) * 1000)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "RAG_DATABASE_URL": url, "MOCK": "1", "RAG_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("rag serve did not start")


async def load(bases: list[str], asked: list[str], seconds: float) -> tuple[int, int]:
    """(successful asks, failures) from CLIENTS concurrent clients round-robining over `bases`."""
    done = failed = 0
    stop = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=CLIENTS)) as client:

        async def worker(i: int) -> None:
            nonlocal done, failed
            n = i
            while time.monotonic() < stop:
                base = bases[n % len(bases)]
                try:
                    reply = await client.post(base + "/ask", json={"question": asked[n % len(asked)]})
                    if reply.status_code == 200:
                        done += 1
                    else:
                        failed += 1
                except httpx.HTTPError:
                    failed += 1
                n += CLIENTS

        await asyncio.gather(*(worker(i) for i in range(CLIENTS)))
    return done, failed


def replicas(url: str, asked: list[str]) -> None:
    servers = [start_server(url) for _ in range(2)]
    try:
        rates = {}
        for count in (1, 2):
            bases = [base for _, base in servers[:count]]
            asyncio.run(load(bases, asked, 1.0))  # warm-up
            done, failed = asyncio.run(load(bases, asked, LOAD_SECONDS))
            rates[count] = done / LOAD_SECONDS
            print(f"  {count} x rag serve, {CLIENTS} clients: {rates[count]:.1f} asks/s ({failed} failed)")
        print(f"  throughput ratio 2 replicas / 1: {rates[2] / rates[1]:.2f}x (on {os.cpu_count()} cores)")
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=10)


def main() -> None:
    url = database_url()
    if not url:
        print("skipped: set RAG_BENCH_DATABASE_URL or RAG_TEST_DATABASE_URL to a PostgreSQL server")
        return
    if not wait_ready(url, timeout=3):
        print(f"skipped: PostgreSQL at {url.split('@')[-1]} is unreachable")
        return
    corpus = ensure_corpus()
    reset_schema(url, SCHEMA)
    pg_url = schema_url(url, SCHEMA)
    db = BENCH_DIR / f"bench-postgres-compare-{DOCS}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    pg, lite = PgStore(pg_url), SqliteStore(str(db))
    try:
        print(f"ingest of {DOCS} generated documents (one transaction per document):")
        pg_s, lite_s = timed_ingest(pg, corpus), timed_ingest(lite, corpus)
        print(f"  ratio postgres / sqlite: {pg_s / lite_s:.2f}x")
        started = time.perf_counter()
        vacuum(pg_url)  # what autovacuum does shortly after a bulk load; index-only scans need it
        print(f"  postgres VACUUM ANALYZE after the bulk ingest: {time.perf_counter() - started:.1f} s")
        asked = questions(QUESTIONS)
        pg_ms, lite_ms = retrieval_ms(pg, asked), retrieval_ms(lite, asked)
        print(f"retrieval of {QUESTIONS} questions (BM25 top 40 + lexical rerank):")
        for name, ms in (("postgres", pg_ms), ("sqlite", lite_ms)):
            p95 = statistics.quantiles(ms, n=20)[-1]
            print(f"  {name:8s} median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms")
        median = statistics.median(pg_ms)
        print(f"  ratio postgres / sqlite (median): {median / statistics.median(lite_ms):.2f}x")
        print(
            f"  postgres median vs target {TARGET_RETRIEVE_MS:.0f} ms:"
            f" {median / TARGET_RETRIEVE_MS:.2f}x of budget"
        )
        tops = [(pg.search(terms(q), 1), lite.search(terms(q), 1)) for q in asked]
        same = sum(a[0][0].chunk_id == b[0][0].chunk_id for a, b in tops if a and b)
        print(
            f"  same BM25 top chunk on both backends: {same}/{sum(bool(a and b) for a, b in tops)} questions"
        )
        reference = bm25_reference.load(pg)
        agree = 0
        for q in asked:
            words = terms(q)
            expected = [(cid, round(s, 9)) for cid, s in bm25_reference.search(reference, words, 5)]
            agree += expected == [(c.chunk_id, round(s, 9)) for c, s in pg.search(words, 5)]
        print(
            f"  postgres top 5 identical to the exhaustive reference (ids and scores to 1e-9):"
            f" {agree}/{len(asked)} = {agree / len(asked):.3f} (target >= 0.98)"
        )
    finally:
        pg.close()
        lite.close()
    print(f"replicas on PostgreSQL (MOCK=1 offline generator, POST /ask, {LOAD_SECONDS:.0f} s each):")
    replicas(pg_url, asked)


if __name__ == "__main__":
    main()
