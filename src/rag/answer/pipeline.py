"""The pipeline: the only place the stages are composed, in request order.

retrieve -> line 1 (retrieval gate) -> assemble -> line 2 (conflicts) -> [compress]
-> generate -> verify -> one regeneration with specific feedback -> line 3 (grounding gate).

`answer()` returns an `Answer`; `answer_stream()` yields typed events and never
regenerates (emitted text is never withdrawn). Every ask is written to the ask log,
and every line-1 refusal to the coverage-gap queue.

Conflict policy: `present_both` refuses with both statements. `prefer_newest` drops the
blocks holding the older statements, renumbers the rest 1..n and answers, keeping the
conflict on the answer (and a note in `message`) so the reader sees that sources disagree;
when a side has no date, no side is "newest" and it refuses as `present_both` does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import anyio

from rag.answer.assemble import assemble, context_tokens
from rag.answer.compress import Compressor, ExtractiveCompressor
from rag.answer.conflicts import detect_conflict
from rag.answer.events import Done, DroppedOut, ErrorEvent, Event, Meta, Refusal, SentenceOut
from rag.answer.gates import (
    LOW_RETRIEVAL_MESSAGE,
    NO_CITATIONS_MESSAGE,
    closest_refs,
    conflict_message,
    grounding_gate,
    retrieval_gate,
    top_score,
)
from rag.answer.generate import Generator, OfflineGenerator
from rag.answer.parse import SentenceBuffer
from rag.answer.prompt import is_refusal
from rag.answer.rerank import Reranker, make_reranker
from rag.answer.retrieve import retrieve
from rag.answer.verify import feedback_lines, verify
from rag.config import Settings
from rag.errors import InvalidQuestion, UpstreamUnavailable
from rag.ingest.embeddings import Embedder, make_embedder
from rag.store.sqlite import Store, open_store
from rag.types import (
    Answer,
    AskRecord,
    Block,
    ChunkRef,
    Citation,
    Conflict,
    Draft,
    Dropped,
    RefusalReason,
    Scored,
    Sentence,
    Statement,
    Usage,
    Verdict,
)

STAGES = ("retrieve", "assemble", "conflicts", "compress", "generate", "verify", "regenerate", "total")


def validate_question(question: str, max_chars: int) -> str:
    """The question stripped of surrounding whitespace, control characters made spaces.

    Raises InvalidQuestion when it is empty, too long, or not valid Unicode text (a lone
    surrogate, which JSON can carry and `\\xff` in a command-line argument becomes).
    """
    text = question if isinstance(question, str) else ""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidQuestion(
            f"question is not valid Unicode text: a lone surrogate at character {exc.start}"
        ) from None
    # Control characters (C0 but tab and newlines, DEL, C1) mean nothing in a question, and some
    # stores refuse them (PostgreSQL text cannot hold NUL): each becomes a space.
    text = "".join(" " if (ord(c) < 32 and c not in "\t\n\r") or 127 <= ord(c) <= 159 else c for c in text)
    text = text.strip()
    if not text:
        raise InvalidQuestion("question is empty")
    if len(text) > max_chars:
        raise InvalidQuestion(f"question is {len(text)} characters long; the limit is {max_chars}")
    return text


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + (time.perf_counter() - started) * 1000, 3)


@dataclass(slots=True, kw_only=True)
class _Front:
    """What the pre-generation half decided: a refusal (answer set) or the blocks to generate from."""

    question: str
    trace_id: str
    scored: list[Scored]
    top: float
    closest: tuple[ChunkRef, ...]
    blocks: tuple[Block, ...] = ()
    conflict: Conflict | None = None
    note: str = ""
    refusal: Answer | None = None
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)
    started: float = 0.0


@dataclass(kw_only=True)
class Pipeline:
    """Stages wired to their dependencies. `min_score` overrides the gate (None: settings, then reranker)."""

    settings: Settings
    store: Store
    reranker: Reranker
    generator: Generator
    embedder: Embedder | None = None
    compressor: Compressor | None = None
    min_score: float | None = None

    @property
    def gate_score(self) -> float:
        """The retrieval gate's threshold in [0, 1]."""
        if self.min_score is not None:
            return self.min_score
        if self.settings.min_score is not None:
            return self.settings.min_score
        return self.reranker.default_min_score

    # the shared front half

    def _front(self, question: str, *, top_k: int | None, trace_id: str | None) -> _Front:
        started = time.perf_counter()
        q = validate_question(question, self.settings.max_question_chars)
        timings: dict[str, float] = {}
        with _timed(timings, "retrieve"):
            scored = retrieve(
                q,
                store=self.store,
                reranker=self.reranker,
                embedder=self.embedder,
                top_k=top_k or self.settings.top_k,
                candidates=self.settings.candidates,
            )
        front = _Front(
            question=q,
            trace_id=trace_id or uuid.uuid4().hex,
            scored=scored,
            top=top_score(scored),
            closest=closest_refs(scored),
            timings=timings,
            started=started,
        )
        if not retrieval_gate(scored, self.gate_score):
            self.store.add_gap(q, front.top, [r.chunk_id for r in front.closest])
            front.refusal = self._refusal(front, "low_retrieval_score", LOW_RETRIEVAL_MESSAGE)
            return front
        with _timed(timings, "assemble"):
            blocks = assemble(scored, budget=self.settings.budget, max_blocks=self.settings.max_blocks)
        with _timed(timings, "conflicts"):
            blocks, front.conflict, front.note = self._resolve_conflicts(q, blocks)
        if front.conflict is not None and not front.note:
            front.blocks = tuple(blocks)
            front.refusal = self._refusal(
                front, "conflicting_sources", conflict_message(front.conflict), conflict=front.conflict
            )
            return front
        if self.compressor is not None:
            with _timed(timings, "compress"):
                compression = self.compressor.compress(q, blocks)
            blocks = list(compression.blocks)
            front.usage = compression.usage
            # not milliseconds: the context size the compressor saw and left, and the saving in percent
            timings["compress_tokens_before"] = float(compression.tokens_before)
            timings["compress_tokens_after"] = float(compression.tokens_after)
            timings["compress_saving_pct"] = compression.saving_pct
        front.blocks = tuple(blocks)
        return front

    def _resolve_conflicts(
        self, question: str, blocks: list[Block]
    ) -> tuple[list[Block], Conflict | None, str]:
        """(blocks, conflict, note): note is non-empty when prefer_newest resolved the conflict."""
        policy = self.settings.conflict_policy
        conflict = detect_conflict(question, blocks, policy=policy)
        if conflict is None or policy != "prefer_newest":
            return blocks, conflict, ""
        winner = _newest(conflict)
        if winner is None:
            return blocks, conflict, ""
        first = conflict
        # Drop every block that states a different value than the newest source, until none is left;
        # the winning block itself is never dropped (a later note may quote the old value beside it).
        while conflict is not None:
            losing = {
                s.chunk_id
                for s in conflict.statements
                if s.chunk_id != winner.chunk_id and (s.value, s.unit) != (winner.value, winner.unit)
            }
            if not losing:
                return blocks, first, ""
            kept = [b for b in blocks if b.chunk.chunk_id not in losing]
            blocks = [replace(b, n=i) for i, b in enumerate(kept, start=1)]
            conflict = detect_conflict(question, blocks, policy=policy)
        when = winner.updated_at.isoformat() if winner.updated_at else ""
        note = f"{conflict_message(first)} Answered from the newest source, {winner.title} (updated {when})."
        return blocks, first, note

    def _refusal(
        self,
        front: _Front,
        reason: RefusalReason,
        message: str,
        *,
        conflict: Conflict | None = None,
        dropped: tuple[Dropped, ...] = (),
        usage: Usage | None = None,
    ) -> Answer:
        return Answer(
            question=front.question,
            abstained=True,
            reason=reason,
            message=message,
            conflict=conflict,
            closest=_conflict_refs(conflict) if conflict else front.closest,
            dropped=dropped,
            blocks=front.blocks,
            usage=usage or Usage(),
            timings=front.timings,
            trace_id=front.trace_id,
        )

    # non-streaming

    def answer(self, question: str, *, top_k: int | None = None, trace_id: str | None = None) -> Answer:
        """A verified answer or a refusal; raises InvalidQuestion, or UpstreamUnavailable from the model."""
        front = self._front(question, top_k=top_k, trace_id=trace_id)
        if front.refusal is not None:
            return self._finish(front, front.refusal, ())
        q, blocks, timings = front.question, front.blocks, front.timings
        min_overlap = self.settings.min_overlap
        with _timed(timings, "generate"):
            generation = self.generator.generate(q, blocks)
        usage = front.usage + generation.usage
        with _timed(timings, "verify"):
            verdicts = verify(generation.drafts, blocks, min_overlap=min_overlap)
        history = [_summary(v, "draft 1") for v in verdicts]
        dropped = [_dropped(v) for v in verdicts if not v.ok]
        if dropped and not generation.refused:
            feedback = feedback_lines(verdicts)
            with _timed(timings, "regenerate"):
                generation = self.generator.generate(q, blocks, feedback=feedback)
                verdicts = verify(generation.drafts, blocks, min_overlap=min_overlap)
            usage = usage + generation.usage
            history += [_summary(v, "draft 2") for v in verdicts]
            seen = {d.text for d in dropped}
            dropped += [_dropped(v) for v in verdicts if not v.ok and v.draft.text not in seen]
        if generation.refused or not grounding_gate(verdicts):
            answer = self._refusal(
                front, "no_citations", NO_CITATIONS_MESSAGE, dropped=tuple(dropped), usage=usage
            )
            return self._finish(front, answer, tuple(history))
        sentences = tuple(Sentence(text=v.draft.text, citations=v.citations) for v in verdicts if v.ok)
        answer = Answer(
            question=q,
            text=" ".join(s.text for s in sentences),
            sentences=sentences,
            citations=unique_citations(sentences),
            message=front.note,
            conflict=front.conflict,
            closest=front.closest,
            dropped=tuple(dropped),
            blocks=blocks,
            usage=usage,
            timings=timings,
            trace_id=front.trace_id,
        )
        return self._finish(front, answer, tuple(history))

    def _finish(self, front: _Front, answer: Answer, verdicts: tuple[str, ...]) -> Answer:
        front.timings["total"] = round((time.perf_counter() - front.started) * 1000, 3)
        answer = replace(answer, timings=_all_stages(front.timings))
        self._log(front, answer, verdicts)
        return answer

    def _log(self, front: _Front, answer: Answer, verdicts: tuple[str, ...]) -> None:
        self.store.log_ask(
            AskRecord(
                trace_id=front.trace_id,
                question=front.question,
                reason=answer.reason,
                abstained=answer.abstained,
                blocks=tuple((b.n, b.chunk.chunk_id) for b in front.blocks),
                answer_text=answer.text,
                citations=answer.citations,
                verdicts=verdicts,
                top_score=front.top,
                usage=answer.usage,
                timings=dict(answer.timings),
            )
        )

    # streaming

    async def answer_stream(
        self, question: str, *, top_k: int | None = None, trace_id: str | None = None
    ) -> AsyncIterator[Event]:
        """Events in wire order: a pre-generation refusal then done; or meta, sentence/dropped..., done.

        No regeneration while streaming. Closing this iterator closes the generator's stream
        (so the model call stops), and the ask is logged whichever way the stream ends.
        """
        q = validate_question(question, self.settings.max_question_chars)
        front = await anyio.to_thread.run_sync(lambda: self._front(q, top_k=top_k, trace_id=trace_id))
        if front.refusal is not None:
            pre = front.refusal
            refusal = await anyio.to_thread.run_sync(lambda: self._finish(front, pre, ()))
            yield _refusal_event(refusal)
            yield Done(status="abstained", emitted=0, dropped=0, timings=refusal.timings)
            return
        blocks, timings = front.blocks, front.timings
        yield Meta(blocks=blocks, context_tokens=context_tokens(blocks), trace_id=front.trace_id)
        sentences: list[Sentence] = []
        dropped: list[Dropped] = []
        history: list[str] = []
        usage = front.usage
        refused = False
        outcome: Answer | None = None
        buffer = SentenceBuffer()
        pieces = self.generator.stream(q, blocks)
        generating = time.perf_counter()

        def judge(draft: Draft) -> Event | None:
            nonlocal refused
            with _timed(timings, "verify"):
                verdict = verify([draft], blocks, min_overlap=self.settings.min_overlap)[0]
            history.append(_summary(verdict, "stream"))
            if verdict.ok:
                sentences.append(Sentence(text=draft.text, citations=verdict.citations))
                return SentenceOut(sentence=sentences[-1])
            if is_refusal(draft.text):
                refused = True  # the model's own refusal wording: an abstention, not a dropped claim
                return None
            dropped.append(_dropped(verdict))
            return DroppedOut(dropped=dropped[-1])

        try:
            try:
                async for piece in pieces:
                    if piece.usage is not None:
                        usage = usage + piece.usage
                    for draft in buffer.feed(piece):
                        event = judge(draft)
                        if event is not None:
                            yield event
                for draft in buffer.flush():
                    event = judge(draft)
                    if event is not None:
                        yield event
            except UpstreamUnavailable as exc:
                outcome = self._partial(front, sentences, dropped, usage)
                yield ErrorEvent(type=exc.type, message=str(exc))
                yield Done(
                    status="error",
                    emitted=len(sentences),
                    dropped=len(dropped),
                    detail=f"the model provider failed after {len(sentences)} verified sentence(s) were sent",
                )
                return
            finally:
                timings["generate"] = round(
                    (time.perf_counter() - generating) * 1000 - timings.get("verify", 0), 3
                )
                aclose = getattr(pieces, "aclose", None)
                if aclose is not None:
                    await aclose()
            if not sentences:
                outcome = self._refusal(
                    front, "no_citations", NO_CITATIONS_MESSAGE, dropped=tuple(dropped), usage=usage
                )
                yield _refusal_event(outcome)
                yield Done(status="abstained", emitted=0, dropped=len(dropped), timings=_stamp(front))
                return
            outcome = self._partial(front, sentences, dropped, usage)
            yield Done(status="answered", emitted=len(sentences), dropped=len(dropped), timings=_stamp(front))
        finally:
            final = outcome or self._partial(front, sentences, dropped, usage)
            # The ask-log write may wait on an ingest's lock: keep it off the event loop, and
            # shield it so a disconnected client still leaves its ask in the log.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: self._finish(front, final, tuple(history)))

    def _partial(
        self, front: _Front, sentences: Sequence[Sentence], dropped: Sequence[Dropped], usage: Usage
    ) -> Answer:
        return Answer(
            question=front.question,
            text=" ".join(s.text for s in sentences),
            sentences=tuple(sentences),
            citations=unique_citations(sentences),
            message=front.note,
            conflict=front.conflict,
            closest=front.closest,
            dropped=tuple(dropped),
            blocks=front.blocks,
            usage=usage,
            timings=front.timings,
            trace_id=front.trace_id,
        )


def _newest(conflict: Conflict) -> Statement | None:
    """The statement from the most recently updated source; None when any side is undated or dates tie."""
    if any(s.updated_at is None for s in conflict.statements):
        return None
    ranked = sorted(
        conflict.statements, key=lambda s: s.updated_at.toordinal() if s.updated_at else 0, reverse=True
    )
    if not ranked or (len(ranked) > 1 and ranked[0].updated_at == ranked[1].updated_at):
        return None
    return ranked[0]


def _conflict_refs(conflict: Conflict) -> tuple[ChunkRef, ...]:
    refs: dict[str, ChunkRef] = {}
    for s in conflict.statements:
        refs.setdefault(
            s.chunk_id, ChunkRef(chunk_id=s.chunk_id, title=s.title, url=s.url, updated_at=s.updated_at)
        )
    return tuple(refs.values())


def _stamp(front: _Front) -> dict[str, float]:
    """The timings so far, with `total` measured up to now."""
    front.timings["total"] = round((time.perf_counter() - front.started) * 1000, 3)
    return _all_stages(front.timings)


def _all_stages(timings: dict[str, float]) -> dict[str, float]:
    """Milliseconds for every stage in STAGES order (0.0 for stages that did not run), then the
    compression figures when compression ran."""
    extra = {k: v for k, v in timings.items() if k.startswith("compress_")}
    return {**{stage: timings.get(stage, 0.0) for stage in STAGES}, **extra}


def _dropped(verdict: Verdict) -> Dropped:
    return Dropped(text=verdict.draft.text, detail=verdict.issues or ("no citation",))


def _summary(verdict: Verdict, stage: str) -> str:
    """One ask-log line per verdict: stage, ok/dropped, claimed numbers, sentence, issues."""
    claimed = "".join(f"[{c.n}]" for c in verdict.draft.claims) or "[-]"
    status = "ok" if verdict.ok else "dropped"
    issues = f" | {'; '.join(verdict.issues)}" if verdict.issues else ""
    return f"{stage} {status} {claimed} {verdict.draft.text}{issues}"


def unique_citations(sentences: Sequence[Sentence]) -> tuple[Citation, ...]:
    """Citations of all sentences in order, each (chunk_id, start, end) once."""
    seen: dict[tuple[str, int, int], Citation] = {}
    for s in sentences:
        for c in s.citations:
            seen.setdefault((c.chunk_id, c.start, c.end), c)
    return tuple(seen.values())


def _refusal_event(answer: Answer) -> Refusal:
    return Refusal(
        reason=answer.reason, message=answer.message, closest=answer.closest, conflict=answer.conflict
    )


def build_pipeline(
    settings: Settings,
    *,
    store: Store | None = None,
    generator: Generator | None = None,
    reranker: Reranker | None = None,
) -> Pipeline:
    """Wire the stages from settings: Claude when a key is set and MOCK is off, offline otherwise."""
    if generator is None:
        if settings.use_claude:
            from rag.answer.claude import ClaudeGenerator

            generator = ClaudeGenerator(settings)
        else:
            generator = OfflineGenerator(settings.fabricate)
    compressor: Compressor | None = None
    if settings.compress:
        if settings.use_claude:
            from rag.answer.claude import ClaudeCompressor

            compressor = ClaudeCompressor(settings)
        else:
            compressor = ExtractiveCompressor()
    return Pipeline(
        settings=settings,
        store=store if store is not None else open_store(settings),
        reranker=reranker if reranker is not None else make_reranker(settings),
        embedder=make_embedder(settings),
        generator=generator,
        compressor=compressor,
    )
