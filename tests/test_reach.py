"""`rag eval --reach`: whether the passage that answers a question gets to the reader."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rag.cli import main
from rag.config import load_settings
from rag.evals.reach import run_reach

TRASH = "Deleted projects stay in the trash for 30 days before they are purged for good.\n"
BACKUP = "Nightly backups run at 02:00 UTC and are kept for 35 days in two regions.\n"


def _set(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "trash.md").write_text("# Trash\n\n" + TRASH)
    (corpus / "backups.md").write_text("# Backups\n\n" + BACKUP)
    rows = [
        {"id": "a1", "question": "How long do deleted projects stay in the trash?", "label": "answer",
         "chunks": ["trash#c00"], "expect": "30 days"},
        # labelled on the wrong passage: the right chunk reaches the reader, the labelled one does not
        {"id": "a2", "question": "When do nightly backups run?", "label": "answer",
         "chunks": ["trash#c00"], "expect": "02:00"},
        {"id": "a3", "question": "What is the capital of Australia?", "label": "answer",
         "chunks": ["backups#c00"], "expect": "Canberra"},
        {"id": "x1", "question": "Who founded the company?", "label": "abstain", "kind": "far"},
    ]  # fmt: skip
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return golden, corpus


def test_reach_counts_only_answerable_questions_whose_labelled_passage_is_sent(tmp_path: Path) -> None:
    golden, corpus = _set(tmp_path)
    report = run_reach(load_settings(db=str(tmp_path / "x.db"), mock=True), golden, corpus=corpus)
    by_id = {c.id: c for c in report.cases}
    assert sorted(by_id) == ["a1", "a2", "a3"]
    assert by_id["a1"].to_claude and by_id["a1"].claude_blocks >= 1
    assert not by_id["a2"].to_claude  # another passage was sent, not the labelled one
    assert not by_id["a3"].to_claude and by_id["a3"].claude_refusal == "low_retrieval_score"
    assert report.json()["reach_claude"] == 1 / 3


def test_reach_offline_counts_the_closest_passages_of_a_refusal(tmp_path: Path) -> None:
    golden, corpus = _set(tmp_path)
    report = run_reach(load_settings(db=str(tmp_path / "x.db"), mock=True), golden, corpus=corpus)
    first = next(c for c in report.cases if c.id == "a1")
    assert first.offline_read and first.offline_shown and not first.offline_refused
    third = next(c for c in report.cases if c.id == "a3")
    assert third.offline_refused and not third.offline_read


def test_rag_eval_reach_prints_the_shares(tmp_path: Path) -> None:
    golden, corpus = _set(tmp_path)
    result = CliRunner().invoke(main, ["eval", "--reach", "--set", str(golden), "--corpus", str(corpus)])
    assert result.exit_code == 0, result.output
    assert "passage sent to Claude" in result.output and "0.333" in result.output
    assert "not sent to Claude: a2, a3" in result.output
