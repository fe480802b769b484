"""The Claude gate simulation: the calibrated threshold is what the simulation chooses."""

from __future__ import annotations

from pathlib import Path

from rag.answer.gates import GATE_THRESHOLDS
from rag.config import load_settings
from rag.evals.gate_sim import Probe, cache_hits, choose, curve, point, run_gate_sim


def _probe(
    id_: str, *, answerable: bool, top: float, supported: bool = True, callable_: bool = True
) -> Probe:
    return Probe(
        id=id_,
        answerable=answerable,
        top=top,
        callable=callable_,
        supported=supported,
        input_tokens=1000,
        blocks=(id_,),
    )


def test_gate_sim_point_counts_answered_and_wasted_calls() -> None:
    probes = [
        _probe("a", answerable=True, top=0.6),
        _probe("b", answerable=True, top=0.3),
        _probe("c", answerable=True, top=0.5, supported=False),
        _probe("x", answerable=False, top=0.4),
        _probe("y", answerable=False, top=0.9, callable_=False),
    ]
    low = point(probes, 0.25, (2.0, 10.0))
    assert (low.answered, low.calls, low.wasted) == (2, 4, 2)
    assert low.cost_usd > point(probes, 0.45, (2.0, 10.0)).cost_usd > 0
    high = point(probes, 0.45, None)
    assert (high.answered, high.calls, high.wasted, high.cost_usd) == (1, 2, 1, 0.0)


def test_gate_sim_choose_takes_the_highest_threshold_keeping_nearly_every_answer() -> None:
    probes = [_probe(f"a{i}", answerable=True, top=0.3 + i / 100) for i in range(50)]
    probes += [_probe(f"x{i}", answerable=False, top=i / 100) for i in range(50)]
    chosen = choose(curve(probes, None), slack=0.0)
    assert chosen.threshold == 0.3 and chosen.answered == 50


def test_gate_sim_cache_hits_count_identical_consecutive_block_lists() -> None:
    probes = [_probe("a", answerable=True, top=0.5), _probe("a", answerable=True, top=0.5)]
    probes.append(_probe("b", answerable=True, top=0.5))
    assert cache_hits(probes) == 0.5


def test_gate_sim_chooses_the_calibrated_claude_threshold(tmp_path: Path) -> None:
    report = run_gate_sim(load_settings(db=str(tmp_path / "rag.db"), mock=True))
    assert report.chosen.threshold == GATE_THRESHOLDS[("lexical", "claude")]
    held_out = [report.per_set["holdout"], report.per_set["holdout2"]]
    assert sum(p.answered for p in held_out) / sum(p.answerable for p in held_out) >= 0.9


def test_rag_eval_sweep_gate_claude_prints_cost_per_100_questions_and_writes_the_curve(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from rag.cli import main

    result = CliRunner().invoke(main, ["eval", "--sweep", "gate_claude", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Per 100 questions at 0.24" in result.output and "model calls" in result.output
    assert "cache" in result.output
    assert (tmp_path / "gate_claude.png").stat().st_size > 0 and (tmp_path / "gate_claude.md").is_file()
