"""`rag ask`: one question through the pipeline, printed as text, as JSON, or as a stream of events.

Exit codes (also in `rag ask --help`): 0 answered, or refused without `--fail-on-refusal`;
1 an error (the message is one line); 2 a usage error; 3 refused with `--fail-on-refusal`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
import click
import orjson

from rag import serialize
from rag.access import Principal
from rag.answer.core import unique_citations
from rag.answer.events import (
    DoneEvent,
    DroppedEvent,
    ErrorEvent,
    Event,
    MetaEvent,
    RefusalEvent,
    SentenceEvent,
    event_json,
)
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.cli.database import open_for_reading, require_documents
from rag.cli.render import format_answer, marked, refusal_text, sources_text
from rag.config import Settings
from rag.errors import ConfigError
from rag.types import Block, Sentence

EXIT_ANSWERED = 0
EXIT_ERROR = 1
EXIT_REFUSED = 3


def check_argument(question: str) -> None:
    """A one-line error for an argument that is not valid UTF-8 (Python keeps such bytes as surrogates)."""
    for position, char in enumerate(question):
        if "\udc80" <= char <= "\udcff":
            byte = ord(char) - 0xDC00
            raise click.ClickException(
                f"the question is not valid UTF-8 (byte 0x{byte:02x} at position {position}); "
                "check the terminal's encoding"
            )


def principal_named(settings: Settings, name: str) -> Principal:
    """The configured principal called `name` ("anonymous": no groups); ConfigError for an unknown name."""
    if name == "anonymous":
        return Principal.anonymous()
    for principal in settings.principal_map().values():
        if principal.name == name:
            return principal
    raise ConfigError(f"no principal named {name!r} in RAG_PRINCIPALS or RAG_PRINCIPALS_FILE")


def ask_command(
    settings: Settings,
    question: str,
    *,
    stream: bool,
    as_json: bool,
    top_k: int | None,
    fail_on_refusal: bool,
    principal: Principal | None = None,
) -> int:
    """Run `rag ask` and return its exit code (see the module docstring). `principal` None is the
    local operator, who reads every document."""
    check_argument(question)
    store = open_for_reading(settings)
    try:
        require_documents(store, settings)
        pipeline = build_pipeline(settings, store=store)
        if stream:
            outcome = anyio.run(_stream, pipeline, question, top_k, as_json, principal)
        else:
            answer = pipeline.answer(question, top_k=top_k, principal=principal)
            if as_json:
                click.echo(orjson.dumps(serialize.answer_json(answer), option=orjson.OPT_INDENT_2).decode())
            else:
                click.echo(format_answer(answer))
            outcome = "abstained" if answer.abstained else "answered"
    finally:
        store.close()
    if outcome == "error":
        return EXIT_ERROR
    if outcome == "abstained" and fail_on_refusal:
        return EXIT_REFUSED
    return EXIT_ANSWERED


async def _stream(
    pipeline: Pipeline, question: str, top_k: int | None, as_json: bool, principal: Principal | None
) -> str:
    """Print events as they arrive; returns the final status (`answered`, `abstained` or `error`)."""
    printer = _EventPrinter()
    status = "error"
    async for event in pipeline.answer_stream(question, top_k=top_k, principal=principal):
        if isinstance(event, DoneEvent):
            status = event.status
        if as_json:
            line = orjson.dumps(event_json(event))
            click.echo(line.decode())
        else:
            printer.echo(event)
    return status


@dataclass(slots=True)
class _EventPrinter:
    """Prints a stream's events for people: sentences with their marks, withheld sentences and errors
    on stderr, a refusal, and the sources cited once `done` arrives."""

    blocks: tuple[Block, ...] = ()
    cited: list[Sentence] = field(default_factory=list)

    def echo(self, event: Event) -> None:
        if isinstance(event, MetaEvent):
            self.blocks = event.blocks
        elif isinstance(event, SentenceEvent):
            self.cited.append(event.sentence)
            click.echo(marked(event.sentence))
        elif isinstance(event, DroppedEvent):
            detail = "; ".join(event.dropped.detail)
            click.echo(f"  (withheld: {event.dropped.text!r}: {detail})", err=True)
        elif isinstance(event, RefusalEvent):
            click.echo(refusal_text(event.reason, event.message, event.closest, event.conflict))
        elif isinstance(event, ErrorEvent):
            click.echo(f"error: {event.message}", err=True)
        elif isinstance(event, DoneEvent) and self.cited:
            click.echo(sources_text(self.blocks, unique_citations(self.cited)))
