"""The OpenAPI schema matches what every route does: schemathesis generates requests from it, valid
and invalid, for every operation, and checks each response's status, content type, headers and body
against it (its default checks). Failures are collected per operation and reported together."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

from rag.api import create_app
from rag.config import load_settings

EXAMPLES = 6  # per operation and generation mode


@pytest.fixture(scope="module")
def api_schema(corpus_db: str) -> Any:
    app = create_app(load_settings(db=corpus_db, mock=True, api_keys="", anthropic_api_key="", dense="off"))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def _failures(operation: Any, mode: schemathesis.GenerationMode) -> list[str]:
    found: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        try:
            case.call_and_validate()
        except Exception as exc:  # a failed check: keep the first few of each operation, go on
            if len(found) < 3:
                found.append(f"{operation.label} [{mode.value}]: {str(exc)[:600]}")

    try:
        run()
    except Unsatisfiable:
        pass  # no invalid request exists for an operation without parameters or body
    except Exception as exc:  # schemathesis reports some failures once the run ends
        found.append(f"{operation.label} [{mode.value}]: {str(exc)[:600]}")
    return found


def test_every_route_answers_as_its_schema_says(api_schema: Any) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /ask", "GET /ask/stream", "GET /documents/{doc_id}", "GET /admin/api/export"} <= labels
    failures = [
        failure
        for operation in operations
        for mode in schemathesis.GenerationMode
        for failure in _failures(operation, mode)
    ]
    assert not failures, "\n\n".join(failures)


def _stream(client: Any, question: str) -> list[tuple[str, dict[str, Any]]]:
    body = client.post("/ask/stream", json={"question": question}).text
    events = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_every_stream_event_matches_the_model_its_name_documents(corpus_db: str) -> None:
    from fastapi.testclient import TestClient

    from rag.api.schemas import SSE_EVENTS

    app = create_app(load_settings(db=corpus_db, mock=True, api_keys="", anthropic_api_key="", dense="off"))
    with TestClient(app) as client:
        seen: set[str] = set()
        for question in (
            "How long do deleted projects stay in the trash?",
            "What is the capital of Australia?",
            "Can I get my mobile phone bill reimbursed?",
        ):
            for name, data in _stream(client, question):
                SSE_EVENTS[name].model_validate(data)  # the models forbid unknown keys
                seen.add(name)
        documented = client.get("/openapi.json").json()
    assert {"meta", "sentence", "refusal", "done"} <= seen
    media = documented["paths"]["/ask/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    names = {event["properties"]["event"]["const"] for event in media["schema"]["oneOf"]}
    assert names == set(SSE_EVENTS)
    for model in SSE_EVENTS.values():
        assert model.__name__ in documented["components"]["schemas"]


def test_question_pattern_accepts_exactly_what_validation_accepts() -> None:
    import re
    import sys

    from rag.answer.pipeline import validate_question
    from rag.api.schemas import QUESTION_PATTERN
    from rag.errors import InvalidQuestion

    pattern = re.compile(QUESTION_PATTERN)
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        text = chr(code)
        try:
            validate_question(text, 10)
            accepted = True
        except InvalidQuestion:
            accepted = False
        assert accepted == bool(pattern.search(text)), hex(code)
