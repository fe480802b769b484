"""Dense embeddings for hybrid retrieval: the `Embedder` protocol and the Voyage implementation.

Offline (no `VOYAGE_API_KEY`, or `MOCK=1`) there is no embedder: `make_embedder` returns None
and retrieval is lexical only. Callers treat any embedder exception as "no dense signal".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from rag.config import Settings
from rag.errors import ConfigError
from rag.types import Chunk

# Voyage accepts up to 1,000 texts per call; smaller batches keep each request well under its token cap.
EMBED_BATCH = 128


class Embedder(Protocol):
    name: str

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (all of the same dimension)."""
        ...

    def embed_query(self, text: str) -> list[float]: ...


def embedding_text(chunk: Chunk) -> str:
    """What is embedded or reranked for a chunk: its provenance line, then its original text."""
    where = f"{chunk.title} > {chunk.section}" if chunk.section else chunk.title
    return f"{where}\n\n{chunk.text}"


def voyage_client(*, api_key: str, base_url: str = "", timeout: float = 60.0, max_retries: int = 2) -> Any:
    """A `voyageai.Client`; `base_url` "" means the SDK default. Imported lazily (slow to import).

    Raises ConfigError when the optional `voyageai` package (the `voyage` extra) is not installed.
    """
    try:
        from voyageai.client import Client
    except ImportError:
        raise ConfigError(
            "VOYAGE_API_KEY is set but the voyageai package is not installed: "
            "pip install -e '.[voyage]' (make run does it when the key is set), or unset the key"
        ) from None

    return Client(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries)


def voyage_client_for(settings: Settings) -> Any:
    """The Voyage client the settings describe (key, base URL, model timeout and retries)."""
    return voyage_client(
        api_key=settings.voyage_api_key,
        base_url=settings.voyage_base_url,
        timeout=settings.model_timeout,
        max_retries=settings.model_max_retries,
    )


class VoyageEmbedder:
    """Voyage `embed` with input_type "document" at ingest and "query" at question time.

    `client` is anything with the `voyageai.Client.embed` signature (tests pass a real client
    pointed at a loopback fake server). Errors propagate; callers decide how to fall back.
    """

    name = "voyage"

    def __init__(self, *, client: Any, model: str = "voyage-3.5", batch_size: int = EMBED_BATCH) -> None:
        self.client = client
        self.model = model
        self.batch_size = batch_size

    @classmethod
    def from_settings(cls, settings: Settings) -> VoyageEmbedder:
        return cls(client=voyage_client_for(settings), model=settings.voyage_embed_model)

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        vectors: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i : i + self.batch_size])
            result = self.client.embed(batch, model=self.model, input_type=input_type)
            if len(result.embeddings) != len(batch):
                raise ValueError(
                    f"Voyage returned {len(result.embeddings)} embeddings for {len(batch)} texts"
                )
            vectors.extend([float(x) for x in vector] for vector in result.embeddings)
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "document") if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query")[0]


def make_embedder(settings: Settings) -> Embedder | None:
    """The Voyage embedder when a key is set and MOCK is off; None otherwise (lexical retrieval only)."""
    return VoyageEmbedder.from_settings(settings) if settings.use_voyage else None
