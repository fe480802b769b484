"""External benchmarks (third-party samples in shared/eval-external), all offline.

- squad2: each item's paragraph is the whole corpus (one document, one chunk); the
  full pipeline must abstain on unanswerable items and answer, citing the paragraph,
  on answerable ones.
- attribution: the verifier as a classifier of (claim, evidence) pairs: the claim is
  one draft sentence citing every reference; "supported" means the verifier kept a citation.
- conflicts: the conflict detector over each item's documents, one document per block.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.evals.datasets import (
    AttributionCase,
    ConflictCase,
    SquadCase,
    external_dir,
    load_attribution,
    load_conflicts,
    load_squad2,
)
from rag.evals.metrics import confusion, contains_fact, percentile, ratio
from rag.evals.runner import top_score
from rag.evals.sweep import THRESHOLDS
from rag.types import Block, Chunk, Claim, Conflict, Document, Draft

_MARKER_RE = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")


# ---------------------------------------------------------------- squad2


@dataclass(frozen=True, slots=True, kw_only=True)
class SquadOutcome:
    case: SquadCase
    abstained: bool
    reason: str
    text: str
    cited: bool
    top_score: float
    latency_ms: float

    @property
    def correct(self) -> bool:
        """Answered, citing the paragraph, with a gold answer span in the text."""
        return (
            not self.abstained and self.cited and any(contains_fact(self.text, a) for a in self.case.answers)
        )


def squad_gate(o: SquadOutcome, threshold: float) -> SquadOutcome:
    """The outcome at retrieval gate `threshold`, from an outcome recorded with the gate off."""
    if o.top_score >= threshold:
        return o
    return SquadOutcome(
        case=o.case,
        abstained=True,
        reason="low_retrieval_score",
        text="",
        cited=False,
        top_score=o.top_score,
        latency_ms=o.latency_ms,
    )


@contextmanager
def _scratch_store() -> Iterator[Any]:
    from rag.store.sqlite import SqliteStore

    with tempfile.TemporaryDirectory(prefix="rag-eval-ext-") as tmp:
        store = SqliteStore(str(Path(tmp) / "one-doc.db"))
        try:
            yield store
        finally:
            store.close()


def squad_document(case: SquadCase, index: int) -> tuple[Document, Chunk]:
    """The paragraph as a one-chunk document (the README: "used as the retrieved chunk")."""
    doc_id = f"squad-{index:04d}"
    title = case.title.replace("_", " ")
    doc = Document(doc_id=doc_id, title=title, text=case.context, source_path=f"squad2/{case.id}")
    chunk = Chunk(
        chunk_id=f"{doc_id}#c00",
        doc_id=doc_id,
        title=title,
        section=title,
        text=case.context,
        start_char=0,
        end_char=len(case.context),
    )
    return doc, chunk


def run_squad2(
    settings: Settings, cases: Sequence[SquadCase], *, gate_off: bool = False
) -> list[SquadOutcome]:
    """Each case against a store holding only its paragraph. `gate_off` sets min_score to 0 (sweeps)."""
    from rag.answer.pipeline import build_pipeline

    run_settings = settings.model_copy(update={"min_score": 0.0}) if gate_off else settings
    outcomes = []
    with _scratch_store() as store:
        pipeline = build_pipeline(run_settings, store=store)
        for index, case in enumerate(cases):
            doc, chunk = squad_document(case, index)
            store.upsert_document(doc, [chunk])
            started = time.perf_counter()
            answer = pipeline.answer(case.question)
            elapsed = (time.perf_counter() - started) * 1000
            store.delete_document(doc.doc_id)
            outcomes.append(
                SquadOutcome(
                    case=case,
                    abstained=answer.abstained,
                    reason=answer.reason,
                    text=answer.text,
                    cited=any(c.chunk_id == chunk.chunk_id for c in answer.citations),
                    top_score=top_score(answer),
                    latency_ms=elapsed,
                )
            )
    return outcomes


def squad_metrics(outcomes: Sequence[SquadOutcome]) -> dict[str, Any]:
    """Abstention precision/recall (unanswerable is the positive class) and answer accuracy."""
    answerable = [o for o in outcomes if o.case.answerable]
    abst = confusion((o.abstained, not o.case.answerable) for o in outcomes)
    return {
        "items": len(outcomes),
        "answerable": len(answerable),
        "unanswerable": len(outcomes) - len(answerable),
        "abstention_precision": abst.precision,
        "abstention_recall": abst.recall,
        "abstention_f1": abst.f1,
        **_answer_figures(answerable),
        "abstentions_by_reason": _abstentions_by_reason(outcomes),
        "latency_ms_p50": percentile([o.latency_ms for o in outcomes], 50),
        "latency_ms_p95": percentile([o.latency_ms for o in outcomes], 95),
    }


def _answer_figures(answerable: Sequence[SquadOutcome]) -> dict[str, float | None]:
    """Answer rate and accuracy on the answerable items; correctness and citation when answered."""
    answered = [o for o in answerable if not o.abstained]
    return {
        "answer_rate": ratio(len(answered), len(answerable)),
        "answer_accuracy": ratio(sum(o.correct for o in answerable), len(answerable)),
        "correct_when_answered": ratio(sum(o.correct for o in answered), len(answered)),
        "cited_when_answered": ratio(sum(o.cited for o in answered), len(answered)),
    }


def _abstentions_by_reason(outcomes: Sequence[SquadOutcome]) -> dict[str, int]:
    """How many refusals each reason gave, in order of first appearance."""
    reasons: dict[str, int] = {}
    for o in outcomes:
        if o.abstained:
            reasons[o.reason] = reasons.get(o.reason, 0) + 1
    return reasons


# ---------------------------------------------------------------- attribution


def _blocks(texts: Sequence[str], prefix: str) -> list[Block]:
    """One block per text, each from its own document (doc ids `{prefix}-d{i}`), numbered 1..n."""
    blocks = []
    for i, text in enumerate(texts):
        doc_id = f"{prefix}-d{i}"
        chunk = Chunk(
            chunk_id=f"{doc_id}#c00",
            doc_id=doc_id,
            title=f"Document {i + 1}",
            section="",
            text=text,
            start_char=0,
            end_char=len(text),
        )
        blocks.append(Block(n=i + 1, chunk=chunk, score=1.0, sent_text=text))
    return blocks


def claim_draft(case: AttributionCase) -> Draft:
    """The claim, source markers like `[1]` removed, as one sentence citing every reference."""
    text = _MARKER_RE.sub("", case.claim).strip()
    return Draft(text=text, claims=tuple(Claim(n=i + 1) for i in range(len(case.references))))


def supported(case: AttributionCase, *, min_overlap: float) -> bool:
    """The verifier's verdict: True when at least one citation of the claim survives verification."""
    from rag.answer.verify import verify

    verdicts = verify([claim_draft(case)], _blocks(case.references, case.id), min_overlap=min_overlap)
    return bool(verdicts) and verdicts[0].ok


def support_level(case: AttributionCase, thresholds: Sequence[float] = THRESHOLDS) -> float:
    """The highest threshold at which the verifier still supports the claim; -1.0 when none does.

    Verification is monotone in min_overlap, so a binary search over `thresholds` is exact.
    """
    low, high = 0, len(thresholds) - 1
    if not supported(case, min_overlap=thresholds[0]):
        return -1.0
    while low < high:
        mid = (low + high + 1) // 2
        if supported(case, min_overlap=thresholds[mid]):
            low = mid
        else:
            high = mid - 1
    return thresholds[low]


def attribution_metrics(cases: Sequence[AttributionCase], predicted: Sequence[bool]) -> dict[str, Any]:
    """Precision, recall, F1 and accuracy of "supported", overall, by source dataset and by split."""
    pairs = list(zip(cases, predicted, strict=True))

    def grouped(key: Callable[[AttributionCase], str]) -> dict[str, dict[str, float | int | None]]:
        groups = sorted({key(c) for c in cases})
        return {g: confusion((p, c.supported) for c, p in pairs if key(c) == g).as_dict() for g in groups}

    return {
        "items": len(cases),
        "supported_share": ratio(sum(c.supported for c in cases), len(cases)),
        "overall": confusion((p, c.supported) for c, p in pairs).as_dict(),
        "by_split": grouped(lambda c: c.split),
        "by_source": grouped(lambda c: c.src_dataset),
    }


def run_attribution(settings: Settings, cases: Sequence[AttributionCase]) -> dict[str, Any]:
    predicted = [supported(c, min_overlap=settings.min_overlap) for c in cases]
    return {"min_overlap": settings.min_overlap, **attribution_metrics(cases, predicted)}


# ---------------------------------------------------------------- conflicts


def detect(question: str, blocks: Sequence[Block]) -> list[Conflict]:
    """Every conflict the detector finds among `blocks` for `question`."""
    from rag.answer.conflicts import find_conflicts

    return find_conflicts(question, blocks)


def run_conflicts(cases: Sequence[ConflictCase]) -> dict[str, Any]:
    """Flag rates on items with injected wrong numbers and on items without, split by ambiguity."""
    rows = [_conflict_row(case) for case in cases]

    def rate(keep: Callable[[ConflictCase], bool]) -> dict[str, Any]:
        group = [r for r in rows if keep(r[0])]
        return {"items": len(group), "flag_rate": ratio(sum(r[1] for r in group), len(group))}

    def cell(misinfo: bool, ambiguous: bool) -> dict[str, Any]:
        return rate(lambda c: c.has_misinfo == misinfo and c.ambiguous == ambiguous)

    misinfo = [r for r in rows if r[0].has_misinfo]
    return {
        "items": len(rows),
        "with_misinfo": rate(lambda c: c.has_misinfo),
        "without_misinfo": rate(lambda c: not c.has_misinfo),
        "misinfo_side_flagged": ratio(sum(r[2] for r in misinfo), len(misinfo)),
        "cells": {f"misinfo={m},ambiguous={a}": cell(m, a) for m in (True, False) for a in (True, False)},
    }


def _conflict_row(case: ConflictCase) -> tuple[ConflictCase, bool, bool]:
    """(case, whether any conflict was flagged, whether a misinformation document was on a side)."""
    blocks = _blocks([d.text for d in case.documents], case.id)
    types = {b.chunk.doc_id: d.type for b, d in zip(blocks, case.documents, strict=True)}
    found = detect(case.question, blocks)
    sides = {types.get(s.doc_id, "") for c in found for s in c.statements}
    return case, bool(found), "misinfo" in sides


# ---------------------------------------------------------------- one set by name


def run_external(settings: Settings, name: str, *, limit: int | None = None) -> dict[str, Any]:
    """One external set's report as a JSON-ready dict; ConfigError when the files are absent."""
    directory = external_dir(settings.eval_external_dir)
    if name == "squad2":
        return {"set": name, **squad_metrics(run_squad2(settings, load_squad2(directory, limit=limit)))}
    if name == "attribution":
        return {"set": name, **run_attribution(settings, load_attribution(directory, limit=limit))}
    if name == "conflicts":
        return {"set": name, **run_conflicts(load_conflicts(directory, limit=limit))}
    if name == "support":
        from rag.answer.generate import support_options, tools_for
        from rag.evals.support import run_support

        support = support_options(settings, tools_for(settings))
        return run_support(min_overlap=settings.min_overlap, limit=limit, support=support)
    from rag.errors import ConfigError

    raise ConfigError(f"unknown external set {name!r}")
