"""`rag eval --sweep min_score|min_overlap`: run once, re-score across thresholds, plot, recommend.

min_score: the golden set runs once with the retrieval gate off (min_score 0); each
case keeps its top retrieval score and its ungated outcome, and the gate is re-applied
at every threshold (`sweep.gate`). SQuAD 2.0 (when present) is run the same way and
drawn as a cross-check from unseen text; the choice is made on the golden set.

min_overlap: the golden set runs once to get each case's blocks; the generator drafts
once per case with one fabricated citation added (a real block that does not support
the sentence); the drafts are then re-verified at every threshold. AttributionBench
(when present) gives each claim's highest passing threshold by the same verifier.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.errors import ConfigError
from rag.evals import sweep as sw
from rag.evals.datasets import GoldenCase, external_dir, load_attribution, load_golden, load_squad2
from rag.evals.metrics import Outcome, supports
from rag.evals.runner import corpus_store, outcome_of, run_golden
from rag.types import Block, Draft


def _external_or_none(loader: Any, settings: Settings, limit: int | None) -> Any:
    try:
        return loader(external_dir(settings.eval_external_dir), limit=limit)
    except ConfigError:
        return None


# ---------------------------------------------------------------- min_score


def sweep_min_score(
    settings: Settings, dataset: str, *, limit: int | None = None, with_squad: bool = True
) -> dict[str, Any]:
    """The min_score sweep over the golden set (plus SQuAD 2.0 curves when available)."""
    ungated = run_golden(settings, dataset, limit=limit, gate_off=True)
    outcomes = list(ungated.outcomes)
    points = sw.sweep(lambda t: sw.min_score_point(outcomes, t))
    chosen = sw.choose(points)
    extra: dict[str, list[tuple[float, float]]] = {}
    squad_summary: dict[str, Any] | None = None
    cases = _external_or_none(load_squad2, settings, None) if with_squad else None
    if cases:
        from rag.evals.external import run_squad2, squad_gate, squad_metrics

        recorded = run_squad2(settings, cases, gate_off=True)
        squad_at: dict[float, dict[str, Any]] = {
            t: squad_metrics([squad_gate(o, t) for o in recorded]) for t in sw.THRESHOLDS
        }
        extra["squad2 answer accuracy"] = [(t, squad_at[t]["answer_accuracy"] or 0.0) for t in sw.THRESHOLDS]
        extra["squad2 abstention recall"] = [
            (t, squad_at[t]["abstention_recall"] or 0.0) for t in sw.THRESHOLDS
        ]
        squad_summary = {"items": len(recorded), "at_chosen": squad_at[chosen.threshold]}
    return {
        "parameter": "min_score",
        "title": "min_score sweep (golden set; dashed: SQuAD 2.0 cross-check)",
        "objective": (
            "system balanced accuracy: mean of (answerable answered correctly + conflicts presented) and "
            "abstention recall on unanswerable; ties broken by the gate's own balanced accuracy (mean of "
            "passed by gate on answerable + conflict cases and refused by gate alone on unanswerable), so "
            "the choice does not lean on the generator's coverage rule"
        ),
        "store": ungated.store,
        "chosen": chosen.threshold,
        "plateau": sw.plateau(points, chosen),
        "tolerance": 1e-9,
        "points": points,
        "extra": extra,
        "squad2": squad_summary,
    }


# ---------------------------------------------------------------- min_overlap


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRecord:
    """One case's blocks and drafts (the last one fabricated when `fabricated`), generated once."""

    case: GoldenCase
    blocks: tuple[Block, ...]
    drafts: tuple[Draft, ...]
    fabricated: bool
    base: Outcome


def record_drafts(settings: Settings, cases: Sequence[GoldenCase]) -> list[DraftRecord]:
    """Run each case once; for cases that reach generation, draft once with a fabricated citation."""
    from rag.answer.pipeline import build_pipeline
    from rag.reader.offline import OfflineGenerator

    records = []
    with corpus_store(settings, cases) as (store, _):
        pipeline = build_pipeline(settings, store=store)
        min_coverage = getattr(pipeline.generator, "min_coverage", None)
        tools = pipeline.tools
        honest = (
            OfflineGenerator(tools=tools)
            if min_coverage is None
            else OfflineGenerator(min_coverage=min_coverage, tools=tools)
        )
        faker = OfflineGenerator("unrelated", min_coverage=honest.min_coverage, tools=tools)
        for case in cases:
            started = time.perf_counter()
            answer = pipeline.answer(case.question)
            outcome = outcome_of(case, answer, latency_ms=(time.perf_counter() - started) * 1000, store=store)
            reached = not (
                answer.abstained and answer.reason in ("low_retrieval_score", "conflicting_sources")
            )
            if not reached or not answer.blocks:
                records.append(DraftRecord(case=case, blocks=(), drafts=(), fabricated=False, base=outcome))
                continue
            genuine = honest.drafts(case.question, answer.blocks)
            drafts = faker.drafts(case.question, answer.blocks)
            records.append(
                DraftRecord(
                    case=case,
                    blocks=answer.blocks,
                    drafts=drafts,
                    fabricated=len(drafts) > len(genuine),
                    base=outcome,
                )
            )
    return records


def overlap_outcome(record: DraftRecord, verdicts: Sequence[Any]) -> Outcome:
    """The case's outcome when only the verified sentences are emitted (genuine and fabricated alike)."""
    if not record.blocks:
        return record.base
    kept = [v for v in verdicts if v.ok]
    if not kept:
        return replace(
            record.base,
            abstained=True,
            reason="no_citations",
            text="",
            cited=(),
            supporting=(),
            sentences=0,
            dropped=len(verdicts),
        )
    texts = {b.chunk.chunk_id: b.chunk.text for b in record.blocks}
    cited = tuple(c.chunk_id for v in kept for c in v.citations)
    return replace(
        record.base,
        abstained=False,
        reason="",
        text=" ".join(v.draft.text for v in kept),
        cited=cited,
        supporting=tuple(supports(record.case, c, texts.get(c, "")) for c in cited),
        sentences=len(kept),
        dropped=len(verdicts) - len(kept),
    )


def min_overlap_point(records: Sequence[DraftRecord], threshold: float) -> sw.SweepPoint:
    """Objective: mean of coverage (answerable answered correctly) and fabricated citations rejected."""
    outcomes, rejected, genuine_kept = _reverify(records, threshold)
    answerable = [o for o in outcomes if o.case.label == "answer"]
    cited = [s for o in answerable if not o.abstained for s in o.supporting]
    coverage = sw.share([o.correct_answer for o in answerable])
    fab = sw.share(rejected)
    curves = {
        "coverage": coverage,
        "genuine_sentences_kept": sw.share(genuine_kept),
        "fabricated_citations_rejected": fab,
        "citation_precision": sw.share(cited),
    }
    return sw.SweepPoint(threshold=threshold, objective=(coverage + fab) / 2, curves=curves)


def _reverify(
    records: Sequence[DraftRecord], threshold: float
) -> tuple[list[Outcome], list[bool], list[bool]]:
    """Every record's drafts verified at `threshold`: the outcomes, whether each fabricated citation
    was rejected, and whether each genuine sentence was kept."""
    from rag.answer.verify import verify

    outcomes: list[Outcome] = []
    rejected: list[bool] = []
    genuine_kept: list[bool] = []
    for record in records:
        verdicts = verify(record.drafts, record.blocks, min_overlap=threshold) if record.blocks else []
        outcomes.append(overlap_outcome(record, verdicts))
        honest = verdicts[:-1] if record.fabricated else verdicts
        genuine_kept.extend(v.ok for v in honest)
        if record.fabricated:
            rejected.append(not verdicts[-1].ok)
    return outcomes, rejected, genuine_kept


# The verifier must keep at least this share of genuinely supported, model-written claims.
MIN_SUPPORTED_RECALL = 0.8


def sweep_min_overlap(settings: Settings, dataset: str, *, limit: int | None = None) -> dict[str, Any]:
    """The min_overlap sweep: golden drafts re-verified, and AttributionBench claims when available.

    The offline generator copies sentences verbatim, so on the golden set every threshold
    from 0.01 up keeps genuine sentences and rejects fabricated citations: it cannot choose.
    The choice is then AttributionBench accuracy (its labels are balanced, so this is balanced
    accuracy) among thresholds where the golden objective stays at its best and the verifier still
    keeps at least MIN_SUPPORTED_RECALL of the genuinely supported claims (those are model-written
    answers: a stricter gate would withhold too many true sentences), taking the middle of the run
    within one standard error of the best accuracy (differences below it are noise).
    """
    cases = load_golden(dataset, limit=limit)
    records = record_drafts(settings, cases)
    golden = sw.sweep(lambda t: min_overlap_point(records, t))
    golden_best = max(p.objective for p in golden)
    claims = _external_or_none(load_attribution, settings, None)
    tolerance = 1e-9
    objective = "mean of coverage (answerable answered correctly) and fabricated citations rejected"
    attribution: dict[str, Any] | None = None
    points = golden
    if claims:
        overall = _attribution_at(claims)
        points = [_with_attribution(p, overall[p.threshold], golden_best) for p in golden]
        best = max(p.objective for p in points)
        tolerance = math.sqrt(best * (1 - best) / len(claims))
        objective = (
            "AttributionBench accuracy of the verifier (balanced labels), among thresholds where the golden "
            f"objective ({objective}) is at its best and at least {MIN_SUPPORTED_RECALL:.0%} of supported "
            f"claims are kept; plateau = within one standard error ({tolerance:.3f}) of the best accuracy"
        )
    chosen = sw.choose(points, tolerance=tolerance)
    if claims:
        attribution = {"items": len(claims), "at_chosen": overall[chosen.threshold]}
    return {
        "parameter": "min_overlap",
        "title": "min_overlap sweep (golden drafts re-verified; AttributionBench claims)",
        "objective": objective,
        "chosen": chosen.threshold,
        "plateau": sw.plateau(points, chosen, tolerance=tolerance),
        "tolerance": tolerance,
        "points": points,
        "extra": {},
        "attribution": attribution,
        "fabricated_cases": sum(r.fabricated for r in records),
    }


def _attribution_at(claims: Sequence[Any]) -> dict[float, dict[str, Any]]:
    """AttributionBench's overall figures at every sweep threshold (a claim passes at the thresholds up
    to its support level)."""
    from rag.evals.external import attribution_metrics, support_level

    levels = [support_level(c) for c in claims]
    return {t: attribution_metrics(claims, [lv >= t for lv in levels])["overall"] for t in sw.THRESHOLDS}


def _with_attribution(point: sw.SweepPoint, overall: dict[str, Any], golden_best: float) -> sw.SweepPoint:
    """`point` scored by attribution accuracy where the golden objective is at its best and enough
    supported claims are kept (0.0 elsewhere), with the attribution curves added."""
    eligible = point.objective >= golden_best - 1e-9 and (overall["recall"] or 0.0) >= MIN_SUPPORTED_RECALL
    return sw.SweepPoint(
        threshold=point.threshold,
        objective=(overall["accuracy"] or 0.0) if eligible else 0.0,
        curves={
            **point.curves,
            "attribution_accuracy": overall["accuracy"] or 0.0,
            "attribution_f1": overall["f1"] or 0.0,
        },
    )


# ---------------------------------------------------------------- outputs


def write_outputs(result: dict[str, Any], out: Path, *, current: float | None) -> tuple[Path, Path]:
    """The PNG plot and the Markdown table of a sweep, under `out`."""
    name = result["parameter"]
    points: list[sw.SweepPoint] = result["points"]
    chosen = next(p for p in points if p.threshold == result["chosen"])
    png = sw.plot(
        points,
        chosen,
        out / f"sweep_{name}.png",
        title=result["title"],
        xlabel=name,
        current=current,
        extra=result["extra"],
        span=result["plateau"],
    )
    md = out / f"sweep_{name}.md"
    low, high = result["plateau"]
    md.write_text(
        f"# {name} sweep\n\nObjective: {result['objective']}.\n"
        f"Best plateau {low:.2f}-{high:.2f}; chosen (its middle): **{result['chosen']:.2f}**.\n\n"
        + sw.table(points, chosen)
        + "\n",
        encoding="utf-8",
    )
    return png, md


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRun:
    """One sweep's result dict, the setting's current value and the files written."""

    parameter: str
    result: dict[str, Any]
    current: float | None
    png: Path
    md: Path

    @property
    def chosen(self) -> sw.SweepPoint:
        points: list[sw.SweepPoint] = self.result["points"]
        return next(p for p in points if p.threshold == self.result["chosen"])

    def json(self) -> dict[str, Any]:
        """The sweep as JSON-ready data: every point with its curves, and the files written."""
        payload = {k: v for k, v in self.result.items() if k not in ("points", "extra")}
        payload["points"] = [
            {"threshold": p.threshold, "objective": p.objective, **p.curves} for p in self.result["points"]
        ]
        payload["files"] = [str(self.png), str(self.md)]
        return payload


def run_sweep(settings: Settings, parameter: str, *, dataset: str, limit: int | None, out: Path) -> SweepRun:
    """Sweep `parameter` (min_score or min_overlap), write the plot and table under `out`."""
    if parameter == "min_score":
        result = sweep_min_score(settings, dataset, limit=limit)
        current = _current_min_score(settings)
    elif parameter == "min_overlap":
        result = sweep_min_overlap(settings, dataset, limit=limit)
        current = settings.min_overlap
    else:
        raise ConfigError(f"unknown sweep {parameter!r}; choose min_score or min_overlap")
    png, md = write_outputs(result, out, current=current)
    return SweepRun(parameter=parameter, result=result, current=current, png=png, md=md)


def _current_min_score(settings: Settings) -> float | None:
    if settings.min_score is not None:
        return float(settings.min_score)
    try:
        from rag.answer.gates import gate_threshold
        from rag.answer.rerank import make_reranker

        return gate_threshold(make_reranker(settings).name, "offline")
    except (ImportError, AttributeError):
        return None
