"""Ingest: files -> documents (`formats`) -> section-aware chunks (`chunking`) -> the store.

Re-ingest is idempotent by content hash (unchanged files are neither parsed nor written);
each document is written in one transaction; a file that cannot be read is skipped and
reported with its reason, never fatal. Progress goes to a callback; the terminal is `rag.cli`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rag.config import Settings
from rag.embeddings import Embedder, embed_many, embedding_text
from rag.errors import IngestError, UpstreamRejected
from rag.ingest.chunking import chunk_document
from rag.ingest.formats import content_hash, derive_doc_id, format_of, parse_document, read_document
from rag.store import Store

__all__ = [
    "IngestReport",
    "Skipped",
    "chunk_document",
    "discover",
    "embed_stored",
    "ingest_paths",
    "parse_document",
]

logger = logging.getLogger(__name__)

# `rag ingest` exit status when documents were stored but some chunks lack vectors.
EXIT_EMBEDDINGS_INCOMPLETE = 3

Progress = Callable[[int, int, str], None]
"""Called after each file with (files done, files total, path)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestReport:
    """What one ingest run did. Document lists hold doc ids; `seconds` is wall time."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: int = 0
    skipped: tuple[Skipped, ...] = ()
    pruned: tuple[str, ...] = ()
    chunks_written: int = 0
    embedded: int = 0
    embed_missing: int = 0
    embed_requests: int = 0
    embed_model: str = ""
    embed_errors: tuple[str, ...] = ()
    seconds: float = 0.0

    def summary(self) -> str:
        """One line per outcome: documents and chunks, then (with an embedder) the vectors."""
        lines = [
            f"{len(self.added)} added, {len(self.updated)} updated, {self.unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {len(self.pruned)} pruned; {self.chunks_written} chunks written "
            f"in {self.seconds:.1f} s"
        ]
        if self.embed_model:
            lines.append(
                f"embeddings ({self.embed_model}): {self.embedded} chunks embedded in {self.embed_requests}"
                f" request{'' if self.embed_requests == 1 else 's'}"
            )
        if self.embed_missing:
            why = f" ({self.embed_errors[0]})" if self.embed_errors else ""
            lines.append(
                f"INCOMPLETE: {self.embed_missing} chunks lack vectors{why}; dense retrieval skips them."
                " Run `rag ingest` again to embed exactly those."
            )
        return "\n".join(lines)


# --- the ingest run -------------------------------------------------------------------------------


def discover(paths: Sequence[str | Path]) -> list[tuple[Path, Path]]:
    """(file, root) pairs: folders are walked recursively (hidden entries skipped), sorted by path.

    Every file is listed, supported or not, so the ingest can report each one it skips and why.
    """
    found: list[tuple[Path, Path]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                relative = file.relative_to(path).parts
                if file.is_file() and not any(part.startswith(".") for part in relative):
                    found.append((file, path))
        else:
            found.append((path, path.parent))
    return found


def _taken(doc_id: str, source: str, seen: dict[str, str], stored: dict[str, tuple[str, str]]) -> bool:
    """True when `doc_id` belongs to another file: one ingested in this run, or a stored document
    whose source file still exists elsewhere."""
    if doc_id in seen:
        return True
    other = stored.get(doc_id, ("", ""))[1]
    return bool(other) and other != source and Path(other).exists()


def _is_under(source: str, roots: Sequence[Path]) -> bool:
    path = Path(source)
    return any(path == root or root in path.parents for root in roots)


def ingest_paths(
    store: Store,
    paths: Sequence[str | Path],
    *,
    settings: Settings,
    prune: bool = False,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    access: tuple[str, ...] = (),
) -> IngestReport:
    """Ingest files and folders into `store`; unreadable files are skipped and reported, never fatal.

    Unchanged files (same content hash at the same path) are not parsed or written. With `prune`,
    documents whose source file under one of `paths` no longer exists are deleted. With an
    `embedder`, every stored chunk lacking a vector from its model is then embedded
    (`embed_stored`): chunks a failed run left without vectors, and all of them after a model
    change. Failed requests leave their chunks counted in `embed_missing`; a refused key or a
    base URL that answers 404 raises UpstreamRejected after the documents are stored.
    `access` is the audience of files whose front matter names none (() = everyone).
    """
    started = time.perf_counter()
    min_tokens, max_tokens = settings.chunk_min_tokens, settings.chunk_max_tokens
    stored = store.document_hashes()
    by_path: dict[str, list[str]] = {}
    for doc_id, (_, source) in stored.items():
        by_path.setdefault(source, []).append(doc_id)
    files = discover(paths)
    added: list[str] = []
    updated: list[str] = []
    skipped: list[Skipped] = []
    removed: list[str] = []
    seen: dict[str, str] = {}
    unchanged = chunks_written = 0
    for done, (file, root) in enumerate(files, start=1):
        shown = str(file)
        try:
            if format_of(file) is None:
                raise IngestError(shown, f"unsupported file type {file.suffix or '(none)'!r}")
            try:
                raw = file.read_bytes()
            except OSError as exc:
                raise IngestError(shown, f"cannot read: {exc.strerror or exc}") from None
            digest = content_hash(raw, min_tokens=min_tokens, max_tokens=max_tokens, access=access)
            source = str(file.resolve())
            known = [d for d in by_path.get(source, ()) if stored[d][0] == digest]
            if known:
                unchanged += 1
                seen.setdefault(known[0], shown)
                continue
            parsed = read_document(raw, file, root=root, content_hash=digest, access=access)
            doc = parsed.document
            if _taken(doc.doc_id, source, seen, stored) and doc.doc_id == derive_doc_id(file, root):
                # "guide.md" and "guide.pdf" side by side: the second keeps its suffix in its id
                doc = replace(doc, doc_id=derive_doc_id(file, root, keep_suffix=True))
            if doc.doc_id in seen:
                raise IngestError(shown, f"doc_id {doc.doc_id!r} is already used by {seen[doc.doc_id]}")
            seen[doc.doc_id] = shown
            chunks = chunk_document(doc, min_tokens=min_tokens, max_tokens=max_tokens, layout=parsed.layout)
            store.upsert_document(doc, chunks)
            chunks_written += len(chunks)
            (updated if doc.doc_id in stored else added).append(doc.doc_id)
            for old in by_path.get(source, ()):
                if old != doc.doc_id and old not in seen:
                    store.delete_document(old)
                    removed.append(old)
        except IngestError as exc:
            skipped.append(Skipped(path=exc.path, reason=exc.reason))
            logger.info("skipped %s: %s", exc.path, exc.reason)
        finally:
            if progress is not None:
                progress(done, len(files), shown)
    if prune:
        roots = [Path(p).resolve() for p in paths]
        for doc_id, (_, source) in sorted(stored.items()):
            if doc_id not in removed and source and _is_under(source, roots) and not Path(source).exists():
                store.delete_document(doc_id)
                removed.append(doc_id)
    report = IngestReport(
        added=tuple(added),
        updated=tuple(updated),
        unchanged=unchanged,
        skipped=tuple(skipped),
        pruned=tuple(removed),
        chunks_written=chunks_written,
    )
    if embedder is not None:
        report = embed_stored(store, embedder, report=report, concurrency=settings.embed_concurrency)
    return replace(report, seconds=round(time.perf_counter() - started, 3))


def embed_stored(
    store: Store, embedder: Embedder, *, report: IngestReport | None = None, concurrency: int = 4
) -> IngestReport:
    """Embed every stored chunk that lacks a vector from `embedder.model`, and nothing else.

    Requests are packed across documents (`embed_many`); each completed request is stored at
    once. Returns `report` with the embedding outcome filled in; raises UpstreamRejected (after
    storing what succeeded) when the provider refuses the key or the base URL answers 404.
    """
    report = report or IngestReport()
    other = [(m, n) for m, _, n in store.embedding_counts() if m != embedder.model]
    missing = store.chunks_missing_embeddings(embedder.model)
    if other and missing:
        logger.warning(
            "embedding model is %s; the store holds vectors from %s: re-embedding %d chunks",
            embedder.model,
            ", ".join(f"{m or 'an unrecorded model'} ({n})" for m, n in other),
            len(missing),
        )
    texts = [embedding_text(chunk) for chunk in missing]

    def store_batch(indices: range, vectors: list[list[float]]) -> None:
        store.put_embeddings(
            embedder.model, [(missing[i].chunk_id, vectors[i - indices.start]) for i in indices]
        )

    try:
        run = embed_many(embedder, texts, on_batch=store_batch, concurrency=concurrency)
    except UpstreamRejected as exc:
        raise UpstreamRejected(
            f"{exc}; documents were stored, {len(store.chunks_missing_embeddings(embedder.model))}"
            " chunks lack vectors",
            type=exc.type,
        ) from exc
    if run.failed:
        logger.warning("%d of %d chunks were not embedded: %s", run.failed, len(texts), "; ".join(run.errors))
    return replace(
        report,
        embedded=run.embedded,
        embed_missing=run.failed,
        embed_requests=run.requests,
        embed_model=embedder.model,
        embed_errors=run.errors,
    )
