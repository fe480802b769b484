"""The offline generator's match by meaning (rag.language.meaning, the local sentence encoder): tried only
when no sentence answers on words; the binding rules and the "tells something new" check still decide,
and without the encoder the generator gives exactly its lexical answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rag.language import meaning
from rag.language.meaning import Meaning
from rag.language.tools import Tools, installed, open_tools
from rag.reader.offline import OfflineGenerator
from rag.types import Block, Chunk

MEANING = installed().meaning
needs_encoder = pytest.mark.skipif(
    MEANING is None or not MEANING.available(), reason="the sentence encoder is not installed"
)


def block(n: int, text: str, section: str) -> Block:
    chunk = Chunk(
        chunk_id=f"doc-{n:03d}#c01",
        doc_id=f"doc-{n:03d}",
        title="Observatory handbook",
        section=section,
        text=text,
    )
    return Block(n=n, chunk=chunk, score=0.5, sent_text=text)


OBSERVATORY = [
    block(
        1,
        "Telescope images are saved under the folder named by the ``FRAME_STORE`` variable. Calibration "
        "frames go to ``CALIB_STORE``.",
        "Observing > Image storage",
    ),
    block(
        2,
        "The dome closes automatically when wind exceeds 40 km/h. Observers log every session in the "
        "night book.",
        "Observing > Safety",
    ),
    block(
        3,
        "Raw frames older than 90 days are removed from the archive. Reduced frames are kept for ten years.",
        "Archive > Retention",
    ),
    block(
        4,
        "After stacking, the individual exposures are deleted. Use the ``--keep-subs`` flag to keep them "
        "instead.",
        "Processing > Stacking",
    ),
]
FRAME_STORE = "Telescope images are saved under the folder named by the ``FRAME_STORE`` variable."
RAW_FRAMES = "Raw frames older than 90 days are removed from the archive."
KEEP_SUBS = "Use the ``--keep-subs`` flag to keep them instead."
# paraphrase: none of the answer's words but the asked kind ("environment variable", "how long")
WHERE_PICTURES = "Which environment variable decides where the pictures from the telescope end up?"
UNPROCESSED = "How long are the unprocessed pictures kept before they get thrown out?"


def answer(question: str, blocks: Sequence[Block] = OBSERVATORY, tools: Tools | None = None) -> list[str]:
    return [d.text for d in OfflineGenerator(meaning=True, tools=tools).generate(question, blocks).drafts]


class Similarities:
    """Stands in for the encoder's measurements: `similarities` answers as `measure` does."""

    def __init__(self, measure: Callable[[str, Sequence[str]], Any]) -> None:
        self.similarities = measure


def measured_by(measure: Callable[[str, Sequence[str]], Any]) -> Tools:
    """The installed tools with the encoder's similarities replaced by `measure`."""
    return replace(installed(), meaning=Similarities(measure))


@pytest.fixture
def no_encoder() -> Tools:
    return measured_by(lambda question, texts: None)


@needs_encoder
def test_paraphrased_question_is_answered_through_meaning() -> None:
    assert answer(WHERE_PICTURES) == [FRAME_STORE]
    assert answer(UNPROCESSED) == [RAW_FRAMES]


@needs_encoder
def test_the_neighbour_of_the_asked_subject_is_still_refused() -> None:
    # calibration frames have their own variable, the next sentence; the closest in meaning is not it
    assert answer("Which environment variable decides where the dark and flat pictures end up?") == []
    # the asked subject is written nowhere: the retention of another kind of frame is no answer
    assert answer("How long are the spectra kept before they are thrown out?") == []


@needs_encoder
def test_the_asker_s_problem_restated_is_no_answer() -> None:
    # the closest sentence in meaning says what the asker already said; it names nothing new
    assert answer("How can I stop my single exposures from vanishing once stacking finishes?") == []
    # the sentence naming the flag does answer
    assert answer("Which flag keeps the single exposures once stacking finishes?") == [KEEP_SUBS]


def test_without_the_encoder_the_lexical_answers_stand(no_encoder: Tools) -> None:
    assert answer(WHERE_PICTURES, tools=no_encoder) == []
    assert answer(UNPROCESSED, tools=no_encoder) == []
    assert answer("How long are raw frames kept in the archive?", tools=no_encoder) == [RAW_FRAMES]


def test_rag_encoder_off_switches_meaning_off() -> None:
    tools = open_tools(encoder="off")
    assert tools.meaning is None
    assert answer(WHERE_PICTURES, tools=tools) == []


def test_a_question_answered_on_words_never_asks_the_encoder() -> None:
    def refuse(question: str, texts: Sequence[str]) -> None:
        raise AssertionError("the encoder was asked about a question the words answer")

    assert answer("Where are telescope images saved?", tools=measured_by(refuse)) == [FRAME_STORE]


class CountingEncoder:
    dim = 3

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += texts
        rows = [[1.0, float(len(t)), 0.0] for t in texts]
        return np.asarray([r / np.linalg.norm(r) for r in np.asarray(rows)], dtype=np.float32)


def test_similarities_encode_each_text_once_and_forget_the_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = CountingEncoder()
    measures = Meaning(lambda: fake)
    monkeypatch.setattr(meaning, "CACHE_SIZE", 3)
    first = measures.similarities("q", ["a", "bb"])
    again = measures.similarities("q", ["bb", "a"])
    assert first is not None and again is not None
    assert fake.seen == ["q", "a", "bb"]  # the second call encodes nothing
    np.testing.assert_allclose(again, first[::-1])
    measures.similarities("q", ["ccc"])  # "bb" is now the least recently used: dropped
    measures.similarities("q", ["a", "bb"])
    assert fake.seen == ["q", "a", "bb", "ccc", "bb"]


def test_similarities_without_the_encoder_are_none() -> None:
    measures = Meaning(lambda: None)
    assert measures.similarities("q", ["a"]) is None
    assert not measures.available()


MARINA = [
    block(
        1,
        "Seasonal berth: Price $900; Valid April to October. Winter berth: Price $400; Valid November "
        "to March.",
        "Berths > Prices",
    ),
    block(2, "Boats must carry a working VHF radio. The harbour master answers on channel 12.", "Safety"),
    block(
        3,
        "Experimental: support for tracking engine hours exported from the logbook module.",
        "Changes > 2.0",
    ),
    block(4, "To change the logbook export folder, edit the export path in the settings file.", "Logbook"),
]
SEASONAL = "Seasonal berth: Price $900; Valid April to October."
FINE = "How much is the fine for mooring without a berth?"


def similar(closeness: Callable[[str], float]) -> Tools:
    """The encoder's similarities replaced by `closeness` of each text (the question ignored)."""

    def fake(question: str, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([closeness(t) for t in texts], dtype=np.float32)

    return measured_by(fake)


def test_two_sentences_equally_close_in_meaning_answer_neither() -> None:
    # nothing answers the fine on words; both prices bind to "berth" and carry the asked kind
    assert answer(FINE, MARINA, similar(lambda text: 0.8)) == []
    assert answer(FINE, MARINA, similar(lambda text: 0.8 if "Seasonal" in text else 0.7)) == [SEASONAL]


def test_a_description_matched_on_words_but_not_in_meaning_is_refused() -> None:
    # (a "how do I ...?" is answered only by a means, see test_reader_precision: a "what" asks here)
    question = "What does the logbook module support for exported engines track?"
    assert answer(question, MARINA, similar(lambda text: 0.9)) == [
        "Experimental: support for tracking engine hours exported from the logbook module."
    ]
    far = similar(lambda text: 0.1)
    assert answer(question, MARINA, far) == []
    # a typed answer ("Price $900") says too little for its meaning to be judged: it stays
    assert answer("How much does a seasonal berth cost?", MARINA, far) == [SEASONAL]


def test_off_unless_asked_for_the_encoder_is_never_asked() -> None:
    def refuse(question: str, texts: Sequence[str]) -> None:
        raise AssertionError("the meaning pass ran without being switched on")

    assert OfflineGenerator(tools=measured_by(refuse)).generate(WHERE_PICTURES, OBSERVATORY).drafts == ()
