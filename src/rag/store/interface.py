"""The store's interfaces: `StoreReader` (what the HTTP routes read) and `Store` (everything every
backend implements). `rag.store.backends.open_store` picks the backend from the settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from rag.types import AskRecord, Chunk, Document, Feedback, Gap, Heading, StoreStats

Groups = frozenset[str] | None
"""The caller's groups for filtering (`rag.access.Principal.reads`): None reads every document."""


class StoreReader(Protocol):
    """The read side the HTTP routes use: one chunk, one document, and readiness."""

    backend: str

    # Every read takes `groups` (see `Groups`): what the caller may not read does not exist for it.

    def get_document(self, doc_id: str, *, groups: Groups = None, text: bool = True) -> Document:
        """Raises NotFound for an unknown id, or one hidden from `groups`. `text=False`: its `text` is
        "" (never read: a route that shows metadata need not hold a 2,000-page PDF's text)."""
        ...

    def document_chunks(
        self, doc_id: str, *, groups: Groups = None, start: int = 0, limit: int | None = None
    ) -> list[Chunk]:
        """The document's chunks in order, from position `start` (0-based), at most `limit` (None:
        all); raises NotFound for an unknown or hidden id (a start past the end is just [])."""
        ...

    def get_chunk(self, chunk_id: str, *, groups: Groups = None) -> Chunk:
        """Raises NotFound for an unknown or hidden id, Gone for a readable id whose text was replaced
        or removed."""
        ...

    def stats(self, *, groups: Groups = None) -> StoreStats:
        """Counts of what `groups` may read, read from the store now (a real query); raises
        StoreUnavailable when it cannot answer."""
        ...

    def corpus_version(self) -> str:
        """A token that changes with every committed change to the corpus (a document ingested,
        replaced or deleted, vectors stored), by this process or another, and when the database is
        replaced: equal tokens, the same corpus. One row read; for caches of what the corpus answers."""
        ...

    def check_log(self) -> None:
        """Open the database the ask log and gap queue are written to, when not open yet; raises
        StoreUnavailable when it cannot be opened (every ask writes there)."""
        ...


class Store(StoreReader, Protocol):
    """The whole store: every backend implements it, and the suite in tests/test_store_backends.py
    holds both to the same behaviour."""

    def document_hashes(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, source_path) for every stored document."""
        ...

    def upsert_document(
        self, doc: Document, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Insert or replace one document and all its chunks in one transaction.

        A chunk whose text differs from what its id named before is stored under a new version
        of the id (`versioned_chunks`); read the stored ids back with `document_chunks`.
        """
        ...

    def delete_document(self, doc_id: str) -> None:
        """Remove a document and its chunks; its chunk ids answer Gone from then on. Unknown ids are fine."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str], *, groups: Groups = None) -> list[Chunk]:
        """Known chunks among `chunk_ids`, in the given order; unknown, hidden and retired ids are skipped."""
        ...

    def adjacent_chunks(
        self, chunk_ids: Sequence[str], *, groups: Groups = None, width: int = 1
    ) -> list[Chunk]:
        """The chunks at most `width` positions before or after each of `chunk_ids` in its own
        document, each once and none of `chunk_ids` itself: the neighbours of the first id first,
        nearest first, the one before ahead of the one after. Only what `groups` may read: a chunk
        hidden from `groups` has no neighbours (nor is one); unknown and retired ids have none."""
        ...

    def search(
        self, query_terms: Sequence[str], limit: int, *, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        """BM25 over stemmed terms (any term may match) among the chunks `groups` may read, best first;
        never raises on odd input. BM25's corpus statistics cover only documents everyone may read,
        so no score depends on a document hidden from anyone.

        At most `limit` (capped at MAX_LIMIT) results; none for a limit <= 0.
        """
        ...

    def term_frequencies(self, query_terms: Sequence[str], *, groups: Groups = None) -> Mapping[str, int]:
        """Number of chunks `groups` may read containing each term (document frequency for IDF)."""
        ...

    def chunk_terms(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The stemmed body terms kept at ingest for each id (equal to `frozenset(terms(chunk.text))`);
        ids the backend does not keep them for are left out (the caller computes those). Takes ids
        the caller already holds (retrieved for its groups), so it filters nothing itself."""
        ...

    def held_terms(self, chunks: Sequence[Chunk], query_terms: Sequence[str]) -> dict[str, frozenset[str]]:
        """chunk id -> the terms of `query_terms` (stemmed) that the chunk's text, title or section
        holds, equal to `query_terms & (terms(text) | terms(title) | terms(section))`, read from the
        lexical index the search just used; chunks the backend cannot answer for exactly are left out
        (the caller computes those). Takes chunks the caller already holds, so it filters nothing."""
        ...

    def chunk_count(self, *, groups: Groups = None) -> int:
        """Number of chunks `groups` may read (the corpus size IDF is computed for); backends may
        cache it until the next write, as they cache document frequencies."""
        ...

    def similar(
        self, vector: Sequence[float], limit: int, *, model: str | None = None, groups: Groups = None
    ) -> list[tuple[Chunk, float]]:
        """Nearest chunks `groups` may read by cosine similarity, best first, among vectors of this
        dimension made by `model` (any model when None); empty when there are none."""
        ...

    def embedding_cosines(
        self, vector: Sequence[float], chunk_ids: Sequence[str], *, model: str
    ) -> dict[str, float]:
        """The cosine of `vector` with the stored vector of each of `chunk_ids` made by `model` (of
        its dimension); ids without one are left out. Takes ids the caller already holds, so it
        filters nothing itself."""
        ...

    def chunks_missing_embeddings(self, model: str, limit: int | None = None) -> list[Chunk]:
        """Chunks with no vector made by `model` (none at all, or one from another model), in
        document order; the first `limit` of them when given."""
        ...

    def has_embeddings(self, model: str) -> bool:
        """Whether any chunk has a vector made by `model` (one index probe: retrieval asks it before
        embedding a question, so a store without such vectors costs no encoder call)."""
        ...

    def embedding_progress(self, model: str, *, groups: Groups = None) -> tuple[int, int]:
        """(chunks with a vector made by `model`, all chunks), counting what `groups` may read."""
        ...

    def claim_embedding(self, model: str, holder: str, seconds: float, *, now: float | None = None) -> bool:
        """Take or renew the lease on embedding `model`'s missing chunks for `seconds`: True when
        `holder` has it now (it was free, expired, or already `holder`'s), False while another holds
        it. `now`: epoch seconds (the clock, when None)."""
        ...

    def release_embedding(self, model: str, holder: str) -> None:
        """Give up `holder`'s lease on `model` (nothing when another holds it)."""
        ...

    def put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> int:
        """Store (chunk_id, vector) pairs made by `model`, replacing a chunk's previous vector; ids
        no longer stored are skipped. Returns the number stored."""
        ...

    def embedding_counts(self) -> list[tuple[str, int, int]]:
        """(model, dimension, vectors) for every model and dimension stored, most vectors first."""
        ...

    def log_ask(self, record: AskRecord) -> None: ...

    def ask_log(self, trace_id: str) -> list[dict[str, Any]]:
        """Ask-log rows for one trace id, oldest first, JSON columns decoded and `ts` as ISO text."""
        ...

    def add_gap(
        self, question: str, top_score: float, closest: Sequence[str], principal: str = ""
    ) -> None: ...

    def gaps(self, limit: int = 50, *, groups: Groups = None) -> list[Gap]:
        """The coverage-gap queue, most asked first; at most `limit` (capped), none for a limit <= 0.
        Closest-match ids that `groups` may not read are left out."""
        ...

    def recent_asks(self, limit: int = 200, *, abstained: bool | None = None) -> list[dict[str, Any]]:
        """Ask-log rows newest first (the shape of `ask_log`), optionally only refusals (`abstained=True`)
        or only answers; at most `limit` (capped), none for a limit <= 0."""
        ...

    def add_feedback(self, feedback: Feedback) -> Feedback:
        """Store a reader's verdict; returns it with its `id` and `created_at`. ValueError on bad values."""
        ...

    def feedback(
        self, limit: int = 50, *, verdict: str | None = None, trace_id: str | None = None
    ) -> list[Feedback]:
        """Stored verdicts, newest first, optionally of one verdict or one trace; at most `limit` (capped)."""
        ...

    def headings(self, limit: int = 200, *, groups: Groups = None) -> list[Heading]:
        """Distinct (document, section) pairs `groups` may read, with their chunk counts, in order of
        the position of their first chunk in its document; at most `limit` (capped), none for a
        limit <= 0."""
        ...

    def close(self) -> None: ...
