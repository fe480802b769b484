"""The wording of the `no_citations` refusal per reader (the reason code is the same for both).

With Claude, the model read the passages and no sentence it wrote could be tied to one
(`rag.answer.gates.NO_CITATIONS_MESSAGE`). Offline, no model read them: the extractive reader gives
an answer only where a sentence states it plainly, so the passages it shows may hold the answer.
"""

from __future__ import annotations

from rag.answer.gates import NO_CITATIONS_MESSAGE, Reader

OFFLINE_NO_CITATIONS_MESSAGE = (
    "The closest passages below may hold the answer, but no language model read them: without a key, "
    "the offline reader answers only where a sentence states the answer plainly, and it could not "
    "confirm one here. Set ANTHROPIC_API_KEY to have them read."
)


def no_citations_message(reader: Reader) -> str:
    """The `no_citations` refusal's message for answers read by `reader`."""
    return OFFLINE_NO_CITATIONS_MESSAGE if reader == "offline" else NO_CITATIONS_MESSAGE
