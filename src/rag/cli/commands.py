"""`rag`: the command-line shell over the library. No business logic lives here.

Each subcommand parses arguments, builds `Settings` and the store, calls the library,
prints a table or `--json`, and maps `RagError` to a one-line message and exit code 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import click

from rag import serialize
from rag.cli import render
from rag.cli.database import describe_database, open_for_reading
from rag.config import Settings, load_settings
from rag.errors import NotFound, RagError

F = TypeVar("F", bound=Callable[..., Any])


def _friendly(func: F) -> F:
    """Turn a RagError into `error: <message>` and exit code 1, never a traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RagError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def _settings() -> Settings:
    return load_settings()


@click.group()
@click.version_option(package_name="rag")
def main() -> None:
    """Grounded answers from your own documents, every sentence tied to a verified source span."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--prune", is_flag=True, help="Remove stored documents whose files are gone.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--access",
    default="",
    help="Groups that may read files whose front matter has no `access` (comma-separated; default everyone).",
)
@click.option(
    "--embed",
    is_flag=True,
    help="Embed the chunks lacking vectors from the local encoder now, with a progress line"
    " (otherwise `rag serve` embeds them in the background).",
)
@click.option(
    "--follow-links",
    is_flag=True,
    help="Read symlinks whose target lies outside the folder they are in (skipped by default).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Let a file take a document id stored from another file that still exists (refused by default).",
)
@_friendly
def ingest(
    paths: tuple[str, ...],
    prune: bool,
    as_json: bool,
    access: str,
    embed: bool,
    follow_links: bool,
    replace: bool,
) -> None:
    """Ingest Markdown, text, HTML, reST, PDF and DOCX files or folders (recursively).

    Exit status 4 means nothing was ingested (every file skipped, or none of a known format found).
    With VOYAGE_API_KEY, chunks without a vector are embedded too; exit status 3 means the
    documents are stored but some chunks lack vectors (run it again to embed exactly those).
    Without it, the local sentence encoder's vectors are left to `rag serve`, which embeds in the
    background, unless --embed embeds them here; the summary says how many chunks await them.

    Symlinks leaving the folder they are in, FIFOs, devices and dangling links are skipped and listed.

    Example: rag ingest fixtures/corpus --prune; rag ingest --access hr,security hr-files/
    """
    from rag.access import group_names

    try:
        groups = tuple(sorted(group_names(access, where="--access")))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--access") from None
    _ingest(
        _settings(),
        paths,
        prune=prune,
        as_json=as_json,
        access=groups,
        embed=embed,
        follow_links=follow_links,
        replace=replace,
    )


def _ingest(
    settings: Settings,
    paths: Sequence[str],
    *,
    prune: bool,
    as_json: bool,
    access: tuple[str, ...] = (),
    embed: bool = False,
    follow_links: bool = False,
    replace: bool = False,
) -> None:
    from rag.embeddings import make_embedder
    from rag.ingest.indexer import (
        EXIT_EMBEDDINGS_INCOMPLETE,
        EXIT_NOTHING_INGESTED,
        ingest_paths,
        pending_embeddings,
    )
    from rag.store import open_store

    embedder = make_embedder(settings)
    if embed and embedder is None:
        click.echo("--embed: no embedder (RAG_DENSE=off, or the local encoder is not installed)", err=True)
    # a background embedder (the local encoder) embeds here only when asked to
    now = embedder if embedder is not None and (embed or not embedder.background) else None
    store = open_store(settings)
    progress = render.IngestProgress()
    embedding = render.EmbedProgressLine(before=progress.close)
    try:
        report = ingest_paths(
            store,
            paths,
            settings=settings,
            prune=prune,
            embedder=now,
            progress=progress,
            access=access,
            on_embed=embedding,
            follow_links=follow_links,
            replace_ids=replace,
        )
        if embedder is not None and now is None:
            report = pending_embeddings(store, embedder, report)
    finally:
        progress.close()
        embedding.close()
        store.close()
    if as_json:
        click.echo(serialize.dumps(report, indent=True).decode())
    else:
        for item in report.skipped:
            click.echo(f"skipped {render.printable(item.path)}: {render.printable(item.reason)}", err=True)
        for path, encoding in report.encodings:
            click.echo(f"read {render.printable(path)} as {encoding} (not UTF-8)", err=True)
        click.echo(f"{report.summary()}; database: {describe_database(settings)}")
    if report.nothing:
        why = (
            "every file was skipped (reasons above)"
            if report.skipped
            else "no file of a known format was found"
        )
        click.echo(f"nothing was ingested: {why}", err=True)
        raise click.exceptions.Exit(EXIT_NOTHING_INGESTED)
    if report.embed_missing:  # stored, but not all chunks have vectors: say so in the exit status
        raise click.exceptions.Exit(EXIT_EMBEDDINGS_INCOMPLETE)


@main.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True)
@_friendly
def chunk(chunk_id: str, as_json: bool) -> None:
    """Print one chunk with its provenance and the database it was read from.

    Example: rag chunk doc-010#c02
    """
    settings = _settings()
    database = describe_database(settings)
    store = open_for_reading(settings)
    try:
        found = store.get_chunk(chunk_id)
    except NotFound as exc:
        raise click.ClickException(f"{exc} in {database}") from None
    finally:
        store.close()
    click.echo(
        serialize.dumps(found, indent=True).decode() if as_json else render.chunk_text(found, database)
    )


@main.command()
@click.argument("question")
@click.option("--stream", is_flag=True, help="Print verified sentences as they arrive.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the Answer as JSON; with --stream, one JSON line per event.",
)
@click.option("--top-k", type=click.IntRange(1, 50), default=None, help="Chunks retrieved (1..50).")
@click.option("--fail-on-refusal", is_flag=True, help="Exit with status 3 when the answer is a refusal.")
@click.option(
    "--as",
    "as_principal",
    default=None,
    help="Answer as this principal (a name in RAG_PRINCIPALS / RAG_PRINCIPALS_FILE, or 'anonymous');"
    " default: the local operator, who reads every document.",
)
@_friendly
def ask(
    question: str,
    stream: bool,
    as_json: bool,
    top_k: int | None,
    fail_on_refusal: bool,
    as_principal: str | None,
) -> None:
    """Ask a question; prints the cited answer or the refusal with its reason.

    With --stream --json, each event is a line {"event": NAME, "data": PAYLOAD}: meta,
    sentence, dropped, refusal, error, done (the payloads of the HTTP stream).

    \b
    Exit status:
      0  answered, or refused without --fail-on-refusal
      1  an error: no or empty database, invalid question, model provider unavailable
      2  a usage error (unknown option, missing question)
      3  refused (low_retrieval_score, conflicting_sources, no_citations) with --fail-on-refusal

    Example: rag ask "What is the maximum upload size?" --fail-on-refusal;
    rag ask --as alice "How is overtime paid?"
    """
    from rag.cli.ask import ask_command, principal_named

    settings = _settings()
    principal = principal_named(settings, as_principal) if as_principal is not None else None
    code = ask_command(
        settings,
        question,
        stream=stream,
        as_json=as_json,
        top_k=top_k,
        fail_on_refusal=fail_on_refusal,
        principal=principal,
    )
    if code:
        sys.exit(code)


@main.command()
@click.option("--limit", type=int, default=50)
@click.option("--json", "as_json", is_flag=True)
@_friendly
def gaps(limit: int, as_json: bool) -> None:
    """List the coverage-gap queue: questions the knowledge base could not answer.

    Local, for the operator who owns the database: every entry, with who asked it last and
    every closest match. Over HTTP only the admin group reads it (/admin).

    Example: rag gaps --limit 20
    """
    settings = _settings()
    store = open_for_reading(settings)
    try:
        found = store.gaps(limit)
    finally:
        store.close()
    if as_json:
        click.echo(serialize.dumps(found, indent=True).decode())
    else:
        click.echo(render.gaps_table(found, describe_database(settings)))


def _serve(settings: Settings, *, host: str, port: int, workers: int, limits: Any = None) -> None:
    from rag.api.server import Limits, preflight, serve

    checked = preflight(settings)
    limits = limits or Limits()
    database = describe_database(settings)
    click.echo(
        render.serve_banner(
            checked, settings, database=database, host=host, port=port, workers=workers, limits=limits
        )
    )
    serve(settings, host=host, port=port, workers=workers, limits=limits)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@click.option("--workers", default=1, type=click.IntRange(1, 64), show_default=True)
@click.option(
    "--request-timeout",
    default=10.0,
    type=click.FloatRange(0.1, 3600),
    show_default=True,
    help="Seconds from a request's first byte until its headers and body must have arrived (else 408);"
    " answering (the model call included) is not covered.",
)
@click.option(
    "--max-connections",
    default=512,
    type=click.IntRange(1, 100_000),
    show_default=True,
    help="Open connections per worker; more are answered 503 and closed.",
)
@click.option(
    "--keep-alive",
    default=5.0,
    type=click.FloatRange(0.1, 3600),
    show_default=True,
    help="Seconds an idle keep-alive connection stays open.",
)
@_friendly
def serve(
    host: str, port: int, workers: int, request_timeout: float, max_connections: int, keep_alive: float
) -> None:
    """Serve the HTTP API and the web page.

    Example: rag serve --port 8000 --workers 2
    """
    from rag.api.server import Limits

    limits = Limits(request_timeout=request_timeout, max_connections=max_connections, keep_alive=keep_alive)
    _serve(_settings(), host=host, port=port, workers=workers, limits=limits)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@_friendly
def demo(host: str, port: int) -> None:
    """Ingest the bundled corpus, then serve it.

    Example: rag demo
    """
    settings = _settings()
    _ingest(settings, ("fixtures/corpus",), prune=False, as_json=False)
    _serve(settings, host=host, port=port, workers=1)


@main.command(name="eval")
@click.option("--set", "dataset", default="fixtures/eval/golden.jsonl", show_default=True)
@click.option(
    "--sweep",
    type=click.Choice(["min_score", "min_overlap", "gate_claude"]),
    default=None,
    help="gate_claude: the retrieval gate in front of Claude, by a simulated reader (cost curve).",
)
@click.option(
    "--external", type=click.Choice(["squad2", "attribution", "conflicts", "support"]), default=None
)
@click.option("--limit", type=int, default=None, help="Only the first N items (external sets).")
@click.option("--out", default="docs", show_default=True, help="Where plots and tables are written.")
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--corpus",
    default=None,
    help="Directory the --set was labelled on, ingested fresh (golden runs) [default: fixtures/corpus].",
)
@click.option(
    "--reach",
    is_flag=True,
    help="Evidence reach of the --set: does the answering passage get to Claude, to the offline reader?",
)
@click.option(
    "--conversations",
    default=None,
    help="Follow-ups of a conversations JSONL file: evidence reach with and without the earlier turns"
    " and of the self-contained rewrite, and offline precision when answered.",
)
@_friendly
def eval_(
    dataset: str,
    sweep: str | None,
    external: str | None,
    limit: int | None,
    out: str,
    as_json: bool,
    corpus: str | None,
    reach: bool,
    conversations: str | None,
) -> None:
    """Measure the pipeline: golden set, evidence reach, threshold sweeps, external benchmarks.

    Example: rag eval --sweep min_score; rag eval --reach --set fixtures/holdout8/golden.jsonl
    --corpus fixtures/holdout8/corpus; rag eval --conversations conversations.jsonl
    """
    from rag.cli.evals import run_eval_cli

    run_eval_cli(
        _settings(),
        dataset=dataset,
        sweep=sweep,
        external=external,
        limit=limit,
        out=out,
        as_json=as_json,
        corpus=corpus,
        reach=reach,
        conversations=conversations,
    )


@main.command()
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON line per answer (the `rag ask --json` shape)."
)
@click.option("--top-k", type=click.IntRange(1, 50), default=None, help="Chunks retrieved (1..50).")
@click.option(
    "--as",
    "as_principal",
    default=None,
    help="Answer as this principal (a name in RAG_PRINCIPALS / RAG_PRINCIPALS_FILE, or 'anonymous').",
)
@_friendly
def chat(as_json: bool, top_k: int | None, as_principal: str | None) -> None:
    """A conversation: one question per line from standard input, each answered as `rag ask` answers it,
    follow-ups with the earlier turns ("And part-time staff?"). A line `/new` starts a new conversation;
    end of input (Ctrl-D) ends. Exit status 1 when any turn failed with an error.

    Example: printf 'How long do deleted projects stay in the trash?\\nCan I restore them?\\n' | rag chat
    """
    from rag.cli.ask import principal_named
    from rag.cli.chat import chat_command

    settings = _settings()
    principal = principal_named(settings, as_principal) if as_principal is not None else None
    code = chat_command(settings, as_json=as_json, top_k=top_k, principal=principal)
    if code:
        sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
