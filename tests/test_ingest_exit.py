"""`rag ingest` in a newcomer's first hour (issue 28): it says so in its exit status when it ingested nothing
(it exited 0 when every file was skipped), still exits 0 for a run that found its documents unchanged,
and reads a text file written in a legacy encoding, naming the encoding it detected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RAG = Path(sys.executable).parent / "rag"


def _ingest(tmp_path: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(RAG_DB=str(tmp_path / "rag.db"), MOCK="1", RAG_DENSE="off")
    return subprocess.run(
        [str(RAG), "ingest", *map(str, paths)], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_run_where_every_file_is_skipped_exits_4_and_says_why(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.pdf").write_bytes(b"not a pdf at all")
    (docs / "empty.md").write_text("", encoding="utf-8")
    run = _ingest(tmp_path, docs)
    assert run.returncode == 4, run.stderr
    assert "nothing was ingested: every file was skipped" in run.stderr


def test_an_empty_folder_exits_4_and_a_folder_of_unknown_formats_too(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    run = _ingest(tmp_path, docs)
    assert run.returncode == 4, run.stderr
    assert "no file of a known format" in run.stderr
    (docs / "picture.png").write_bytes(b"\x89PNG\r\n")
    run = _ingest(tmp_path, docs)
    assert run.returncode == 4 and "unsupported file type" in run.stderr


def test_an_unchanged_run_still_exits_0(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("# Note\n\nThe archive opens at nine on weekdays.\n", encoding="utf-8")
    assert _ingest(tmp_path, docs).returncode == 0
    again = _ingest(tmp_path, docs)
    assert again.returncode == 0, again.stderr
    assert "1 unchanged" in again.stdout


def test_a_latin_1_text_file_is_read_and_its_encoding_reported(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    text = "Caf\u00e9 rules\n\nThe caf\u00e9 serves cr\u00e8me br\u00fbl\u00e9e until 18:00 on weekdays.\n"
    (docs / "cafe.txt").write_bytes(text.encode("latin-1"))
    run = _ingest(tmp_path, docs)
    assert run.returncode == 0, run.stderr
    assert "1 added" in run.stdout and "as cp1252 (not UTF-8)" in run.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(RAG_DB=str(tmp_path / "rag.db"), MOCK="1", RAG_DENSE="off")
    shown = subprocess.run(
        [str(RAG), "chunk", "cafe#c00"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "cr\u00e8me br\u00fbl\u00e9e" in shown.stdout
