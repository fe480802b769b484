"""The answer gate: a calibrated answer-or-refuse decision on the offline generator's chosen sentence.

The extractive generator's eligibility rules are lexical: a true sentence of the retrieved blocks that
covers enough of the question's words is copied as the answer, and the verifier passes it because it is
in its source. On unseen documentation about 4 in 10 such answers were wrong (the option next to the
asked one, a "see also" line, the definition of something else). The rules cannot say how sure they
are; this module measures, for the chosen sentence, what tells a right choice from a wrong one (how
much of the question it covers alone and with its section, its margin over the best candidate from
another block, the retrieval scores, whether it carries the asked kind of value and names the asked
identifier, and how close its meaning is to the question's next to the other sentences of the
retrieved blocks), and a small logistic model turns them into a probability of being right.

The weights and the threshold are fitted on the development sets by `rag.evals.answer_fit` (threshold
chosen by cross-validation grouped by set, so that precision when answered reaches 0.90 on a set the
fit never saw) and stored in `gate_weights.json` (a `rag.calibration.Model`). Below the threshold the
pipeline refuses with `no_citations` and the closest passages (`Pipeline._gate_answer`). The pipeline
is given the model `active_model` picks for the `RAG_ANSWER_GATE` setting: `off` turns the gate off
(exactly the generator's answers), `on` applies the stored model even when not adopted.

Only the offline path is gated: with Claude, the support check judges every sentence against its
cited span, and the generator is not extractive, so these features do not describe its answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from rag.calibration import Model, in_use, load
from rag.language.meaning import Meaning
from rag.language.text import normalise, split_sentences
from rag.language.tools import Tools, installed
from rag.reader.answer_types import answer_type, type_match
from rag.reader.words import identifiers
from rag.types import Block

WEIGHTS_FILE = Path(__file__).with_name("gate_weights.json")
# The sentences a meaning margin is measured against: those of the best-scored retrieved blocks, a
# bounded number (the encoder runs about 150 short sentences a second on a small machine).
MEANING_BLOCKS = 4
MEANING_SENTENCES = 12
_MAX_SENTENCE_CHARS = 400

FEATURES: tuple[str, ...] = (
    "own_coverage",  # question IDF mass the sentence covers alone (the generator's figure)
    "coverage",  # ... with its title, section, label and neighbours
    "context_share",  # coverage - own_coverage: how much the answer leans on its context
    "rank_margin",  # the generator's rank over the best candidate from another block (1.0 when none)
    "alone",  # no eligible candidate in another block
    "candidates",  # log(1 + number of eligible candidates)
    "top_score",  # the best retrieval score
    "score_margin",  # best minus second retrieval score
    "block_share",  # the chosen block's retrieval score over the best
    "asks_kind",  # the question asks a typed value (a figure, date, code name, place ...)
    "kind_fit",  # the sentence's match to that kind (answer_types.type_match; 0 when none asked)
    "asks_id",  # the question names a code identifier
    "names_id",  # ... and the sentence with its section names every such identifier
    "meaning",  # cosine(question, section + sentence) by the local sentence encoder
    "meaning_margin",  # meaning minus the best other sentence of the best retrieved blocks
    "meaning_rank",  # 1 when no other such sentence is closer in meaning, else 0
    "sentences",  # how many sentences the answer has
)


class Chosen(Protocol):
    """What the gate reads of a generator candidate (`rag.reader.candidates.Candidate`)."""

    @property
    def text(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def ns(self) -> tuple[int, ...]: ...
    @property
    def own_coverage(self) -> float: ...
    @property
    def coverage(self) -> float: ...
    @property
    def rank(self) -> float: ...


@runtime_checkable
class Ranking(Protocol):
    """A generator that can show its eligible candidates, best first (`OfflineGenerator.ranked`)."""

    def ranked(self, question: str, blocks: Sequence[Block]) -> Sequence[Chosen]: ...


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's decision on one answer: keep it or not, with the probability and the threshold."""

    keep: bool
    probability: float
    threshold: float

    @property
    def reason(self) -> str:
        return (
            f"The best candidate answer was not confident enough to give (estimated {self.probability:.2f} "
            f"chance of being right; the calibrated threshold is {self.threshold:.2f})."
        )


def _labelled(block: Block, sentence: str) -> str:
    """The sentence as a reader sees it: under its section (or the document title)."""
    where = block.chunk.section or block.chunk.title
    return f"{where}: {sentence}" if where else sentence


def _encode(meaning: Meaning | None, texts: Sequence[str]) -> list[np.ndarray] | None:
    """Unit vectors of `texts` (each cut to `_MAX_SENTENCE_CHARS`), through the shared cache of
    `meaning`; None without the encoder."""
    if meaning is None:
        return None
    return meaning.vectors([t[:_MAX_SENTENCE_CHARS] for t in texts])


def _meaning(
    meaning: Meaning | None, question: str, chosen: str, others: Sequence[str]
) -> tuple[float, float, float]:
    """(cosine to the chosen sentence, its margin over the closest other sentence, 1 when none is closer);
    (0, 0, 0) without the encoder."""
    vectors = _encode(meaning, [question, chosen, *others])
    if vectors is None:
        return 0.0, 0.0, 0.0
    q = vectors[0]
    own = float(vectors[1] @ q)
    best_other = max((float(v @ q) for v in vectors[2:]), default=-1.0)
    margin = own - best_other if others else 1.0 - own
    return own, margin, float(own >= best_other)


def _meaning_of(tools: Tools | None) -> Meaning | None:
    """The encoder's measurements of `tools` (None: the installed tools)."""
    return (tools if tools is not None else installed()).meaning


def _other_sentences(blocks: Sequence[Block], chosen_key: str) -> list[str]:
    """The sentences of the best-scored blocks (with their sections) other than the chosen one."""
    out: list[str] = []
    for block in sorted(blocks, key=lambda b: -b.score)[:MEANING_BLOCKS]:
        for sentence in split_sentences(block.chunk.text)[:MEANING_SENTENCES]:
            if len(sentence.split()) < 3 or normalise(sentence) == chosen_key:
                continue
            out.append(_labelled(block, sentence))
    return out


def measure(
    question: str,
    blocks: Sequence[Block],
    ranked: Sequence[Chosen],
    chosen: Chosen,
    sentences: int = 1,
    *,
    tools: Tools | None = None,
) -> dict[str, float]:
    """Every feature of FEATURES for the answer whose first sentence is `chosen` (one of `ranked`); the
    meaning features by the encoder of `tools` (None: the installed tools; 0 without the encoder)."""
    others, margin = _rank_margin(ranked, chosen)
    block = _home(blocks, chosen)
    top, score_margin, block_share = _retrieval(blocks, block)
    kind = answer_type(question)
    asked_ids = identifiers(question)
    labelled = _labelled(block, chosen.text) if block is not None else chosen.text
    closeness, meaning_margin, meaning_rank = _meaning(
        _meaning_of(tools), question, labelled, _other_sentences(blocks, normalise(chosen.text))
    )
    return {
        "own_coverage": chosen.own_coverage,
        "coverage": chosen.coverage,
        "context_share": max(0.0, chosen.coverage - chosen.own_coverage),
        "rank_margin": max(-1.0, min(1.0, margin)),
        "alone": float(not others),
        "candidates": math.log1p(len(ranked)),
        "top_score": top,
        "score_margin": score_margin,
        "block_share": block_share,
        "asks_kind": float(bool(kind)),
        "kind_fit": type_match(chosen.text, kind, question) if kind else 0.0,
        "asks_id": float(bool(asked_ids)),
        "names_id": float(_names_ids(asked_ids, chosen.text, block)),
        "meaning": closeness,
        "meaning_margin": meaning_margin,
        "meaning_rank": meaning_rank,
        "sentences": float(sentences),
    }


def _rank_margin(ranked: Sequence[Chosen], chosen: Chosen) -> tuple[list[Chosen], float]:
    """(the candidates from other blocks, the chosen one's rank over the best of them: 1.0 when none)."""
    others = [c for c in ranked if not set(c.ns) & set(chosen.ns) and c.key != chosen.key]
    margin = chosen.rank - max(c.rank for c in others) if others else 1.0
    return others, margin


def _home(blocks: Sequence[Block], chosen: Chosen) -> Block | None:
    """The best-scored of the blocks the chosen sentence cites; None when it cites none of them."""
    by_n = {b.n: b for b in blocks}
    home = [by_n[n] for n in chosen.ns if n in by_n]
    return max(home, key=lambda b: b.score) if home else None


def _retrieval(blocks: Sequence[Block], block: Block | None) -> tuple[float, float, float]:
    """(the best retrieval score, its margin over the second, the chosen block's score over the best)."""
    scores = sorted((b.score for b in blocks), reverse=True)
    top = scores[0] if scores else 0.0
    score_margin = top - scores[1] if len(scores) > 1 else top
    block_share = (block.score / top) if block is not None and top > 0 else 0.0
    return top, score_margin, block_share


def _names_ids(asked_ids: frozenset[str], text: str, block: Block | None) -> bool:
    """The question names identifiers, and the sentence with its block's title and section names them all."""
    where = f"{block.chunk.title} {block.chunk.section}" if block is not None else ""
    return bool(asked_ids) and asked_ids <= identifiers(f"{text} {where}")


def choice(
    generator: Ranking, question: str, blocks: Sequence[Block], answer: Sequence[str]
) -> tuple[Sequence[Chosen], Chosen] | None:
    """(every eligible candidate, the one the answer starts with), or None when it answered nothing."""
    if not answer:
        return None
    ranked = generator.ranked(question, blocks)
    first = normalise(answer[0])
    chosen = next((c for c in ranked if normalise(c.text) == first), None)
    if chosen is None:
        chosen = ranked[0] if ranked else None
    return (ranked, chosen) if chosen is not None else None


def stored_model() -> Model | None:
    """The model in `gate_weights.json`, None when the file is absent."""
    return load(WEIGHTS_FILE)


def active_model(setting: str = "") -> Model | None:
    """The model the pipeline applies for the `RAG_ANSWER_GATE` setting (`Settings.answer_gate`, any
    case): the stored one when adopted; none with "off"; with "on", the stored one even when not
    adopted (for measuring)."""
    return in_use(stored_model(), setting.strip().lower())


def assess(
    generator: Ranking,
    question: str,
    blocks: Sequence[Block],
    answer: Sequence[str],
    model: Model,
    *,
    tools: Tools | None = None,
) -> GateDecision | None:
    """The gate's decision by `model` on an offline answer whose sentences are `answer` (its meaning
    features measured with `tools`, see `measure`); None when there is no answer to decide on."""
    found = choice(generator, question, blocks, answer)
    if found is None:
        return None
    ranked, chosen = found
    p = model.probability(measure(question, blocks, ranked, chosen, len(answer), tools=tools))
    return GateDecision(keep=p >= model.threshold, probability=p, threshold=model.threshold)
