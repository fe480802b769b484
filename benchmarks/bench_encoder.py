"""The local sentence encoder (all-MiniLM-L6-v2 in NumPy, `rag.language.encoder`): what it costs to load
and to run, the figures the decisions about its uses rest on (docs/eval.md: the offline meaning pass,
the answer gate, the support check's meaning signals, offline dense retrieval).

Prints the load time and the resident memory it adds, sentences per second one at a time and in
batches of 32 (the batch/single ratio), and chunks per second (what embedding a corpus at ingest
would cost), over the bundled corpus's own sentences and chunks. Asserts nothing. Skipped when the
encoder's weights are not installed (`make install` installs them).
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

from rag.config import load_settings
from rag.embeddings import embedding_text
from rag.ingest.indexer import ingest_paths
from rag.language.encoder import Encoder, model_dir
from rag.language.text import split_sentences
from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = 256
CHUNKS = 64


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rate(encoder: Encoder, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        encoder.encode(texts[i : i + batch], batch=batch)
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    rss_before = _rss_mb()
    started = time.perf_counter()
    encoder = Encoder.load(model_dir())
    load_s = time.perf_counter() - started
    if encoder is None:
        print("encoder weights not installed (make install): skipped")
        return
    print(f"load: {load_s:.2f} s, peak RSS +{_rss_mb() - rss_before:.0f} MB")

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(db=str(Path(tmp) / "bench.db"), mock=True)
        store = SqliteStore(settings.db)
        ingest_paths(store, [ROOT / "fixtures" / "corpus"], settings=settings)
        # every stored chunk lacks a vector of the encoder's model: the store's way to list them
        chunks = store.chunks_missing_embeddings(encoder.model)[:CHUNKS]
        store.close()
    sentences = [s for c in chunks for s in split_sentences(c.text) if len(s.split()) >= 4]
    sentences = (sentences * (SENTENCES // max(len(sentences), 1) + 1))[:SENTENCES]
    tokens = sum(encoder.token_count(s) for s in sentences) / len(sentences)

    single = _rate(encoder, sentences[:64], batch=1)
    batched = _rate(encoder, sentences, batch=32)
    print(
        f"sentences (mean {tokens:.0f} tokens): {single:.0f}/s one at a time, "
        f"{batched:.0f}/s in batches of 32 (batch/single {batched / single:.2f}x)"
    )
    texts = [embedding_text(c) for c in chunks]
    chunk_tokens = sum(encoder.token_count(t) for t in texts) / max(len(texts), 1)
    per_chunk = _rate(encoder, texts, batch=16) if texts else 0.0
    if per_chunk:
        print(
            f"chunks (mean {chunk_tokens:.0f} tokens, {len(texts)} of the bundled corpus): "
            f"{per_chunk:.1f}/s, {1000 / per_chunk:.0f} s per 1,000 chunks"
        )
    print(f"peak RSS now {_rss_mb():.0f} MB")
