"""Fit the answer gate (`rag.reader.gate`) on the development sets, never on holdout6.

`python -m rag.evals.answer_fit [--write] [--rows FILE]` runs every development set offline with the
gate off (`answer_gate="off"`, whatever `RAG_ANSWER_GATE` says), and for every question the
extractive generator answers measures the gate's features of its chosen sentence and labels the answer
right or wrong by the eval runner's own rule (`Outcome.correct_answer`; an answer to an unanswerable or
conflict question is wrong). It then
fits L2-regularised logistic regressions over standardised features (Newton's method, numpy, classes
weighted equally) and picks the regularisation, the feature set (all, or the k best by greedy forward
selection) and the inner precision target by leave-one-set-out cross-validation: each set is held out in
turn, the model and its threshold are fitted on the others only (the threshold as the lowest whose
precision on the training sets' own leave-one-set-out probabilities reaches the inner target), and the
held-out set's answers are kept or refused. A set the fit never saw is the honest picture of unseen
documentation, which is what the gate is for. Precision is judged per held-out set (pooled, the large
golden set, on which the generator was tuned, would hide a set where most answers are wrong): among
configurations whose held-out precision reaches PRECISION (0.90) on every set while keeping at least
MIN_KEPT of the correct answers, the one keeping the most correct answers wins (ties: the smaller
model). `--write` stores it, fitted on all the sets, in `gate_weights.json` with the CV figures; it
is `adopted` (applied by the pipeline) only when a configuration meets that rule. Otherwise the file
holds the configuration keeping the most correct answers with an in-sample threshold, for measuring
with `RAG_ANSWER_GATE=on` only. `--rows FILE` saves the measured rows (JSON) and reuses them when the
file exists (`--fresh` re-measures). `--measure DIR` runs one set once and prints aggregate before and
after figures only (for the unseen set).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rag.calibration import Model
from rag.evals.support_fit import class_weight, fit_logistic, forward_select, probabilities
from rag.reader.gate import FEATURES, WEIGHTS_FILE, Ranking, choice, measure, stored_model

if TYPE_CHECKING:
    from rag.evals.datasets import GoldenCase
    from rag.evals.metrics import Outcome
    from rag.language.tools import Tools
    from rag.types import Answer

log = logging.getLogger(__name__)

Array = npt.NDArray[np.float64]
# (name, questions, corpus): the development sets; holdout6 is the unseen test set and never fitted on
DEV_SETS: tuple[tuple[str, str, str], ...] = (
    ("golden", "fixtures/eval/golden.jsonl", "fixtures/corpus"),
    ("holdout", "fixtures/holdout/golden.jsonl", "fixtures/holdout/corpus"),
    ("holdout2", "fixtures/holdout2/golden.jsonl", "fixtures/holdout2/corpus"),
    ("holdout3", "fixtures/holdout3/golden.jsonl", "fixtures/holdout3/corpus"),
    ("holdout4", "fixtures/holdout4/golden.jsonl", "fixtures/holdout4/corpus"),
    ("holdout5", "fixtures/holdout5/golden.jsonl", "fixtures/holdout5/corpus"),
    ("devdocs", "fixtures/devdocs/golden.jsonl", "fixtures/devdocs/corpus"),
)
PRECISION = 0.90
# ... while keeping at least this share of the generator's correct answers: a gate that reaches the
# precision by refusing nearly everything trades a wrong answer for many lost right ones
MIN_KEPT = 0.5
L2_GRID = (0.1, 1.0, 10.0)
SIZES = (2, 4, 6, 0)  # 0: every feature
TARGETS = (0.90, 0.95)  # the precision the threshold is set to reach on the training sets


@dataclass(frozen=True, slots=True)
class Row:
    """One answered question: its set, whether the answer was right, and the gate's features."""

    group: str
    case_id: str
    answerable: bool
    correct: bool
    x: dict[str, float]
    # False: another eligible candidate of the question, measured as if chosen (training data only;
    # the decisions judged are the generator's own choices)
    chosen: bool = True


def collect(sets: Sequence[tuple[str, str, str]] = DEV_SETS, *, others: int = 0) -> list[Row]:
    """Every answered question of `sets`, run offline with the gate off, with its features and label;
    with `others`, also up to that many other eligible candidates of every question that reached the
    generator (answered or not), each labelled by whether it states the expected fact."""
    from rag.answer.pipeline import build_pipeline
    from rag.config import load_settings
    from rag.evals.datasets import load_golden, repo_root
    from rag.evals.runner import corpus_store, outcome_of

    settings = load_settings(mock=True, answer_gate="off")
    rows: list[Row] = []
    for name, questions, corpus in sets:
        cases = load_golden(str(repo_root() / questions))
        with corpus_store(settings, cases, corpus=repo_root() / corpus) as (store, _):
            pipeline = build_pipeline(settings, store=store)
            generator = pipeline.generator
            if not isinstance(generator, Ranking):
                raise TypeError(f"{type(generator).__name__} does not show its ranked candidates")
            for case in cases:
                answer = pipeline.answer(case.question)
                if others and answer.blocks:
                    rows.extend(_other_rows(name, case, answer, generator, others, pipeline.tools))
                if answer.abstained:
                    continue
                outcome = outcome_of(case, answer, latency_ms=0.0, store=store)
                row = _chosen_row(name, case, answer, generator, outcome, pipeline.tools)
                if row is not None:
                    rows.append(row)
        log.info("%s: %d answered", name, sum(r.group == name and r.chosen for r in rows))
    return rows


def _other_rows(
    name: str, case: GoldenCase, answer: Answer, generator: Ranking, others: int, tools: Tools
) -> list[Row]:
    """Up to `others` eligible candidates of `answer` besides its first sentence, each measured as if
    chosen and labelled by whether it states the expected fact."""
    from rag.evals.metrics import contains_fact

    ranked = generator.ranked(answer.question, answer.blocks)
    skip = answer.sentences[0].text if not answer.abstained and answer.sentences else None
    picked = [c for c in ranked if c.text != skip][:others]
    rows = []
    for c in picked:
        right = case.label == "answer" and contains_fact(c.text, case.expect)
        x = measure(answer.question, answer.blocks, ranked, c, 1, tools=tools)
        rows.append(Row(name, case.id, case.label == "answer", right, x, chosen=False))
    return rows


def _chosen_row(
    name: str, case: GoldenCase, answer: Answer, generator: Ranking, outcome: Outcome, tools: Tools
) -> Row | None:
    """The generator's own choice for an answered `case`, labelled by the eval runner's rule
    (`outcome`); None when its chosen sentence is not found among the candidates."""
    texts = [s.text for s in answer.sentences]
    found = choice(generator, answer.question, answer.blocks, texts)
    if found is None:
        return None
    ranked, chosen = found
    x = measure(answer.question, answer.blocks, ranked, chosen, len(texts), tools=tools)
    label = case.label == "answer" and outcome.correct_answer
    return Row(name, case.id, case.label == "answer", label, x)


def _matrix(rows: Sequence[Row]) -> Array:
    return np.array([[r.x[f] for f in FEATURES] for r in rows], dtype=np.float64)


def _standardise(x: Array) -> tuple[Array, Array]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale > 1e-9, scale, 1.0)


@dataclass(frozen=True, slots=True)
class Fitted:
    cols: list[int]
    w: Array
    b: float
    mean: Array
    scale: Array

    def p(self, x: Array) -> Array:
        return probabilities(((x - self.mean) / self.scale)[:, self.cols], self.w, self.b)


def _fit(x: Array, y: Array, l2: float, size: int) -> Fitted:
    mean, scale = _standardise(x)
    z = (x - mean) / scale
    weight = class_weight(y)
    cols = forward_select(z, y, weight, l2, size) if size else list(range(z.shape[1]))
    w, b = fit_logistic(z[:, cols], y, weight, l2)
    return Fitted(cols, w, b, mean, scale)


def worst_precision(kept: npt.NDArray[np.bool_], y: Array, groups: npt.NDArray[np.str_]) -> float:
    """The lowest precision when answered over the sets that kept an answer (1.0 when none did). Each set
    is a new body of documentation: pooled, the large golden set, on which the generator was tuned,
    would hide a set where most answers are wrong."""
    per_set = [
        float(y[kept & (groups == g)].mean()) for g in np.unique(groups) if (kept & (groups == g)).any()
    ]
    return min(per_set) if per_set else 1.0


def choose_threshold(p: Array, y: Array, target: float, groups: npt.NDArray[np.str_] | None = None) -> float:
    """The lowest threshold (most answers kept) whose kept answers are right at least `target` of the
    time (in every one of `groups` when given); 1.0 (refuse everything) when none is."""
    sets = groups if groups is not None else np.zeros(len(y), dtype=str)
    for t in [0.0, *sorted({*np.round(p, 6).tolist()})]:
        kept = p >= t
        if kept.any() and worst_precision(kept, y, sets) >= target - 1e-12:
            return float(t)
    return 1.0


def _grouped_oof(x: Array, y: Array, groups: npt.NDArray[np.str_], l2: float, size: int) -> Array:
    """Leave-one-group-out probabilities: each group's rows scored by a model fitted on the others'
    rows (their other candidates included)."""
    p = np.zeros(len(y))
    for g in np.unique(groups):
        held = groups == g
        p[held] = _fit(x[~held], y[~held], l2, size).p(x[held])
    return p


def _fit_with_threshold(
    x: Array,
    y: Array,
    groups: npt.NDArray[np.str_],
    chosen: npt.NDArray[np.bool_],
    l2: float,
    size: int,
    target: float,
) -> tuple[Fitted, float]:
    """A model fitted on all of (x, y) and the threshold chosen on its leave-one-group-out probabilities
    of the `chosen` rows (the generator's own choices, the decisions the gate makes)."""
    p = _grouped_oof(x, y, groups, l2, size)
    threshold = choose_threshold(p[chosen], y[chosen], target, groups[chosen])
    return _fit(x, y, l2, size), threshold


def _figures(kept: npt.NDArray[np.bool_], y: Array, before_answered: int) -> dict[str, Any]:
    correct_before = int(y.sum())
    correct_kept = int(y[kept].sum())
    return {
        "answered_before": before_answered,
        "answered_after": int(kept.sum()),
        "correct_before": correct_before,
        "correct_kept": correct_kept,
        "precision_before": round(correct_before / before_answered, 4) if before_answered else None,
        "precision_after": round(correct_kept / int(kept.sum()), 4) if kept.any() else None,
    }


def _arrays(rows: Sequence[Row]) -> tuple[Array, Array, npt.NDArray[np.str_], npt.NDArray[np.bool_]]:
    x = _matrix(rows)
    y = np.array([r.correct for r in rows], dtype=np.float64)
    return x, y, np.array([r.group for r in rows]), np.array([r.chosen for r in rows])


def leave_one_set_out(rows: Sequence[Row], l2: float, size: int, target: float) -> dict[str, Any]:
    """Held-out figures of one configuration: each set's chosen answers kept or refused by a model and
    threshold fitted on the other sets only (the threshold from their own inner leave-one-set-out
    probabilities)."""
    x, y, groups, chosen = _arrays(rows)
    kept = np.zeros(len(rows), dtype=bool)
    per_set = {}
    for g in dict.fromkeys(r.group for r in rows):
        held = groups == g
        train = ~held
        model, threshold = _fit_with_threshold(
            x[train], y[train], groups[train], chosen[train], l2, size, target
        )
        judged = held & chosen
        kept[judged] = model.p(x[judged]) >= threshold
        per_set[str(g)] = {
            "threshold": round(threshold, 4),
            **_figures(kept[judged], y[judged], int(judged.sum())),
        }
    return {"pooled": _summary(kept[chosen], y[chosen], groups[chosen]), "per_set": per_set}


def _summary(kept: npt.NDArray[np.bool_], y: Array, groups: npt.NDArray[np.str_]) -> dict[str, Any]:
    """Pooled figures plus the worst set's precision when answered."""
    return {**_figures(kept, y, len(y)), "worst_set_precision": round(worst_precision(kept, y, groups), 4)}


def run(rows: Sequence[Row], write: bool) -> dict[str, Any]:
    x, y, groups, chosen = _arrays(rows)
    baseline = _summary(np.ones(int(chosen.sum()), dtype=bool), y[chosen], groups[chosen])
    results = _grid(rows)
    best, meets = _best_configuration(results, MIN_KEPT * float(y[chosen].sum()), baseline)
    model, threshold = _fit_with_threshold(x, y, groups, chosen, best["l2"], best["size"], best["target"])
    threshold_from = "leave-one-set-out probabilities of the training sets"
    if not meets:
        # for a measurement only (not adopted): the in-sample threshold, optimistic by construction
        threshold = choose_threshold(model.p(x[chosen]), y[chosen], PRECISION, groups[chosen])
        threshold_from = "in-sample probabilities (no configuration met the rule; for measuring only)"
    kept_all = (model.p(x) >= threshold) & chosen
    in_sample = _summary(kept_all[chosen], y[chosen], groups[chosen])
    per_set_in_sample = _kept_per_set(rows, kept_all, y, groups)
    report = {
        "fitted_on": [name for name, _, _ in DEV_SETS if any(r.group == name for r in rows)],
        "rows": int(chosen.sum()),
        "other_candidate_rows": int((~chosen).sum()),
        "rule": (
            f"leave-one-set-out precision when answered >= {PRECISION} on every held-out set that "
            f"kept an answer, keeping >= {MIN_KEPT} of the correct answers; then the most correct kept"
        ),
        "meets_rule": meets,
        "threshold_from": threshold_from,
        "no_gate": baseline,
        "chosen": {k: best[k] for k in ("l2", "size", "target")},
        "leave_one_set_out": {"pooled": best["pooled"], "per_set": best["per_set"]},
        "in_sample": in_sample,
        "in_sample_per_set": per_set_in_sample,
        "grid": [{k: r[k] for k in ("l2", "size", "target", "pooled")} for r in results],
    }
    if write:
        _write_weights(model, threshold, meets, report)
    return report


def _grid(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """The held-out figures of every configuration (l2, feature-set size, inner target), in grid order."""
    results = []
    for l2 in L2_GRID:
        for size in SIZES:
            for target in TARGETS:
                cv = leave_one_set_out(rows, l2, size, target)
                results.append({"l2": l2, "size": size, "target": target, **cv})
                log.info("l2=%s size=%s target=%s %s", l2, size, target, cv["pooled"])
    return results


def _best_configuration(
    results: Sequence[dict[str, Any]], floor: float, baseline: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """The configuration the rule picks (keeping at least `floor` correct answers), and whether any met
    the rule at all."""
    # the rule: held-out precision when answered reaches PRECISION on every set that kept an answer;
    # among those, the most correct answers kept (ties: the smaller model, the lower target)
    eligible = [
        r
        for r in results
        if r["pooled"]["worst_set_precision"] >= PRECISION - 1e-12 and r["pooled"]["correct_kept"] >= floor
    ]
    # none meets it: the one keeping the most correct answers without a worse set than no gate (stored
    # for measuring with RAG_ANSWER_GATE=on, not adopted)
    no_worse = [r for r in results if r["pooled"]["worst_set_precision"] >= baseline["worst_set_precision"]]
    best = max(
        eligible or no_worse or results,
        key=lambda r: (r["pooled"]["correct_kept"], -(r["size"] or 99), -r["target"]),
    )
    return best, bool(eligible)


def _kept_per_set(
    rows: Sequence[Row], kept: npt.NDArray[np.bool_], y: Array, groups: npt.NDArray[np.str_]
) -> dict[str, dict[str, int]]:
    """Per set (in row order): the answers `kept` and how many of them are correct."""
    return {
        g: {"kept": int(kept[groups == g].sum()), "correct_kept": int(y[kept & (groups == g)].sum())}
        for g in dict.fromkeys(r.group for r in rows)
    }


def _write_weights(model: Fitted, threshold: float, meets: bool, report: dict[str, Any]) -> None:
    """Store `model` and its threshold in `WEIGHTS_FILE`, with the report; `adopted` only when `meets`."""
    names = [FEATURES[j] for j in model.cols]
    data = {
        # applied by the pipeline only when the held-out figures meet the rule (RAG_ANSWER_GATE=on
        # applies it anyway, for measuring)
        "adopted": meets,
        "bias": round(model.b, 6),
        "threshold": round(threshold, 6),
        "weights": {f: round(float(w), 6) for f, w in zip(names, model.w, strict=True)},
        "means": {f: round(float(model.mean[j]), 6) for f, j in zip(names, model.cols, strict=True)},
        "scales": {f: round(float(model.scale[j]), 6) for f, j in zip(names, model.cols, strict=True)},
        **report,
    }
    WEIGHTS_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def set_figures(rows: Sequence[Row], kept: Sequence[bool], answerable: int) -> dict[str, Any]:
    """The eval runner's answer figures of one set before and after the gate (answerable questions
    only: answer rate, correctness, correct when answered), and the unanswerable questions answered."""

    def figures(keep: Sequence[bool]) -> dict[str, Any]:
        answered = [r for r, k in zip(rows, keep, strict=True) if k and r.answerable]
        correct = sum(r.correct for r in answered)
        return {
            "answered": len(answered),
            "answer_rate": round(len(answered) / answerable, 3) if answerable else None,
            "correctness": round(correct / answerable, 3) if answerable else None,
            "correct_when_answered": round(correct / len(answered), 3) if answered else None,
            "unanswerable_answered": sum(
                1 for r, k in zip(rows, keep, strict=True) if k and not r.answerable
            ),
        }

    return {"answerable": answerable, "before": figures([True] * len(rows)), "after": figures(kept)}


def measure_set(name: str, questions: str, corpus: str, model: Model) -> dict[str, Any]:
    """One set run once with the gate off, then judged by `model`: aggregate figures only (for the
    unseen set, whose items are not to be read)."""
    from rag.evals.datasets import load_golden, repo_root

    answerable = sum(c.label == "answer" for c in load_golden(str(repo_root() / questions)))
    rows = collect([(name, questions, corpus)])
    kept = [model.keeps(r.x) for r in rows]
    return set_figures(rows, kept, answerable)


def load_rows(path: Path) -> list[Row]:
    return [Row(**r) for r in json.loads(path.read_text(encoding="utf-8"))]


def save_rows(path: Path, rows: Sequence[Row]) -> None:
    data = [
        {
            "group": r.group,
            "case_id": r.case_id,
            "answerable": r.answerable,
            "correct": r.correct,
            "x": r.x,
            "chosen": r.chosen,
        }
        for r in rows
    ]
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="store the chosen model in gate_weights.json")
    parser.add_argument("--rows", type=Path, help="save the measured rows here; reuse them when present")
    parser.add_argument("--fresh", action="store_true", help="measure again even when --rows exists")
    parser.add_argument(
        "--others", type=int, default=0, help="also train on up to N other eligible candidates per question"
    )
    parser.add_argument(
        "--measure",
        metavar="DIR",
        help="run the set in DIR (golden.jsonl, corpus/) with the stored model: aggregates only",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.measure:
        model = stored_model()
        if model is None:
            raise SystemExit("no gate_weights.json: run with --write first")
        folder = args.measure.rstrip("/")
        figures = measure_set(Path(folder).name, f"{folder}/golden.jsonl", f"{folder}/corpus", model)
        log.info("%s", json.dumps(figures, indent=1))
        return
    if args.rows is not None and args.rows.is_file() and not args.fresh:
        rows = load_rows(args.rows)
    else:
        rows = collect(others=args.others)
        if args.rows is not None:
            save_rows(args.rows, rows)
    report = run(rows, args.write)
    log.info("%s", json.dumps({k: v for k, v in report.items() if k != "grid"}, indent=1))


if __name__ == "__main__":
    main()
