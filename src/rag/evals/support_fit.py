"""Fit the support check's calibrated model on the support set's dev split (never its test split).

`python -m rag.evals.support_fit [--write]` measures `support.signals` for every dev case as the
native contract judges it (the sentence against all its cited spans and blocks, the request's topic
terms), fits L2-regularised logistic regressions over `support_model.vector` by Newton's method, and
chooses the regularisation, the feature set (all, or the k best by greedy forward selection) and the
threshold by repeated stratified cross-validation on dev: the threshold is the one that keeps the most
faithful sentences while withholding at least the share of harmful ones the hand rules withhold on dev
(a confident wrong sentence is the failure). `--write` stores the chosen model, fitted on all of dev,
in `weights.json` (read by `rag.calibration.load`) with its CV figures; whether `decide` uses it
(`adopted`) is set by hand, after test was measured once (docs/eval.md). The signals are measured with
the English tools and the alignment threshold the settings name (`RAG_WORDNET_DIR`, `RAG_PARSER`,
`RAG_ENCODER`, `RAG_SUPPORT_WORD_SIMILARITY`, ...).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.answer.generate import support_options, tools_for
from rag.answer.parse import parse_inline
from rag.answer.verify import common_terms
from rag.config import load_settings
from rag.evals.datasets import SupportCase, load_support, repo_root
from rag.evals.support import CORPUS, case_blocks
from rag.support.check import CheckOptions, signals
from rag.support.decision import FEATURES, WEIGHTS_FILE, Signals, rules, vector

log = logging.getLogger(__name__)

Array = npt.NDArray[np.float64]
MIN_COVERAGE = 0.5  # support.MIN_COVERAGE, the floor `verify` judges with
FOLDS = 5
REPEATS = 10
L2_GRID = (0.01, 0.1, 1.0)
SIZES = (2, 4, 8, 12, 0)  # 0: every feature
# Not fitted: hard verdicts decide those rows whatever the weights (coverage under the floor in
# `support_model`, a missing figure in `verify`), so the columns are 0 on every row the model decides.
UNFITTED = frozenset({"low_coverage", "missing_figures"})
FITTED = [j for j, name in enumerate(FEATURES) if name not in UNFITTED]


@dataclass(frozen=True, slots=True)
class Row:
    case: SupportCase
    signals: Signals
    x: list[float]

    @property
    def faithful(self) -> bool:
        return self.case.label == "faithful"

    @property
    def hard(self) -> bool:
        """Withheld whatever the weights: a lead-in naming another document, nothing to judge, coverage
        under the floor (in `support_model`), a figure its spans do not state (`verify` withholds it)."""
        s = self.signals
        return bool(s.misattributed) or s.empty or s.coverage < MIN_COVERAGE or s.missing_figures > 0


def measure(case: SupportCase, corpus: str, options: CheckOptions | None = None) -> Row:
    """The case's signals: its sentence (tidied as the parser tidies it) against all its cited spans,
    measured with `options` (None: the support check's defaults)."""
    blocks, claims = case_blocks(case, corpus)
    drafts = parse_inline(case.sentence)
    sentence = drafts[0].text if drafts else case.sentence
    cited = blocks[: len(claims)]
    spans = [c.cited_text or "" for c in claims]
    measured = signals(
        sentence, spans, cited, common=common_terms(blocks), with_meaning=True, options=options
    )
    return Row(case, measured, vector(measured, min_coverage=MIN_COVERAGE))


def dev_rows() -> list[Row]:
    settings = load_settings()
    options = support_options(settings, tools_for(settings))
    corpus = str(repo_root() / CORPUS)
    return [measure(c, corpus, options) for c in load_support() if c.split == "dev"]


def fit_logistic(x: Array, y: Array, weight: Array, l2: float, *, steps: int = 50) -> tuple[Array, float]:
    """Weights and bias of an L2-regularised logistic regression (the bias is not penalised), fitted by
    Newton's method on the weighted log-loss."""
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    theta = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ theta, -60, 60)))
        grad = design.T @ (weight * (p - y)) + penalty * theta
        hess = (design * (weight * p * (1 - p))[:, None]).T @ design + np.diag(penalty + 1e-9)
        delta = np.linalg.solve(hess, grad)
        theta -= delta
        if float(np.abs(delta).max()) < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def probabilities(x: Array, w: Array, b: float) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -60, 60))), dtype=np.float64)


def rates(kept: npt.NDArray[np.bool_], faithful: npt.NDArray[np.bool_]) -> tuple[float, float, float]:
    """(faithful kept, harmful withheld, accuracy)."""
    fk = float(kept[faithful].mean()) if faithful.any() else 0.0
    hw = float((~kept[~faithful]).mean()) if (~faithful).any() else 0.0
    return fk, hw, float((kept == faithful).mean())


def choose_threshold(
    p: Array, faithful: npt.NDArray[np.bool_], hard_kept: npt.NDArray[np.bool_], floor: float
) -> float:
    """The lowest threshold (most faithful kept) whose harmful withheld reaches `floor`; else the one
    with the most harmful withheld. `hard_kept` False marks rows a hard rule withholds whatever p is."""
    candidates = sorted({0.5, *np.round(p, 6).tolist()})
    best, best_hw = 1.0, -1.0
    for t in candidates:
        kept = (p >= t) & hard_kept
        _, hw, _ = rates(kept, faithful)
        if hw >= floor - 1e-12:
            return float(t)
        if hw > best_hw:
            best, best_hw = float(t), hw
    return best


def forward_select(x: Array, y: Array, weight: Array, l2: float, size: int) -> list[int]:
    """The `size` features that, added one at a time, most lower the weighted in-sample log-loss."""
    chosen: list[int] = []
    while len(chosen) < size:
        best, best_loss = -1, float("inf")
        for j in range(x.shape[1]):
            if j in chosen:
                continue
            cols = [*chosen, j]
            w, b = fit_logistic(x[:, cols], y, weight, l2)
            p = np.clip(probabilities(x[:, cols], w, b), 1e-9, 1 - 1e-9)
            loss = float(-(weight * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum())
            if loss < best_loss - 1e-9:
                best, best_loss = j, loss
        if best < 0:
            break
        chosen.append(best)
    return chosen


def _folds(faithful: npt.NDArray[np.bool_], seed: int) -> list[npt.NDArray[np.int_]]:
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(FOLDS)]
    for label in (True, False):
        idx = np.flatnonzero(faithful == label)
        rng.shuffle(idx)
        for i, j in enumerate(idx):
            folds[i % FOLDS].append(int(j))
    return [np.array(sorted(f), dtype=np.int_) for f in folds]


def class_weight(y: Array) -> Array:
    """Balanced: each class weighs as much in total."""
    pos = max(float(y.sum()), 1.0)
    neg = max(float(len(y) - y.sum()), 1.0)
    return np.where(y > 0, len(y) / (2 * pos), len(y) / (2 * neg))


def cross_validate(rows: Sequence[Row], l2: float, size: int, floor: float) -> dict[str, Any]:
    """Out-of-fold figures of one configuration over `REPEATS` stratified `FOLDS`-fold splits of dev:
    features selected and weights fitted on the training folds, the threshold chosen on the training
    folds' own out-of-fold probabilities (an inner split), figures on the held-out fold; hard-rule
    rows are withheld as `decide` withholds them."""
    x = np.array([r.x for r in rows], dtype=np.float64)
    faithful = np.array([r.faithful for r in rows])
    soft = ~np.array([r.hard for r in rows])
    y = faithful.astype(np.float64)
    figures = []
    for repeat in range(REPEATS):
        kept = np.zeros(len(rows), dtype=bool)
        for held in _folds(faithful, repeat):
            train = np.setdiff1d(np.arange(len(rows)), held)
            threshold, cols, w, b = _fit_config(
                x[train], y[train], faithful[train], soft[train], l2, size, floor
            )
            p = probabilities(x[held][:, cols], w, b)
            kept[held] = (p >= threshold) & soft[held]
        figures.append(rates(kept, faithful))
    mean = np.array(figures).mean(axis=0)
    return {
        "faithful_kept": round(float(mean[0]), 4),
        "harmful_withheld": round(float(mean[1]), 4),
        "accuracy": round(float(mean[2]), 4),
    }


def _fit_config(
    x: Array,
    y: Array,
    faithful: npt.NDArray[np.bool_],
    soft: npt.NDArray[np.bool_],
    l2: float,
    size: int,
    floor: float,
) -> tuple[float, list[int], Array, float]:
    """Features, weights and a threshold fitted on one training set (soft rows only); the threshold from
    an inner 5-fold split's out-of-fold probabilities."""
    xs, ys, fs = x[soft], y[soft], faithful[soft]
    weight = class_weight(ys)
    picked = forward_select(xs[:, FITTED], ys, weight, l2, size) if size else list(range(len(FITTED)))
    cols = [FITTED[j] for j in picked]
    inner = np.zeros(len(ys))
    for held in _folds(fs, 99):
        train = np.setdiff1d(np.arange(len(ys)), held)
        w, b = fit_logistic(xs[train][:, cols], ys[train], weight[train], l2)
        inner[held] = probabilities(xs[held][:, cols], w, b)
    p_all = np.zeros(len(y))
    p_all[soft] = inner
    threshold = choose_threshold(p_all, faithful, soft, floor)
    w, b = fit_logistic(xs[:, cols], ys, weight, l2)
    return threshold, cols, w, b


def run(write: bool) -> dict[str, Any]:
    rows = dev_rows()
    faithful = np.array([r.faithful for r in rows])
    ruled = np.array(
        [rules(r.signals, 1, min_coverage=MIN_COVERAGE).issue is None and not r.hard for r in rows]
    )
    rule_fk, rule_hw, rule_acc = rates(ruled, faithful)
    floor = rule_hw
    results = _grid(rows, floor)
    best = _best_configuration(results, floor)
    x = np.array([r.x for r in rows], dtype=np.float64)
    soft = ~np.array([r.hard for r in rows])
    threshold, cols, w, b = _fit_config(
        x, faithful.astype(np.float64), faithful, soft, best["l2"], best["size"], floor
    )
    p = probabilities(x[:, cols], w, b)
    dev_fk, dev_hw, dev_acc = rates((p >= threshold) & soft, faithful)
    report = {
        "fitted_on": "fixtures/support/claims.jsonl, split dev only",
        "rules_on_dev": _rounded_rates(rule_fk, rule_hw, rule_acc),
        "cv": {"folds": FOLDS, "repeats": REPEATS, "chosen": best, "grid": results},
        "dev_in_sample": _rounded_rates(dev_fk, dev_hw, dev_acc),
    }
    if write:
        _write_weights(threshold, cols, w, b, best["l2"], report)
    return report


def _grid(rows: Sequence[Row], floor: float) -> list[dict[str, Any]]:
    """The cross-validated figures of every configuration (l2, feature-set size), in grid order."""
    results = []
    for l2 in L2_GRID:
        for size in SIZES:
            cv = cross_validate(rows, l2, size, floor)
            results.append({"l2": l2, "size": size, **cv})
            log.info("l2=%s size=%s %s", l2, size, cv)
    return results


def _best_configuration(results: Sequence[dict[str, Any]], floor: float) -> dict[str, Any]:
    """The most faithful kept among configurations whose CV harmful withheld reaches the rules' `floor`
    (within 0.01), ties to the smaller model; among all of them when none does."""
    eligible = [r for r in results if r["harmful_withheld"] >= floor - 0.01] or results
    return max(eligible, key=lambda r: (r["faithful_kept"] + r["harmful_withheld"], -(r["size"] or 99)))


def _rounded_rates(faithful_kept: float, harmful_withheld: float, accuracy: float) -> dict[str, float]:
    return {
        "faithful_kept": round(faithful_kept, 4),
        "harmful_withheld": round(harmful_withheld, 4),
        "accuracy": round(accuracy, 4),
    }


def _write_weights(
    threshold: float, cols: Sequence[int], w: Array, b: float, l2: float, report: dict[str, Any]
) -> None:
    """Store the model in `WEIGHTS_FILE` with the report, keeping its `adopted` and `decision`."""
    previous = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")) if WEIGHTS_FILE.is_file() else {}
    data = {
        "adopted": previous.get("adopted", False),
        "decision": previous.get("decision", "not measured on test yet"),
        "bias": round(b, 4),
        "threshold": round(threshold, 4),
        "weights": {FEATURES[j]: round(float(wj), 4) for j, wj in zip(cols, w, strict=True)},
        "l2": l2,
        **report,
    }
    WEIGHTS_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="store the chosen model in weights.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log.info("%s", json.dumps(run(args.write), indent=1))


if __name__ == "__main__":
    main()
