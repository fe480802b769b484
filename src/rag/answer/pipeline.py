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

import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from rag.access import Principal
from rag.answer.assemble import assemble, context_tokens, neighbour_tokens, with_neighbours
from rag.answer.compress import Compressor, ExtractiveCompressor
from rag.answer.conflicts import asks_for, conflict_about, detect_conflict
from rag.answer.core import Core, SecondDraft, Session, draft_pieces, fold
from rag.answer.events import DoneEvent, ErrorEvent, Event, MetaEvent, RefusalEvent
from rag.answer.followup import follow_up_focus, lost_words, standalone_question
from rag.answer.gates import (
    CUT_NOTE,
    LOW_RETRIEVAL_MESSAGE,
    REPLY_CUT_MESSAGE,
    REPLY_DECLINED_MESSAGE,
    Reader,
    closest_refs,
    conflict_message,
    gate_threshold,
    grounding_gate,
    rare_shared_terms,
    retrieval_gate,
    top_score,
)
from rag.answer.generate import Generator, make_generator, support_options, tools_for
from rag.answer.messages import no_citations_message
from rag.answer.parse import SentenceBuffer
from rag.answer.rerank import Reranker, make_reranker
from rag.answer.retrieve import retrieve
from rag.calibration import Model
from rag.config import Settings
from rag.embeddings import Embedder, make_embedder
from rag.errors import InvalidQuestion, RagError
from rag.language.text import terms
from rag.language.tools import Tools, installed
from rag.reader.gate import Ranking, active_model, assess
from rag.reader.likely import likely_sentence
from rag.store import Store, open_store
from rag.support.check import CheckOptions, default_options
from rag.support.judge import Judge, Rulings
from rag.types import (
    Answer,
    AskRecord,
    Block,
    Chunk,
    ChunkRef,
    Conflict,
    ConflictPolicy,
    DoneStatus,
    MayAnswer,
    Piece,
    RefusalReason,
    Scored,
    Sentence,
    Statement,
    Turn,
    Usage,
)

STAGES = (
    "retrieve",
    "assemble",
    "conflicts",
    "compress",
    "generate",
    "verify",
    "regenerate",
    "judge",
    "total",
)


# code point -> " " for each control character a question may not keep (one `str.translate`)
_CONTROL_TO_SPACE = {c: " " for c in (*range(32), *range(127, 160)) if chr(c) not in "\t\n\r"}


_SPACE_RUN_RE = re.compile(r"[ \t]+")


class Question(str):
    """A question `validate_question` passed: the pipeline takes it as it is, without checking again."""

    __slots__ = ()


def _clean_text(text: object) -> str:
    """`text` (a non-str as "") stripped, control characters made spaces and each run of spaces and
    tabs one space; raises UnicodeEncodeError when it is not valid Unicode text (a lone surrogate)."""
    value = text if isinstance(text, str) else ""
    value.encode("utf-8")
    # Control characters (C0 but tab and newlines, DEL, C1) mean nothing in a question, and some
    # stores refuse them (PostgreSQL text cannot hold NUL): each becomes a space. Runs of spaces mean
    # nothing either, and a phrase read word by word ("the  Team  plan") must read the same.
    return _SPACE_RUN_RE.sub(" ", value.translate(_CONTROL_TO_SPACE)).strip()


def validate_question(question: str, max_chars: int) -> Question:
    """The question stripped of surrounding whitespace, control characters made spaces.

    Raises InvalidQuestion when it is empty, too long, or not valid Unicode text (a lone
    surrogate, which JSON can carry and `\\xff` in a command-line argument becomes). The edge
    (a route) calls it once; a plain str handed to the pipeline is validated there instead.
    """
    try:
        text = _clean_text(question)
    except UnicodeEncodeError as exc:
        raise InvalidQuestion(
            f"question is not valid Unicode text: a lone surrogate at character {exc.start}"
        ) from None
    if not text:
        raise InvalidQuestion("question is empty")
    if len(text) > max_chars:
        raise InvalidQuestion(f"question is {len(text)} characters long; the limit is {max_chars}")
    return Question(text)


_CONVERSATION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


def validate_history(history: Sequence[Turn], settings: Settings) -> tuple[Turn, ...]:
    """The earlier turns of a conversation, each question validated as a question and each answer
    bounded (`max_history_answer_chars`), control characters made spaces. Raises InvalidQuestion for
    more than `max_history_turns` turns or a turn that fails, naming the turn (1-based)."""
    if len(history) > settings.max_history_turns:
        raise InvalidQuestion(
            f"history has {len(history)} earlier turns; the limit is {settings.max_history_turns}"
            " (start a new conversation, or send only the latest turns)"
        )
    turns = []
    for i, turn in enumerate(history, start=1):
        try:
            question = validate_question(turn.question, settings.max_question_chars)
        except InvalidQuestion as exc:
            raise InvalidQuestion(f"history turn {i}: {exc}") from None
        try:
            answer = _clean_text(turn.answer)
        except UnicodeEncodeError:
            raise InvalidQuestion(f"history turn {i}: the answer is not valid Unicode text") from None
        if len(answer) > settings.max_history_answer_chars:
            raise InvalidQuestion(
                f"history turn {i}: the answer is {len(answer)} characters long;"
                f" the limit is {settings.max_history_answer_chars}"
            )
        turns.append(Turn(question=str(question), answer=answer))
    return tuple(turns)


def validate_conversation_id(conversation_id: str | None) -> str:
    """The conversation id as given ("" when none): 1 to 64 characters of letters, digits and
    `. _ : -`, starting with a letter or digit; raises InvalidQuestion otherwise."""
    if not conversation_id:
        return ""
    if not isinstance(conversation_id, str) or not _CONVERSATION_ID_RE.fullmatch(conversation_id):
        raise InvalidQuestion(
            "conversation_id must be 1 to 64 letters, digits or '.', '_', ':', '-',"
            " starting with a letter or digit"
        )
    return conversation_id


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
    asked: str = ""  # the question as asked (`question` is what retrieval searched for)
    history: tuple[Turn, ...] = ()  # the earlier turns of its conversation, oldest first
    # an elliptical follow-up's own words (`followup.follow_up_focus`): the offline reader's answer
    # must say them, in its sentence or the sentence's heading
    focus: tuple[str, ...] = ()
    # a follow-up's own top chunks, searched as typed, for Claude when it was read as elliptical but
    # says two or more words of its own: a topic switch misread as elliptical still finds its passage
    typed: tuple[Chunk, ...] = ()
    conversation_id: str = ""

    @property
    def turn(self) -> int:
        """This turn's 1-based number in its conversation; 0 for a single question."""
        return len(self.history) + 1 if self.history or self.conversation_id else 0

    record: bool = True  # written to the ask log and the gap queue (False: a probe, such as an example)


# A follow-up read as elliptical that says this many words of its own is searched as typed too, and
# this many of that search's top chunks are sent to Claude beside the standalone question's (offline:
# shown after its closest passages on a refusal): a topic switch misread as elliptical still finds
# its passage.
TYPED_GUARD_WORDS = 2
TYPED_GUARD_CHUNKS = 3
# Offline, a follow-up whose standalone question left out words of its own is refused (closest shown):
# what the search found may answer a question other than the one asked.
LOST_WORDS_REASON = "The search for this follow-up left out its words: {words}."


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
    judge: Judge | None = None  # judges the sentences the support rules leave undecided; None: withheld

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
        history: Sequence[Turn] = (),
        conversation_id: str = "",
        record: bool = True,
    ) -> Plan:
        """The front half, up to generation: retrieve, gate, assemble, conflicts, compress. A line-1 or
        line-2 refusal is set on the plan (and a line-1 refusal queued as a coverage gap, when `record`).

        Retrieval sees only the documents `principal` may read (None: the local operator, every
        document), so every later stage, conflicts and closest matches included, sees no other. A
        follow-up (`history`: the earlier turns) is searched for as its standalone question
        (`rag.answer.followup`), built from the earlier questions only, under the same groups."""
        started = time.perf_counter()
        if not isinstance(question, Question):
            question = validate_question(question, self.settings.max_question_chars)
        turns = validate_history(history, self.settings)
        conversation = validate_conversation_id(conversation_id)  # before any work is done for it
        # a follow-up's standalone question; a first question without an opening remark ("Hi! ...")
        earlier = [t.question for t in turns]
        searched = Question(standalone_question(question, earlier, meaning=self.tools.meaning))
        focus = follow_up_focus(question, searched) if turns else ()
        plan = self._retrieved(searched, top_k=top_k, trace_id=trace_id, principal=principal)
        plan.started, plan.record = started, record
        plan.asked, plan.history, plan.focus = str(question), turns, focus
        if len(focus) >= TYPED_GUARD_WORDS:
            typed = self._retrieved(question, top_k=top_k, trace_id=trace_id, principal=principal)
            if self.reader == "claude":
                plan.typed = tuple(s.chunk for s in typed.scored[:TYPED_GUARD_CHUNKS])
            else:  # offline, its refusal shows them after the standalone question's closest passages
                kept = {r.chunk_id for r in plan.closest}
                extra = [r for r in typed.closest if r.chunk_id not in kept][:TYPED_GUARD_CHUNKS]
                plan.closest = (*plan.closest, *extra)
        plan.conversation_id = conversation
        if not self._passes_gate(plan):
            closest = [r.chunk_id for r in plan.closest]
            if record:
                self.store.add_gap(plan.question, plan.top, closest, principal=_name(principal))
            plan.refusal = self._refusal(plan, "low_retrieval_score", LOW_RETRIEVAL_MESSAGE)
            return plan
        with _timed(plan.timings, "assemble"):
            budget, max_blocks = self.context_limits()
            blocks = self._assembled(plan, budget, max_blocks)
        with _timed(plan.timings, "conflicts"):
            blocks, plan.conflict, plan.note = self._resolve_conflicts(plan.question, blocks)
        if plan.conflict is not None and not plan.note and self.reader != "claude":
            plan.blocks = tuple(blocks)
            plan.refusal = self._refusal(
                plan, "conflicting_sources", conflict_message(plan.conflict), conflict=plan.conflict
            )
            return plan
        plan.blocks = tuple(self._compressed(plan, blocks))
        return plan

    def _passes_gate(self, plan: Plan) -> bool:
        """Line 1 for `plan`: its top score reaches the threshold (past the far-off floor) or, with
        Claude reading, its top chunk holds a rare word of the question (rag.answer.gates)."""
        words_min = self.threshold("lexical") if plan.scorer == "hybrid" else None
        if retrieval_gate(plan.scored, plan.threshold, plan.question, words_min=words_min):
            return True
        if self.reader != "claude" or not plan.scored:
            return False
        groups = plan.principal.reads if plan.principal is not None else None
        wanted = list(dict.fromkeys(terms(plan.question)))
        df = self.store.term_frequencies(wanted, groups=groups) if wanted else {}
        rare = rare_shared_terms(plan.question, plan.scored[0], df, self.store.chunk_count(groups=groups))
        return bool(rare)

    def _assembled(self, plan: Plan, budget: int, max_blocks: int) -> list[Block]:
        """The numbered blocks: the ranked chunks within the reader's limits and, with Claude reading,
        the chunks `_extra` adds that those limits left out, on top of them (their cost added to the
        budget and the block cap), so no ranked chunk makes way."""
        blocks = assemble(plan.scored, budget=budget, max_blocks=max_blocks)
        kept = {b.chunk.chunk_id for b in blocks}
        new = [c for c in self._extra(plan) if c.chunk_id not in kept]
        if not new:
            return blocks
        offered = with_neighbours(plan.scored, new)
        return assemble(offered, budget=budget + neighbour_tokens(new), max_blocks=max_blocks + len(new))

    def _extra(self, plan: Plan) -> list[Chunk]:
        """What Claude gets beyond the ranked chunks: the `claude_neighbours` chunks on each side of
        the top one in its document (read under the asker's groups; an answer often sits just before
        or after the passage that matched best) and a follow-up's own top chunks as typed
        (`Plan.typed`)."""
        width = self.settings.claude_neighbours
        if self.reader != "claude" or not plan.scored:
            return []
        near: list[Chunk] = []
        if width > 0:
            top = min(plan.scored, key=lambda s: (-s.score, s.chunk.chunk_id))
            groups = plan.principal.reads if plan.principal is not None else None
            near = self.store.adjacent_chunks([top.chunk.chunk_id], groups=groups, width=width)
        return list({c.chunk_id: c for c in [*near, *plan.typed]}.values())

    def context_limits(self) -> tuple[int, int]:
        """(token budget, most blocks) of the context this pipeline's reader gets."""
        if self.reader == "claude":
            return self.settings.claude_budget, self.settings.claude_max_blocks
        return self.settings.budget, self.settings.max_blocks

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
                top_k=top_k or max(self.settings.top_k, self.context_limits()[1]),
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
        if conflict is not None and not asks_for(conflict, question):
            return blocks, None, ""  # not asked for: a shown sentence's figure is still checked (`_session`)
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
            question=plan.asked or plan.question,
            searched_for=plan.question,
            abstained=True,
            reason=reason,
            message=message,
            conflict=conflict,
            closest=_conflict_refs(conflict, plan.blocks) if conflict else self._shown(plan, reason),
            blocks=plan.blocks,
            timings=plan.timings,
            trace_id=plan.trace_id,
            reranker=plan.scorer,
            min_score=plan.threshold,
        )

    def _shown(self, plan: Plan, reason: RefusalReason) -> tuple[ChunkRef, ...]:
        """The closest passages of a refusal. On an offline `no_citations` refusal the top passage comes
        with the chunk before and after it in its document (`_with_context`), and each passage carries
        the sentence most likely to answer (`rag.reader.likely`), to be shown highlighted, not as an
        answer."""
        if reason != "no_citations" or self.reader != "offline" or not plan.closest:
            return plan.closest
        shown, near = self._with_context(plan)
        texts = {b.chunk.chunk_id: b.chunk.text for b in plan.blocks}
        texts.update({c.chunk_id: c.text for c in near})
        missing = [r.chunk_id for r in shown if r.chunk_id not in texts]
        if missing:
            texts.update({c.chunk_id: c.text for c in self.store.get_chunks(missing)})
        return tuple(_with_may_answer(plan.question, ref, texts.get(ref.chunk_id, "")) for ref in shown)

    def _with_context(self, plan: Plan) -> tuple[tuple[ChunkRef, ...], list[Chunk]]:
        """`plan.closest` with the `refusal_neighbours` chunks on each side of the top passage in its
        document put right after it (read under the asker's groups; a chunk boundary often cuts a
        passage from the sentences that answer, just before or after it), and those chunks. A
        neighbour already shown stays where it is; one retrieved keeps its score, one not retrieved
        is scored as Claude's context scores it (`assemble.with_neighbours`: a share of the top score)."""
        width = self.settings.refusal_neighbours
        if width <= 0:
            return plan.closest, []
        groups = plan.principal.reads if plan.principal is not None else None
        shown = {r.chunk_id for r in plan.closest}
        near = [
            c
            for c in self.store.adjacent_chunks([plan.closest[0].chunk_id], groups=groups, width=width)
            if c.chunk_id not in shown
        ]
        if not near:
            return plan.closest, []
        near.sort(key=lambda c: c.start_char)
        offered = {s.chunk.chunk_id: s for s in plan.scored}  # a retrieved neighbour keeps its own score
        unscored = [c for c in near if c.chunk_id not in offered]
        offered.update({s.chunk.chunk_id: s for s in with_neighbours(plan.scored, unscored)})
        added = [ref for c in near for ref in closest_refs([offered[c.chunk_id]], k=1)]
        return (plan.closest[0], *added, *plan.closest[1:]), near

    def _gate_answer(self, plan: Plan) -> None:
        """The answer gate (`rag.reader.gate`) on the offline generator's choice: when the
        calibrated model finds the chosen sentence unlikely to answer the question, the plan refuses
        with `no_citations`, the closest passages and the reason. Only the offline path is gated (with
        Claude the support check judges each sentence); without `answer_gate` (`RAG_ANSWER_GATE=off`) none.
        Before it, a follow-up whose standalone question left out words of its own (`followup.lost_words`)
        is refused the same way, whatever the model would say."""
        generator = self.generator
        if plan.refusal is not None or self.reader != "offline":
            return
        lost = lost_words(plan.asked, plan.question) if plan.history else ()
        if lost:
            message = f"{no_citations_message(self.reader)} {LOST_WORDS_REASON.format(words=', '.join(lost))}"
            plan.refusal = self._refusal(plan, "no_citations", message)
            return
        if not isinstance(generator, Ranking):
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
            searched_for=plan.question,
        )

    def _core(self, plan: Plan, label: str = "draft 1") -> Core:
        return Core(
            blocks=plan.blocks,
            min_overlap=self.settings.min_overlap,
            label=label,
            buffer=SentenceBuffer(native=self.generator.native_citations),
            support=self.support,
            judging=self.judge is not None,
        )

    def _judged(self, plan: Plan, session: Session) -> list[Event]:
        """The current draft's undecided sentences judged in one call (none: no call), as events."""
        items = session.judge_items()
        if not items:
            return []
        if self.judge is None:
            return session.judged(Rulings(failure="no judge"))
        with _timed(plan.timings, "judge"):
            rulings = self.judge.judge(plan.question, items)
        return session.judged(rulings)

    def _ending(self, plan: Plan, session: Session) -> list[Event]:
        """After the last draft: the refusal when no sentence verified (in words that say why: no
        support, or a reply cut short or declined), then `done`."""
        events: list[Event] = []
        last = session.last
        usage = plan.usage + session.usage
        if session.one_sided is not None:
            conflict = session.one_sided
            message = conflict_message(conflict)
            events.append(
                _refusal_event(self._refusal(plan, "conflicting_sources", message, conflict=conflict))
            )
            status: DoneStatus = "abstained"
        elif not grounding_gate(session.shown):
            reason, message = _empty_reason(last, self.reader)
            events.append(_refusal_event(self._refusal(plan, reason, message)))
            status = "abstained"
        else:
            status = "answered"
            if last.cut:
                plan.note = " ".join(filter(None, (plan.note, CUT_NOTE)))
        plan.timings["verify"] = round(sum(d.verify_ms for d in session.drafts), 3)
        declined = last.cut_by == "refusal" and not session.shown  # declined, not cut short
        events.append(
            DoneEvent(
                status=status,
                emitted=len(session.shown),
                dropped=session.withheld,
                cut=last.cut and not declined,
                usage=usage,
                timings=_stamp(plan),
            )
        )
        return events

    def _base(self, plan: Plan) -> Answer:
        """What an answer carries besides its events: the question, closest matches, note, trace id."""
        return Answer(
            question=plan.asked or plan.question,
            searched_for=plan.question,
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

    def _generate(
        self, plan: Plan, stage: str, feedback: Sequence[str] = (), max_tokens: int | None = None
    ) -> tuple[Piece, ...]:
        """One whole draft from the generator, as the pieces the core reads."""
        question, history, focus = self._reading(plan)
        # generators written before the budget, history or focus keywords still work without them
        extra: dict[str, Any] = {}
        if history:
            extra["history"] = history
        if max_tokens is not None:
            extra["max_tokens"] = max_tokens
        if focus:
            extra["focus"] = focus
        with _timed(plan.timings, stage):
            generation = self.generator.generate(question, plan.blocks, feedback=feedback, **extra)
        return draft_pieces(generation)

    def _reading(self, plan: Plan) -> tuple[str, tuple[Turn, ...], tuple[str, ...]]:
        """What the reader is asked, the earlier turns it is sent and the words its answer must say:
        Claude reads a follow-up as asked, after the earlier turns as conversation messages (it
        resolves the references itself); the offline reader reads the standalone question, no turns,
        and the follow-up's own words (`Plan.focus`), which the standalone question may hold beside
        the earlier question's without saying which of them is asked about."""
        if plan.history and self.reader == "claude":
            return plan.asked, plan.history, ()
        return plan.question, (), plan.focus

    def answer(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
        history: Sequence[Turn] = (),
        conversation_id: str = "",
        record: bool = True,
    ) -> Answer:
        """A verified answer or a refusal: the same drafts as `answer_stream` (`core.Session`: a second
        draft with sentence-specific feedback when the first withheld a claim, or a longer one when it
        was cut at `max_tokens` and `retry_max_tokens` is larger), folded into an Answer. If the second
        call fails, the first draft stands, with a note. Raises InvalidQuestion, or
        UpstreamUnavailable when the model call fails and no verified sentence exists.
        `record=False` writes neither the ask log nor the gap queue (a probe, not a person's ask).
        """
        plan = self.plan(
            question,
            top_k=top_k,
            trace_id=trace_id,
            principal=principal,
            history=history,
            conversation_id=conversation_id,
            record=record,
        )
        self._gate_answer(plan)
        if plan.refusal is not None:
            return self._finish(plan, fold(self._base(plan), self._pre_refusal(plan)), ())
        session = self._session(plan, "draft 1")
        events = [self._meta(plan), *session.run(self._generate(plan, "generate"))]
        events += self._judged(plan, session)
        ask = self._second_ask(session)
        if ask is not None:
            events += self._second_sync(plan, session, ask)
        events += session.finish()
        answer = fold(self._base(plan), [*events, *self._ending(plan, session)])
        return self._finish(plan, answer, session.history)

    def _session(self, plan: Plan, label: str) -> Session:
        """The drafts of one answer. A conflict one shown figure turns out to be part of (and with
        Claude, one the front half found) is judged on the whole answer: both sides cited, or line 2.
        Offline, the front half refused a quantity question's conflict already; a question that asks
        for no figure reaches the reader, and a contested figure it copies is caught here."""
        blocks = plan.blocks

        def conflict_of(sentence: Sentence) -> Conflict | None:
            cited = frozenset(c.chunk_id for c in sentence.citations)
            return conflict_about(sentence.text, cited, blocks)

        found = plan.conflict if self.reader == "claude" else None
        return Session(
            first=self._core(plan, label),
            conflict=found,
            conflict_of=conflict_of,
            question=plan.question,
        )

    def _second_ask(self, session: Session) -> SecondDraft | None:
        return session.second_draft(
            max_tokens=self.settings.max_tokens, retry_max_tokens=self.settings.retry_max_tokens
        )

    def _second_sync(self, plan: Plan, session: Session, ask: SecondDraft) -> list[Event]:
        """The second draft's events; a failed call leaves the first draft with a note, or raises when
        nothing of the first verified."""
        try:
            pieces = self._generate(plan, "regenerate", ask.feedback, ask.max_tokens)
        except RagError as exc:
            if not session.shown and not session.held:
                raise
            what = "A retry with a larger budget" if ask.max_tokens else "A second draft"
            plan.note = " ".join(filter(None, (plan.note, f"{what} failed ({exc}).")))
            return []
        session.begin_second(self._core(plan, "draft 2"))
        events = session.run(pieces)
        return events + self._judged(plan, session)

    def _finish(self, plan: Plan, answer: Answer, verdicts: tuple[str, ...]) -> Answer:
        plan.timings["total"] = round((time.perf_counter() - plan.started) * 1000, 3)
        answer = replace(answer, timings=_all_stages(plan.timings))
        if plan.record:
            self._log(plan, answer, verdicts)
        return answer

    def _log(self, plan: Plan, answer: Answer, verdicts: tuple[str, ...]) -> None:
        self.store.log_ask(
            AskRecord(
                trace_id=plan.trace_id,
                question=plan.asked or plan.question,
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
                conversation_id=plan.conversation_id,
                turn=plan.turn,
            )
        )

    async def answer_stream(
        self,
        question: str,
        *,
        top_k: int | None = None,
        trace_id: str | None = None,
        principal: Principal | None = None,
        history: Sequence[Turn] = (),
        conversation_id: str = "",
    ) -> AsyncIterator[Event]:
        """The same drafts as `answer`, as their events are decided: a pre-generation refusal then done;
        or meta, sentence/dropped..., [refusal], done; an error then done when the provider fails
        after the stream began.

        `meta` goes out once the model call is open, so a provider that cannot be reached at all
        raises UpstreamUnavailable before anything is sent (the route answers 503 with Retry-After).
        A second draft (`core.Session`) is read whole, off the event loop, and only what it adds is
        sent: emitted text is never withdrawn. Closing this iterator closes the generator's stream (so
        the model call stops), and the ask is logged whichever way the stream ends.
        """
        plan = await anyio.to_thread.run_sync(
            lambda: self.plan(
                question,
                top_k=top_k,
                trace_id=trace_id,
                principal=principal,
                history=history,
                conversation_id=conversation_id,
            )
        )
        await anyio.to_thread.run_sync(lambda: self._gate_answer(plan))
        seen: list[Event] = []
        session = self._session(plan, "stream")
        try:
            if plan.refusal is not None:
                seen.extend(self._pre_refusal(plan))
                for event in seen:
                    yield event
                return
            async for event in self._stream_events(plan, session):
                seen.append(event)
                yield event
        finally:
            answer = fold(self._base(plan), seen)
            # The ask-log write may wait on an ingest's lock: keep it off the event loop, and
            # shield it so a disconnected client still leaves its ask in the log.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: self._finish(plan, answer, session.history))

    async def _stream_events(self, plan: Plan, session: Session) -> AsyncIterator[Event]:
        question, history, focus = self._reading(plan)
        extra: dict[str, Any] = {"history": history} if history else {"focus": focus} if focus else {}
        stream = self.generator.stream(question, plan.blocks, **extra)
        pieces = aiter(stream)
        generating = time.perf_counter()
        issued = False
        try:
            first = await anext(pieces, None)  # the call is open (raises before `meta` when it cannot be)
            yield self._meta(plan)
            issued = True
            if first is not None:
                for event in session.feed(first):
                    yield event
            async for piece in pieces:
                for event in session.feed(piece):
                    yield event
            for event in session.close():
                yield event
        except RagError as exc:  # the provider failed after the stream began: an error event, no traceback
            if not issued:
                raise
            session.current.close(cut=True)
            for event in session.judged(Rulings(failure=f"not asked: {exc}")):  # what waited, in order
                yield event
            yield ErrorEvent(type=exc.type, message=str(exc))
            yield DoneEvent(
                status="error",
                emitted=len(session.shown),
                dropped=session.withheld,
                cut=True,
                usage=plan.usage + session.usage,
                detail=f"the model provider failed after {len(session.shown)} verified sentence(s)",
                timings=_stamp(plan),
            )
            return
        finally:
            plan.timings["generate"] = round(
                (time.perf_counter() - generating) * 1000 - session.first.verify_ms, 3
            )
            aclose = getattr(pieces, "aclose", None)
            if aclose is not None:
                await aclose()
        for event in await anyio.to_thread.run_sync(lambda: self._judged(plan, session)):
            yield event
        ask = self._second_ask(session)
        if ask is not None:
            try:
                events = await anyio.to_thread.run_sync(lambda: self._second_sync(plan, session, ask))
            except RagError as exc:
                events = [ErrorEvent(type=exc.type, message=str(exc))]
            for event in events:
                yield event
        for event in session.finish():
            yield event
        for event in self._ending(plan, session):
            yield event


def _empty_reason(last: Core, reader: Reader) -> tuple[RefusalReason, str]:
    """Why no sentence was shown, from the last draft's end: declined, cut short, or not supported (in
    the words of the reader that read the passages)."""
    if last.cut_by == "refusal":
        return "reply_declined", REPLY_DECLINED_MESSAGE
    if last.cut:
        return "reply_cut", REPLY_CUT_MESSAGE
    return "no_citations", no_citations_message(reader)


def _name(principal: Principal | None) -> str:
    """The name the ask log and the gap queue record for `principal` (None: the local operator)."""
    return principal.name if principal is not None else Principal.operator().name


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


def _conflict_refs(conflict: Conflict, blocks: Sequence[Block]) -> tuple[ChunkRef, ...]:
    """The two sides' chunks as closest passages, with the section and the retrieval score each had
    among the request's blocks (a side not among them keeps score 0 and no section)."""
    by_id = {b.chunk.chunk_id: b for b in blocks}
    refs: dict[str, ChunkRef] = {}
    for s in conflict.statements:
        block = by_id.get(s.chunk_id)
        refs.setdefault(
            s.chunk_id,
            ChunkRef(
                chunk_id=s.chunk_id,
                title=s.title,
                section=block.chunk.section if block is not None else "",
                url=s.url,
                score=block.score if block is not None else 0.0,
                updated_at=s.updated_at,
            ),
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
        reason=answer.reason,
        message=answer.message,
        closest=answer.closest,
        conflict=answer.conflict,
        searched_for=answer.searched_for,
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
    judge: Judge | None = None
    if settings.use_claude and settings.judge == "on":
        from rag.answer.judge_call import ClaudeJudge

        judge = ClaudeJudge(settings)
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
        judge=judge,
    )
