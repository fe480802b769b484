"""Every labelled set's answer labels still point at the passage that holds the answer.

A golden item names its answer's chunk by id, and a chunk id is an ordinal within its document: when
ingestion changes (a code block kept whole, a heading read differently) the ids move and a label can
come to name the neighbouring chunk, so evidence reach is measured against the wrong passage (the
development set over gunicorn, Werkzeug and Jinja2 had five such labels). test_holdout checks the
sets it covers; this checks the others the same way, after a fresh ingest of each corpus: every
labelled chunk exists and one of them holds the item's `expect` text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_holdout import SETS as HOLDOUT_SETS
from tests.test_holdout import ingested_chunks, visible

ROOT = Path(__file__).resolve().parent.parent
COVERED_ELSEWHERE = set(HOLDOUT_SETS)  # test_holdout checks these
SETS = sorted(
    p.parent.name
    for p in (ROOT / "fixtures").glob("*/golden.jsonl")
    if p.parent.name not in COVERED_ELSEWHERE and (p.parent / "corpus").is_dir()
)


def test_the_sets_checked_here_include_the_development_set() -> None:
    assert "devdocs" in SETS


@pytest.mark.parametrize("name", SETS)
def test_answer_labels_name_chunks_that_hold_the_answer(name: str, tmp_path: Path) -> None:
    folder = ROOT / "fixtures" / name
    chunks = ingested_chunks(folder / "corpus", str(tmp_path / "labels.db"))
    wrong: list[str] = []
    for line in (folder / "golden.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["label"] != "answer":
            continue
        texts = [chunks.get(c) for c in item["chunks"]]
        if None in texts or not any(visible(item["expect"]) in visible(t or "") for t in texts):
            wrong.append(item["id"])
    assert not wrong, f"{name}: labels that no longer hold their answer: {wrong}"
