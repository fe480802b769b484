"""Documents written straight into a store for the suites that need exact chunks: one chunk a
paragraph, in order, with offsets into the document's text."""

from __future__ import annotations

from dataclasses import replace

from rag.store import Store
from rag.types import Chunk, Document


def put_paragraphs(store: Store, doc_id: str, texts: list[str], access: tuple[str, ...] = ()) -> None:
    """Store `doc_id` (title `doc_id.title()`) whose chunk `<doc_id>#cNN` is `texts[NN]`, readable by
    `access` (empty: everyone)."""
    body = "\n\n".join(texts)
    doc = Document(
        doc_id=doc_id, title=doc_id.title(), text=body, source_path=f"{doc_id}.md", content_hash=doc_id
    )
    chunks, start = [], 0
    for i, text in enumerate(texts):
        end = start + len(text)
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}#c{i:02d}",
                doc_id=doc_id,
                title=doc.title,
                section="",
                text=text,
                start_char=start,
                end_char=end,
            )
        )
        start = end + 2
    store.upsert_document(replace(doc, access=access), chunks)
