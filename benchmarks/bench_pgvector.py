"""Dense retrieval through pgvector's HNSW index at 50,000 chunks with generated vectors.

Server: RAG_BENCH_DATABASE_URL / RAG_TEST_DATABASE_URL when its server has pgvector, else the
PostgreSQL 16 with pgvector that the `pgserver` wheel ships, started in a temporary folder.
Vectors: DIM-dimensional, drawn around 500 random centres (documents on a few hundred topics);
questions are perturbed copies of stored vectors. The chunks are written through
`PgStore.upsert_document` (50 per document), so the HNSW index is the one the store creates.
Prints the load time, median and p95 of `PgStore.similar(q, 10)`, and recall@10 against exact
cosine over the same vectors (numpy). Asserts nothing. RAG_BENCH_VECTORS overrides the count.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_postgres import database_url, reset_schema, schema_url
from rag.store.postgres import PgStore, similar_sql
from rag.types import Chunk, Document

VECTORS = int(os.environ.get("RAG_BENCH_VECTORS", "50000"))
DIM = 64
PER_DOC = 50
QUERIES = 200
K = 10
SCHEMA = "rag_bench_vec"


def server_url() -> tuple[str, Any]:
    """(URL with pgvector, pgserver handle or None)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from pg_server import server_lacks_pgvector, start_pgserver

    url = database_url()
    if url and not server_lacks_pgvector(url):
        return url, None
    server, url = start_pgserver(Path(tempfile.mkdtemp(prefix="rag-bench-pgserver-")))
    return url, server


def generated(n: int, rng: np.random.Generator) -> Any:
    centres = rng.normal(size=(500, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return vectors.astype(np.float32)


def load(store: PgStore, vectors: Any) -> float:
    started = time.perf_counter()
    for d in range(0, len(vectors), PER_DOC):
        doc_id = f"v{d // PER_DOC:05d}"
        rows = vectors[d : d + PER_DOC]
        chunks = [
            Chunk(
                chunk_id=f"{doc_id}#c{i:02d}",
                doc_id=doc_id,
                title=doc_id,
                section="",
                text=f"chunk {d + i}",
                updated_at=date(2026, 1, 1),
                start_char=0,
                end_char=len(f"chunk {d + i}"),
            )
            for i in range(len(rows))
        ]
        doc = Document(doc_id=doc_id, title=doc_id, text="", source_path="", content_hash=doc_id)
        store.upsert_document(doc, chunks, rows.tolist())
    return time.perf_counter() - started


def main() -> None:
    rng = np.random.default_rng(18)
    try:
        base, server = server_url()
    except Exception as exc:
        print(f"pgvector bench skipped: no server with pgvector and pgserver failed: {exc}")
        return
    try:
        reset_schema(base, SCHEMA)
        store = PgStore(schema_url(base, SCHEMA), max_size=4)
        try:
            if store._vector_schema is None:
                print("pgvector bench skipped: the server did not enable the vector extension")
                return
            vectors = generated(VECTORS, rng)
            seconds = load(store, vectors)
            with store.pool.connection() as conn:
                conn.execute("ANALYZE embeddings")  # as autovacuum would after a bulk load
                literal = "[" + ",".join(repr(float(x)) for x in vectors[0]) + "]"
                plan = conn.execute(
                    "EXPLAIN " + similar_sql(store._vector_schema, DIM), {"q": literal, "limit": K}
                )
                walks = any(f"embeddings_hnsw_{DIM}" in row[0] for row in plan.fetchall())
            print(f"query plan uses the HNSW index embeddings_hnsw_{DIM}: {walks}")
            ids = [f"v{i // PER_DOC:05d}#c{i % PER_DOC:02d}" for i in range(VECTORS)]
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            picks = rng.integers(0, VECTORS, QUERIES)
            queries = vectors[picks] + 0.2 * rng.normal(size=(QUERIES, DIM)).astype(np.float32)
            store.similar(queries[0].tolist(), K)  # warm the connection and the index pages
            latencies, recalls = [], []
            for q in queries:
                started = time.perf_counter()
                found = store.similar(q.tolist(), K)
                latencies.append((time.perf_counter() - started) * 1000)
                exact = np.argsort(-(unit @ (q / np.linalg.norm(q))))[:K]
                truth = {ids[i] for i in exact}
                recalls.append(len(truth & {c.chunk_id for c, _ in found}) / K)
        finally:
            store.close()
        latencies.sort()
        print(
            f"pgvector HNSW (defaults m=16, ef_construction=64, ef_search=40), {VECTORS} x {DIM} dims, "
            f"loaded through PgStore in {seconds:.1f} s ({VECTORS / seconds:.0f} chunks/s); "
            f"similar(k={K}) over {QUERIES} queries: median {statistics.median(latencies):.2f} ms, "
            f"p95 {latencies[int(0.95 * len(latencies))]:.2f} ms; recall@{K} vs exact cosine "
            f"{statistics.mean(recalls):.3f} (min {min(recalls):.1f})"
        )
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
