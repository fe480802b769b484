"""Retrieval latency: `retrieve(question, top_k=8)` on the 10,000-document store from bench_ingest.

Targets (issue 2): median under 15 ms, 95th percentile under 40 ms. Lexical path (BM25 + the
lexical reranker), 200 generated questions after a short warm-up. Then the same questions again,
each followed by an ask-log write as `/ask` does (issue 18: the log must not empty the store's
caches), so the two medians should match.
Prints figures; asserts nothing.

Filtering (issue 16): the same 10,000 documents with one in ten HR-only and one in ten
security-only, asked by an anonymous caller (public documents), an HR caller and the operator
(no filter), interleaved question by question with the unfiltered store; target: each within
10 % of the unfiltered median.
"""

from __future__ import annotations

import os
import statistics
import time

from benchmarks.bench_ingest import BENCH_DIR, DB_PATH, DOCS, build_store
from benchmarks.corpus_gen import generate, questions
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
from rag.types import AskRecord, Usage

QUESTIONS = 200
TARGET_MEDIAN_MS = 15.0
TARGET_P95_MS = 40.0
TARGET_FILTER_RATIO = 1.10
ACCESS_CORPUS = BENCH_DIR / f"corpus-{DOCS}-access"
ACCESS_DB = BENCH_DIR / f"bench-{DOCS}-access.db"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    if not DB_PATH.exists():
        build_store()
    store = SqliteStore(str(DB_PATH))
    reranker = LexicalReranker()
    asked = questions(QUESTIONS)
    for question in asked[:10]:
        retrieve(question, store=store, reranker=reranker)
    wall: list[float] = []
    cpu: list[float] = []
    empty = 0
    for question in asked:
        started, cpu_started = time.perf_counter(), time.process_time()
        results = retrieve(question, store=store, reranker=reranker, top_k=8)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
        empty += not results
    logged: list[float] = []
    for i, question in enumerate(asked):
        started = time.perf_counter()
        retrieve(question, store=store, reranker=reranker, top_k=8)
        logged.append((time.perf_counter() - started) * 1000)
        store.log_ask(
            AskRecord(
                trace_id=f"bench-{i}",
                question=question,
                reason="",
                abstained=False,
                blocks=(),
                answer_text="",
                citations=(),
                verdicts=(),
                top_score=0.0,
                usage=Usage(),
            )
        )
    stats = store.stats()
    store.close()
    median, p95 = statistics.median(wall), percentile(wall, 0.95)
    print(f"retrieve top 8 over {stats.chunks} chunks, {len(asked)} questions ({empty} with no result)")
    print(f"  median {median:.1f} ms vs target {TARGET_MEDIAN_MS:.0f} ms: {median / TARGET_MEDIAN_MS:.2f}x")
    print(f"  p95    {p95:.1f} ms vs target {TARGET_P95_MS:.0f} ms: {p95 / TARGET_P95_MS:.2f}x")
    print(
        f"  CPU median {statistics.median(cpu):.1f} ms, p95 {percentile(cpu, 0.95):.1f} ms "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"  with an ask-log write after each question: median {statistics.median(logged):.1f} ms, "
        f"p95 {percentile(logged, 0.95):.1f} ms ({statistics.median(logged) / median:.2f}x the median above)"
    )


def build_access_store() -> None:
    """The bench corpus with 20 % of its documents restricted, ingested into ACCESS_DB."""
    marker = ACCESS_CORPUS / ".complete"
    if not marker.exists():
        generate(ACCESS_CORPUS, DOCS, restricted=True)
        marker.touch()
    started = time.perf_counter()
    store = SqliteStore(str(ACCESS_DB))
    try:
        ingest_paths(store, [ACCESS_CORPUS], settings=load_settings(db=str(ACCESS_DB), mock=True))
    finally:
        store.close()
    print(f"ingested the restricted corpus in {time.perf_counter() - started:.1f} s -> {ACCESS_DB}")


def filtering() -> None:
    if not DB_PATH.exists():
        build_store()
    if not ACCESS_DB.exists():
        build_access_store()
    plain, restricted = SqliteStore(str(DB_PATH)), SqliteStore(str(ACCESS_DB))
    reranker = LexicalReranker()
    runs: dict[str, tuple[SqliteStore, frozenset[str] | None]] = {
        "unfiltered": (plain, None),
        "anonymous": (restricted, frozenset()),
        "hr": (restricted, frozenset({"hr"})),
        "operator": (restricted, None),
    }
    asked = questions(QUESTIONS)
    for question in asked[:10]:
        for store, groups in runs.values():
            retrieve(question, store=store, reranker=reranker, groups=groups)
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for question in asked:
        for name, (store, groups) in runs.items():
            started = time.perf_counter()
            retrieve(question, store=store, reranker=reranker, top_k=8, groups=groups)
            wall[name].append((time.perf_counter() - started) * 1000)
    seen = {name: store.stats(groups=groups).chunks for name, (store, groups) in runs.items()}
    plain.close()
    restricted.close()
    base = statistics.median(wall["unfiltered"])
    print(f"retrieval with filtering, {len(asked)} questions, interleaved (load {os.getloadavg()[0]:.1f})")
    for name, values in wall.items():
        median = statistics.median(values)
        print(
            f"  {name:<10} over {seen[name]:>6} readable chunks: median {median:5.1f} ms,"
            f" p95 {percentile(values, 0.95):5.1f} ms, {median / base:.2f}x unfiltered"
            f" (target <= {TARGET_FILTER_RATIO:.2f}x)"
        )


if __name__ == "__main__":
    main()
    filtering()
