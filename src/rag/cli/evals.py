"""`rag eval`: run the golden set, a threshold sweep or an external benchmark, and print its report.

The runs and their JSON reports live in `rag.evals`; this module only chooses and prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from rag.config import Settings
from rag.errors import ConfigError
from rag.evals.calibrate import SweepRun, run_sweep
from rag.evals.external import run_external
from rag.evals.metrics import Outcome, diagnose
from rag.evals.runner import GoldenReport, expected_text, golden_json, problems, run_golden
from rag.serialize import dumps


def run_eval_cli(
    settings: Settings,
    *,
    dataset: str,
    sweep: str | None,
    external: str | None,
    limit: int | None,
    out: str,
    as_json: bool,
    corpus: str | None = None,
    reach: bool = False,
    conversations: str | None = None,
) -> None:
    """The `rag eval` command: golden set by default, `--reach` its evidence reach, `--sweep` a
    threshold, `--external` a benchmark.

    `corpus` (golden runs only) is the directory the set's chunk ids refer to; None: the bundled corpus.
    """
    _check_modes(sweep=sweep, external=external, corpus=corpus, reach=reach)
    if conversations is not None:
        if sweep is not None or external is not None or reach:
            raise ConfigError("--conversations does not combine with --sweep, --external or --reach")
        _conversations_cli(settings, conversations, corpus=corpus, limit=limit, as_json=as_json)
        return
    if reach:
        _reach_cli(settings, dataset, corpus=corpus, limit=limit, as_json=as_json)
        return
    if sweep is not None:
        _sweep_cli(settings, sweep, dataset=dataset, limit=limit, out=out, as_json=as_json)
        return
    if external is not None:
        report = run_external(settings, external, limit=limit)
        click.echo(_json(report) if as_json else external_text(report))
        return
    golden = run_golden(settings, dataset, limit=limit, corpus=corpus)
    click.echo(_json(golden_json(golden)) if as_json else golden_text(golden))


def _check_modes(*, sweep: str | None, external: str | None, corpus: str | None, reach: bool) -> None:
    """`--corpus` and `--reach` measure a golden set: neither combines with `--sweep` or `--external`."""
    other = sweep is not None or external is not None
    if corpus is not None and other:
        raise ConfigError("--corpus applies to golden-set runs only, not to --sweep or --external")
    if reach and other:
        raise ConfigError("--reach measures a golden set; it does not combine with --sweep or --external")


def _reach_cli(
    settings: Settings, dataset: str, *, corpus: str | None, limit: int | None, as_json: bool
) -> None:
    """`rag eval --reach`: the golden set's evidence reach."""
    from rag.evals.reach import run_reach

    found = run_reach(settings, dataset, corpus=corpus, limit=limit)
    click.echo(_json(found.json()) if as_json else reach_text(found.json()))


def _conversations_cli(
    settings: Settings, path: str, *, corpus: str | None, limit: int | None, as_json: bool
) -> None:
    """`rag eval --conversations`: the follow-ups' evidence reach and offline precision."""
    from rag.evals.conversations import run_conversations

    found = run_conversations(settings, path, corpus=corpus, limit=limit).json()
    click.echo(_json(found) if as_json else conversations_text(found))


def conversations_text(report: dict[str, Any]) -> str:
    """The follow-up report as a short table: reach per variant (with the earlier turns, the follow-up
    alone, its self-contained rewrite), overall and per kind, and offline precision when answered."""
    lines = [
        f"follow-ups: {report['set']} ({'; '.join(report['stores'])})",
        f"  conversations {report['conversations']}, follow-ups {report['follow_ups']}"
        f" ({report['answerable_follow_ups']} answerable)",
        f"  first turns reaching Claude {fmt(report['first_turn_reach_claude'])},"
        f" offline {fmt(report['first_turn_reach_offline'])}",
        f"  {'evidence reach':<28} {'with turns':>11} {'alone':>7} {'rewrite':>8}",
    ]
    groups = [("all answerable", report["reach"]), *report["reach_by_kind"].items()]
    for name, reach in groups:
        for reader in ("claude", "offline"):
            cells = [fmt(reach[f"{reader}_{v}"]) for v in ("with", "without", "standalone")]
            lines.append(f"  {name + ' / ' + reader:<28} {cells[0]:>11} {cells[1]:>7} {cells[2]:>8}")
    lines.append(
        f"  offline answered {report['offline_answered']},"
        f" precision when answered {fmt(report['offline_precision_when_answered'])}"
    )
    if report["missed_claude_with_history"]:
        lines.append(
            f"  not sent to Claude with the earlier turns: {', '.join(report['missed_claude_with_history'])}"
        )
    return "\n".join(lines)


def _sweep_cli(
    settings: Settings, sweep: str, *, dataset: str, limit: int | None, out: str, as_json: bool
) -> None:
    """`rag eval --sweep`: a threshold sweep, or (`gate_claude`) the simulated gate in front of Claude."""
    if sweep == "gate_claude":
        from rag.evals.gate_sim import report_markdown, run_gate_sim, write_report

        gate = run_gate_sim(settings)
        md, png = write_report(gate, Path(out))
        click.echo(_json(gate) if as_json else f"{report_markdown(gate)}\nwrote {png} and {md}")
        return
    run = run_sweep(settings, sweep, dataset=dataset, limit=limit, out=Path(out))
    click.echo(_json(run.json()) if as_json else sweep_text(run))


def _json(value: Any) -> str:
    return dumps(value, indent=True).decode()


def fmt(value: Any) -> str:
    """A metric for a table: `n/a` for None, three decimals for floats."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _clip(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def happened_text(o: Outcome) -> str:
    """What the pipeline did on a case, in one line."""
    if o.abstained:
        return f"abstained ({o.reason}), top score {o.top_score:.3f}"
    unsupported = [c for c, ok in zip(o.cited, o.supporting, strict=True) if not ok]
    extra = f"; unsupported citations {', '.join(unsupported)}" if unsupported else ""
    return f"answered {_clip(o.text)!r}, top score {o.top_score:.3f}{extra}"


def golden_text(report: GoldenReport) -> str:
    """The golden run: the set and settings, a metrics table, problems by stage, each wrong outcome."""
    m = report.metrics
    lines = [
        f"golden set: {m['cases']} cases ({m['answerable']} answerable, {m['unanswerable']} unanswerable, "
        f"{m['conflict_cases']} conflict); store: {report.store}",
        f"settings: {', '.join(f'{k}={v}' for k, v in report.settings.items())}",
    ]
    rows = [
        ("answer rate (answerable)", m["answer_rate"]),
        ("correctness (answerable)", m["correctness"]),
        ("correct when answered", m["correct_when_answered"]),
        ("abstention precision", m["abstention_precision"]),
        ("abstention recall", m["abstention_recall"]),
        *((f"  recall on {k}", v) for k, v in m["abstention_recall_by_expected"].items()),
        *(
            (f"  by reason {k} (n={v['count']}) precision", v["precision"])
            for k, v in m["abstention_by_reason"].items()
        ),
        ("conflict detection (conflict cases)", m["conflict_detection"]),
        ("false conflict rate (other cases)", m["false_conflict_rate"]),
        ("citation precision", m["citation_precision"]),
        ("citation recall", m["citation_recall"]),
        ("sentences emitted / dropped", f"{m['sentences_emitted']} / {m['sentences_dropped']}"),
        ("latency p50 / p95 (ms)", f"{fmt(m['latency_ms_p50'])} / {fmt(m['latency_ms_p95'])}"),
        ("overall right outcome", m["overall_ok"]),
    ]
    width = max(len(r[0]) for r in rows)
    lines.append("")
    lines += [f"  {name.ljust(width)}  {fmt(value)}" for name, value in rows]
    wrong: Sequence[Outcome] = problems(report.outcomes)
    if wrong:
        lines.append("\nproblems by stage:")
        lines += [f"  {count:>3}  {stage}" for stage, count in m["problems_by_stage"].items()]
    lines.append(
        f"\n{len(wrong)} wrong outcome(s) or unsupported citations:" if wrong else "\nno wrong outcomes"
    )
    for o in wrong:
        lines += [
            f"- [{o.case.id}] {o.case.question}",
            f"    expected: {expected_text(o.case)}",
            f"    happened: {happened_text(o)}",
            f"    stage:    {diagnose(o)}",
        ]
    return "\n".join(lines)


def sweep_text(run: SweepRun) -> str:
    """The sweep's Markdown table, the recommendation, cross-checks and the files written."""
    result = run.result
    low, high = result["plateau"]
    current = run.current if run.current is not None else "n/a"
    lines = [
        run.md.read_text(encoding="utf-8"),
        f"recommended {run.parameter} = {run.chosen.threshold:.2f} (middle of the best plateau "
        f"{low:.2f}-{high:.2f}; current {current})",
    ]
    lines += [f"{key} cross-check: {result[key]}" for key in ("squad2", "attribution") if result.get(key)]
    lines.append(f"wrote {run.png} and {run.md}")
    return "\n".join(lines)


def external_text(report: dict[str, Any]) -> str:
    """An external benchmark's report as a short table (squad2, attribution, support or conflicts)."""
    name = report["set"]
    if name == "squad2":
        lines = [
            f"squad2: {report['items']} items ({report['answerable']} answerable, "
            f"{report['unanswerable']} unanswerable), one paragraph per corpus"
        ]
        keys = (
            "abstention_precision",
            "abstention_recall",
            "abstention_f1",
            "answer_rate",
            "answer_accuracy",
            "correct_when_answered",
            "cited_when_answered",
            "latency_ms_p50",
            "latency_ms_p95",
        )
        lines += [f"  {key.replace('_', ' '):<24} {fmt(report[key])}" for key in keys]
        lines.append(f"  abstentions by reason   {report['abstentions_by_reason']}")
        return "\n".join(lines)
    if name == "attribution":
        lines = [
            f"attribution: {report['items']} (claim, evidence) pairs, min_overlap={report['min_overlap']}",
            f"  {'group':<24} {'n':>4} {'prec':>6} {'recall':>6} {'f1':>6} {'acc':>6}",
        ]
        groups = {"overall": report["overall"], **report["by_split"], **report["by_source"]}
        lines += [
            f"  {group:<24} {c['n']:>4} {fmt(c['precision']):>6} {fmt(c['recall']):>6} "
            f"{fmt(c['f1']):>6} {fmt(c['accuracy']):>6}"
            for group, c in groups.items()
        ]
        return "\n".join(lines)
    if name == "support":
        lines = [
            f"support: {report['items']} (sentence, cited span) pairs from fixtures/support/claims.jsonl",
            f"  {'split':<10} {'n':>4} {'faithful kept':>14} {'harmful withheld':>17} {'acc':>6}",
        ]
        lines += [
            f"  {split:<10} {c['items']:>4} {fmt(c['faithful_kept']):>14} "
            f"{fmt(c['harmful_withheld']):>17} {fmt(c['accuracy']):>6}"
            for split, c in {"all": report, **report["by_split"]}.items()
        ]
        lines.append(
            "  by kind (all splits): "
            + ", ".join(f"{k} {fmt(v['correct'])}" for k, v in report["by_kind"].items())
        )
        judged = report["to_judge"]
        lines.append(
            f"  undecided by the rules (to the judge with a key): {judged['faithful']} faithful, "
            f"{judged['harmful']} harmful"
        )
        return "\n".join(lines)
    lines = [
        f"conflicts: {report['items']} RAMDocs items",
        f"  flag rate with injected wrong numbers  {fmt(report['with_misinfo']['flag_rate'])} "
        f"(n={report['with_misinfo']['items']})",
        f"  flag rate without                      {fmt(report['without_misinfo']['flag_rate'])} "
        f"(n={report['without_misinfo']['items']})",
        f"  flags naming a misinfo document        {fmt(report['misinfo_side_flagged'])}",
    ]
    lines += [f"    {cell:<30} {fmt(v['flag_rate'])} (n={v['items']})" for cell, v in report["cells"].items()]
    return "\n".join(lines)


def reach_text(report: dict[str, Any]) -> str:
    """The evidence-reach report as a short table."""
    rows = [
        ("answerable questions", report["answerable"]),
        ("passage sent to Claude", fmt(report["reach_claude"])),
        ("  blocks sent per question (mean)", fmt(report["claude_blocks_mean"])),
        ("passage read by the offline reader", fmt(report["offline_read"])),
        ("passage read offline or shown on its refusal", fmt(report["offline_read_or_shown"])),
        ("offline refusals of answerable questions", report["offline_refused"]),
        ("  of which the passage was among the closest", fmt(report["refused_with_passage_shown"])),
    ]
    lines = [f"evidence reach: {report['set']} ({report['store']})"]
    lines += [f"  {label:<50} {value}" for label, value in rows]
    if report["missed_claude"]:
        lines.append(f"  not sent to Claude: {', '.join(report['missed_claude'])}")
    return "\n".join(lines)
