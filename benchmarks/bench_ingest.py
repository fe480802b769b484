"""Ingest throughput: 10,000 generated documents (about 50,000 chunks) into a fresh SQLite store.

Targets (issue 2): under 60 s on a 2-core machine, peak memory under 500 MB. Prints figures and
ratios to target; asserts nothing. The store is kept for bench_retrieve (RAG_BENCH_DIR, default
a folder in the system temp dir).
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.corpus_gen import generate
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

DOCS = 10_000
TARGET_SECONDS = 60.0
TARGET_RSS_MB = 500.0
BENCH_DIR = Path(os.environ.get("RAG_BENCH_DIR", Path(tempfile.gettempdir()) / "rag-bench"))
CORPUS_DIR = BENCH_DIR / f"corpus-{DOCS}"
DB_PATH = BENCH_DIR / f"bench-{DOCS}.db"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def ensure_corpus() -> Path:
    marker = CORPUS_DIR / ".complete"
    if not marker.exists():
        shutil.rmtree(CORPUS_DIR, ignore_errors=True)
        started = time.perf_counter()
        generate(CORPUS_DIR, DOCS)
        marker.touch()
        print(f"generated {DOCS} documents in {time.perf_counter() - started:.1f} s -> {CORPUS_DIR}")
    return CORPUS_DIR


def build_store() -> Path:
    """Ingest the generated corpus into a fresh store at DB_PATH; prints the figures."""
    corpus = ensure_corpus()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB_PATH}{suffix}").unlink(missing_ok=True)
    settings = load_settings(db=str(DB_PATH), mock=True)
    store = SqliteStore(str(DB_PATH))
    rss_before = peak_rss_mb()
    started, cpu = time.perf_counter(), cpu_seconds()
    report = ingest_paths(store, [corpus], settings=settings)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    docs = len(report.added)
    print(
        f"ingest: {docs} docs, {report.chunks_written} chunks in {seconds:.1f} s "
        f"({docs / seconds:.0f} docs/s)"
    )
    # wall time suffers when other processes share the cores; CPU time is the load-independent figure
    print(f"  CPU time {cpu:.1f} s ({cpu / seconds:.0%} of wall; load average {os.getloadavg()[0]:.1f})")
    print(
        f"  time {seconds:.1f} s vs target {TARGET_SECONDS:.0f} s: {seconds / TARGET_SECONDS:.2f}x of budget"
    )
    rss = peak_rss_mb()
    print(
        f"  peak RSS {rss:.0f} MB (before ingest {rss_before:.0f} MB) vs target {TARGET_RSS_MB:.0f} MB: "
        f"{rss / TARGET_RSS_MB:.2f}x of budget"
    )
    started = time.perf_counter()
    again = ingest_paths(store, [corpus], settings=settings)
    print(
        f"  re-ingest unchanged: {again.unchanged} unchanged, {again.chunks_written} written "
        f"in {time.perf_counter() - started:.1f} s"
    )
    store.close()
    size = sum(Path(f"{DB_PATH}{s}").stat().st_size for s in ("", "-wal") if Path(f"{DB_PATH}{s}").exists())
    print(f"  database {size / 1e6:.0f} MB at {DB_PATH}")
    return DB_PATH


def main() -> None:
    build_store()


if __name__ == "__main__":
    main()
