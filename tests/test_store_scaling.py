"""A document write costs the same however much the store already holds (issue 29).

SQLite's virtual machine counts the work of every statement: the progress handler is called once per
`STEP` instructions, so the calls during one write measure what that write read and wrote. A step
that reads what is already stored (a full scan, an index entry listing every chunk) makes the count
grow with the store; an indexed write keeps it flat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag.ingest.chunking import chunk_document
from rag.store.sqlite import SqliteStore
from rag.types import Chunk, Document

STEP = 100  # VM instructions per progress-handler call
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma tau".split()


def _doc(i: int, *, access: tuple[str, ...] = (), edit: str = "") -> tuple[Document, list[Chunk]]:
    """Document `i`: five sections of a few sentences (words vary with `i`); `edit` changes its text."""
    sections = []
    for s in range(5):
        words = " ".join(WORDS[(i + s + k) % len(WORDS)] for k in range(12))
        sections.append(f"## Part {s} {edit}\n\n{words} number {i}. {words.upper()} again {s}.")
    text = "\n\n".join(sections)
    doc = Document(doc_id=f"doc-{i}", title=f"Guide {i}", text=text, source_path=f"/{i}.md", access=access)
    return doc, chunk_document(doc, min_tokens=5, max_tokens=40)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "scale.db"), max_connections=1)  # one connection: the handler sees all
    yield s
    s.close()


def _steps(store: SqliteStore, write: Callable[[], None]) -> int:
    calls = 0

    def tick() -> int:
        nonlocal calls
        calls += 1
        return 0

    with store._connection() as conn:
        conn.set_progress_handler(tick, STEP)
    try:
        write()
    finally:
        with store._connection() as conn:
            conn.set_progress_handler(None, STEP)
    return calls


def _fill(store: SqliteStore, start: int, end: int) -> None:
    for i in range(start, end):
        store.upsert_document(*_doc(i, access=("hr",) if i % 7 == 3 else ()))


@pytest.mark.parametrize("access", [(), ("hr",)], ids=["public", "restricted"])
def test_write_cost_does_not_grow_with_the_store(store: SqliteStore, access: tuple[str, ...]) -> None:
    """Adding, replacing and deleting a document at 40 and at 400 stored documents: the same work."""

    def costs(n: int) -> list[int]:
        new = 10_000 + n
        return [
            _steps(store, lambda: store.upsert_document(*_doc(new, access=access))),
            _steps(store, lambda: store.upsert_document(*_doc(new, access=access, edit="changed"))),
            _steps(store, lambda: store.delete_document(f"doc-{new}")),
        ]

    _fill(store, 0, 40)
    small = costs(40)
    _fill(store, 40, 400)
    large = costs(400)
    for what, a, b in zip(("add", "replace", "delete"), small, large, strict=True):
        assert b <= 1.5 * a + 20, f"{what}: {a * STEP} VM steps at 40 documents, {b * STEP} at 400"


def test_cosines_of_a_few_chunks_cost_the_same_however_many_vectors_are_stored(store: SqliteStore) -> None:
    """`embedding_cosines` (the BM25 candidates outside the nearest vectors, every fused question)
    reads the vectors asked for by chunk id, not every vector of the model: before, SQLite answered
    it from the (model, dim) index, whose entries list every stored vector."""
    model = "test-model"

    def embed(start: int, end: int) -> list[str]:
        ids = [c.chunk_id for i in range(start, end) for c in store.document_chunks(f"doc-{i}")]
        store.put_embeddings(model, [(cid, [1.0, float(n % 5), 0.5]) for n, cid in enumerate(ids)])
        return ids

    _fill(store, 0, 40)
    asked = embed(0, 40)[:8]
    small = _steps(store, lambda: store.embedding_cosines([1.0, 0.0, 0.0], asked, model=model))
    _fill(store, 40, 400)
    embed(40, 400)
    large = _steps(store, lambda: store.embedding_cosines([1.0, 0.0, 0.0], asked, model=model))
    assert len(store.embedding_cosines([1.0, 0.0, 0.0], asked, model=model)) == len(asked)
    assert large <= 1.5 * small + 20, f"{small * STEP} VM steps at 40 documents, {large * STEP} at 400"
