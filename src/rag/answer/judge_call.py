"""The judge's model call: the undecided sentences of one draft, in one Messages call to a small model.

`ClaudeJudge` implements `rag.support.judge.Judge`. The request (one user turn, no documents, so no
citations to conflict with the tool) offers one tool, `record_verdicts`, whose input schema is the
structured answer: for each sentence id, supported true/false and a short reason. The tool is forced
(`tool_choice`) and thinking turned off, which forcing needs, where the model allows both; sampling is
deterministic (temperature 0) where the model accepts a temperature (anthropic-wire.md 5: Sonnet 5.5 and
Haiku 5.5 answer 400 to any non-default temperature, and Sonnet 5.5 to a forced tool and to thinking
turned off, so there the tool is offered and asked for in the prompt instead).

Nothing here raises: an SDK error (after its retries), a reply without the tool, a malformed input
or missing ids become `Rulings` with `failure` set, or without a ruling for those ids, and the answer
core leaves those sentences withheld. The usage of a call the provider answered is counted, at the
judge model's price.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anthropic

from rag.answer.claude import CLIENT_ERRORS, client_options, translate_error, usage_of
from rag.config import Settings
from rag.support.judge import (
    INPUT_SCHEMA,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    Item,
    Rulings,
    read_rulings,
    request_text,
)

log = logging.getLogger(__name__)

# anthropic-wire.md 5: models that answer 400 to a non-default temperature (top_p, top_k) ...
FIXED_SAMPLING_MODELS = frozenset({"claude-sonnet-5-5", "claude-haiku-5-5"})
# ... and those that answer 400 to a forced tool_choice and to thinking turned off.
UNFORCED_TOOL_MODELS = frozenset({"claude-sonnet-5-5"})
# Output budget: room for each verdict's id, flag and reason (about 60 tokens), and some to spare.
BASE_TOKENS = 256
TOKENS_PER_ITEM = 128
MAX_JUDGE_TOKENS = 4096


def judge_request(model: str, question: str, items: Sequence[Item]) -> dict[str, Any]:
    """The keyword arguments of one judge call to `model` (see the module docstring)."""
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": min(MAX_JUDGE_TOKENS, BASE_TOKENS + TOKENS_PER_ITEM * len(items)),
        "system": SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": request_text(question, items)}],
        "tools": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": INPUT_SCHEMA}],
    }
    if model in UNFORCED_TOOL_MODELS:
        request["tool_choice"] = {"type": "auto"}
    else:
        request["tool_choice"] = {"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True}
        request["thinking"] = {"type": "disabled"}
    if model not in FIXED_SAMPLING_MODELS:
        # the SDK takes no `temperature` argument (anthropic-wire.md 5): it goes in the body
        request["extra_body"] = {"temperature": 0}
    return request


class ClaudeJudge:
    """The judge over the Messages API (`Settings.judge_model`, `judge_timeout`; the SDK's retries)."""

    def __init__(self, settings: Settings, *, client: anthropic.Anthropic | None = None) -> None:
        self.settings = settings
        self.model = settings.judge_model
        self._client = client
        self._options = (
            {**client_options(settings), "timeout": settings.judge_timeout} if client is None else {}
        )

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = anthropic.Anthropic(**self._options)
        return self._client

    @property
    def price(self) -> tuple[float, float] | None:
        return self.settings.model_prices.get(self.model)

    def judge(self, question: str, items: Sequence[Item]) -> Rulings:
        """One call for all `items`; never raises (module docstring)."""
        if not items:
            return Rulings(model=self.model)
        try:
            raw = self.client.messages.with_raw_response.create(**judge_request(self.model, question, items))
            message = raw.parse()
        except CLIENT_ERRORS as exc:
            failure = str(translate_error(exc, model=self.model))
            log.warning("the judge call failed, its %d sentence(s) stay withheld: %s", len(items), failure)
            return Rulings(model=self.model, failure=failure)
        usage = usage_of(message.usage, retries=raw.retries_taken, price=self.price)
        inputs = [b.input for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME]
        if not inputs:
            failure = f"the judge did not use its tool (stop reason {message.stop_reason!r})"
            log.warning("%s; its %d sentence(s) stay withheld", failure, len(items))
            return Rulings(usage=usage, model=self.model, failure=failure)
        rulings = read_rulings(inputs[0], [i.id for i in items])
        failure = "" if rulings else "the judge's answer held no verdict for the sentences asked"
        if len(rulings) < len(items):
            log.warning("the judge ruled on %d of %d sentence(s)", len(rulings), len(items))
        return Rulings(rulings=rulings, usage=usage, model=self.model, failure=failure)
