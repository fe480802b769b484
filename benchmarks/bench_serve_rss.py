"""Memory of `rag serve` over a large store (issue 29 item 3): resident memory idle, then while 16
clients send `POST /ask` 2,000 times, and whether it grows per request.

One offline worker (MOCK=1, dense off) over the bench store of bench_ingest (10,000 documents), or
the store named by `--db PATH`; `--requests N` changes the count. RSS is the server process's
(`/proc/PID/status`: VmRSS now, VmHWM its peak). Growth per request is measured between the first
quarter of the requests (caches warm) and the last. Prints figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.bench_ingest import DB_PATH, build_store
from benchmarks.corpus_gen import questions

CLIENTS = 16
REQUESTS = 2_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of `pid` in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def _ask_all(port: int, asked: list[str], marks: dict[int, tuple[float, float]], pid: int) -> int:
    """Send every question with CLIENTS concurrent clients; RSS recorded after each quarter."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for q in asked:
        queue.put_nowait(q)
    done = failed = 0
    quarter = max(1, len(asked) // 4)

    async def client() -> None:
        nonlocal done, failed
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            while not queue.empty():
                q = queue.get_nowait()
                reply = await http.post("/ask", json={"question": q})
                failed += reply.status_code != 200
                done += 1
                if done % quarter == 0:
                    marks[done] = rss_mb(pid)

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return failed


def measure(db: str, requests: int) -> None:
    port = _free_port()
    env = {**os.environ, "MOCK": "1", "RAG_DENSE": "off", "RAG_DB": db}
    with tempfile.TemporaryDirectory() as cwd:  # no .env of the checkout
        server = subprocess.Popen(
            [sys.executable, "-m", "rag", "serve", "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            time.sleep(2)
            idle = rss_mb(server.pid)
            marks: dict[int, tuple[float, float]] = {}
            asked = [questions(200)[i % 200] for i in range(requests)]
            started = time.perf_counter()
            failed = asyncio.run(_ask_all(port, asked, marks, server.pid))
            seconds = time.perf_counter() - started
            after = rss_mb(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"rag serve memory, one worker, {requests} POST /ask from {CLIENTS} clients over {db}")
    print(f"  idle after start: RSS {idle[0]:.0f} MB")
    for n, (now, _) in sorted(marks.items()):
        print(f"  after {n:>5} requests: RSS {now:.0f} MB")
    print(
        f"  at the end: RSS {after[0]:.0f} MB, peak {after[1]:.0f} MB; {failed} failed;"
        f" {requests / seconds:.0f} req/s (load average {os.getloadavg()[0]:.1f})"
    )
    ordered = sorted(marks.items())
    if len(ordered) >= 2:
        (n0, (r0, _)), (n1, (r1, _)) = ordered[0], ordered[-1]
        print(f"  growth from request {n0} to {n1}: {(r1 - r0) * 1024 / max(1, n1 - n0):.1f} KB per request")


def main() -> None:
    db = sys.argv[sys.argv.index("--db") + 1] if "--db" in sys.argv else str(DB_PATH)
    requests = int(sys.argv[sys.argv.index("--requests") + 1]) if "--requests" in sys.argv else REQUESTS
    if db == str(DB_PATH) and not DB_PATH.exists():
        build_store()
    measure(db, requests)


if __name__ == "__main__":
    main()
