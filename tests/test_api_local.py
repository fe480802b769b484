"""Where POST /ask runs the pipeline: an offline answer over a local SQLite file on the event loop
(`Pipeline.local`), anything that may wait on a network in the thread pool; the answer is the same."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from rag.answer.generate import OfflineGenerator
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.api import create_app
from rag.config import load_settings
from rag.store import open_store
from rag.types import Answer, Block, Generation

QUESTIONS = (
    "How long do deleted projects stay in the trash?",
    "What is the maximum file upload size?",
    "What is the capital of Australia?",
)


class OfflineElsewhere(OfflineGenerator):
    """The offline generator under another type: the API cannot tell it needs no network."""

    def generate(self, question: str, blocks: Sequence[Block], **kwargs: Any) -> Generation:
        return super().generate(question, blocks, **kwargs)


@contextmanager
def answering(db: str, **kwargs: Any) -> Iterator[tuple[TestClient, Pipeline, list[str]]]:
    """A client over a pipeline whose `answer` records the name of the thread it ran in."""
    settings = load_settings(db=db, mock=True)
    store = open_store(settings)
    threads: list[str] = []
    try:
        pipeline = build_pipeline(settings, store=store, **kwargs)
        inner = pipeline.answer

        def answer(question: str, **options: Any) -> Answer:
            threads.append(threading.current_thread().name)
            return inner(question, **options)

        pipeline.answer = answer  # type: ignore[method-assign]
        with TestClient(create_app(settings, pipeline=pipeline)) as client:
            yield client, pipeline, threads
    finally:
        store.close()


def bodies(client: TestClient) -> list[dict[str, Any]]:
    out = []
    for question in QUESTIONS:
        response = client.post("/ask", json={"question": question})
        assert response.status_code == 200, response.text
        body = response.json()
        body.pop("trace_id")
        body.pop("timings")
        out.append(body)
    return out


def test_offline_sqlite_answers_run_on_the_event_loop_and_others_in_the_thread_pool(corpus_db: str) -> None:
    with answering(corpus_db) as (client, pipeline, threads):
        assert pipeline.local
        loop = client.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
        local = bodies(client)
        assert threads == [loop] * len(QUESTIONS)
    with answering(corpus_db, generator=OfflineElsewhere()) as (client, pipeline, threads):
        assert not pipeline.local
        pooled = bodies(client)
        assert len(threads) == len(QUESTIONS) and loop not in threads
    assert local == pooled  # the same answers, wherever they ran
