"""The lexical engine beside bm25s and tantivy, in one process (issue 18).

On the 10,000-document bench store (about 50,000 chunks, from bench_ingest):
- bare BM25 top-10 query: `SqliteStore.search` (exhaustive, every query term) vs bm25s and
  tantivy over the same stemmed texts (each chunk's stored body terms, title and section), median
  and p95 over 200 questions after a warm pass, with ratios to the faster peer (targets: median
  <= 2x, p95 <= 3x); our first (cold) pass is printed too;
- full `retrieve()` (BM25 + the lexical reranker), median and p95;
- index build on the same texts: FTS5 rows in one transaction (what ingest writes for the lexical
  index) vs bm25s (tokenise + index) vs tantivy (add + commit); target <= 2x bm25s;
- agreement of our top 5 with the exhaustive reference (benchmarks/bm25_reference.py; target 0.98).
Then the curve 1k -> 10k -> 50k -> 200k documents (5 chunks each), each size in its own process:
texts drawn from corpus_gen's vocabulary and Zipf weights with numpy (no Markdown, no stemming,
no ingest: the engines are built directly from the texts), build time, query median / p95 and
resident memory added by each engine.

`--quick` (or RAG_BENCH_QUICK=1): 50 questions and the curve up to 50k documents.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import bm25_reference
from benchmarks.bench_ingest import DB_PATH, build_store
from benchmarks.corpus_gen import COMMON, Generator, questions
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.language.text import terms
from rag.store.base import fts_length
from rag.store.sqlite import SqliteStore

QUICK = "--quick" in sys.argv or os.environ.get("RAG_BENCH_QUICK") == "1"
QUESTIONS = 50 if QUICK else 200
CURVE = (1_000, 10_000, 50_000) if QUICK else (1_000, 10_000, 50_000, 200_000)
TOP = 10
AGREE_TOP = 5


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed(run: Callable[[list[str]], Any], asked: Sequence[list[str]]) -> list[float]:
    out = []
    for query in asked:
        started = time.perf_counter()
        run(query)
        out.append((time.perf_counter() - started) * 1000)
    return out


# --- the peers ---------------------------------------------------------------------------------------


class Bm25s:
    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self.bm25s = bm25s
        started = time.perf_counter()
        tokens = bm25s.tokenize(list(texts), stopwords=None, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.build = time.perf_counter() - started

    def query(self, words: list[str]) -> Any:
        # n_threads=0: scored on the calling thread. With n_threads=1 bm25s scores in a
        # ThreadPoolExecutor worker it starts per call, so a thread CPU clock (bench_search_cpu)
        # missed about 80% of its work (0.14 of 0.49 ms a query at 10,000 documents), and a wall
        # clock paid for the pool on every query.
        known = [w for w in words if w in self.retriever.vocab_dict]
        if not known:
            return []
        return self.retriever.retrieve([known], k=TOP, show_progress=False, n_threads=0)


class Tantivy:
    def __init__(self, texts: Sequence[str]) -> None:
        import tantivy

        started = time.perf_counter()
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", stored=False)
        builder.add_integer_field("key", stored=True)
        schema = builder.build()
        self.index = tantivy.Index(schema)  # in RAM
        writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(text=text, key=i))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.build = time.perf_counter() - started

    def query(self, words: list[str]) -> Any:
        if not words:
            return []
        query = self.index.parse_query(" ".join(words), ["text"])
        return self.searcher.search(query, TOP).hits


def fts5_build(rows: Sequence[tuple[int, str, str, str]]) -> float:
    """Seconds to write the FTS5 rows of `rows` (key, body terms, title terms, section terms) into a
    fresh file in one transaction, as ingest does."""
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(Path(folder) / "fts.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, title, section, tokenize='unicode61')"
        )
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO chunks_fts (rowid, terms, title, section) VALUES (?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        seconds = time.perf_counter() - started
        conn.close()
    return seconds


def ratio_line(name: str, ours: Sequence[float], peers: dict[str, Sequence[float]]) -> None:
    med, p95 = statistics.median(ours), percentile(ours, 0.95)
    fastest = min(peers, key=lambda k: statistics.median(peers[k]))
    fast_med, fast_p95 = statistics.median(peers[fastest]), percentile(peers[fastest], 0.95)
    print(f"  {name:<22} median {med:6.2f} ms  p95 {p95:6.2f} ms")
    for peer, values in peers.items():
        peer_med, peer_p95 = statistics.median(values), percentile(values, 0.95)
        print(f"  {peer:<22} median {peer_med:6.2f} ms  p95 {peer_p95:6.2f} ms")
    print(
        f"  ours / {fastest} (the faster peer): median {med / fast_med:.2f}x (target <= 2x),"
        f" p95 {p95 / fast_p95:.2f}x (target <= 3x)"
    )


# --- at 50,000 chunks ---------------------------------------------------------------------------------


def main() -> None:
    if not DB_PATH.exists():
        build_store()
    store = SqliteStore(str(DB_PATH))
    try:
        at_50k(store)
    finally:
        store.close()
    curve()


def at_50k(store: SqliteStore) -> None:
    with store._connection() as conn:
        rows = conn.execute("SELECT id, terms, title, section FROM chunks ORDER BY id").fetchall()
    stemmed = [(pk, body, " ".join(terms(t)), " ".join(terms(s))) for pk, body, t, s in rows]
    texts = [" ".join(parts[1:]) for parts in stemmed]
    asked = [list(dict.fromkeys(terms(q))) for q in questions(QUESTIONS)]
    print(f"{len(texts)} chunks, {len(asked)} questions (load average {os.getloadavg()[0]:.1f})")

    ours_cold = timed(lambda q: store.search(q, TOP), asked)
    ours = timed(lambda q: store.search(q, TOP), asked)
    rss0 = rss_mb()
    bm25s = Bm25s(texts)
    rss1 = rss_mb()
    tantivy = Tantivy(texts)
    rss2 = rss_mb()
    for engine in (bm25s, tantivy):
        timed(engine.query, asked)  # warm pass
    peers = {"bm25s": timed(bm25s.query, asked), "tantivy": timed(tantivy.query, asked)}
    print(
        f"bare BM25 top {TOP} (warm; ours cold, first pass: median {statistics.median(ours_cold):.2f} ms,"
        f" p95 {percentile(ours_cold, 0.95):.2f} ms)"
    )
    ratio_line("ours (SqliteStore)", ours, peers)

    reranker = LexicalReranker()
    raw = questions(QUESTIONS)
    for q in raw[:10]:
        retrieve(q, store=store, reranker=reranker)
    full = timed(lambda q: retrieve(" ".join(q), store=store, reranker=reranker, top_k=8), [[q] for q in raw])
    full_med, full_p95 = statistics.median(full), percentile(full, 0.95)
    print(f"  full retrieve() top 8: median {full_med:.2f} ms, p95 {full_p95:.2f} ms")

    fts = fts5_build(stemmed)
    print(
        f"index build on the same texts: ours (FTS5 rows) {fts:.1f} s, bm25s {bm25s.build:.1f} s,"
        f" tantivy {tantivy.build:.1f} s; ours / bm25s {fts / bm25s.build:.2f}x (target <= 2x)"
    )
    print(f"  memory added: bm25s {rss1 - rss0:.0f} MB, tantivy {rss2 - rss1:.0f} MB (RSS)")

    started = time.perf_counter()
    chunks = bm25_reference.load(store)
    loaded = time.perf_counter() - started
    agree = 0
    started = time.perf_counter()
    for q in asked:
        expected = bm25_reference.search(chunks, q, AGREE_TOP)
        found = store.search(q, AGREE_TOP)
        agree += [(cid, round(s, 9)) for cid, s in expected] == [(c.chunk_id, round(s, 9)) for c, s in found]
    print(
        f"agreement with the exhaustive reference: top {AGREE_TOP} identical (ids and scores to 1e-9)"
        f" on {agree}/{len(asked)} questions = {agree / len(asked):.3f} (target >= 0.98);"
        f" reference loaded in {loaded:.0f} s, searched in {time.perf_counter() - started:.0f} s"
    )


# --- the curve ----------------------------------------------------------------------------------------


def curve_texts(docs: int) -> list[tuple[str, str, str]]:
    """(body, title, section) of 5 chunks per document, words drawn like corpus_gen's (numpy, in
    batches of 10,000 documents so memory holds only the strings)."""
    import numpy as np

    gen = Generator(7)
    rng = np.random.default_rng(docs)
    weights = np.diff(np.asarray([0.0, *gen.cum]))
    weights /= weights.sum()
    vocab = np.asarray(gen.words)
    common = np.asarray(COMMON)
    out: list[tuple[str, str, str]] = []
    for first in range(0, docs, 10_000):
        batch = min(10_000, docs - first)
        lengths = rng.integers(60, 110, size=batch * 5)
        total = int(lengths.sum())
        words = np.where(
            rng.random(total) < 0.35,
            common[rng.integers(0, len(common), size=total)],
            vocab[rng.choice(len(vocab), size=total, p=weights)],
        )
        heads = vocab[rng.choice(len(vocab), size=(batch, 3), p=weights)]
        for i, body in enumerate(np.split(words, np.cumsum(lengths)[:-1])):
            head = heads[i // 5]
            out.append((" ".join(body.tolist()), " ".join(head.tolist()), f"{head[0]} {i % 5 + 1}"))
    return out


def curve_point(docs: int) -> dict[str, Any]:
    """One size of the curve, measured in this process (called through a subprocess)."""
    texts = curve_texts(docs)
    asked = [list(dict.fromkeys(terms(q))) for q in questions(QUESTIONS)]
    result: dict[str, Any] = {"docs": docs, "chunks": len(texts)}
    with tempfile.TemporaryDirectory() as folder:
        base = rss_mb()
        started = time.perf_counter()
        store = SqliteStore(str(Path(folder) / "curve.db"))
        with store._write() as conn:
            conn.executemany(
                "INSERT INTO chunks (id, chunk_id, doc_id, ord, title, section, text, start_char, end_char,"
                " terms, access, n_tokens) VALUES (?, ?, ?, 0, ?, ?, '', 0, 0, ?, '', ?)",
                [
                    (i + 1, f"d{i // 5}#c{i % 5}", f"d{i // 5}", t, s, b, fts_length(b, t, s))
                    for i, (b, t, s) in enumerate(texts)
                ],
            )
            conn.executemany(
                "INSERT INTO chunks_fts (rowid, terms, title, section) VALUES (?, ?, ?, ?)",
                [(i + 1, b, t, s) for i, (b, t, s) in enumerate(texts)],
            )
            conn.execute("UPDATE corpus_counts SET chunks = ?, version = version + 1", (len(texts),))
        result["ours_build"] = time.perf_counter() - started
        cold = timed(lambda q: store.search(q, TOP), asked)
        warm = timed(lambda q: store.search(q, TOP), asked)
        result["ours"] = (statistics.median(warm), percentile(warm, 0.95), statistics.median(cold))
        result["ours_rss"] = rss_mb() - base
        store.close()
        joined = [" ".join(parts) for parts in texts]
        for name, make in (("bm25s", Bm25s), ("tantivy", Tantivy)):
            before = rss_mb()
            engine = make(joined)
            timed(engine.query, asked)
            values = timed(engine.query, asked)
            result[name] = (statistics.median(values), percentile(values, 0.95))
            result[f"{name}_build"] = engine.build
            result[f"{name}_rss"] = rss_mb() - before
            del engine
    return result


def curve() -> None:
    print(f"curve ({QUESTIONS} questions, top {TOP}, warm; each size in its own process; RSS added)")
    print(
        "   docs   chunks | ours med/p95 ms (cold) build s  MB | bm25s med/p95 ms build s  MB"
        " | tantivy med/p95 ms build s  MB"
    )
    for docs in CURVE:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_engine", "--curve-point", str(docs)],
            capture_output=True,
            text=True,
            env={**os.environ, "RAG_BENCH_QUICK": "1" if QUICK else "0"},
        )
        if proc.returncode != 0:
            print(f"  {docs}: failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"  {r['docs']:>6} {r['chunks']:>7} | {r['ours'][0]:5.2f}/{r['ours'][1]:5.2f}"
            f" ({r['ours'][2]:5.2f})"
            f" {r['ours_build']:6.1f} {r['ours_rss']:4.0f} | {r['bm25s'][0]:5.2f}/{r['bm25s'][1]:5.2f}"
            f" {r['bm25s_build']:6.1f} {r['bm25s_rss']:4.0f} | {r['tantivy'][0]:5.2f}/{r['tantivy'][1]:5.2f}"
            f" {r['tantivy_build']:6.1f} {r['tantivy_rss']:4.0f}",
            flush=True,
        )


if __name__ == "__main__":
    if "--curve-point" in sys.argv:
        print(json.dumps(curve_point(int(sys.argv[sys.argv.index("--curve-point") + 1]))))
    else:
        main()
