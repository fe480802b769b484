"""Terminal rendering: the answer with its numbered sources and cited spans, a refusal with its
reason, a chunk with its provenance, the coverage-gap queue as a table, ingest progress.

Functions here return text (callers echo it); only `IngestProgress` writes, to stderr.
"""

from __future__ import annotations

import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from rag.types import Answer, Block, Chunk, ChunkRef, Citation, Conflict, Gap, Sentence

if TYPE_CHECKING:
    from rag.api.server import Limits, Preflight
    from rag.config import Settings
    from rag.embeddings.backfill import EmbedProgress

# Without a terminal, ingest progress is one plain line every this many files.
PROGRESS_EVERY = 500


def printable(text: str) -> str:
    """`text` safe to print on one terminal line: control, format (bidi) and separator characters
    other than a plain space are escaped (`\\n`, `\\x1b`, `\\u202e`), so a file name cannot
    forge a line or move the cursor."""
    return "".join(ascii(c)[1:-1] if _unprintable(c) else c for c in text)


def _unprintable(char: str) -> bool:
    return char != " " and unicodedata.category(char)[0] in "CZ"


def marked(sentence: Sentence) -> str:
    """The sentence with its citation numbers before the full stop: `... 30 days [1].`"""
    numbers = sorted({c.n for c in sentence.citations})
    marker = "".join(f"[{n}]" for n in numbers)
    text = sentence.text
    if text.endswith("."):
        return f"{text[:-1]} {marker}."
    return f"{text} {marker}"


def sources_text(blocks: Sequence[Block], citations: Sequence[Citation]) -> str:
    """The numbered source list: each cited block's header and chunk id, then the cited span."""
    lines = ["", "Sources:"]
    by_n = {b.n: b for b in blocks}
    for c in sorted(citations, key=lambda c: (c.n, c.start)):
        block = by_n.get(c.n)
        header = block.header if block else f"[{c.n}] {c.title}"
        lines.append(f"{header} {c.chunk_id}")
        lines.append(f'    "{c.cited_text}" (chars {c.start}-{c.end})')
    return "\n".join(lines)


def refusal_text(reason: str, message: str, closest: Sequence[ChunkRef], conflict: Conflict | None) -> str:
    """The refusal with its reason, then both statements of a conflict or the closest matches."""
    lines = [f"Refused ({reason}): {message}"]
    if conflict is not None:
        for s in conflict.statements:
            when = s.updated_at.isoformat() if s.updated_at else "unknown"
            lines.append(f'  [{s.n}] {s.title} (updated {when}) {s.chunk_id}: "{s.text}"')
    elif closest:
        lines.append("Closest matches:")
        for r in closest:
            where = f"{r.title} > {r.section}" if r.section and r.section != r.title else r.title
            lines.append(f"  {where} {r.chunk_id} (score {r.score:.2f})")
    return "\n".join(lines)


def format_answer(answer: Answer) -> str:
    """Human-readable answer: sentences with [n] markers and a numbered source list, or the refusal."""
    if answer.abstained:
        return refusal_text(answer.reason, answer.message, answer.closest, answer.conflict)
    lines = [" ".join(marked(s) for s in answer.sentences)]
    if answer.message:
        lines.append(f"Note: {answer.message}")
    lines.append(sources_text(answer.blocks, answer.citations))
    if "compress_tokens_before" in answer.timings:
        t = answer.timings
        lines.append(
            f"Compression: {t['compress_tokens_before']:.0f} tokens before -> "
            f"{t['compress_tokens_after']:.0f} after, saving {t['compress_saving_pct']:.0f}%"
        )
    return "\n".join(lines)


def chunk_text(chunk: Chunk, database: str) -> str:
    """One chunk with title, section, updated date, url, offsets and the database it came from."""
    where = f"{chunk.title} > {chunk.section}" if chunk.section else chunk.title
    lines = [
        f"{chunk.chunk_id}  {where}",
        f"updated: {chunk.updated_at.isoformat() if chunk.updated_at else 'unknown'}",
    ]
    if chunk.url:
        lines.append(f"url: {chunk.url}")
    lines.append(f"offsets: {chunk.start_char}-{chunk.end_char} in {chunk.doc_id}")
    lines.append(f"database: {database}")
    lines.append("")
    lines.append(chunk.text)
    return "\n".join(lines)


def gaps_table(gaps: Sequence[Gap], database: str) -> str:
    """The coverage-gap queue as a fixed-width table, in the store's order, headed by its database."""
    if not gaps:
        return f"The coverage-gap queue in {database} is empty."
    width = min(60, max(len(g.question) for g in gaps))
    lines = [
        f"Coverage gaps in {database}:",
        f"{'question':<{width}}  {'count':>5}  {'top':>5}  {'last asked':<20}  {'by':<12}  closest",
    ]
    for g in gaps:
        q = g.question if len(g.question) <= width else g.question[: width - 1] + "…"
        lines.append(
            f"{q:<{width}}  {g.count:>5}  {g.top_score:>5.2f}  {g.asked_at[:19]:<20}  {g.principal:<12}"
            f"  {', '.join(g.closest)}"
        )
    return "\n".join(lines)


class IngestProgress:
    """A progress callback for `ingest_paths`: a click bar on a terminal, else a line every N files."""

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


class EmbedProgressLine:
    """A progress callback for a foreground `Backfill`: one line rewritten in place on a terminal,
    else a line at every tenth of the work (and whenever it waits for another process)."""

    def __init__(self, before: Callable[[], None] | None = None) -> None:
        self.tty = sys.stderr.isatty()
        self.before = before  # called once, before the first line (closes the ingest's bar)
        self.started = time.perf_counter()
        self.first: int | None = None
        self._tenth = -1
        self._shown = False

    def __call__(self, progress: EmbedProgress) -> None:
        if self.first is None:
            self.first = progress.embedded
            if self.before is not None:
                self.before()
        rate = (progress.embedded - self.first) / max(time.perf_counter() - self.started, 1e-9)
        line = (
            f"embedding ({progress.model}): {progress.embedded}/{progress.total} chunks, {rate:.1f} chunks/s"
        )
        if progress.state == "waiting":
            line = f"{line}; another process holds the work, waiting for it"
        tenth = 10 * progress.embedded // max(progress.total, 1)
        if self.tty:
            click.echo(f"\r{line}\033[K", err=True, nl=False)
            self._shown = True
        elif tenth != self._tenth or progress.state == "waiting":
            click.echo(line, err=True)
        self._tenth = tenth

    def close(self) -> None:
        if self._shown:
            click.echo("", err=True)
            self._shown = False


def serve_banner(
    checked: Preflight,
    settings: Settings,
    *,
    database: str,
    host: str,
    port: int,
    workers: int,
    limits: Limits,
) -> str:
    """What `rag serve` prints before it starts: the store, the model, the URLs and curl examples."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown}:{port}"
    auth = " -H 'Authorization: Bearer $RAG_KEY'" if settings.api_key_list else ""
    stats = checked.stats
    lines = []
    if checked.model_warning:
        lines.append(
            f"  warning: the model provider could not be reached yet ({checked.model_warning}); "
            "asks will get 503"
        )
    elif checked.model:
        lines.append(f"  model:     {checked.model} (key accepted)")
    lines.append(
        f"Serving {stats.documents} documents ({stats.chunks} chunks) from {database} on {base} "
        f"with {workers} worker(s)"
    )
    if stats.chunks == 0:
        lines.append("  the store is empty: every question will be refused; run `rag ingest PATH` first")
    lines += [
        f"  web page:  {base}/",
        f"  API docs:  {base}/docs",
        f"  try:       curl -s {base}/ask -H 'Content-Type: application/json'{auth}"
        ' -d \'{"question": "your question here"}\'',
        f"  stream:    curl -N '{base}/ask/stream?q=your+question+here'{auth}",
        f"  limits:    requests must arrive within {limits.request_timeout:g} s; "
        f"at most {limits.max_connections} connections per worker",
    ]
    return "\n".join(lines)
