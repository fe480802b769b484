"""Retrieval latency: `retrieve(question, top_k=8)` on the 10,000-document store from bench_ingest.

Targets (issue 2): median under 15 ms, 95th percentile under 40 ms. Lexical path (BM25 + the
lexical reranker), 200 generated questions after a short warm-up. Then the same questions again,
each followed by an ask-log write as `/ask` does (issue 18: the log must not empty the store's
caches), so the two medians should match. Prints figures; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import time

from benchmarks.bench_ingest import DB_PATH, build_store
from benchmarks.corpus_gen import questions
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.store.sqlite import SqliteStore
from rag.types import AskRecord, Usage

QUESTIONS = 200
TARGET_MEDIAN_MS = 15.0
TARGET_P95_MS = 40.0


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


if __name__ == "__main__":
    main()
