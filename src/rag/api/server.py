"""Running the API: `serve()` with uvicorn, `app_factory()` for worker processes, log setup."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click
import uvicorn
from fastapi import FastAPI

from rag.api.app import create_app
from rag.config import Settings, get_settings


def configure_logging(level: str) -> None:
    """Log to stderr: `rag.access` as bare JSON lines, everything else under `rag` with level and name."""
    access = logging.getLogger("rag.access")
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.propagate = False
    root = logging.getLogger("rag")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(level.upper())


def app_factory() -> FastAPI:
    """Build the app from the environment; uvicorn calls this in every worker process."""
    settings = get_settings()
    configure_logging(settings.log_level)
    return create_app(settings)


def _check_model_key(settings: Settings) -> None:
    """With Claude configured, probe the key once before serving.

    A rejected key or unknown model raises ConfigError (the CLI prints it, no traceback); an
    unreachable provider only warns, because asks then fail with 503 until it is back.
    """
    if not settings.use_claude:
        return
    from rag.answer.claude import ClaudeGenerator
    from rag.errors import UpstreamUnavailable

    try:
        ClaudeGenerator(settings).check()
    except UpstreamUnavailable as exc:
        click.echo(f"  warning: the model provider could not be reached yet ({exc}); asks will get 503")
    else:
        click.echo(f"  model:     {settings.generation_model} (key accepted)")


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 1) -> None:
    """Run the API with uvicorn. With `workers > 1` each worker builds its own app, pipeline and store."""
    from rag.store import open_store

    store = open_store(settings)
    try:
        stats = store.stats()
    finally:
        store.close()
    _check_model_key(settings)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"http://{shown}:{port}"
    auth = " -H 'Authorization: Bearer $RAG_KEY'" if settings.api_key_list else ""
    click.echo(
        f"Serving {stats.documents} documents ({stats.chunks} chunks) on {base} with {workers} worker(s)"
    )
    if stats.chunks == 0:
        click.echo("  the store is empty: every question will be refused; run `rag ingest PATH` first")
    click.echo(f"  web page:  {base}/")
    click.echo(f"  API docs:  {base}/docs")
    click.echo(
        f"  try:       curl -s {base}/ask -H 'Content-Type: application/json'{auth}"
        ' -d \'{"question": "your question here"}\''
    )
    click.echo(f"  stream:    curl -N '{base}/ask/stream?q=your+question+here'{auth}")
    configure_logging(settings.log_level)
    common: dict[str, Any] = {"host": host, "port": port, "access_log": False, "log_level": "warning"}
    if workers > 1:
        uvicorn.run("rag.api:app_factory", factory=True, workers=workers, **common)
    else:
        uvicorn.run(create_app(settings), **common)
