"""Ingest throughput: 10,000 generated documents (about 50,000 chunks) into a fresh SQLite store,
then per format (Markdown, reStructuredText, PDF, DOCX) on a generated corpus of each.

Targets (issue 2): under 60 s on a 2-core machine, peak memory under 500 MB. Prints figures and
ratios to target; asserts nothing. The store is kept for bench_retrieve (RAG_BENCH_DIR, default
a folder in the system temp dir). Each format runs in its own process, so its peak RSS is its own
(`python -m benchmarks.bench_ingest --format rst` runs one).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus_gen import Generator, generate
from benchmarks.formats_gen import docx_bytes, pdf_bytes
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


FORMAT_DOCS = 400
FORMATS = ("md", "rst", "pdf", "docx")


def _sections(gen: Generator) -> list[tuple[str, list[str]]]:
    return [
        (
            f"{' '.join(gen.word() for _ in range(2)).capitalize()} {s + 1}",
            [gen.sentence() for _ in range(gen.rng.randint(5, 7))],
        )
        for s in range(5)
    ]


def _rst(gen: Generator, title: str) -> str:
    """A reST page: title, field list, sections with a setting-like definition and a literal block."""
    lines = ["=" * len(title), title, "=" * len(title), "", f":Version: {gen.rng.randint(1, 9)}", ""]
    for heading, sentences in _sections(gen):
        name = "_".join(gen.word() for _ in range(3)).upper()
        lines += [heading, "-" * len(heading), "", f"``{name}``", f"    {sentences[0]}", ""]
        lines += [
            " ".join(sentences[1:-1]) + " For example::",
            "",
            f"    {name} = {gen.rng.randint(1, 500)}",
            "",
        ]
        lines += [sentences[-1], ""]
    return "\n".join(lines)


def format_corpus(fmt: str, n: int = FORMAT_DOCS, *, seed: int = 7) -> Path:
    """`n` generated documents of one format under BENCH_DIR/formats-N/FMT (kept between runs)."""
    out = BENCH_DIR / f"formats-{n}" / fmt
    marker = out / ".complete"
    if marker.exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    gen = Generator(seed)
    for i in range(n):
        title = " ".join(gen.word() for _ in range(3)).title()
        path = out / f"doc-{i:05d}.{fmt}"
        if fmt == "md":
            path.write_text(gen.document(i), encoding="utf-8")
        elif fmt == "rst":
            path.write_text(_rst(gen, title), encoding="utf-8")
        elif fmt == "pdf":
            pages = [[title, *sentences] for _, sentences in _sections(gen)][:3]
            path.write_bytes(pdf_bytes(title, pages))
        else:
            path.write_bytes(docx_bytes(title, _sections(gen)))
    marker.touch()
    return out


def run_format(fmt: str) -> dict[str, float]:
    """Ingest one format's corpus into a fresh store in this process; its figures."""
    corpus = format_corpus(fmt)
    db = BENCH_DIR / f"formats-{fmt}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    settings = load_settings(db=str(db), mock=True)
    store = SqliteStore(str(db))
    started, cpu = time.perf_counter(), cpu_seconds()
    report = ingest_paths(store, [corpus], settings=settings)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    store.close()
    return {
        "docs": len(report.added),
        "skipped": len(report.skipped),
        "chunks": report.chunks_written,
        "seconds": seconds,
        "cpu": cpu,
        "rss_mb": peak_rss_mb(),
    }


def per_format() -> None:
    """Each format in a child process; prints docs/s, chunks/s and peak RSS per format."""
    print(f"per format: {FORMAT_DOCS} generated documents each, fresh SQLite store, one process each")
    for fmt in FORMATS:
        format_corpus(fmt)  # generation time is not ingest time
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_ingest", "--format", fmt],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"  {fmt:5s} failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        f = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"  {fmt:5s} {f['docs']:5.0f} docs ({f['skipped']:.0f} skipped), {f['chunks']:6.0f} chunks "
            f"in {f['seconds']:5.1f} s: {f['docs'] / f['seconds']:6.0f} docs/s, "
            f"CPU {f['cpu']:.1f} s, peak RSS {f['rss_mb']:.0f} MB"
        )


def main() -> None:
    build_store()
    per_format()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--format":
        print(json.dumps(run_format(sys.argv[2])))
    else:
        main()
