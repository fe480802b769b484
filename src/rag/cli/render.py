"""Terminal rendering and the `rag ask` / `rag gaps` commands: the answer with its numbered
sources and cited spans, a refusal with its reason, the coverage-gap queue as a table.

Output goes through click.echo only; no business logic here.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import click
import orjson

from rag import serialize
from rag.access import Principal
from rag.answer.events import DoneEvent, DroppedEvent, ErrorEvent, MetaEvent, RefusalEvent, SentenceEvent
from rag.answer.judge import unique_citations
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.config import Settings
from rag.errors import ConfigError
from rag.store import open_store
from rag.types import Answer, Block, ChunkRef, Citation, Conflict, Sentence


def principal_named(settings: Settings, name: str) -> Principal:
    """The configured principal called `name` ("anonymous": no groups); ConfigError for an unknown name."""
    if name == "anonymous":
        return Principal.anonymous()
    for principal in settings.principal_map().values():
        if principal.name == name:
            return principal
    raise ConfigError(f"no principal named {name!r} in RAG_PRINCIPALS or RAG_PRINCIPALS_FILE")


def ask_cli(
    settings: Settings,
    question: str,
    *,
    stream: bool,
    as_json: bool,
    top_k: int | None,
    principal: Principal | None = None,
) -> None:
    """`rag ask`: the cited answer with a numbered source list, or the refusal with its reason.
    `principal` None is the local operator, who reads every document."""
    pipeline = build_pipeline(settings)
    try:
        if stream and not as_json:
            _stream_cli(pipeline, question, top_k, principal)
            return
        answer = pipeline.answer(question, top_k=top_k, principal=principal)
        if as_json:
            click.echo(orjson.dumps(serialize.answer_json(answer), option=orjson.OPT_INDENT_2).decode())
            return
        click.echo(format_answer(answer))
    finally:
        pipeline.store.close()


def _stream_cli(pipeline: Pipeline, question: str, top_k: int | None, principal: Principal | None) -> None:
    async def run() -> None:
        blocks: tuple[Block, ...] = ()
        cited: list[Sentence] = []
        async for event in pipeline.answer_stream(question, top_k=top_k, principal=principal):
            if isinstance(event, MetaEvent):
                blocks = event.blocks
            elif isinstance(event, SentenceEvent):
                cited.append(event.sentence)
                click.echo(_marked(event.sentence))
            elif isinstance(event, DroppedEvent):
                click.echo(
                    f"  (withheld: {event.dropped.text!r}: {'; '.join(event.dropped.detail)})", err=True
                )
            elif isinstance(event, RefusalEvent):
                click.echo(_refusal_text(event.reason, event.message, event.closest, event.conflict))
            elif isinstance(event, ErrorEvent):
                click.echo(f"error: {event.message}", err=True)
            elif isinstance(event, DoneEvent) and cited:
                click.echo(_sources(blocks, unique_citations(cited)))

    anyio.run(run)


def _marked(sentence: Sentence) -> str:
    numbers = sorted({c.n for c in sentence.citations})
    marker = "".join(f"[{n}]" for n in numbers)
    text = sentence.text
    if text.endswith("."):
        return f"{text[:-1]} {marker}."
    return f"{text} {marker}"


def _sources(blocks: Sequence[Block], citations: Sequence[Citation]) -> str:
    lines = ["", "Sources:"]
    by_n = {b.n: b for b in blocks}
    for c in sorted(citations, key=lambda c: (c.n, c.start)):
        block = by_n.get(c.n)
        header = block.header if block else f"[{c.n}] {c.title}"
        lines.append(f"{header} {c.chunk_id}")
        lines.append(f'    "{c.cited_text}" (chars {c.start}-{c.end})')
    return "\n".join(lines)


def _refusal_text(reason: str, message: str, closest: Sequence[ChunkRef], conflict: Conflict | None) -> str:
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
        return _refusal_text(answer.reason, answer.message, answer.closest, answer.conflict)
    lines = [" ".join(_marked(s) for s in answer.sentences)]
    if answer.message:
        lines.append(f"Note: {answer.message}")
    lines.append(_sources(answer.blocks, answer.citations))
    if "compress_tokens_before" in answer.timings:
        t = answer.timings
        lines.append(
            f"Compression: {t['compress_tokens_before']:.0f} tokens before -> "
            f"{t['compress_tokens_after']:.0f} after, saving {t['compress_saving_pct']:.0f}%"
        )
    return "\n".join(lines)


def gaps_cli(settings: Settings, *, limit: int, as_json: bool) -> None:
    """`rag gaps`: the coverage-gap queue as a table (or JSON), most recent first as the store orders it."""
    store = open_store(settings)
    try:
        gaps = store.gaps(limit)
    finally:
        store.close()
    if as_json:
        click.echo(serialize.dumps(gaps, indent=True).decode())
        return
    if not gaps:
        click.echo("The coverage-gap queue is empty.")
        return
    width = min(60, max(len(g.question) for g in gaps))
    click.echo(f"{'question':<{width}}  {'count':>5}  {'top':>5}  {'last asked':<20}  {'by':<12}  closest")
    for g in gaps:
        q = g.question if len(g.question) <= width else g.question[: width - 1] + "…"
        click.echo(
            f"{q:<{width}}  {g.count:>5}  {g.top_score:>5.2f}  {g.asked_at[:19]:<20}  {g.principal:<12}"
            f"  {', '.join(g.closest)}"
        )
