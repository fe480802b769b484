"""Dense retrieval offline (the local encoder, `rag.embeddings.local`): what embedding costs, and what
fusion adds to a question's retrieval.

1. Embedding throughput: a `Backfill` of the local embedder over the bundled corpus's chunks, in a
   child process on a fresh store, so its peak resident memory is the embedder's alone (the process
   starts at about 60 MB): chunks per second, and peak RSS.
2. Retrieval at 10,000 documents (bench_ingest's store): every chunk given a random unit vector under
   the local model's name in a copy of it (what the dense search costs does not depend on what the
   vectors say; embedding 10,000 documents with the encoder would take hours here), then 200
   generated questions, interleaved: `retrieve` lexical (BM25 and the lexical reranker) and fused
   (the question embedded by the encoder, BM25 and the nearest vectors fused by reciprocal rank, the
   hybrid reranker); median and 95th percentile, and the question's embedding alone.

Prints figures; asserts nothing. Skipped when the encoder's weights are not installed.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_ingest import BENCH_DIR, DB_PATH, build_store
from benchmarks.bench_retrieve import percentile
from benchmarks.corpus_gen import questions
from rag.answer.rerank import HybridReranker, LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.embeddings import LOCAL_MODEL, LocalEmbedder
from rag.embeddings.backfill import Backfill
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 200
DENSE_DB = BENCH_DIR / "bench-10000-dense.db"


def _embedder() -> LocalEmbedder | None:
    embedder = LocalEmbedder.from_settings(load_settings(mock=True, dense="auto"))
    return embedder if embedder is not None and embedder.meaning.available() else None


def embed_child(db: str) -> None:
    """In a child process: ingest the bundled corpus into `db`, embed it all, print the figures as JSON."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    store = SqliteStore(db)
    ingest_paths(store, [ROOT / "fixtures" / "corpus"], settings=load_settings(db=db, mock=True))
    embedder = _embedder()
    assert embedder is not None
    loaded = time.perf_counter()
    embedder.meaning.encoder()
    load_s = time.perf_counter() - loaded
    started, cpu = time.perf_counter(), time.process_time()
    done = Backfill(store, embedder).run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"chunks": done, "wall": wall, "cpu": cpu, "load": load_s, "rss0": before, "peak": peak})
    )


def throughput() -> None:
    with tempfile.TemporaryDirectory(prefix="rag-bench-dense-") as tmp:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_dense", "embed", str(Path(tmp) / "corpus.db")],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    print(
        f"embedding the bundled corpus ({figures['chunks']} chunks, {LOCAL_MODEL}): "
        f"{figures['chunks'] / figures['wall']:.1f} chunks/s wall, {figures['chunks'] / figures['cpu']:.1f}"
        f" per CPU second; encoder load {figures['load']:.1f} s; peak RSS {figures['peak']:.0f} MB"
        f" (process at start {figures['rss0']:.0f} MB; load average {os.getloadavg()[0]:.1f})"
    )


def dense_store() -> Path:
    """A copy of bench_ingest's 10,000-document store with a random unit vector per chunk."""
    if DENSE_DB.exists():
        return DENSE_DB
    if not DB_PATH.exists():
        build_store()
    partial = DENSE_DB.with_suffix(".partial")
    with sqlite3.connect(DB_PATH) as src, sqlite3.connect(partial) as dst:
        src.backup(dst)
    store = SqliteStore(str(partial))
    ids = [c.chunk_id for c in store.chunks_missing_embeddings(LOCAL_MODEL)]
    rng = np.random.default_rng(0)
    for i in range(0, len(ids), 2000):
        batch = ids[i : i + 2000]
        vectors = rng.standard_normal((len(batch), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.put_embeddings(LOCAL_MODEL, list(zip(batch, vectors.tolist(), strict=True)))
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    shutil.move(partial, DENSE_DB)
    return DENSE_DB


def fused_retrieval(embedder: LocalEmbedder) -> None:
    store = SqliteStore(str(dense_store()))
    lexical, hybrid = LexicalReranker(), HybridReranker()
    asked = questions(QUESTIONS)
    for question in asked[:10]:
        retrieve(question, store=store, reranker=lexical)
        retrieve(question, store=store, reranker=hybrid, embedder=embedder)
    walls: dict[str, list[float]] = {"lexical": [], "fused": [], "question embedding": []}
    for i, question in enumerate(asked):
        started = time.perf_counter()
        retrieve(question, store=store, reranker=lexical, top_k=8)
        walls["lexical"].append((time.perf_counter() - started) * 1000)
        unique = f"{question} ({i})"  # not in the encoder's cache of question vectors
        started = time.perf_counter()
        retrieve(unique, store=store, reranker=hybrid, embedder=embedder, top_k=8)
        walls["fused"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        embedder.embed_query(f"{question} [{i}]")
        walls["question embedding"].append((time.perf_counter() - started) * 1000)
    embedded, total = store.embedding_progress(LOCAL_MODEL)
    store.close()
    print(
        f"retrieve top 8 over {total} chunks ({embedded} with vectors), {len(asked)} questions,"
        f" interleaved (load average {os.getloadavg()[0]:.1f})"
    )
    for name, values in walls.items():
        print(
            f"  {name:<18} median {statistics.median(values):6.1f} ms, p95 {percentile(values, 0.95):6.1f} ms"
        )


def main() -> None:
    embedder = _embedder()
    if embedder is None:
        print("skipped: the local encoder's weights are not installed (the Makefile's ENCODER_PKG)")
        return
    throughput()
    fused_retrieval(embedder)


if __name__ == "__main__":
    if sys.argv[1:2] == ["embed"]:
        embed_child(sys.argv[2])
    else:
        main()
