from __future__ import annotations

from pathlib import Path

from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.evals.reach import RecordingReader
from rag.ingest.indexer import ingest_paths
from rag.store import SqliteStore

QUESTION = "Which rooms have a projector?"
ROOMS = ["Aspen", "Birch", "Cedar", "Elm", "Fir", "Hazel", "Larch", "Maple", "Oak", "Pine", "Rowan", "Yew"]


def _store(tmp_path: Path) -> SqliteStore:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ROOMS:
        (docs / f"{name.lower()}.md").write_text(
            f"# The {name} room\n\nThe {name} room has a projector and a whiteboard.\n", encoding="utf-8"
        )
    store = SqliteStore(str(tmp_path / "rag.db"))
    ingest_paths(store, [docs], settings=load_settings(db=str(tmp_path / "rag.db"), mock=True))
    return store


def test_claude_gets_its_own_context_budget_and_the_offline_reader_keeps_its_own(tmp_path: Path) -> None:
    store = _store(tmp_path)
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    assert (settings.max_blocks, settings.claude_max_blocks) == (5, 24)
    recorder = RecordingReader()
    claude = build_pipeline(settings, store=store, generator=recorder)
    claude.answer(QUESTION)
    assert len(recorder.sent) == 1 and len(recorder.sent[0]) == 12  # more than top_k's 8
    offline = build_pipeline(settings, store=store).plan(QUESTION)
    assert offline.refusal is None and len(offline.blocks) == 5
    narrow = build_pipeline(
        settings.model_copy(update={"claude_max_blocks": 3}), store=store, generator=recorder
    )
    assert len(narrow.plan(QUESTION).blocks) == 3
    store.close()
