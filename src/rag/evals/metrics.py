"""Small pure scorers over evaluation outcomes. Every rate is in [0, 1], or None when undefined.

An `Outcome` is what the pipeline did with one golden case, reduced to what the
scorers need. "Should abstain" means the label is `abstain` or `conflict`: a conflict
must be presented as such, never answered with one side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag.evals.datasets import GoldenCase
from rag.language.numbers import find_numbers
from rag.language.text import normalise


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One case's result. `supporting[i]` says whether `cited[i]` (a chunk id) supports the case."""

    case: GoldenCase
    abstained: bool
    reason: str
    text: str
    cited: tuple[str, ...] = ()
    supporting: tuple[bool, ...] = ()
    sentences: int = 0
    dropped: int = 0
    top_score: float = 0.0
    latency_ms: float = 0.0
    conflict: bool = False
    blocks: tuple[str, ...] = ()

    @property
    def correct_answer(self) -> bool:
        """Answered, and the expected fact appears in the answer text."""
        return not self.abstained and contains_fact(self.text, self.case.expect)

    @property
    def ok(self) -> bool:
        """The right outcome for the label: a correct answer, an abstention, or a presented conflict."""
        if self.case.label == "answer":
            return self.correct_answer
        if self.case.label == "conflict":
            return self.abstained and self.reason == "conflicting_sources"
        return self.abstained


def diagnose(o: Outcome) -> str:
    """Which stage produced a wrong outcome (or an unsupported citation); "" when the outcome is right."""
    if o.case.label == "answer":
        return _diagnose_answer(o)
    if o.case.label == "conflict":
        if o.reason == "conflicting_sources":
            return ""
        return "retrieval gate" if o.reason == "low_retrieval_score" else "conflict detector: missed"
    if o.abstained:
        return ""
    if o.conflict:
        return "conflict detector: false conflict"
    return "retrieval gate passed and generator coverage rule found a sentence"


# The stage behind a refused answer case, by refusal reason (other reasons: the generator or verifier).
_ANSWER_REFUSED_BY = {
    "low_retrieval_score": "retrieval gate: top score below min_score",
    "conflicting_sources": "conflict detector: false conflict",
}


def _diagnose_answer(o: Outcome) -> str:
    """`diagnose` for an answer case."""
    if o.abstained:
        return _ANSWER_REFUSED_BY.get(
            o.reason, "generator coverage rule: no sentence selected" if not o.dropped else "verifier"
        )
    if not o.correct_answer:
        if not set(o.case.chunks) & set(o.blocks):
            return "retrieval: no labelled chunk among the blocks"
        return "generator: picked sentences without the expected fact"
    if not all(o.supporting):
        return "generator: extra sentence citing a non-supporting chunk"
    return ""


def contains_fact(text: str, fact: str) -> bool:
    """True when `fact` appears in `text` as whole words, ignoring case, spacing and punctuation, and
    a cardinal from two up in either written in digits or words alike ("five categories" states 5)."""
    needle = normalise(_in_digits(fact))
    return bool(needle) and f" {needle} " in f" {normalise(_in_digits(text))} "


def _in_digits(text: str) -> str:
    """`text` with its spelled cardinals of two and more written in digits ("twenty-five" -> "25");
    "one" stays a word (it is as often a pronoun), ordinals and fractions stay as written."""
    out: list[str] = []
    at = 0
    for n in find_numbers(text):
        if n.spelled and not n.ordinal and n.value >= 2 and n.value == int(n.value):
            out += [text[at : n.start], str(int(n.value))]
            at = n.end
    return "".join(out) + text[at:] if out else text


def supports(case: GoldenCase, chunk_id: str, chunk_text: str) -> bool:
    """A cited chunk supports an answer case when it is labelled, or its text contains the expected fact.

    The second rule accepts duplicates of a labelled passage in other documents (the
    corpus has them on purpose) without having to label every copy.
    """
    return chunk_id in case.chunks or contains_fact(chunk_text, case.expect)


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile, q in [0, 100]; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True, kw_only=True)
class Confusion:
    """Binary confusion counts with the usual rates (None when a denominator is zero)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def specificity(self) -> float | None:
        return ratio(self.tn, self.tn + self.fp)

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        return None if p is None or r is None or p + r == 0 else 2 * p * r / (p + r)

    @property
    def accuracy(self) -> float | None:
        return ratio(self.tp + self.tn, self.n)

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "n": self.n,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "accuracy": self.accuracy,
        }


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Counts from (predicted, actual) pairs."""
    tp = fp = fn = tn = 0
    for predicted, actual in pairs:
        if predicted and actual:
            tp += 1
        elif predicted:
            fp += 1
        elif actual:
            fn += 1
        else:
            tn += 1
    return Confusion(tp=tp, fp=fp, fn=fn, tn=tn)


def abstention(outcomes: Sequence[Outcome]) -> Confusion:
    """Abstaining is the positive class; abstain and conflict labels are the actual positives."""
    return confusion((o.abstained, o.case.should_abstain) for o in outcomes)


def golden_metrics(outcomes: Sequence[Outcome]) -> dict[str, object]:
    """Every golden-set figure in one JSON-ready dict (rates in [0, 1] or None)."""
    answerable = _labelled(outcomes, "answer")
    answered = [o for o in answerable if not o.abstained]
    unanswerable = _labelled(outcomes, "abstain")
    conflicts = _labelled(outcomes, "conflict")
    abst = abstention(outcomes)
    latencies = [o.latency_ms for o in outcomes]
    return {
        "cases": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "conflict_cases": len(conflicts),
        **_answer_figures(answerable, answered),
        "abstention_precision": abst.precision,
        "abstention_recall": abst.recall,
        "abstention_recall_by_expected": _abstention_by_expected(unanswerable, conflicts),
        "abstention_by_reason": _abstention_by_reason(outcomes),
        **_conflict_figures(outcomes, conflicts),
        **_citation_figures(answerable, answered),
        **_sentence_figures(outcomes),
        "latency_ms_p50": percentile(latencies, 50),
        "latency_ms_p95": percentile(latencies, 95),
        "overall_ok": ratio(sum(o.ok for o in outcomes), len(outcomes)),
        "problems_by_stage": stage_counts(outcomes),
    }


def _labelled(outcomes: Sequence[Outcome], label: str) -> list[Outcome]:
    """The outcomes whose case carries `label` ("answer", "abstain" or "conflict")."""
    return [o for o in outcomes if o.case.label == label]


def _answer_figures(answerable: Sequence[Outcome], answered: Sequence[Outcome]) -> dict[str, float | None]:
    """How often answerable cases were answered, answered correctly, and correct when answered."""
    return {
        "answer_rate": ratio(len(answered), len(answerable)),
        "correctness": ratio(sum(o.correct_answer for o in answerable), len(answerable)),
        "correct_when_answered": ratio(sum(o.correct_answer for o in answered), len(answered)),
    }


def _abstention_by_expected(
    unanswerable: Sequence[Outcome], conflicts: Sequence[Outcome]
) -> dict[str, float | None]:
    """Abstention recall per kind of unanswerable case ("abstain/<kind>"), then for conflict cases."""
    by_expected: dict[str, float | None] = {}
    for kind in sorted({o.case.kind or "-" for o in unanswerable}):
        group = [o for o in unanswerable if (o.case.kind or "-") == kind]
        by_expected[f"abstain/{kind}"] = ratio(sum(o.abstained for o in group), len(group))
    by_expected["conflict"] = ratio(sum(o.abstained for o in conflicts), len(conflicts))
    return by_expected


def _abstention_by_reason(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float | int | None]]:
    """Per refusal reason: how many abstentions gave it, and the share of them that should have abstained."""
    by_reason: dict[str, dict[str, float | int | None]] = {}
    for reason in sorted({o.reason for o in outcomes if o.abstained}):
        group = [o for o in outcomes if o.abstained and o.reason == reason]
        by_reason[reason] = {
            "count": len(group),
            "precision": ratio(sum(o.case.should_abstain for o in group), len(group)),
        }
    return by_reason


def _conflict_figures(outcomes: Sequence[Outcome], conflicts: Sequence[Outcome]) -> dict[str, float | None]:
    """Conflict cases refused as conflicting, and other cases wrongly presented as a conflict."""
    non_conflict = [o for o in outcomes if o.case.label != "conflict"]
    return {
        "conflict_detection": ratio(
            sum(o.reason == "conflicting_sources" for o in conflicts), len(conflicts)
        ),
        "false_conflict_rate": ratio(sum(o.conflict for o in non_conflict), len(non_conflict)),
    }


def _citation_figures(
    answerable: Sequence[Outcome], answered: Sequence[Outcome]
) -> dict[str, float | int | None]:
    """Share of citations that support their case, answerable cases with a supporting one, and the count."""
    cited = [s for o in answered for s in o.supporting]
    return {
        "citation_precision": ratio(sum(cited), len(cited)),
        "citation_recall": ratio(sum(any(o.supporting) for o in answered), len(answerable)),
        "citations": len(cited),
    }


def _sentence_figures(outcomes: Sequence[Outcome]) -> dict[str, float | int | None]:
    """Sentences shown and withheld by verification, and the withheld share."""
    total_sentences = sum(o.sentences + o.dropped for o in outcomes)
    return {
        "sentences_emitted": sum(o.sentences for o in outcomes),
        "sentences_dropped": sum(o.dropped for o in outcomes),
        "dropped_share": ratio(sum(o.dropped for o in outcomes), total_sentences),
    }


def stage_counts(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """How many wrong outcomes (or unsupported citations) each stage caused, most first."""
    counts: dict[str, int] = {}
    for o in outcomes:
        stage = diagnose(o)
        if stage:
            counts[stage] = counts.get(stage, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
