"""The verifier on the labelled support set (fixtures/support/claims.jsonl), with floors.

Floors sit just under the figures measured when the checks were calibrated on the dev split (see
docs/eval.md); a change that loses faithful sentences or lets harmful edits through fails here.
"""

import os

import pytest

from rag.config import load_settings
from rag.evals.datasets import EXTERNAL_FILES, external_dir, load_attribution, load_support, repo_root
from rag.evals.external import run_attribution
from rag.evals.support import judge_case, outcomes_for, run_support, support_metrics
from rag.language.tools import installed


@pytest.fixture(scope="module")
def report() -> dict[str, object]:
    return run_support(min_overlap=0.42)


def test_support_set_loads_both_splits_and_labels() -> None:
    cases = load_support()
    assert len(cases) >= 600
    assert {c.split for c in cases} == {"dev", "test"}
    assert {c.label for c in cases} == {"faithful", "harmful"}


def test_support_dev_split_floors() -> None:
    metrics = support_metrics(outcomes_for("dev", min_overlap=0.42))
    wordnet, parser = installed().wordnet, installed().parser
    if wordnet is not None and parser is not None:  # with the parser's frames too (the `parse` extra)
        assert metrics["faithful_kept"] >= 0.90
        assert metrics["harmful_withheld"] >= 0.76
    elif wordnet is not None:  # the alignment through WordNet (the `lexical` extra)
        assert metrics["faithful_kept"] >= 0.89
        assert metrics["harmful_withheld"] >= 0.70
    else:  # stems alone
        assert metrics["faithful_kept"] >= 0.93
        assert metrics["harmful_withheld"] >= 0.55


def test_support_report_has_both_splits_and_every_kind(report: dict[str, object]) -> None:
    by_split = report["by_split"]
    assert isinstance(by_split, dict) and set(by_split) == {"dev", "test"}
    by_kind = report["by_kind"]
    assert isinstance(by_kind, dict) and {"figure", "negation", "lead_in", "swap"} <= set(by_kind)
    assert report["items"] == sum(split["items"] for split in by_split.values())


def test_support_figure_edits_are_withheld_in_both_splits(report: dict[str, object]) -> None:
    by_kind = report["by_kind"]
    assert isinstance(by_kind, dict)
    assert by_kind["figure"]["correct"] >= 0.85
    assert by_kind["verbatim"]["correct"] >= 0.95


def test_support_a_faithful_lead_in_case_is_kept() -> None:
    case = next(c for c in load_support() if c.kind == "lead_in" and c.split == "dev")
    outcome = judge_case(case, min_overlap=0.42, corpus=str(repo_root() / "fixtures/corpus"))
    assert outcome.kept, outcome.issues


_ATTRIBUTION = external_dir(os.environ.get("RAG_EVAL_EXTERNAL_DIR", "")) / EXTERNAL_FILES["attribution"]


@pytest.mark.skipif(not _ATTRIBUTION.is_file(), reason="shared/eval-external is not present")
def test_attribution_bench_accuracy_stays_at_or_above_its_floor() -> None:
    cases = load_attribution(_ATTRIBUTION.parent)
    report = run_attribution(load_settings(mock=True, anthropic_api_key="", voyage_api_key=""), cases)
    assert report["overall"]["accuracy"] >= 0.70
