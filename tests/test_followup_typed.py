"""A follow-up read as elliptical that says words of its own is also searched as typed, for Claude
(`Plan.typed`): a topic switch misread as referring back still sends its own passage, on top of the
context budget, so the standalone question's chunks keep their places."""

from __future__ import annotations

from pathlib import Path

from stored import put_paragraphs

from rag.access import Principal
from rag.answer.pipeline import build_pipeline
from rag.config import load_settings
from rag.evals.reach import RecordingReader
from rag.store import SqliteStore
from rag.types import Turn

EARLIER = "How many books can library members borrow at a time?"
# read as elliptical (a bare phrase for the members), with three words of its own
SWITCH = "and the chess club members?"
LIBRARY = [
    "The library opens at 10:00 on Sundays and closes at 16:00.",
    "On Sundays the library's chess room opens at 10:00 for visitors.",
    "Library members may borrow ten books at a time.",
]
CLUBS = ["The chess club meetings are held in the east hall every Thursday evening."]
PRIVATE = ["Staff chess club meetings are held in the board room (staff only)."]


def _sent(tmp_path: Path, principal: Principal | None = None, **update: int) -> list[str]:
    store = SqliteStore(str(tmp_path / "rag.db"))
    put_paragraphs(store, "library", LIBRARY)
    put_paragraphs(store, "clubs", CLUBS)
    put_paragraphs(store, "staff", PRIVATE, access=("staff",))
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off").model_copy(update=update)
    recorder = RecordingReader()
    pipeline = build_pipeline(settings, store=store, generator=recorder)
    pipeline.answer(SWITCH, history=(Turn(question=EARLIER, answer=""),), principal=principal)
    store.close()
    return [b.chunk.chunk_id for call in recorder.sent for b in call]


def test_a_follow_up_with_words_of_its_own_also_sends_its_passage_as_typed(tmp_path: Path) -> None:
    reader = Principal(name="ann", groups=frozenset({"public"}))
    sent = _sent(tmp_path, reader, claude_max_blocks=1, claude_neighbours=0)
    assert "library#c02" in sent, sent  # the standalone question's top chunk keeps its one block
    assert "clubs#c00" in sent, sent  # the follow-up's own passage as typed comes on top of it
    assert not [c for c in sent if c.startswith("staff")]  # searched as typed under the same groups


def test_the_offline_reader_reads_no_typed_search(tmp_path: Path) -> None:
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    store = SqliteStore(str(tmp_path / "rag.db"))
    put_paragraphs(store, "library", LIBRARY)
    put_paragraphs(store, "clubs", CLUBS)
    plan = build_pipeline(settings, store=store).plan(SWITCH, history=(Turn(question=EARLIER, answer=""),))
    assert plan.typed == ()
    store.close()


def test_offline_a_refusal_also_shows_the_follow_up_s_own_passage_as_typed(tmp_path: Path) -> None:
    settings = load_settings(db=str(tmp_path / "rag.db"), mock=True, dense="off")
    store = SqliteStore(str(tmp_path / "rag.db"))
    startup = [
        f"An interactive shell reads the startup file number {n} when it starts." for n in range(2, 14)
    ]
    put_paragraphs(store, "startup", startup)
    put_paragraphs(store, "login", ["A login session without a terminal reads the profile file once."])
    put_paragraphs(
        store, "staff", ["A login shell of the staff servers reads the audit file."], access=("staff",)
    )
    reader = Principal(name="ann", groups=frozenset({"public"}))
    pipeline = build_pipeline(settings, store=store)
    earlier = (Turn(question="Which startup file does an interactive shell read?", answer=""),)
    plan = pipeline.plan(
        "what about an interactive shell that is not a login one?", history=earlier, principal=reader
    )
    assert "login" not in plan.question.lower()  # the standalone question lost the follow-up's own word
    alone = [r.chunk_id for r in pipeline.plan(plan.question, principal=reader).closest]
    shown = [r.chunk_id for r in plan.closest]
    assert shown[: len(alone)] == alone  # the standalone question's closest passages keep their places
    assert shown[len(alone) :] == ["login#c00"]  # then the follow-up's own passage, under the same groups
    store.close()
