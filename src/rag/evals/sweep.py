"""Threshold sweeps: re-score recorded outcomes across thresholds, choose one, plot and tabulate.

The pipeline runs once per case with the threshold disabled; a threshold is then a
pure function of the recorded value (the top retrieval score, or a sentence's
overlap), so every point of the sweep is exact without re-running retrieval or
generation. Thresholds run 0.00..1.00 in steps of 0.01.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag.evals.metrics import Outcome

THRESHOLDS: tuple[float, ...] = tuple(round(i / 100, 2) for i in range(101))


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    """Figures at one threshold: `objective` is what the choice maximises, `curves` every plotted rate."""

    threshold: float
    objective: float
    curves: dict[str, float]
    secondary: float = 0.0


def gate(outcome: Outcome, threshold: float) -> Outcome:
    """The outcome the retrieval gate would produce at `threshold`: refuse when top score < threshold."""
    if outcome.top_score >= threshold:
        return outcome
    return replace(
        outcome,
        abstained=True,
        reason="low_retrieval_score",
        text="",
        cited=(),
        supporting=(),
        sentences=0,
        dropped=0,
        conflict=False,
    )


def gate_curves(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """The three rates the min_score sweep plots, and their objective (see `min_score_point`)."""
    answerable = _labelled(outcomes, "answer")
    unanswerable = _labelled(outcomes, "abstain")
    conflicts = _labelled(outcomes, "conflict")
    return {
        "coverage": share([o.correct_answer for o in answerable]),
        "abstention_recall": share([o.abstained for o in unanswerable]),
        "conflict_detection": share([o.reason == "conflicting_sources" for o in conflicts]),
        "refused_by_gate_alone": share([o.reason == "low_retrieval_score" for o in unanswerable]),
        "passed_by_gate": share([o.reason != "low_retrieval_score" for o in answerable + conflicts]),
    }


def share(flags: Sequence[bool]) -> float:
    """The share of true `flags`; 0.0 when there are none."""
    return sum(flags) / len(flags) if flags else 0.0


def _labelled(outcomes: Sequence[Outcome], label: str) -> list[Outcome]:
    return [o for o in outcomes if o.case.label == label]


def min_score_point(outcomes: Sequence[Outcome], threshold: float) -> SweepPoint:
    """Objective: balanced accuracy, the mean of coverage (answerable answered correctly, plus
    conflicts presented as conflicts) and abstention recall on unanswerable cases."""
    gated = [gate(o, threshold) for o in outcomes]
    curves = gate_curves(gated)
    must_pass = [o for o in gated if o.case.label != "abstain"]
    passed = sum(o.ok for o in must_pass) / len(must_pass) if must_pass else 0.0
    objective = (passed + curves["abstention_recall"]) / 2
    return SweepPoint(
        threshold=threshold,
        objective=objective,
        curves=curves,
        secondary=(curves["passed_by_gate"] + curves["refused_by_gate_alone"]) / 2,
    )


def sweep(
    points_at: Callable[[float], SweepPoint], thresholds: Sequence[float] = THRESHOLDS
) -> list[SweepPoint]:
    return [points_at(t) for t in thresholds]


def choose(points: Sequence[SweepPoint], *, tolerance: float = 1e-9) -> SweepPoint:
    """The middle of the widest run of consecutive thresholds at the best objective, then the best secondary.

    Points within `tolerance` of the best objective are tied; among them only those with the
    best `secondary` (within 1e-9) stay. The middle of the widest remaining run leaves the
    largest margin on both sides, so a small shift in scores on unseen documents moves the
    outcome least.
    """
    kept = _best(points, tolerance)
    runs: list[list[SweepPoint]] = []
    current: list[SweepPoint] = []
    for point in points:
        if point in kept:
            current.append(point)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    widest = max(runs, key=len)
    return widest[(len(widest) - 1) // 2]


def _best(points: Sequence[SweepPoint], tolerance: float) -> list[SweepPoint]:
    best = max(p.objective for p in points)
    tied = [p for p in points if p.objective >= best - tolerance]
    second = max(p.secondary for p in tied)
    return [p for p in tied if p.secondary >= second - 1e-9]


def plateau(
    points: Sequence[SweepPoint], chosen: SweepPoint, *, tolerance: float = 1e-9
) -> tuple[float, float]:
    """The (low, high) thresholds of the run of best points (as `choose` ranks them) that holds `chosen`."""
    kept = _best(points, tolerance)
    index = next(i for i, p in enumerate(points) if p.threshold == chosen.threshold)
    low = high = index
    while low > 0 and points[low - 1] in kept:
        low -= 1
    while high < len(points) - 1 and points[high + 1] in kept:
        high += 1
    return points[low].threshold, points[high].threshold


def table(points: Sequence[SweepPoint], chosen: SweepPoint, *, every: int = 5) -> str:
    """A Markdown table of every `every`-th threshold plus the chosen one."""
    names = list(points[0].curves) if points else []
    head = "| threshold | " + " | ".join(n.replace("_", " ") for n in names) + " | objective |"
    lines = [head, "|" + " --- |" * (len(names) + 2)]
    for i, point in enumerate(points):
        if i % every and point is not chosen:
            continue
        mark = " **(chosen)**" if point is chosen else ""
        cells = " | ".join(f"{point.curves[n]:.3f}" for n in names)
        lines.append(f"| {point.threshold:.2f}{mark} | {cells} | {point.objective:.3f} |")
    return "\n".join(lines)


def plot(
    points: Sequence[SweepPoint],
    chosen: SweepPoint,
    path: Path,
    *,
    title: str,
    xlabel: str,
    current: float | None = None,
    extra: dict[str, Sequence[tuple[float, float]]] | None = None,
    span: tuple[float, float] | None = None,
) -> Path:
    """Write a PNG of every curve against the threshold, the chosen point marked; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6.2), dpi=110)
    _draw_curves(ax, points, extra or {})
    _mark_choice(ax, chosen, span if span is not None else plateau(points, chosen), current)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("rate")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _draw_curves(
    ax: Any, points: Sequence[SweepPoint], extra: dict[str, Sequence[tuple[float, float]]]
) -> None:
    """Every curve of `points`, their objective (dotted) and the `extra` series (dashed)."""
    xs = [p.threshold for p in points]
    for name in points[0].curves:
        ax.plot(xs, [p.curves[name] for p in points], label=name.replace("_", " "), linewidth=2)
    ax.plot(xs, [p.objective for p in points], label="objective", color="black", linestyle=":", linewidth=1.5)
    for name, series in extra.items():
        ax.plot([x for x, _ in series], [y for _, y in series], label=name, linestyle="--", linewidth=1.2)


def _mark_choice(ax: Any, chosen: SweepPoint, span: tuple[float, float], current: float | None) -> None:
    """The best plateau shaded, the chosen point marked, and the `current` value when it differs."""
    low, high = span
    ax.axvspan(low, high, color="tab:green", alpha=0.12, label=f"best plateau {low:.2f}-{high:.2f}")
    ax.axvline(chosen.threshold, color="tab:green", linewidth=1.5)
    ax.plot([chosen.threshold], [chosen.objective], marker="o", color="tab:green", markersize=8)
    ax.annotate(
        f"chosen {chosen.threshold:.2f}",
        (chosen.threshold, chosen.objective),
        textcoords="offset points",
        xytext=(8, -16),
        color="tab:green",
    )
    if current is not None and abs(current - chosen.threshold) > 1e-9:
        ax.axvline(current, color="grey", linestyle="--", linewidth=1, label=f"previous {current:.2f}")
