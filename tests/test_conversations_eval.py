"""`rag eval --conversations`: follow-ups' evidence reach with and without the earlier turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag.cli import main
from rag.config import load_settings
from rag.errors import ConfigError
from rag.evals.conversations import corpus_dir, load_conversations, run_conversations

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "eval" / "conversations-sample.jsonl"


def test_conversations_follow_ups_reach_with_the_earlier_turns_and_precision_counts_answers(
    tmp_path: Path,
) -> None:
    report = run_conversations(load_settings(db=str(tmp_path / "x.db"), mock=True), SAMPLE).json()
    assert (report["conversations"], report["follow_ups"], report["answerable_follow_ups"]) == (3, 3, 2)
    assert report["first_turn_reach_claude"] == 1.0
    reach = report["reach"]
    # the elliptical "Who can restore them?" alone does not show its passage offline; with the turns it does
    assert reach["offline_with"] == 1.0 and reach["offline_without"] == 0.5
    assert reach["claude_with"] == 1.0 and reach["claude_standalone"] == 1.0
    assert report["searched_for"]["s002/2"] == "Who can restore them (deleted projects stay)?"
    # the unanswerable follow-up is refused, so it adds no wrong answer
    assert report["offline_answered"] >= 1 and report["offline_precision_when_answered"] == 1.0


def test_conversations_read_a_prepared_store_of_a_corpus_instead_of_ingesting_it(
    tmp_path: Path, corpus_db: str
) -> None:
    # a store already holding the corpus (embedded once, say) is read through a copy, left unchanged
    settings = load_settings(db=str(tmp_path / "x.db"), mock=True)
    prepared = {corpus_dir("corpus"): Path(corpus_db)}
    before = Path(corpus_db).stat().st_size
    report = run_conversations(settings, SAMPLE, prepared=prepared).json()
    assert report["stores"] == [f"copy of {corpus_db}"]
    assert report["reach"]["offline_with"] == 1.0
    assert Path(corpus_db).stat().st_size == before


def test_rag_eval_conversations_prints_the_table() -> None:
    result = CliRunner().invoke(main, ["eval", "--conversations", str(SAMPLE)])
    assert result.exit_code == 0, result.output
    assert "with turns" in result.output and "all answerable / offline" in result.output


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({"id": "c1", "turns": []}, "non-empty list of turns"),
        ({"id": "c1", "turns": [{"question": "Q?", "label": "maybe"}]}, "turn 1: needs a question"),
        ({"id": "c1", "turns": [{"question": "Q?", "label": "answer"}]}, "an answer turn needs chunks"),
        (
            {"id": "c1", "turns": [{"question": "Q?", "label": "unanswerable", "kind": "vague"}]},
            "kind 'vague' is not one of",
        ),
    ],
)
def test_load_conversations_names_the_line_of_a_bad_row(tmp_path: Path, row: dict, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ConfigError, match=needle) as caught:
        load_conversations(path)
    assert f"{path}:1" in str(caught.value)
