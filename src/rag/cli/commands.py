"""`rag`: the command-line shell over the library. No business logic lives here.

Each subcommand parses arguments, builds `Settings` and the store, calls the library,
prints a table or `--json`, and maps `RagError` to a one-line message and exit code 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from rag.config import Settings, load_settings
from rag.errors import RagError

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
@_friendly
def ingest(paths: tuple[str, ...], prune: bool, as_json: bool, access: str) -> None:
    """Ingest Markdown, text and HTML files or folders (recursively).

    Example: rag ingest fixtures/corpus --prune; rag ingest --access hr,security hr-files/
    """
    from rag.access import group_names
    from rag.ingest.indexer import run_ingest_cli

    try:
        groups = tuple(sorted(group_names(access, where="--access")))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--access") from None
    run_ingest_cli(_settings(), paths, prune=prune, as_json=as_json, access=groups)


@main.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True)
@_friendly
def chunk(chunk_id: str, as_json: bool) -> None:
    """Print one chunk with its provenance.

    Example: rag chunk doc-010#c02
    """
    from rag.ingest.indexer import print_chunk_cli

    print_chunk_cli(_settings(), chunk_id, as_json=as_json)


@main.command()
@click.argument("question")
@click.option("--stream", is_flag=True, help="Print verified sentences as they arrive.")
@click.option("--json", "as_json", is_flag=True, help="Print the Answer as JSON.")
@click.option("--top-k", type=int, default=None)
@click.option(
    "--as",
    "as_principal",
    default=None,
    help="Answer as this principal (a name in RAG_PRINCIPALS / RAG_PRINCIPALS_FILE, or 'anonymous');"
    " default: the local operator, who reads every document.",
)
@_friendly
def ask(question: str, stream: bool, as_json: bool, top_k: int | None, as_principal: str | None) -> None:
    """Ask a question; prints the cited answer or the refusal with its reason.

    Example: rag ask "What is the maximum upload size?"; rag ask --as alice "How is overtime paid?"
    """
    from rag.cli.render import ask_cli, principal_named

    settings = _settings()
    principal = principal_named(settings, as_principal) if as_principal is not None else None
    ask_cli(settings, question, stream=stream, as_json=as_json, top_k=top_k, principal=principal)


@main.command()
@click.option("--limit", type=int, default=50)
@click.option("--json", "as_json", is_flag=True)
@_friendly
def gaps(limit: int, as_json: bool) -> None:
    """List the coverage-gap queue: questions the knowledge base could not answer.

    Local, for the operator who owns the database: every entry, with who asked it last and
    every closest match. Over HTTP only the admin group reads it (GET /gaps).

    Example: rag gaps --limit 20
    """
    from rag.cli.render import gaps_cli

    gaps_cli(_settings(), limit=limit, as_json=as_json)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@click.option("--workers", default=1, type=int, show_default=True)
@_friendly
def serve(host: str, port: int, workers: int) -> None:
    """Serve the HTTP API and the web page.

    Example: rag serve --port 8000 --workers 2
    """
    from rag.api import serve as run_server

    run_server(_settings(), host=host, port=port, workers=workers)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, type=int, show_default=True)
@_friendly
def demo(host: str, port: int) -> None:
    """Ingest the bundled corpus, then serve it.

    Example: rag demo
    """
    from rag.api import serve as run_server
    from rag.ingest.indexer import run_ingest_cli

    settings = _settings()
    run_ingest_cli(settings, ("fixtures/corpus",), prune=False, as_json=False)
    run_server(settings, host=host, port=port, workers=1)


@main.command(name="eval")
@click.option("--set", "dataset", default="fixtures/eval/golden.jsonl", show_default=True)
@click.option("--sweep", type=click.Choice(["min_score", "min_overlap"]), default=None)
@click.option("--external", type=click.Choice(["squad2", "attribution", "conflicts"]), default=None)
@click.option("--limit", type=int, default=None, help="Only the first N items (external sets).")
@click.option("--out", default="docs", show_default=True, help="Where plots and tables are written.")
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--corpus",
    default=None,
    help="Directory the --set was labelled on, ingested fresh (golden runs) [default: fixtures/corpus].",
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
) -> None:
    """Measure the pipeline: golden set, threshold sweeps, external benchmarks.

    Example: rag eval --sweep min_score
    """
    from rag.evals.runner import run_eval_cli

    run_eval_cli(
        _settings(),
        dataset=dataset,
        sweep=sweep,
        external=external,
        limit=limit,
        out=out,
        as_json=as_json,
        corpus=corpus,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
