"""`rag chat`: a conversation in the terminal, one question per line, each turn answered as `rag ask`
answers a question (the same text, or with `--json` the same JSON, one line per answer).

The loop keeps the conversation on the client side, as the HTTP API expects: each follow-up is sent
with the earlier turns (the latest `max_history_turns`), and a line `/new` starts over. A turn that
fails (an invalid question, the provider unavailable) prints its one-line error and the loop goes on.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterable
from typing import TextIO

import click
import orjson

from rag import serialize
from rag.access import Principal
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.cli.ask import check_argument
from rag.cli.database import open_for_reading, require_documents
from rag.cli.render import format_answer
from rag.config import Settings
from rag.errors import RagError
from rag.types import Answer, Turn

NEW_CONVERSATION = "/new"
PROMPT = "> "


def chat_command(
    settings: Settings,
    *,
    as_json: bool,
    top_k: int | None,
    principal: Principal | None = None,
    lines: TextIO | None = None,
) -> int:
    """Run the loop over `lines` (None: standard input) and return the exit code: 1 when any turn
    failed with an error, else 0."""
    store = open_for_reading(settings)
    try:
        require_documents(store, settings)
        pipeline = build_pipeline(settings, store=store)
        source = lines if lines is not None else sys.stdin
        chat = _Chat(pipeline=pipeline, as_json=as_json, top_k=top_k, principal=principal)
        return chat.run(_questions(source, prompt=source.isatty() and not as_json))
    finally:
        store.close()


def _questions(source: TextIO, *, prompt: bool) -> Iterable[str]:
    while True:
        if prompt:
            click.echo(PROMPT, nl=False, err=True)
        line = source.readline()
        if not line:
            return
        if line.strip():
            yield line.strip()


class _Chat:
    """One conversation at a time: its id, its turns so far, and how each answer is printed."""

    def __init__(
        self, *, pipeline: Pipeline, as_json: bool, top_k: int | None, principal: Principal | None
    ) -> None:
        self.pipeline = pipeline
        self.as_json = as_json
        self.top_k = top_k
        self.principal = principal
        self.limit = pipeline.settings.max_history_turns
        self.turns: list[Turn] = []
        self.conversation_id = _new_id()

    def run(self, questions: Iterable[str]) -> int:
        failed = False
        for question in questions:
            if question == NEW_CONVERSATION:
                self.turns, self.conversation_id = [], _new_id()
                continue
            try:
                check_argument(question)
                answer = self.ask(question)
            except (RagError, click.ClickException) as exc:
                click.echo(f"error: {exc}", err=True)
                failed = True
                continue
            self.show(answer)
        return 1 if failed else 0

    def ask(self, question: str) -> Answer:
        history = tuple(self.turns[-self.limit :]) if self.limit else ()
        answer = self.pipeline.answer(
            question,
            top_k=self.top_k,
            principal=self.principal,
            history=history,
            conversation_id=self.conversation_id,
        )
        self.turns.append(Turn(question=question, answer=answer.text))
        return answer

    def show(self, answer: Answer) -> None:
        if self.as_json:
            click.echo(orjson.dumps(serialize.answer_json(answer)).decode())
            return
        if answer.searched_for and answer.searched_for != answer.question:
            click.echo(f"Searched for: {answer.searched_for}")
        click.echo(format_answer(answer))
        click.echo("")


def _new_id() -> str:
    return f"cli-{uuid.uuid4().hex[:12]}"
