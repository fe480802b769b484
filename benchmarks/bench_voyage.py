"""Voyage embedding at ingest: 2,000 generated documents (about 10,000 chunks) against the fake Voyage
API (tests/fake_voyage.py) answering each request after 20 ms, through the real `voyageai` SDK.

before: the old pattern, one request per document, one at a time (replayed here over the same
stored chunks, as the previous indexer sent them); after: `ingest_paths` with the embedder,
requests packed across documents to the API's per-request limits, RAG_EMBED_CONCURRENCY in flight.
Prints requests made and wall time for both; asserts nothing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.corpus_gen import generate
from rag.config import load_settings
from rag.embeddings import VoyageEmbedder, embedding_text, voyage_client
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_voyage import FakeVoyage  # noqa: E402

DOCS = 2000
LATENCY = 0.020


def _embedder(fake: FakeVoyage) -> VoyageEmbedder:
    client = voyage_client(api_key="pa-bench", base_url=fake.base_url, timeout=30)
    return VoyageEmbedder(client=client, model="voyage-3.5", retries=2)


def before(corpus: Path, work: Path, fake: FakeVoyage) -> tuple[int, float, float]:
    """Ingest without vectors, then one request per document, serially: (requests, seconds, embed s)."""
    settings = load_settings(db=str(work / "before.db"), mock=True)
    store = SqliteStore(settings.db)
    embedder = _embedder(fake)
    started = time.perf_counter()
    ingest_paths(store, [corpus], settings=settings)
    embed_started = time.perf_counter()
    by_doc: dict[str, list[str]] = defaultdict(list)
    chunks = store.chunks_missing_embeddings(embedder.model)
    for chunk in chunks:
        by_doc[chunk.doc_id].append(chunk.chunk_id)
    texts = {chunk.chunk_id: embedding_text(chunk) for chunk in chunks}
    fake.requests.clear()
    for ids in by_doc.values():
        vectors = embedder.embed_documents([texts[i] for i in ids])
        store.put_embeddings(embedder.model, list(zip(ids, vectors, strict=True)))
    done = time.perf_counter()
    store.close()
    return len(fake.requests), done - started, done - embed_started


def after(corpus: Path, work: Path, fake: FakeVoyage) -> tuple[int, float, int, int]:
    """`ingest_paths` with the embedder: (requests, seconds, chunks embedded, chunks missing)."""
    settings = load_settings(db=str(work / "after.db"), mock=True)
    store = SqliteStore(settings.db)
    fake.requests.clear()
    started = time.perf_counter()
    report = ingest_paths(store, [corpus], settings=settings, embedder=_embedder(fake))
    seconds = time.perf_counter() - started
    store.close()
    return len(fake.requests), seconds, report.embedded, report.embed_missing


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rag-bench-voyage-") as tmp:
        work = Path(tmp)
        generate(work / "corpus", DOCS)
        fake = FakeVoyage().start()
        fake.delay = LATENCY
        try:
            n_before, s_before, embed_before = before(work / "corpus", work, fake)
            n_after, s_after, embedded, missing = after(work / "corpus", work, fake)
        finally:
            fake.stop()
    print(f"{DOCS} documents, {embedded} chunks; the fake Voyage API answers after {LATENCY * 1000:.0f} ms")
    print(
        f"before (one request per document, serial): {n_before} requests, {s_before:.1f} s wall"
        f" ({embed_before:.1f} s embedding)"
    )
    print(
        f"after  (packed to the limits, 4 in flight): {n_after} requests, {s_after:.1f} s wall;"
        f" {missing} chunks missing"
    )
    print(f"requests: {n_before / max(1, n_after):.0f}x fewer; wall time: {s_before / s_after:.1f}x faster")


if __name__ == "__main__":
    main()
