"""Floors of the offline path on real documentation (issue 13 item 5): fixtures/holdout3 (Flask and
Click docs) and fixtures/holdout4 (Celery and attrs docs) through the whole offline pipeline. Both
sets were tuned on, so these guard the figures recorded in docs/eval.md against regressions; they
are not the unseen-set target."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_settings
from rag.evals.runner import GoldenReport, run_golden

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "fixtures" / "holdout3"
SET4 = ROOT / "fixtures" / "holdout4"


def _run(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> GoldenReport:
    """The set in `folder` run offline over its own corpus, in a fresh store."""
    tmp = tmp_path_factory.mktemp(folder.name)
    settings = load_settings(db=str(tmp / "rag.db"), mock=True, anthropic_api_key="", voyage_api_key="")
    return run_golden(settings, folder / "golden.jsonl", corpus=folder / "corpus")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> GoldenReport:
    return _run(tmp_path_factory, SET)


def test_holdout3_answers_are_right_when_given(report: GoldenReport) -> None:
    assert report.metrics["correct_when_answered"] >= 0.90
    assert report.metrics["citation_precision"] >= 0.90


def test_holdout3_answers_at_least_the_recorded_share_correctly(report: GoldenReport) -> None:
    # 12 of 34 recorded after round 3 (subject binding); one question of slack
    # issue 28 drops the coverage target for precision: 12/34 before, 10/34 after (precision 1.0 both)
    assert report.metrics["correctness"] >= 10 / 34 - 1e-9


def test_holdout3_near_misses_stay_refused(report: GoldenReport) -> None:
    assert report.metrics["abstention_recall_by_expected"]["abstain/near"] >= 0.90


@pytest.fixture(scope="module")
def report4(tmp_path_factory: pytest.TempPathFactory) -> GoldenReport:
    return _run(tmp_path_factory, SET4)


def test_holdout4_answers_are_right_when_given(report4: GoldenReport) -> None:
    # 26 of 27 answered right after round 3 (subject binding): a value of the asked kind about the
    # asked subject; 0.76 before it
    assert report4.metrics["correct_when_answered"] >= 0.90


def test_holdout4_answers_at_least_the_recorded_share_correctly(report4: GoldenReport) -> None:
    # 26 of 52 recorded after round 3; one question of slack
    # issue 28 drops the coverage target for precision: 27/52 before, 24/52 after (precision 0.96)
    assert report4.metrics["correctness"] >= 24 / 52 - 1e-9
    assert report4.metrics["abstention_recall_by_expected"]["abstain/near"] >= 0.90
