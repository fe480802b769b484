"""The pipeline: the only place the stages are composed, in request order.

retrieve -> line 1 (retrieval gate) -> assemble -> line 2 (conflicts) -> [compress]
-> generate -> verify -> one regeneration with specific feedback -> line 3 (grounding gate).

Both routes run one core (`rag.answer.core`): the front half (`plan`) decides a refusal or the blocks,
the generator's pieces become events. `answer_stream()` yields the events as they are decided;
`answer()` folds the same events into an `Answer`, with one visible extra step: a second draft
with sentence-specific feedback when the first withheld a claim (emitted text is never withdrawn,
so streaming never regenerates). Every ask is written to the ask log, and every line-1 refusal
to the coverage-gap queue.

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

from rag.access import Principal
from rag.answer.assemble import assemble, context_tokens
from rag.answer.compress import Compressor, ExtractiveCompressor
from rag.answer.conflicts import detect_conflict
from rag.answer.core import Core, draft_pieces, fold, run
from rag.answer.events import DoneEvent, ErrorEvent, Event, MetaEvent, RefusalEvent
from rag.answer.gates import (
    LOW_RETRIEVAL_MESSAGE,
    Reader,
    closest_refs,
    conflict_message,
    gate_threshold,
    grounding_gate,
    retrieval_gate,
    top_score,
)
from rag.answer.generate import Generator, make_generator, support_options, tools_for
from rag.answer.messages import no_citations_message
from rag.answer.parse import SentenceBuffer
from rag.answer.rerank import Reranker, make_reranker
from rag.answer.retrieve import retrieve
from rag.answer.verify import feedback_lines
from rag.calibration import Model
from rag.config import Settings
from rag.embeddings import Embedder, make_embedder
from rag.errors import InvalidQuestion, RagError
from rag.language.tools import Tools, installed
from rag.reader.gate import Ranking, active_model, assess
from rag.reader.likely import likely_sentence
from rag.store import Store, open_store
from rag.support.check import CheckOptions, default_options
from rag.types import (
    Answer,
    AskRecord,
    Block,
    ChunkRef,
    Conflict,
    ConflictPolicy,
    DoneStatus,
    MayAnswer,
    RefusalReason,
    Scored,
    Statement,
    Usage,
)

STAGES = ("retrieve", "assemble", "conflicts", "compress", "generate", "verify", "regenerate", "total")


# code point -> " " for each control character a question may not keep (one `str.translate`)
_CONTROL_TO_SPACE = {c: " " for c in (*range(32), *range(127, 160)) if chr(c) not in "\t\n\r"}


class Question(str):
    """A question `validate_question` passed: the pipeline takes it as it is, without checking again."""

    __slots__ = ()


def validate_question(question: str, max_chars: int) -> Question:
    """The question stripped of surrounding whitespace, control characters made spaces.

    Raises InvalidQuestion when it is empty, too long, or not valid Unicode text (a lone
    surrogate, which JSON can carry and `\\xff` in a command-line argument becomes). The edge
    (a route) calls it once; a plain str handed to the pipeline is validated there instead.
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
    text = text.translate(_CONTROL_TO_SPACE)
    text = text.strip()
    if not text:
        raise InvalidQuestion("question is empty")
    if len(text) > max_chars:
        raise InvalidQuestion(f"question is {len(text)} characters long; the limit is {max_chars}")
    return Question(text)


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + (time.perf_counter() - started) * 1000, 3)


@dataclass(slots=True, kw_only=True)
class Plan:
    """What the front half decided: a refusal (`refusal` set) or the blocks to generate from, with the
    reranker that scored (`scorer`) and the threshold the gate applied."""

    question: str
    trace_id: str
    scored: list[Scored]
    top: float
    closest: tuple[ChunkRef, ...]
    scorer: str
    threshold: float
    blocks: tuple[Block, ...] = ()
    conflict: Conflict | None = None
    note: str = ""
    refusal: Answer | None = None
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)
    started: float = 0.0
    principal: Principal | None = None  # who asked; None: the local operator (reads everything)


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
    tools: Tools = field(default_factory=installed)  # English tools (the answer gate's encoder)
    support: CheckOptions = field(default_factory=default_options)  # the support check of native citations
    answer_gate: Model | None = field(default_factory=active_model)  # None: offline answers are not gated

    @property
    def reader(self) -> Reader:
        """Who reads the blocks: Claude (native citations) or the offline extractive generator."""
        return "claude" if self.generator.native_citations else "offline"

    def threshold(self, scorer: str) -> float:
        """The retrieval gate's threshold in [0, 1] for scores from `scorer`: the override (pipeline,
        then RAG_MIN_SCORE), else the calibrated value for that scorer and this pipeline's reader."""
        if self.min_score is not None:
            return self.min_score
        if self.settings.min_score is not None:
            return self.settings.min_score
        return gate_threshold(scorer, self.reader)

    @property
    def gate_score(self) -> float:
        """The threshold for the configured reranker (what the gate applies when it does not fail)."""
        return self.threshold(self.reranker.name)

    # the front half, shared

    def plan(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
    ) -> Plan:
        """The front half, up to generation: retrieve, gate, assemble, conflicts, compress. A line-1 or
        line-2 refusal is set on the plan (and a line-1 refusal queued as a coverage gap).

        Retrieval sees only the documents `principal` may read (None: the local operator, every
        document), so every later stage, conflicts and closest matches included, sees no other."""
        started = time.perf_counter()
        if not isinstance(question, Question):
            question = validate_question(question, self.settings.max_question_chars)
        plan = self._retrieved(question, top_k=top_k, trace_id=trace_id, principal=principal)
        plan.started = started
        if not retrieval_gate(plan.scored, plan.threshold, plan.question):
            closest = [r.chunk_id for r in plan.closest]
            self.store.add_gap(plan.question, plan.top, closest, principal=_name(principal))
            plan.refusal = self._refusal(plan, "low_retrieval_score", LOW_RETRIEVAL_MESSAGE)
            return plan
        with _timed(plan.timings, "assemble"):
            blocks = assemble(plan.scored, budget=self.settings.budget, max_blocks=self.settings.max_blocks)
        with _timed(plan.timings, "conflicts"):
            blocks, plan.conflict, plan.note = self._resolve_conflicts(plan.question, blocks)
        if plan.conflict is not None and not plan.note:
            plan.blocks = tuple(blocks)
            plan.refusal = self._refusal(
                plan, "conflicting_sources", conflict_message(plan.conflict), conflict=plan.conflict
            )
            return plan
        plan.blocks = tuple(self._compressed(plan, blocks))
        return plan

    def _retrieved(
        self, question: Question, *, top_k: int | None, trace_id: str | None, principal: Principal | None
    ) -> Plan:
        """Retrieval, timed: the plan's question, scores, closest matches and gate threshold."""
        timings: dict[str, float] = {}
        with _timed(timings, "retrieve"):
            scored = retrieve(
                question,
                store=self.store,
                reranker=self.reranker,
                embedder=self.embedder,
                top_k=top_k or self.settings.top_k,
                candidates=self.settings.candidates,
                groups=principal.reads if principal is not None else None,
            )
        scorer = scored[0].scorer if scored and scored[0].scorer else self.reranker.name
        return Plan(
            question=question,
            trace_id=trace_id or uuid.uuid4().hex,
            scored=scored,
            top=top_score(scored),
            closest=closest_refs(scored),
            scorer=scorer,
            threshold=self.threshold(scorer),
            timings=timings,
            principal=principal,
        )

    def _compressed(self, plan: Plan, blocks: list[Block]) -> list[Block]:
        """The blocks after the compressor (unchanged without one); its usage and figures go on `plan`."""
        if self.compressor is None:
            return blocks
        with _timed(plan.timings, "compress"):
            compression = self.compressor.compress(plan.question, blocks)
        plan.usage = compression.usage
        # not milliseconds: the context size the compressor saw and left, and the saving in percent
        plan.timings["compress_tokens_before"] = float(compression.tokens_before)
        plan.timings["compress_tokens_after"] = float(compression.tokens_after)
        plan.timings["compress_saving_pct"] = compression.saving_pct
        return list(compression.blocks)

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
        blocks, resolved = _drop_older(question, blocks, conflict, winner, policy)
        if not resolved:
            return blocks, conflict, ""
        when = winner.updated_at.isoformat() if winner.updated_at else ""
        note = (
            f"{conflict_message(conflict)} Answered from the newest source, {winner.title} (updated {when})."
        )
        return blocks, conflict, note

    def _refusal(
        self,
        plan: Plan,
        reason: RefusalReason,
        message: str,
        *,
        conflict: Conflict | None = None,
    ) -> Answer:
        return Answer(
            question=plan.question,
            abstained=True,
            reason=reason,
            message=message,
            conflict=conflict,
            closest=_conflict_refs(conflict) if conflict else self._shown(plan, reason),
            blocks=plan.blocks,
            timings=plan.timings,
            trace_id=plan.trace_id,
            reranker=plan.scorer,
            min_score=plan.threshold,
        )

    def _shown(self, plan: Plan, reason: RefusalReason) -> tuple[ChunkRef, ...]:
        """The closest passages of a refusal; on an offline `no_citations` refusal each carries the
        sentence most likely to answer (`rag.reader.likely`), to be shown highlighted, not as an answer."""
        if reason != "no_citations" or self.reader != "offline" or not plan.closest:
            return plan.closest
        texts = {b.chunk.chunk_id: b.chunk.text for b in plan.blocks}
        missing = [r.chunk_id for r in plan.closest if r.chunk_id not in texts]
        if missing:
            texts.update({c.chunk_id: c.text for c in self.store.get_chunks(missing)})
        return tuple(
            _with_may_answer(plan.question, ref, texts.get(ref.chunk_id, "")) for ref in plan.closest
        )

    def _gate_answer(self, plan: Plan) -> None:
        """The answer gate (`rag.reader.gate`) on the offline generator's choice: when the
        calibrated model finds the chosen sentence unlikely to answer the question, the plan refuses
        with `no_citations`, the closest passages and the reason. Only the offline path is gated (with
        Claude the support check judges each sentence); without `answer_gate` (`RAG_ANSWER_GATE=off`) none."""
        generator = self.generator
        if plan.refusal is not None or self.reader != "offline" or not isinstance(generator, Ranking):
            return
        model = self.answer_gate
        if model is None:
            return
        with _timed(plan.timings, "generate"):
            drafts = self.generator.generate(plan.question, plan.blocks).drafts
            texts = [d.text for d in drafts]
            verdict = assess(generator, plan.question, plan.blocks, texts, model, tools=self.tools)
        if verdict is not None and not verdict.keep:
            message = f"{no_citations_message(self.reader)} {verdict.reason}"
            plan.refusal = self._refusal(plan, "no_citations", message)

    # the answer core, run whole (/ask) or streamed (/ask/stream)

    def _meta(self, plan: Plan) -> MetaEvent:
        return MetaEvent(
            blocks=plan.blocks,
            context_tokens=context_tokens(plan.blocks),
            trace_id=plan.trace_id,
            reranker=plan.scorer,
            min_score=plan.threshold,
        )

    def _core(self, plan: Plan, label: str = "draft 1") -> Core:
        return Core(
            blocks=plan.blocks,
            min_overlap=self.settings.min_overlap,
            label=label,
            buffer=SentenceBuffer(native=self.generator.native_citations),
            support=self.support,
        )

    def _ending(self, plan: Plan, core: Core) -> list[Event]:
        """After the last piece: the refusal when no sentence verified, then `done`."""
        events = core.close()
        usage = plan.usage + core.usage
        if not grounding_gate(core.sentences):
            refusal = self._refusal(plan, "no_citations", no_citations_message(self.reader))
            events.append(_refusal_event(refusal))
            status: DoneStatus = "abstained"
        else:
            status = "answered"
        plan.timings["verify"] = round(plan.timings.get("verify", 0.0) + core.verify_ms, 3)
        events.append(
            DoneEvent(
                status=status,
                emitted=len(core.sentences),
                dropped=len(core.dropped),
                cut=core.cut,
                usage=usage,
                timings=_stamp(plan),
            )
        )
        return events

    def _base(self, plan: Plan) -> Answer:
        """What an answer carries besides its events: the question, closest matches, note, trace id."""
        return Answer(
            question=plan.question,
            message=plan.note,
            conflict=plan.conflict,
            closest=plan.closest,
            blocks=plan.blocks,
            usage=plan.usage,
            timings=plan.timings,
            trace_id=plan.trace_id,
            reranker=plan.scorer,
            min_score=plan.threshold,
        )

    def _pre_refusal(self, plan: Plan) -> list[Event]:
        assert plan.refusal is not None
        refusal = plan.refusal
        return [
            _refusal_event(refusal),
            DoneEvent(status="abstained", emitted=0, dropped=0, usage=refusal.usage, timings=_stamp(plan)),
        ]

    def _draft(
        self, plan: Plan, label: str, feedback: Sequence[str] = (), max_tokens: int | None = None
    ) -> tuple[Core, list[Event]]:
        """One whole draft through the core: generate, then cut its pieces into sentences and verify each."""
        core = self._core(plan, label)
        stage = "generate" if label.startswith("draft 1") else "regenerate"
        with _timed(plan.timings, stage):
            if max_tokens is None:  # generators written before the budget keyword still work
                generation = self.generator.generate(plan.question, plan.blocks, feedback=feedback)
            else:
                generation = self.generator.generate(
                    plan.question, plan.blocks, feedback=feedback, max_tokens=max_tokens
                )
        return core, run(core, draft_pieces(generation))

    def _longer(self, plan: Plan, cut: Core, events: list[Event]) -> tuple[Core, list[Event], list[Core]]:
        """A draft cut at `max_tokens` asked for once more with `retry_max_tokens` (when that is larger):
        (the draft kept, its events, every draft made, in order). The longer draft is kept unless it
        verified nothing while the cut one did; if the retry fails, the cut draft stands, with a note."""
        budget = self.settings.retry_max_tokens
        if cut.cut_by != "max_tokens" or budget <= self.settings.max_tokens:
            return cut, events, [cut]
        try:
            longer, longer_events = self._draft(plan, "draft 1, larger budget", max_tokens=budget)
        except RagError as exc:
            plan.note = " ".join(filter(None, (plan.note, f"A retry with a larger budget failed ({exc}).")))
            return cut, events, [cut]
        if longer.sentences or not cut.sentences:
            return longer, longer_events, [cut, longer]
        return cut, events, [cut, longer]

    def answer(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
    ) -> Answer:
        """A verified answer or a refusal: the core's events folded into an Answer.

        A first draft cut at `max_tokens` is asked for once more with `retry_max_tokens` when that is
        larger (`_longer`). The one step streaming cannot take: when the first draft withheld a
        sentence that carried a claim, a second draft is asked for with sentence-specific feedback;
        the second is kept when it has verified sentences or the first has none. If that second call
        fails, the verified first draft stands, with a note. Raises InvalidQuestion, or
        UpstreamUnavailable when the model call fails and no verified sentence exists.
        """
        plan = self.plan(question, top_k=top_k, trace_id=trace_id, principal=principal)
        self._gate_answer(plan)
        if plan.refusal is not None:
            return self._finish(plan, fold(self._base(plan), self._pre_refusal(plan)), ())
        kept, events, drafts = self._longer(plan, *self._draft(plan, "draft 1"))
        history = [line for draft in drafts for line in draft.history]
        kept, other, events = self._second_draft(plan, kept, events, history)
        answer = fold(self._base(plan), [self._meta(plan), *events, *self._ending(plan, kept)])
        return self._finish(plan, _with_set_aside(answer, kept, other, drafts), tuple(history))

    def _second_draft(
        self, plan: Plan, kept: Core, events: list[Event], history: list[str]
    ) -> tuple[Core, Core | None, list[Event]]:
        """(the draft kept, the other draft or None, the kept draft's events) after a second draft with
        feedback, asked for only when `kept` wants regeneration; its verdict lines go on `history`. A
        failed second call leaves `kept` with a note, or raises when `kept` verified nothing."""
        if not kept.wants_regeneration:
            return kept, None, events
        try:
            second, second_events = self._draft(plan, "draft 2", feedback_lines(kept.failed))
        except RagError as exc:
            if not kept.sentences:
                raise
            plan.note = " ".join(filter(None, (plan.note, f"A second draft failed ({exc}).")))
            return kept, None, events
        history += second.history
        if second.sentences or not kept.sentences:
            return second, kept, second_events
        return kept, second, events

    def _finish(self, plan: Plan, answer: Answer, verdicts: tuple[str, ...]) -> Answer:
        plan.timings["total"] = round((time.perf_counter() - plan.started) * 1000, 3)
        answer = replace(answer, timings=_all_stages(plan.timings))
        self._log(plan, answer, verdicts)
        return answer

    def _log(self, plan: Plan, answer: Answer, verdicts: tuple[str, ...]) -> None:
        self.store.log_ask(
            AskRecord(
                trace_id=plan.trace_id,
                question=plan.question,
                reason=answer.reason,
                abstained=answer.abstained,
                blocks=tuple((b.n, b.chunk.chunk_id) for b in plan.blocks),
                answer_text=answer.text,
                citations=answer.citations,
                verdicts=verdicts,
                top_score=plan.top,
                usage=answer.usage,
                timings=dict(answer.timings),
                principal=_name(plan.principal),
                retrieved=tuple((s.chunk.chunk_id, s.score) for s in plan.scored),
                reranker=plan.scorer,
                threshold=plan.threshold,
            )
        )

    async def answer_stream(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
    ) -> AsyncIterator[Event]:
        """The core's events as they are decided: a pre-generation refusal then done; or meta,
        sentence/dropped..., [refusal], done; an error then done when the provider fails.

        No regeneration while streaming (emitted text is never withdrawn). Closing this iterator
        closes the generator's stream (so the model call stops), and the ask is logged whichever
        way the stream ends.
        """
        plan = await anyio.to_thread.run_sync(
            lambda: self.plan(question, top_k=top_k, trace_id=trace_id, principal=principal)
        )
        await anyio.to_thread.run_sync(lambda: self._gate_answer(plan))
        seen: list[Event] = []
        core = self._core(plan, "stream")
        try:
            if plan.refusal is not None:
                seen.extend(self._pre_refusal(plan))
                for event in seen:
                    yield event
                return
            seen.append(self._meta(plan))
            yield seen[-1]
            async for event in self._stream_events(plan, core):
                seen.append(event)
                yield event
        finally:
            answer = fold(self._base(plan), seen)
            # The ask-log write may wait on an ingest's lock: keep it off the event loop, and
            # shield it so a disconnected client still leaves its ask in the log.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: self._finish(plan, answer, tuple(core.history)))

    async def _stream_events(self, plan: Plan, core: Core) -> AsyncIterator[Event]:
        pieces = self.generator.stream(plan.question, plan.blocks)
        generating = time.perf_counter()
        try:
            async for piece in pieces:
                for event in core.feed(piece):
                    yield event
        except RagError as exc:  # the provider failed or refused: an error event, never a traceback
            core.close(cut=True)
            yield ErrorEvent(type=exc.type, message=str(exc))
            yield DoneEvent(
                status="error",
                emitted=len(core.sentences),
                dropped=len(core.dropped),
                cut=True,
                usage=plan.usage + core.usage,
                detail=f"the model provider failed after {len(core.sentences)} verified sentence(s)",
                timings=_stamp(plan),
            )
            return
        finally:
            plan.timings["generate"] = round((time.perf_counter() - generating) * 1000 - core.verify_ms, 3)
            aclose = getattr(pieces, "aclose", None)
            if aclose is not None:
                await aclose()
        for event in self._ending(plan, core):
            yield event


def _name(principal: Principal | None) -> str:
    """The name the ask log and the gap queue record for `principal` (None: the local operator)."""
    return principal.name if principal is not None else Principal.operator().name


def _with_set_aside(answer: Answer, kept: Core, other: Core | None, drafts: Sequence[Core]) -> Answer:
    """`answer` with what the drafts not kept add: the other draft's dropped sentences not shown
    again (first) and its usage, and the usage of every first-round draft that is not `kept`."""
    if other is not None:
        shown = {d.text for d in answer.dropped}
        earlier = tuple(d for d in other.dropped if d.text not in shown)
        answer = replace(answer, dropped=earlier + answer.dropped, usage=answer.usage + other.usage)
    for aside in drafts:  # a draft set aside for a longer one was still paid for
        if aside is not kept:
            answer = replace(answer, usage=answer.usage + aside.usage)
    return answer


def _drop_older(
    question: str, blocks: list[Block], conflict: Conflict, winner: Statement, policy: ConflictPolicy
) -> tuple[list[Block], bool]:
    """Drop every block that states a different value than the newest source, renumbering the rest,
    until no conflict is left: (blocks, True); (the blocks so far, False) when a conflict remains with
    nothing to drop. The winning block itself is never dropped (a later note may quote the old value
    beside it)."""
    left: Conflict | None = conflict
    while left is not None:
        losing = {
            s.chunk_id
            for s in left.statements
            if s.chunk_id != winner.chunk_id and (s.value, s.unit) != (winner.value, winner.unit)
        }
        if not losing:
            return blocks, False
        kept = [b for b in blocks if b.chunk.chunk_id not in losing]
        blocks = [replace(b, n=i) for i, b in enumerate(kept, start=1)]
        left = detect_conflict(question, blocks, policy=policy)
    return blocks, True


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


def _stamp(plan: Plan) -> dict[str, float]:
    """The timings so far, with `total` measured up to now."""
    plan.timings["total"] = round((time.perf_counter() - plan.started) * 1000, 3)
    return _all_stages(plan.timings)


def _all_stages(timings: dict[str, float]) -> dict[str, float]:
    """Milliseconds for every stage in STAGES order (0.0 for stages that did not run), then the
    compression figures when compression ran."""
    extra = {k: v for k, v in timings.items() if k.startswith("compress_")}
    return {**{stage: timings.get(stage, 0.0) for stage in STAGES}, **extra}


def _with_may_answer(question: str, ref: ChunkRef, text: str) -> ChunkRef:
    """`ref` with its chunk's likeliest answering sentence marked, when one shares a question term."""
    span = likely_sentence(question, text) if text else None
    if span is None:
        return ref
    start, end = span
    return replace(ref, may_answer=MayAnswer(start=start, end=end, text=text[start:end]))


def _refusal_event(answer: Answer) -> RefusalEvent:
    return RefusalEvent(
        reason=answer.reason, message=answer.message, closest=answer.closest, conflict=answer.conflict
    )


def build_pipeline(
    settings: Settings,
    *,
    store: Store | None = None,
    generator: Generator | None = None,
    reranker: Reranker | None = None,
) -> Pipeline:
    """Wire the stages from settings: Claude when a key is set and MOCK is off, offline otherwise; the
    English tools, the support check's options and the answer gate's model from the settings too."""
    tools = tools_for(settings)
    if generator is None:
        generator = make_generator(settings, tools)
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
        tools=tools,
        support=support_options(settings, tools),
        answer_gate=active_model(settings.answer_gate),
    )
