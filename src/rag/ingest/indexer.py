"""Ingest: files -> documents (`formats`) -> section-aware chunks (`chunking`) -> the store.

Re-ingest is idempotent by content hash (unchanged files are neither parsed nor written);
each document is written in one transaction; a file that cannot be read is skipped and
reported with its reason, never fatal. Progress goes to a callback; the terminal is `rag.cli`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rag.config import Settings
from rag.embeddings import Embedder, EmbedRun, embed_many, embedding_text
from rag.embeddings.backfill import Backfill, EmbedProgress
from rag.errors import IngestError, UpstreamRejected
from rag.ingest.chunking import chunk_document
from rag.ingest.formats import content_hash, derive_doc_id, format_of, parse_document, read_document
from rag.ingest.parsed import Layout, Limits
from rag.ingest.walk import Skipped, discover, read_regular
from rag.store import Store
from rag.types import Chunk, Document

__all__ = [
    "IngestReport",
    "Skipped",
    "chunk_document",
    "discover",
    "embed_stored",
    "ingest_paths",
    "pending_embeddings",
    "parse_document",
]

logger = logging.getLogger(__name__)

# `rag ingest` exit status when documents were stored but some chunks lack vectors.
EXIT_EMBEDDINGS_INCOMPLETE = 3
# `rag ingest` exit status when the run stored nothing and found nothing stored: every file was skipped,
# or no file of a known format was found.
EXIT_NOTHING_INGESTED = 4
# The default chunk budget of one document (RAG_INGEST_MAX_CHUNKS): a document cut into more is
# skipped, not stored (a 2,000-page PDF makes about 6,000; one expanded DOCX made 140,667).
MAX_CHUNKS_PER_DOCUMENT = Limits().chunks

Progress = Callable[[int, int, str], None]
"""Called after each file with (files done, files total, path)."""


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
    embed_pending: int = 0  # chunks left for the background embedder (`rag serve`, `rag ingest --embed`)
    seconds: float = 0.0
    # (path, encoding) of each text file read in another encoding than UTF-8 (detected)
    encodings: tuple[tuple[str, str], ...] = ()

    @property
    def nothing(self) -> bool:
        """Whether the run left no document behind it: none added, updated, unchanged or pruned."""
        return not (self.added or self.updated or self.unchanged or self.pruned)

    def summary(self) -> str:
        """One line per outcome: documents and chunks, then (with an embedder) the vectors."""
        lines = [
            f"{len(self.added)} added, {len(self.updated)} updated, {self.unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {len(self.pruned)} pruned; {self.chunks_written} chunks written "
            f"in {self.seconds:.1f} s"
        ]
        if self.embed_pending:
            lines.append(
                f"meaning search ({self.embed_model}): {self.embed_pending} chunks await vectors; `rag serve`"
                " embeds them in the background (answers use words alone until then), or run"
                " `rag ingest --embed PATH` to embed them now"
            )
        elif self.embed_model:
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


def ingest_limits(settings: Settings) -> Limits:
    """The bounds on one file that `settings` sets (`RAG_INGEST_MAX_*`)."""
    return Limits(
        expanded_bytes=int(settings.ingest_max_expanded_mb * 1024 * 1024),
        pdf_pages=settings.ingest_max_pdf_pages,
        chunks=settings.ingest_max_chunks,
    )


def _is_under(source: str, roots: Sequence[Path]) -> bool:
    path = Path(source)
    return any(path == root or root in path.parents for root in roots)


def _read_bytes(file: Path) -> bytes:
    """The bytes of a file some format reads; raises IngestError for any other file or one that
    cannot be read."""
    if format_of(file) is None:
        raise IngestError(str(file), f"unsupported file type {file.suffix or '(none)'!r}")
    return read_regular(file)


@dataclass(slots=True, kw_only=True)
class _Run:
    """One ingest run: the store as it was at the start, and what the run has done so far."""

    store: Store
    min_tokens: int
    max_tokens: int
    limits: Limits
    access: tuple[str, ...]
    replace_ids: bool  # a file may take a stored id whose source file still exists
    stored: dict[str, tuple[str, str]]  # doc_id -> (content hash, source path) at the start
    by_path: dict[str, list[str]]  # source path -> the doc ids stored from it at the start
    seen: dict[str, str] = field(default_factory=dict)  # doc_id -> the file that has it in this run
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    encodings: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    chunks_written: int = 0

    @classmethod
    def start(
        cls, store: Store, settings: Settings, access: tuple[str, ...], *, replace_ids: bool = False
    ) -> _Run:
        stored = store.document_hashes()
        by_path: dict[str, list[str]] = {}
        for doc_id, (_, source) in stored.items():
            by_path.setdefault(source, []).append(doc_id)
        return cls(
            store=store,
            min_tokens=settings.chunk_min_tokens,
            max_tokens=settings.chunk_max_tokens,
            limits=ingest_limits(settings),
            access=access,
            replace_ids=replace_ids,
            stored=stored,
            by_path=by_path,
        )

    def ingest(self, file: Path, root: Path, real: str) -> None:
        """Store one file's document and chunks unless it is unchanged; raises IngestError to skip it.
        `real`: the file's resolved path, its source path (`discover` resolves it)."""
        raw = _read_bytes(file)
        digest = content_hash(raw, min_tokens=self.min_tokens, max_tokens=self.max_tokens, access=self.access)
        source = real
        if self._unchanged(source, digest, str(file)):
            return
        parsed = read_document(
            raw, file, root=root, content_hash=digest, access=self.access, limits=self.limits
        )
        doc = self._claim_id(parsed.document, file, root, source)
        self._store(doc, parsed.layout, source)
        if parsed.encoding:
            self.encodings.append((str(file), parsed.encoding))

    def _unchanged(self, source: str, digest: str, shown: str) -> bool:
        """True (and counted) when a document stored from `source` has this content hash."""
        known = [d for d in self.by_path.get(source, ()) if self.stored[d][0] == digest]
        if not known:
            return False
        self.unchanged += 1
        self.seen.setdefault(known[0], shown)
        return True

    def _claim_id(self, doc: Document, file: Path, root: Path, source: str) -> Document:
        """`doc`, its id taken for this file; raises IngestError when another file of this run has it,
        or (without `replace_ids`) a stored document whose source file still exists elsewhere."""
        if self._taken(doc.doc_id, source) and doc.doc_id == derive_doc_id(file, root):
            # "guide.md" and "guide.pdf" side by side: the second keeps its suffix in its id
            doc = replace(doc, doc_id=derive_doc_id(file, root, keep_suffix=True))
        if doc.doc_id in self.seen:
            raise IngestError(str(file), f"doc_id {doc.doc_id!r} is already used by {self.seen[doc.doc_id]}")
        owner = self._owner(doc.doc_id, source)
        if owner and not self.replace_ids:
            raise IngestError(
                str(file),
                f"doc_id {doc.doc_id!r} belongs to {owner}, stored earlier; rename one,"
                " or ingest with --replace to give the id to this file",
            )
        self.seen[doc.doc_id] = str(file)
        return doc

    def _owner(self, doc_id: str, source: str) -> str:
        """The other source file a stored `doc_id` came from, while it exists and this run has not
        removed it ("" when the id is free or `source`'s own: a moved file keeps its id)."""
        owner = self.stored.get(doc_id, ("", ""))[1]
        if not owner or owner == source or doc_id in self.removed or not Path(owner).exists():
            return ""
        return owner

    def _taken(self, doc_id: str, source: str) -> bool:
        """True when `doc_id` belongs to another file: one ingested in this run, or a stored document
        whose source file still exists elsewhere."""
        if doc_id in self.seen:
            return True
        other = self.stored.get(doc_id, ("", ""))[1]
        return bool(other) and other != source and Path(other).exists()

    def _store(self, doc: Document, layout: Layout, source: str) -> None:
        """Write the document and its chunks; delete what `source` held under other ids."""
        budget = self.limits.chunks
        chunks = chunk_document(
            doc, min_tokens=self.min_tokens, max_tokens=self.max_tokens, layout=layout, max_chunks=budget + 1
        )
        if len(chunks) > budget:
            raise IngestError(  # the id goes back: this file did not take it
                self.seen.pop(doc.doc_id),
                f"more than {budget:,} chunks, the limit per document (RAG_INGEST_MAX_CHUNKS)",
            )
        self.store.upsert_document(doc, chunks)
        self.chunks_written += len(chunks)
        (self.updated if doc.doc_id in self.stored else self.added).append(doc.doc_id)
        for old in self.by_path.get(source, ()):
            if old != doc.doc_id and old not in self.seen:
                self.store.delete_document(old)
                self.removed.append(old)

    def prune(self, paths: Sequence[str | Path]) -> None:
        """Delete the stored documents whose source file under one of `paths` no longer exists."""
        roots = [Path(p).resolve() for p in paths]
        for doc_id, (_, source) in sorted(self.stored.items()):
            if (
                doc_id not in self.removed
                and source
                and _is_under(source, roots)
                and not Path(source).exists()
            ):
                self.store.delete_document(doc_id)
                self.removed.append(doc_id)

    def report(self) -> IngestReport:
        return IngestReport(
            added=tuple(self.added),
            updated=tuple(self.updated),
            unchanged=self.unchanged,
            skipped=tuple(self.skipped),
            encodings=tuple(self.encodings),
            pruned=tuple(self.removed),
            chunks_written=self.chunks_written,
        )


def ingest_paths(
    store: Store,
    paths: Sequence[str | Path],
    *,
    settings: Settings,
    prune: bool = False,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    access: tuple[str, ...] = (),
    on_embed: Callable[[EmbedProgress], None] | None = None,
    follow_links: bool = False,
    replace_ids: bool = False,
) -> IngestReport:
    """Ingest files and folders into `store`; unreadable files are skipped and reported, never fatal.

    Unchanged files (same content hash at the same path) are not parsed or written. With `prune`,
    documents whose source file under one of `paths` no longer exists are deleted. With an
    `embedder`, every stored chunk lacking a vector from its model is then embedded
    (`embed_stored`): chunks a failed run left without vectors, and all of them after a model
    change. Failed requests leave their chunks counted in `embed_missing`; a refused key or a
    base URL that answers 404 raises UpstreamRejected after the documents are stored. `on_embed`
    gets a background embedder's progress after each batch.
    `access` is the audience of files whose front matter names none (() = everyone). A symlink
    leaving the folder it was found in, and anything but a regular file, is skipped and listed
    (`rag.ingest.walk`); `follow_links` reads such links. A document id belongs to the file it was
    stored from while that file exists: another file claiming it is skipped, naming both, unless
    `replace_ids`.
    """
    started = time.perf_counter()
    run = _Run.start(store, settings, access, replace_ids=replace_ids)
    found = discover(paths, follow_links=follow_links)
    run.skipped.extend(found.skipped)
    files = found.files
    for done, (file, root, real) in enumerate(files, start=1):
        try:
            run.ingest(file, root, real)
        except IngestError as exc:
            run.skipped.append(Skipped(path=exc.path, reason=exc.reason))
            logger.info("skipped %r: %s", exc.path, exc.reason)
        finally:
            if progress is not None:
                progress(done, len(files), str(file))
    if prune:
        run.prune(paths)
    report = run.report()
    if embedder is not None:
        report = embed_stored(
            store, embedder, report=report, concurrency=settings.embed_concurrency, on_batch=on_embed
        )
    return replace(report, seconds=round(time.perf_counter() - started, 3))


def pending_embeddings(store: Store, embedder: Embedder, report: IngestReport) -> IngestReport:
    """`report` with the chunks still lacking a vector from `embedder.model` (left for the background)."""
    embedded, total = store.embedding_progress(embedder.model)
    return replace(report, embed_model=embedder.model, embed_pending=max(0, total - embedded))


def embed_stored(
    store: Store,
    embedder: Embedder,
    *,
    report: IngestReport | None = None,
    concurrency: int = 4,
    on_batch: Callable[[EmbedProgress], None] | None = None,
) -> IngestReport:
    """Embed every stored chunk that lacks a vector from `embedder.model`, and nothing else.

    A background embedder (the local encoder) runs a `Backfill` here, batch by batch under the store's
    lease (waiting while a server's task holds it), `on_batch` reporting progress. Otherwise requests
    are packed across documents (`embed_many`); each completed request is stored at once. Returns
    `report` with the embedding outcome filled in; raises UpstreamRejected (after storing what
    succeeded) when the provider refuses the key or the base URL answers 404.
    """
    report = report or IngestReport()
    if embedder.background:
        backfill = Backfill(store, embedder)
        done = backfill.run(on_batch=on_batch)
        embedded, total = store.embedding_progress(embedder.model)
        return replace(
            report,
            embedded=done,
            embed_missing=max(0, total - embedded),
            embed_requests=-(-done // backfill.batch),
            embed_model=embedder.model,
        )
    other = [(m, n) for m, _, n in store.embedding_counts() if m != embedder.model]
    missing = store.chunks_missing_embeddings(embedder.model)
    if other and missing:
        logger.warning(
            "embedding model is %s; the store holds vectors from %s: re-embedding %d chunks",
            embedder.model,
            ", ".join(f"{m or 'an unrecorded model'} ({n})" for m, n in other),
            len(missing),
        )
    run = _embed_chunks(store, embedder, missing, concurrency)
    if run.failed:
        logger.warning(
            "%d of %d chunks were not embedded: %s", run.failed, len(missing), "; ".join(run.errors)
        )
    return replace(
        report,
        embedded=run.embedded,
        embed_missing=run.failed,
        embed_requests=run.requests,
        embed_model=embedder.model,
        embed_errors=run.errors,
    )


def _embed_chunks(store: Store, embedder: Embedder, chunks: Sequence[Chunk], concurrency: int) -> EmbedRun:
    """Embed `chunks`, storing the vectors of each request as it completes; an UpstreamRejected
    is raised again with how many chunks still lack vectors."""
    texts = [embedding_text(chunk) for chunk in chunks]

    def store_batch(indices: range, vectors: list[list[float]]) -> None:
        store.put_embeddings(
            embedder.model, [(chunks[i].chunk_id, vectors[i - indices.start]) for i in indices]
        )

    try:
        return embed_many(embedder, texts, on_batch=store_batch, concurrency=concurrency)
    except UpstreamRejected as exc:
        raise UpstreamRejected(
            f"{exc}; documents were stored, {len(store.chunks_missing_embeddings(embedder.model))}"
            " chunks lack vectors",
            type=exc.type,
        ) from exc
