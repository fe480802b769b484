"""Ingest scaling (issue 29): generated documents at 1,000 and 10,000 on SQLite and 1,000 on PostgreSQL
(what `make bench` runs: a few minutes), and with `--large` (`make bench-scale`) also 100,000 on
SQLite and 10,000 on PostgreSQL; each size ingested into a fresh store of each backend in its own
process, then ingested again unchanged.

Prints one row per (store, size): documents, chunks, seconds, documents/s, CPU seconds, peak RSS of the
ingesting process and the unchanged re-ingest's seconds; then the time ratio of each size to the one
before it beside the ratio of sizes (target: 10,000 documents within 12x the time of 1,000), and
for the 100,000 point the linear extrapolation from 10,000. PostgreSQL runs when
RAG_BENCH_DATABASE_URL or RAG_TEST_DATABASE_URL names a server (a schema of its own per point,
dropped after). Corpora are kept under RAG_BENCH_DIR (shared with bench_ingest). Asserts nothing.

Usage: python -m benchmarks.bench_scale [--large] [--sqlite-only]   (`make bench-scale` = --large)
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.bench_ingest import BENCH_DIR
from benchmarks.corpus_gen import generate

SIZES = (1_000, 10_000)
LARGE = 100_000
# PostgreSQL's sizes: its 10,000 point alone takes minutes (about 100 s on an idle 2-core machine, 20
# minutes under load), so only `--large` runs it; 100,000 is SQLite's point (issue 29).
PG_SIZES = (1_000,)
PG_LARGE_SIZES = (1_000, 10_000)
TARGET_RATIO = 12.0  # 10x the documents in at most 12x the time


def corpus(n: int) -> Path:
    """The `n`-document generated corpus under BENCH_DIR (generated once, then kept)."""
    out = BENCH_DIR / f"corpus-{n}"
    marker = out / ".complete"
    if not marker.exists():
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        generate(out, n)
        marker.touch()
        print(f"  (generated {n} documents in {time.perf_counter() - started:.0f} s -> {out})", flush=True)
    return out


def database_url() -> str:
    return os.environ.get("RAG_BENCH_DATABASE_URL") or os.environ.get("RAG_TEST_DATABASE_URL", "")


def fresh_store(kind: str, n: int) -> tuple[Any, Any, Any]:
    """(store, settings, cleanup) of a fresh store of `kind` for the `n`-document point."""
    from rag.config import load_settings

    if kind == "sqlite":
        from rag.store.sqlite import SqliteStore

        db = BENCH_DIR / f"scale-{n}.db"
        for suffix in ("", "-wal", "-shm", "-log.db"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        return SqliteStore(str(db)), load_settings(db=str(db), mock=True), lambda: None
    import psycopg

    from benchmarks.bench_postgres import schema_url
    from rag.store.postgres import PgStore

    url, schema = database_url(), f"rag_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    return PgStore(schema_url(url, schema)), load_settings(mock=True), drop


def point(kind: str, n: int) -> dict[str, float]:
    """Ingest the `n`-document corpus into a fresh `kind` store in this process, then again unchanged."""
    from rag.ingest.indexer import ingest_paths

    folder = corpus(n)
    store, settings, cleanup = fresh_store(kind, n)
    try:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        started = time.perf_counter()
        report = ingest_paths(store, [folder], settings=settings)
        seconds = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime - cpu
        rss = usage.ru_maxrss / 1024.0  # Linux reports KiB
        started = time.perf_counter()
        again = ingest_paths(store, [folder], settings=settings)
        reingest = time.perf_counter() - started
    finally:
        store.close()
        cleanup()
    return {
        "docs": len(report.added),
        "chunks": report.chunks_written,
        "seconds": seconds,
        "cpu": cpu,
        "rss_mb": rss,
        "reingest": reingest,
        "unchanged": again.unchanged,
    }


def run_point(kind: str, n: int) -> dict[str, float] | None:
    corpus(n)  # generation is not ingest time, nor the ingesting process's memory
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_scale", "--point", kind, str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"  {kind:8s} {n:>7} failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    large = "--large" in argv
    sizes = {"sqlite": (*SIZES, LARGE) if large else SIZES, "postgres": PG_LARGE_SIZES if large else PG_SIZES}
    kinds = ["sqlite"]
    if database_url() and "--sqlite-only" not in argv:
        kinds.append("postgres")
    else:
        print("PostgreSQL: no RAG_BENCH_DATABASE_URL or RAG_TEST_DATABASE_URL; SQLite only")
    print(f"ingest scaling, fresh store per point, one process each (load average {os.getloadavg()[0]:.1f})")
    print("  store       docs  chunks  seconds  docs/s   CPU s  peak RSS MB  re-ingest s")
    results: dict[tuple[str, int], dict[str, float]] = {}
    for kind in kinds:
        for n in sizes[kind]:
            r = run_point(kind, n)
            if r is None:
                continue
            results[kind, n] = r
            rate = r["docs"] / r["seconds"]
            print(
                f"  {kind:8s} {r['docs']:>7.0f} {r['chunks']:>7.0f} {r['seconds']:8.1f} {rate:7.0f}"
                f" {r['cpu']:7.1f} {r['rss_mb']:12.0f} {r['reingest']:12.2f}",
                flush=True,
            )
    if "--json" in argv:
        path = Path(argv[argv.index("--json") + 1])
        points = [{"store": kind, **r} for (kind, _n), r in results.items()]
        path.write_text(json.dumps({"points": points}, indent=1) + "\n", encoding="utf-8")
        print(f"  points written to {path} (plot: python -m benchmarks.plot_scaling {path} docs/scaling.svg)")
    for kind in kinds:
        pairs = [(n, results[kind, n]) for n in sizes[kind] if (kind, n) in results]
        for (small, a), (large, b) in zip(pairs, pairs[1:], strict=False):
            ratio, cpu = b["seconds"] / a["seconds"], b["cpu"] / a["cpu"]
            target = TARGET_RATIO * large / small / 10
            print(
                f"  {kind}: {large} documents took {ratio:.1f}x the time of {small} ({large / small:.0f}x the"
                f" documents; target <= {target:.0f}x); CPU {cpu:.1f}x"
            )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--point":
        print(json.dumps(point(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
