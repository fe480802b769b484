"""The answer core: both routes run it, so /ask and /ask/stream must show the same sentences."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answer.core import Core, Session, carries_claim, fold, is_structure, joined_text, run
from rag.answer.events import DroppedEvent, Event, RefusalEvent, SentenceEvent
from rag.answer.parse import SentenceBuffer
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.language.text import sentence_spans
from rag.store.sqlite import SqliteStore
from rag.types import Answer, Block, Claim, Draft, Generation, Piece, Sentence

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
QUESTION = "How long do deleted projects stay in the trash?"
UNSUPPORTED = (
    "The office cafeteria serves breakfast from 7 am.",
    "Every employee receives a company car after ninety days.",
    "Quarterly reports are due on the first Monday.",
)


@cache
def _store_path() -> str:
    path = str(Path(tempfile.mkdtemp(prefix="core-")) / "corpus.db")
    store = SqliteStore(path)
    try:
        ingest_paths(store, [str(CORPUS)], settings=load_settings(db=path, mock=True))
    finally:
        store.close()
    return path


@dataclass(frozen=True)
class Segment:
    """One sentence of a scripted reply: from block `block` (or unsupported), cited as `cite`."""

    block: int  # index into the issued blocks; -1: an unsupported sentence
    pick: int  # which sentence of that block (modulo), or which unsupported sentence
    cite: str  # "own": the block it came from; "other": the next block; "none"; "nonexistent"
    cited_span: bool  # native: claim the block sentence as cited_text (else a span the chunk lacks)


def _sentence(blocks: Sequence[Block], seg: Segment) -> str:
    if seg.block < 0 or not blocks:
        return UNSUPPORTED[seg.pick % len(UNSUPPORTED)]
    text = blocks[seg.block % len(blocks)].chunk.text
    spans = sentence_spans(text) or [(0, len(text))]
    start, end = spans[seg.pick % len(spans)]
    return " ".join(text[start:end].split())


def _number(blocks: Sequence[Block], seg: Segment) -> int:
    """The block number the segment cites (0: no citation)."""
    if seg.cite == "none":
        return 0
    if seg.cite == "nonexistent" or not blocks:
        return len(blocks) + 3
    own = seg.block % len(blocks) if seg.block >= 0 else seg.pick % len(blocks)
    return own + 1 if seg.cite == "own" else (own + 1) % len(blocks) + 1


def _split(text: str, cuts: Sequence[float]) -> list[str]:
    points = sorted({int(c * len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


class ScriptedGenerator:
    """Writes the same reply for generate() and stream(); the stream is cut at arbitrary points
    (mid-word, inside a `[n]` marker, across sentence ends)."""

    name = "scripted"

    def __init__(self, segments: Sequence[Segment], cuts: Sequence[float], *, native: bool) -> None:
        self.segments = segments
        self.cuts = cuts
        self.native_citations = native

    def _inline(self, blocks: Sequence[Block]) -> str:
        parts = []
        for seg in self.segments:
            sentence = _sentence(blocks, seg).rstrip(".")
            n = _number(blocks, seg)
            marker = f" [{n}]" if n else ""
            parts.append(f"{sentence}{marker}.")
        return " ".join(parts)

    def _native_blocks(self, blocks: Sequence[Block]) -> list[tuple[str, tuple[Claim, ...]]]:
        out = []
        for seg in self.segments:
            sentence = _sentence(blocks, seg)
            span = sentence if seg.cited_span else "A span that no chunk contains."
            n = _number(blocks, seg)
            claims = (Claim(n=n, cited_text=span),) if n else ()
            out.append((sentence.rstrip("."), claims))
            out.append((". ", ()))
        return out

    def _whole(self, blocks: Sequence[Block]) -> tuple[Piece, ...]:
        if not self.native_citations:
            return (Piece(text=self._inline(blocks)),)
        pieces: list[Piece] = []
        for index, (text, claims) in enumerate(self._native_blocks(blocks)):
            if claims:
                pieces.append(Piece(index=index, claims=claims))
            pieces.extend([Piece(index=index, text=text), Piece(index=index + 1)])
        return tuple(pieces)

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        return Generation(drafts=(), pieces=self._whole(blocks))

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        if not self.native_citations:
            for part in _split(self._inline(blocks), self.cuts):
                yield Piece(text=part)
            return
        for index, (text, claims) in enumerate(self._native_blocks(blocks)):
            if claims:
                yield Piece(index=index, claims=claims)
            for part in _split(text, self.cuts):
                yield Piece(index=index, text=part)
            yield Piece(index=index + 1)


segments = st.lists(
    st.builds(
        Segment,
        block=st.integers(min_value=-1, max_value=4),
        pick=st.integers(min_value=0, max_value=6),
        cite=st.sampled_from(["own", "own", "other", "none", "nonexistent"]),
        cited_span=st.booleans(),
    ),
    min_size=1,
    max_size=5,
)
cuts = st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=12)


def _routes(generator: ScriptedGenerator) -> tuple[Answer, list[Event]]:
    path = _store_path()
    pipeline: Pipeline = build_pipeline(load_settings(db=path, mock=True), generator=generator)
    try:

        async def collect() -> list[Event]:
            return [event async for event in pipeline.answer_stream(QUESTION)]

        return pipeline.answer(QUESTION), anyio.run(collect)
    finally:
        pipeline.store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=segments, cuts=cuts, native=st.booleans())
def test_core_stream_and_answer_show_the_same_sentences(
    segments: list[Segment], cuts: list[float], native: bool
) -> None:
    answer, events = _routes(ScriptedGenerator(segments, cuts, native=native))
    streamed = [e.sentence for e in events if isinstance(e, SentenceEvent)]
    refusals = [e.reason for e in events if isinstance(e, RefusalEvent)]
    assert [(s.text, s.citations) for s in streamed] == [(s.text, s.citations) for s in answer.sentences]
    assert (refusals[0] if refusals else "") == answer.reason


def test_core_refund_question_agrees_on_both_routes() -> None:
    path = _store_path()
    pipeline = build_pipeline(load_settings(db=path, mock=True))
    question = "Are refunds available at any time?"
    try:

        async def collect() -> list[Event]:
            return [event async for event in pipeline.answer_stream(question)]

        events = anyio.run(collect)
        answer = pipeline.answer(question)
    finally:
        pipeline.store.close()
    streamed = [e.sentence.text for e in events if isinstance(e, SentenceEvent)]
    refusals = [e.reason for e in events if isinstance(e, RefusalEvent)]
    assert streamed == [s.text for s in answer.sentences]
    assert (refusals[0] if refusals else "") == answer.reason


def _block(n: int, text: str) -> Block:
    from rag.types import Chunk

    chunk = Chunk(chunk_id=f"doc#c{n:02d}", doc_id="doc", title="Doc", section="", text=text)
    return Block(n=n, chunk=chunk, score=0.9, sent_text=text)


def test_core_cut_reply_never_shows_the_sentence_in_progress() -> None:
    blocks = [_block(1, "Deleted projects stay in the trash for 30 days. Admins can restore them.")]
    core = Core(blocks=blocks, min_overlap=0.42, buffer=SentenceBuffer(native=True))
    pieces = [
        Piece(index=0, claims=(Claim(n=1, cited_text="Deleted projects stay in the trash for 30 days."),)),
        Piece(index=0, text="Deleted projects stay in the trash for 30 days"),
        Piece(index=1, text=". Admins can restore them from the trash f"),
        Piece(stop_reason="max_tokens"),
    ]
    events = run(core, pieces)
    shown = [e.sentence.text for e in events if isinstance(e, SentenceEvent)]
    assert shown == ["Deleted projects stay in the trash for 30 days."]
    assert core.cut


def test_core_structure_is_dropped_quietly_and_claims_are_reported() -> None:
    assert is_structure(Draft(text="Here's what the manual says:"))
    assert is_structure(Draft(text="Trash retention"))
    assert is_structure(Draft(text="I hope this helps!"))
    assert not is_structure(Draft(text="Projects are kept for 30 days after deletion."))
    assert not is_structure(Draft(text="Trash retention", claims=(Claim(n=1),)))
    assert carries_claim(Draft(text="Refunds are issued within 14 days."))
    assert carries_claim(Draft(text="Ask your manager or the Finance team."))
    assert not carries_claim(Draft(text="Deleted projects can be restored by their owner."))


def test_core_joined_text_keeps_paragraphs_and_list_items() -> None:
    def s(text: str, starts: str = "") -> Sentence:
        return Sentence(text=text, citations=(), starts=starts)  # type: ignore[arg-type]

    text = joined_text([s("Intro."), s("First.", "item"), s("Second.", "item"), s("Later.", "paragraph")])
    assert text == "Intro.\n- First.\n- Second.\n\nLater."


def test_core_fold_of_a_refusal_has_no_sentences() -> None:
    base = Answer(question="q")
    sentence = Sentence(text="x", citations=())
    answer = fold(
        base,
        [SentenceEvent(sentence=sentence), RefusalEvent(reason="no_citations", message="m")],
    )
    assert answer.abstained and answer.reason == "no_citations" and answer.sentences == ()


def _priced_session(question: str) -> Session:
    """A Claude-path session over two documents that price the Team plan differently (the conflict found
    before generation)."""
    from datetime import date

    from rag.answer.conflicts import find_conflicts
    from rag.types import Chunk

    newer = "The Team plan costs $8 per user per month. The Team plan includes 100 GB of storage."
    older = "The Team plan costs $7 per user per month."
    blocks = [
        Block(
            n=n,
            chunk=Chunk(
                chunk_id=f"{doc}#c01",
                doc_id=doc,
                title=title,
                section="Team plan",
                text=text,
                updated_at=when,
            ),
            score=0.9,
            sent_text=text,
        )
        for n, doc, title, text, when in (
            (1, "pricing", "Plans and pricing", newer, date(2026, 3, 1)),
            (2, "faq", "Billing FAQ", older, date(2025, 6, 1)),
        )
    ]

    (conflict,) = find_conflicts(None, blocks)
    core = Core(blocks=blocks, min_overlap=0.42, buffer=SentenceBuffer(native=True))
    return Session(first=core, conflict=conflict, question=question)


def _priced_reply(session: Session, *, with_storage: bool = True) -> list[Event]:
    pieces = [
        Piece(text="The Team plan costs $8 per user per month", index=0, claims=(PRICE,)),
        Piece(text=". ", index=1),
    ]
    if with_storage:
        pieces += [
            Piece(text="It includes 100 GB of storage", index=2, claims=(STORAGE,)),
            Piece(text=".", index=3),
        ]
    return session.run(pieces) + session.finish()


PRICE = Claim(n=1, cited_text="The Team plan costs $8 per user per month.")
STORAGE = Claim(n=1, cited_text="The Team plan includes 100 GB of storage.")


def test_session_withholds_only_a_contested_figure_when_the_question_asks_for_no_quantity() -> None:
    session = _priced_session("What does the Team plan include?")
    events = _priced_reply(session)
    assert [e.sentence.text for e in events if isinstance(e, SentenceEvent)] == [
        "It includes 100 GB of storage."
    ]
    dropped = [e.dropped for e in events if isinstance(e, DroppedEvent)]
    assert [d.text for d in dropped] == ["The Team plan costs $8 per user per month."]
    assert "Billing FAQ (2025-06-01) says $7" in dropped[0].detail[0]
    assert session.one_sided is None


def test_session_refuses_a_one_sided_figure_the_question_asks_for() -> None:
    for question in ("How much does the Team plan cost?", "What do I pay for the Team plan?"):
        session = _priced_session(question)
        events = _priced_reply(session)
        assert not [e for e in events if isinstance(e, SentenceEvent)], question
        assert session.one_sided is not None


def test_session_refuses_when_the_contested_figure_is_all_a_reply_says() -> None:
    session = _priced_session("What does the Team plan include?")
    events = _priced_reply(session, with_storage=False)
    assert not [e for e in events if isinstance(e, SentenceEvent)]
    assert session.one_sided is not None
