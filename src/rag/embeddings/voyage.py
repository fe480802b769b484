"""Voyage embeddings (`VoyageEmbedder`): input_type "document" at ingest, "query" at question time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.breaker import CircuitBreaker
from rag.config import Settings
from rag.voyage import (
    EMBED_MAX_INPUTS,
    call_voyage,
    embed_token_limit,
    voyage_breaker,
    voyage_client_for,
    voyage_tokens,
)

__all__ = ["VoyageEmbedder"]


class VoyageEmbedder:
    """Voyage `embed` with input_type "document" at ingest and "query" at question time.

    `client` is anything with the `voyageai.Client.embed` signature (tests pass a real client
    pointed at a loopback fake server). Each call is one request with `call_voyage`'s retries
    and breaker; failures raise UpstreamUnavailable or UpstreamRejected.
    """

    name = "voyage"
    background = False  # embedded by `rag ingest` itself

    def __init__(
        self,
        *,
        client: Any,
        model: str = "voyage-3.5",
        retries: int = 2,
        breaker: CircuitBreaker | None = None,
        max_inputs: int = EMBED_MAX_INPUTS,
        max_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.retries = retries
        self.breaker = breaker
        self.max_inputs = max_inputs
        self.max_tokens = max_tokens if max_tokens is not None else embed_token_limit(model)

    @classmethod
    def from_settings(cls, settings: Settings) -> VoyageEmbedder:
        return cls(
            client=voyage_client_for(settings),
            model=settings.voyage_embed_model,
            retries=settings.model_max_retries,
            breaker=voyage_breaker(settings),
        )

    def count_tokens(self, text: str) -> int:
        return voyage_tokens(text)

    def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        def request() -> list[list[float]]:
            result = self.client.embed(texts, model=self.model, input_type=input_type)
            vectors = [[float(x) for x in vector] for vector in result.embeddings]
            if len(vectors) != len(texts) or len({len(v) for v in vectors}) != 1 or not vectors[0]:
                raise ValueError(
                    f"malformed reply: {len(vectors)} embeddings of dimensions "
                    f"{sorted({len(v) for v in vectors})} for {len(texts)} texts"
                )
            return vectors

        return call_voyage(request, what="embed", retries=self.retries, breaker=self.breaker)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(list(texts), "document") if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query")[0]
