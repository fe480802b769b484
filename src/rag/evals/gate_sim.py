"""Where to put the retrieval gate in front of Claude: an offline simulation of the reader.

The simulated reader answers, with a valid native citation, exactly when a labelled supporting
chunk is among the blocks it is sent, and refuses otherwise. For every question of a labelled
set the front half runs once with the gate open (`Pipeline.plan` at threshold 0, the far-off-topic
floor and the conflict line still apply), recording the top score, whether a model call would
happen and whether a supporting chunk is among the blocks. Each threshold then gives, without
running anything again: the share of answerable questions that reach the reader and get answered,
the calls spent on questions the reader cannot answer, and the estimated tokens and cost of all
calls. The threshold chosen is the highest whose answered share is within `RECALL_SLACK` of the
best (it keeps nearly every answerable question and spends the fewest calls doing so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.answer.assemble import context_tokens
from rag.answer.pipeline import build_pipeline
from rag.answer.prompt import SYSTEM_PROMPT
from rag.config import Settings
from rag.evals.datasets import GoldenCase, load_golden, repo_root
from rag.evals.runner import corpus_store
from rag.language.text import estimate_tokens
from rag.store import Store

# The chosen threshold keeps at least this share of the best answered share over all thresholds.
RECALL_SLACK = 0.01
THRESHOLDS: tuple[float, ...] = tuple(round(i / 100, 2) for i in range(0, 76))
# Tokens the simulated reader writes: a short cited answer, or the one-line refusal.
ANSWER_TOKENS = 120
REFUSAL_TOKENS = 15
# Claude's tokenizer counts about this many tokens per local estimate (rag.language.text.estimate_tokens is
# 4 characters per token; current models average about 2.5, anthropic-wire.md 8).
TOKENIZER_RATIO = 1.6


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """One question with the gate open: what a threshold needs to decide its fate."""

    id: str
    answerable: bool
    top: float
    callable: bool  # passes the floor and the conflict line: a call happens when top >= threshold
    supported: bool  # a labelled supporting chunk is among the blocks sent
    input_tokens: int
    blocks: tuple[str, ...]  # chunk ids in the order sent (the cacheable prefix)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePoint:
    threshold: float
    questions: int
    answerable: int
    answered: int  # answerable questions that reached the reader with a supporting chunk
    calls: int
    wasted: int  # calls on questions the reader could not answer
    input_tokens: int
    output_tokens: int
    cost_usd: float

    @property
    def answered_share(self) -> float:
        return self.answered / self.answerable if self.answerable else 0.0

    def per_100(self, value: float) -> float:
        return round(100 * value / self.questions, 3) if self.questions else 0.0


def probe_cases(settings: Settings, cases: Sequence[GoldenCase], store: Store) -> list[Probe]:
    """Each case's front half with the gate open (threshold 0) over `store`."""
    pipeline = build_pipeline(settings, store=store)
    pipeline.min_score = 0.0
    system = estimate_tokens(SYSTEM_PROMPT)
    probes = []
    for case in cases:
        plan = pipeline.plan(case.question)
        sent = tuple(b.chunk.chunk_id for b in plan.blocks)
        tokens = system + context_tokens(plan.blocks) + estimate_tokens(case.question)
        probes.append(
            Probe(
                id=case.id,
                answerable=case.label == "answer",
                top=plan.top,
                callable=plan.refusal is None,
                supported=bool(set(case.chunks) & set(sent)),
                input_tokens=round(tokens * TOKENIZER_RATIO),
                blocks=sent,
            )
        )
    return probes


def point(probes: Sequence[Probe], threshold: float, price: tuple[float, float] | None) -> GatePoint:
    """The simulated outcome of gating `probes` at `threshold`."""
    called = [p for p in probes if p.callable and p.top >= threshold]
    answered = [p for p in called if p.answerable and p.supported]
    input_tokens = sum(p.input_tokens for p in called)
    output_tokens = len(answered) * ANSWER_TOKENS + (len(called) - len(answered)) * REFUSAL_TOKENS
    input_price, output_price = price or (0.0, 0.0)
    return GatePoint(
        threshold=threshold,
        questions=len(probes),
        answerable=sum(p.answerable for p in probes),
        answered=len(answered),
        calls=len(called),
        wasted=len(called) - len(answered),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=(input_tokens * input_price + output_tokens * output_price) / 1_000_000,
    )


def curve(
    probes: Sequence[Probe], price: tuple[float, float] | None, thresholds: Sequence[float] = THRESHOLDS
) -> list[GatePoint]:
    return [point(probes, t, price) for t in thresholds]


def choose(points: Sequence[GatePoint], slack: float = RECALL_SLACK) -> GatePoint:
    """The highest threshold whose answered share is within `slack` of the best share."""
    best = max(p.answered_share for p in points)
    eligible = [p for p in points if p.answered_share >= best - slack]
    return max(eligible, key=lambda p: p.threshold)


def cache_hits(probes: Sequence[Probe]) -> float:
    """Share of consecutive called questions whose blocks are the same as the previous one's, in the
    same order: the only case where a cached prompt prefix (cache_control on the last document)
    can be reused."""
    sent = [p.blocks for p in probes if p.callable and p.blocks]
    pairs = list(zip(sent, sent[1:], strict=False))
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else 0.0


def table(points: Sequence[GatePoint], chosen: GatePoint, *, every: int = 5) -> str:
    """A Markdown table of the curve (every `every`-th threshold and the chosen one)."""
    lines = [
        "| threshold | answered (answerable) | calls /100 q | wasted calls /100 q | cost /100 q (USD) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for i, p in enumerate(points):
        if i % every and p is not chosen:
            continue
        mark = " **chosen**" if p is chosen else ""
        lines.append(
            f"| {p.threshold:.2f}{mark} | {p.answered}/{p.answerable} ({p.answered_share:.3f}) "
            f"| {p.per_100(p.calls)} | {p.per_100(p.wasted)} | {p.per_100(p.cost_usd):.4f} |"
        )
    return "\n".join(lines)


def plot(points: Sequence[GatePoint], chosen: GatePoint, path: Path) -> None:
    """The cost curve: answered share and wasted calls per 100 questions against the threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p.threshold for p in points]
    fig, left = plt.subplots(figsize=(7, 4))
    left.plot(xs, [p.answered_share for p in points], label="answerable questions answered")
    left.set_xlabel("retrieval gate threshold (lexical reranker score)")
    left.set_ylabel("share answered")
    left.set_ylim(0, 1.02)
    right = left.twinx()
    right.plot(xs, [p.per_100(p.wasted) for p in points], color="tab:red", label="wasted calls / 100 q")
    right.set_ylabel("wasted calls per 100 questions")
    left.axvline(chosen.threshold, color="grey", linestyle="--")
    fig.legend(loc="lower left", bbox_to_anchor=(0.1, 0.15))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# The labelled sets the simulation pools: (name, questions, corpus), relative to the checkout.
SETS: tuple[tuple[str, str, str], ...] = (
    ("golden", "fixtures/eval/golden.jsonl", "fixtures/corpus"),
    ("holdout", "fixtures/holdout/golden.jsonl", "fixtures/holdout/corpus"),
    ("holdout2", "fixtures/holdout2/golden.jsonl", "fixtures/holdout2/corpus"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GateReport:
    points: tuple[GatePoint, ...]
    chosen: GatePoint
    per_set: dict[str, GatePoint]  # each set at the chosen threshold
    cache_hit_rate: float
    model: str


def run_gate_sim(settings: Settings, sets: Sequence[tuple[str, str, str]] = SETS) -> GateReport:
    """Probe every set (each in a fresh store of its corpus), pool the probes, choose the threshold."""
    root = repo_root()
    by_set: dict[str, list[Probe]] = {}
    for name, questions, corpus in sets:
        cases = load_golden(root / questions)
        with corpus_store(settings, cases, corpus=root / corpus) as (store, _):
            by_set[name] = probe_cases(settings, cases, store)
    price = settings.model_prices.get(settings.generation_model)
    pooled = [p for probes in by_set.values() for p in probes]
    points = curve(pooled, price)
    chosen = choose(points)
    return GateReport(
        points=tuple(points),
        chosen=chosen,
        per_set={name: point(probes, chosen.threshold, price) for name, probes in by_set.items()},
        cache_hit_rate=cache_hits(pooled),
        model=settings.generation_model,
    )


def report_markdown(report: GateReport) -> str:
    """The simulation as Markdown: the curve, each set at the chosen threshold, calls, tokens and cost
    per 100 questions, and how often a cached prompt prefix could be reused."""
    chosen = report.chosen
    lines = [
        "# Retrieval gate in front of Claude: simulated reader",
        "",
        f"Model priced: {report.model}. Pooled over {', '.join(report.per_set)} "
        f"({chosen.questions} questions, {chosen.answerable} answerable).",
        "",
        table(report.points, chosen),
        "",
        "At the chosen threshold, per set:",
        "",
        "| set | answered | calls | wasted calls |",
        "| --- | --- | --- | --- |",
        *(
            f"| {name} | {p.answered}/{p.answerable} | {p.calls}/{p.questions} | {p.wasted} |"
            for name, p in report.per_set.items()
        ),
        "",
        f"Per 100 questions at {chosen.threshold:.2f}: {chosen.per_100(chosen.calls)} model calls, "
        f"{chosen.per_100(chosen.input_tokens):.0f} input and {chosen.per_100(chosen.output_tokens):.0f} "
        f"output tokens (estimated), ${chosen.per_100(chosen.cost_usd):.4f}.",
        f"Consecutive called questions sending identical blocks (a reusable cached prefix, so cache "
        f"reads): {report.cache_hit_rate:.3f}.",
    ]
    return "\n".join(lines) + "\n"


def write_report(report: GateReport, out: Path) -> tuple[Path, Path]:
    """Write `gate_claude.md` and the cost curve `gate_claude.png` into `out`; returns both paths."""
    out.mkdir(parents=True, exist_ok=True)
    md, png = out / "gate_claude.md", out / "gate_claude.png"
    md.write_text(report_markdown(report), encoding="utf-8")
    plot(list(report.points), report.chosen, png)
    return md, png
