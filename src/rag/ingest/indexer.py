"""Ingest: files -> documents (`readers`) -> section-aware chunks (`chunking`) -> the store.

Re-ingest is idempotent by content hash (unchanged files are neither parsed nor written);
each document is written in one transaction; a file that cannot be read is skipped and
reported with its reason, never fatal. Also the CLI glue for `rag ingest` and `rag chunk`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from rag.config import Settings
from rag.errors import IngestError
from rag.ingest.chunking import chunk_document
from rag.ingest.embeddings import Embedder, embedding_text, make_embedder
from rag.ingest.readers import SUPPORTED_SUFFIXES, content_hash, parse_document
from rag.serialize import dumps
from rag.store import Store, open_store

__all__ = [
    "IngestReport",
    "Skipped",
    "chunk_document",
    "discover",
    "ingest_paths",
    "parse_document",
    "print_chunk_cli",
    "run_ingest_cli",
]

logger = logging.getLogger(__name__)

PROGRESS_EVERY = 500

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
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {self.unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {len(self.pruned)} pruned; {self.chunks_written} chunks written "
            f"in {self.seconds:.1f} s"
        )


# --- the ingest run -------------------------------------------------------------------------------


def discover(paths: Sequence[str | Path]) -> list[tuple[Path, Path]]:
    """(file, root) pairs: folders are walked recursively (hidden entries skipped), sorted by path."""
    found: list[tuple[Path, Path]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                relative = file.relative_to(path).parts
                if (
                    file.is_file()
                    and file.suffix.lower() in SUPPORTED_SUFFIXES
                    and not any(part.startswith(".") for part in relative)
                ):
                    found.append((file, path))
        else:
            found.append((path, path.parent))
    return found


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
    documents whose source file under one of `paths` no longer exists are deleted. Embeds chunks
    when `embedder` is given; an embedder failure logs a warning and the run continues without.
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
    unchanged = chunks_written = embedded = 0
    for done, (file, root) in enumerate(files, start=1):
        shown = str(file)
        try:
            if file.suffix.lower() not in SUPPORTED_SUFFIXES:
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
            doc = parse_document(raw, file, root=root, content_hash=digest, access=access)
            if doc.doc_id in seen:
                raise IngestError(shown, f"doc_id {doc.doc_id!r} is already used by {seen[doc.doc_id]}")
            seen[doc.doc_id] = shown
            chunks = chunk_document(doc, min_tokens=min_tokens, max_tokens=max_tokens)
            vectors = None
            if embedder is not None and chunks:
                try:
                    vectors = embedder.embed_documents([embedding_text(c) for c in chunks])
                except Exception as exc:  # any provider failure: keep ingesting, lexically only
                    logger.warning("embedding failed (%s); continuing without embeddings", exc)
                    embedder = None
            store.upsert_document(doc, chunks, vectors)
            chunks_written += len(chunks)
            embedded += len(chunks) if vectors is not None else 0
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
    return IngestReport(
        added=tuple(added),
        updated=tuple(updated),
        unchanged=unchanged,
        skipped=tuple(skipped),
        pruned=tuple(removed),
        chunks_written=chunks_written,
        embedded=embedded,
        seconds=round(time.perf_counter() - started, 3),
    )


# --- CLI glue -------------------------------------------------------------------------------------


class _CliProgress:
    """A click progress bar on a terminal; otherwise a plain line every PROGRESS_EVERY files."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._bar: Any = None

    def __call__(self, done: int, total: int, path: str) -> None:
        if self.tty:
            if self._bar is None:
                self._bar = click.progressbar(length=total, label="Ingesting", file=sys.stderr)
                self._bar.__enter__()
            self._bar.update(1)
        elif done % PROGRESS_EVERY == 0:
            click.echo(f"ingest: {done}/{total} files", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def run_ingest_cli(
    settings: Settings, paths: Sequence[str], *, prune: bool, as_json: bool, access: tuple[str, ...] = ()
) -> IngestReport:
    """`rag ingest`: ingest, then print the summary (or the report as JSON) and each skipped file."""
    store = open_store(settings)
    progress = _CliProgress()
    try:
        report = ingest_paths(
            store,
            paths,
            settings=settings,
            prune=prune,
            embedder=make_embedder(settings),
            progress=progress,
            access=access,
        )
    finally:
        progress.close()
        store.close()
    if as_json:
        click.echo(dumps(report, indent=True).decode())
        return report
    for item in report.skipped:
        click.echo(f"skipped {item.path}: {item.reason}", err=True)
    click.echo(report.summary())
    return report


def print_chunk_cli(settings: Settings, chunk_id: str, *, as_json: bool) -> None:
    """`rag chunk ID`: one chunk's text with title, section, updated date, url and offsets."""
    store = open_store(settings)
    try:
        chunk = store.get_chunk(chunk_id)
    finally:
        store.close()
    if as_json:
        click.echo(dumps(chunk, indent=True).decode())
        return
    where = f"{chunk.title} > {chunk.section}" if chunk.section else chunk.title
    click.echo(f"{chunk.chunk_id}  {where}")
    click.echo(f"updated: {chunk.updated_at.isoformat() if chunk.updated_at else 'unknown'}")
    if chunk.url:
        click.echo(f"url: {chunk.url}")
    click.echo(f"offsets: {chunk.start_char}-{chunk.end_char} in {chunk.doc_id}")
    click.echo("")
    click.echo(chunk.text)
