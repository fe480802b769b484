"""Claude's context holds the chunks next to the top chunk in its document (`claude_neighbours`); the
offline reader's never does, and no neighbour comes from a document the asker may not read."""

from __future__ import annotations

from pathlib import Path

from stored import put_paragraphs

from rag.access import Principal
from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.evals.reach import RecordingReader
from rag.store import SqliteStore

QUESTION = "How often is the harbour tide gauge calibrated?"
GUIDE = [
    "Boats moor at the east quay from April to October.",
    "The harbour tide gauge is calibrated by the port engineer.",
    "This happens every quarter, and after any storm surge.",
    "Visitors pay their mooring fees at the office.",
]
VAULT = [
    "Salary bands are reviewed each spring.",
    "The harbour tide gauge calibrated readings calibrated gauge tide harbour.",
    "Bonus rules for the port engineer are confidential.",
]


def _store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(str(tmp_path / "rag.db"))
    put_paragraphs(store, "guide", GUIDE)
    put_paragraphs(store, "vault", VAULT, access=("hr",))
    return store


def _sent(tmp_path: Path, store: SqliteStore, principal: Principal | None = None, **update: int) -> list[str]:
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off").model_copy(update=update)
    recorder = RecordingReader()
    build_pipeline(settings, store=store, generator=recorder).answer(QUESTION, principal=principal)
    assert len(recorder.sent) == 1
    return [b.chunk.chunk_id for b in recorder.sent[0]]


def test_claude_gets_the_chunk_after_the_top_one_and_the_offline_reader_does_not(tmp_path: Path) -> None:
    store = _store(tmp_path)
    staff = Principal(name="sam", groups=frozenset({"staff"}))
    sent = _sent(tmp_path, store, staff)
    assert sent[0] == "guide#c01"  # the top chunk
    assert "guide#c02" in sent and "guide#c00" in sent  # its neighbours, though they share no term
    assert "guide#c03" not in sent  # two positions away
    assert "guide#c02" not in _sent(tmp_path, store, staff, claude_neighbours=0)
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    offline = build_pipeline(settings, store=store).plan(QUESTION, principal=staff)
    assert "guide#c02" not in [b.chunk.chunk_id for b in offline.blocks]
    store.close()


def test_no_neighbour_comes_from_a_document_the_asker_may_not_read(tmp_path: Path) -> None:
    store = _store(tmp_path)
    hr = Principal(name="ann", groups=frozenset({"hr"}))
    sent = _sent(tmp_path, store, hr)
    assert sent[0] == "vault#c01" and {"vault#c00", "vault#c02"} <= set(sent)  # hr reads the vault
    staff = _sent(tmp_path, store, Principal(name="sam", groups=frozenset({"staff"})))
    assert not [cid for cid in staff if cid.startswith("vault")]
    store.close()


def test_neighbours_come_on_top_of_the_budget_the_ranked_chunks_fill(tmp_path: Path) -> None:
    store = _store(tmp_path)
    staff = Principal(name="sam", groups=frozenset({"staff"}))
    for budget, most in ((60, 2), (2000, 1)):  # the budget or the block cap fills with ranked chunks
        ranked = _sent(
            tmp_path, store, staff, claude_neighbours=0, claude_budget=budget, claude_max_blocks=most
        )
        both = _sent(tmp_path, store, staff, claude_budget=budget, claude_max_blocks=most)
        assert set(ranked) < set(both), (budget, ranked, both)  # nothing ranked makes way
        assert "guide#c02" in both
    store.close()
