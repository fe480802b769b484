"""Dense embeddings for hybrid retrieval: the `Embedder` protocol (`batching`), Voyage (`voyage`), the
local sentence encoder (`local`) and the background task that embeds stored chunks (`backfill`).

`make_embedder` picks one from the settings: Voyage when a key is set (and MOCK is off), else the
local encoder when it is installed, else none (lexical retrieval only); `RAG_DENSE=off` turns dense
retrieval off whatever is configured. Every vector is stored with the model that made it
(`Embedder.model`), so vectors of two models are never compared.
"""

from __future__ import annotations

from rag.config import Settings
from rag.embeddings.batching import Embedder, EmbedRun, embed_many, embedding_text, plan_batches
from rag.embeddings.local import LOCAL_MODEL, LocalEmbedder
from rag.embeddings.voyage import VoyageEmbedder
from rag.voyage import voyage_client

__all__ = [
    "LOCAL_MODEL",
    "EmbedRun",
    "Embedder",
    "LocalEmbedder",
    "VoyageEmbedder",
    "embed_many",
    "embedding_text",
    "make_embedder",
    "plan_batches",
    "voyage_client",
]


def make_embedder(settings: Settings) -> Embedder | None:
    """Voyage when a key is set and MOCK is off; else the local encoder when installed (and not switched
    off by `RAG_ENCODER`); None when neither, or when `RAG_DENSE=off` (lexical retrieval only)."""
    if not settings.dense_enabled:
        return None
    if settings.use_voyage:
        return VoyageEmbedder.from_settings(settings)
    return LocalEmbedder.from_settings(settings)
