"""The store: documents, chunks, lexical index, embeddings, ask log and coverage-gap queue.

`Store` is the interface every backend implements (SQLite here, PostgreSQL in
`store_pg.py`). Nothing outside a store module writes SQL. The lexical index is built
over the *stemmed content terms* of `rag.text.terms`, so every backend matches the
same words the reranker scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from rag.types import AskRecord, Chunk, Document, Gap, StoreStats


class Store(Protocol):
    backend: str

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, source_path) for every stored document."""
        ...

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Insert or replace one document and all its chunks in one transaction."""
        ...

    def delete_document(self, doc_id: str) -> None: ...

    def get_document(self, doc_id: str) -> Document:
        """Raises NotFound for an unknown id."""
        ...

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        """The document's chunks in order; raises NotFound for an unknown id."""
        ...

    def get_chunk(self, chunk_id: str) -> Chunk:
        """Raises NotFound for an unknown id."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Known chunks among `chunk_ids`, in the given order; unknown ids are skipped."""
        ...

    def search(self, query_terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """BM25 over stemmed terms (any term may match); higher score is better; never raises on odd input."""
        ...

    def term_frequencies(self, query_terms: Sequence[str]) -> Mapping[str, int]:
        """Number of chunks containing each term (document frequency for IDF)."""
        ...

    def similar(self, vector: Sequence[float], limit: int) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity; empty when no embeddings are stored."""
        ...

    def stats(self) -> StoreStats: ...

    def log_ask(self, record: AskRecord) -> None: ...

    def add_gap(self, question: str, top_score: float, closest: Sequence[str]) -> None: ...

    def gaps(self, limit: int = 50) -> list[Gap]: ...

    def close(self) -> None: ...
