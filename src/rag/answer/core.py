"""The answer core: generator output in, answer events out, the same for `/ask` and `/ask/stream`.

A `Core` reads one draft's pieces (native text blocks with their claims, or inline `[n]` text),
cuts them into sentences with `parse.SentenceBuffer`, verifies each sentence against the
ORIGINAL chunks, and returns a `SentenceEvent` (verified) or a `DroppedEvent` (withheld, with its
reasons). Sentences that are only structure (a heading, a list intro, a pleasantry) and the
model's own refusal wording are neither shown nor reported. When the model's reply was cut
(`max_tokens`, `refusal`, `pause_turn`), the sentence in progress is discarded, never shown.

With a judge (`Core.judging`), a sentence the rules leave undecided (`Verdict.pending`) waits, and
every later event of its draft waits behind it, so the order is kept; the sentences before it go out
as before. Once the draft has ended, `judge_items` are what one judge call is asked and `judged`
returns the events that waited: a supported sentence with its citations, a rejected one withheld with
the judge's reason, and, when the call failed or gave no ruling for it, withheld for the rules' reasons.

`fold` reads a run of events into an `Answer`, the one fold of the event stream: the streaming
route sends the events, the non-streaming route folds them, the ask log records the fold of either,
and the access log and the metrics read the fold of what each route answered (a stream: what it sent).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from rag.answer.conflicts import asks_for, one_side, presented, states_a_side
from rag.answer.events import (
    DoneEvent,
    DroppedEvent,
    ErrorEvent,
    Event,
    MetaEvent,
    RefusalEvent,
    SentenceEvent,
)
from rag.answer.parse import SentenceBuffer
from rag.answer.prompt import is_refusal
from rag.answer.verify import feedback_lines, verify
from rag.language.lexicon import PLEASANTRY_RE
from rag.language.text import normalise
from rag.support.check import CheckOptions
from rag.support.judge import Item, Ruling, Rulings, Span
from rag.types import (
    CUT_STOP_REASONS,
    Answer,
    Block,
    Citation,
    Conflict,
    Draft,
    Dropped,
    Generation,
    Issue,
    Piece,
    Sentence,
    Usage,
    Verdict,
)

# A figure in digits, or a capitalised word after the first one: an uncited sentence that has
# either states something checkable, so dropping it is worth a regeneration.
_FIGURE_RE = re.compile(r"\d")
_NAME_RE = re.compile(r"(?<=\s)[A-Z][\w-]+")
_HEADING_MAX_WORDS = 8
_END_PUNCT = ".!?"


def is_structure(draft: Draft) -> bool:
    """True for an uncited heading, list intro or pleasantry: layout, not a claim to verify."""
    if draft.claims:
        return False
    text = draft.text.strip().strip("*_").strip()
    if text.endswith(":"):
        return True
    if _FIGURE_RE.search(text):
        return False
    if not text.rstrip("\"'”’)").endswith(tuple(_END_PUNCT)) and len(text.split()) <= _HEADING_MAX_WORDS:
        return True
    return bool(PLEASANTRY_RE.search(text)) and not _NAME_RE.search(text)


def carries_claim(draft: Draft) -> bool:
    """A withheld sentence worth a second draft: it cited something, or states a figure or a name."""
    return bool(draft.claims or _FIGURE_RE.search(draft.text) or _NAME_RE.search(draft.text))


def draft_pieces(generation: Generation) -> tuple[Piece, ...]:
    """The generation as the core reads it: its pieces, or its inline text as one piece, then its end."""
    body = generation.pieces or (Piece(text=generation.text),)
    return (*body, Piece(usage=generation.usage, stop_reason=generation.stop_reason))


@dataclass(slots=True, kw_only=True)
class Core:
    """Cuts one draft's pieces into sentences and verifies each; collects what it decided."""

    blocks: Sequence[Block]
    min_overlap: float
    label: str = "draft 1"
    buffer: SentenceBuffer
    support: CheckOptions | None = None  # the support check of native citations (None: its defaults)
    sentences: list[Sentence] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    failed: list[Verdict] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model_refused: bool = False
    claims_dropped: bool = False
    cut: bool = False
    cut_by: str = ""  # the stop reason that cut the reply ("max_tokens", ...)
    verify_ms: float = 0.0
    judging: bool = False  # undecided sentences wait for the judge (module docstring); off: withheld
    _header: Sentence | None = None  # a table's header row, shown with its first verified row
    _queue: list[Event | Verdict] = field(default_factory=list)  # an undecided verdict and what follows

    def feed(self, piece: Piece) -> list[Event]:
        """Take one piece; return the events of the sentences it completed, in order."""
        if piece.opened:
            return []
        if piece.usage is not None:
            self.usage = self.usage + piece.usage
        if piece.stop_reason in CUT_STOP_REASONS:
            self.cut = True
            self.cut_by = piece.stop_reason
        return self._decide_all(self.buffer.feed(piece))

    def close(self, *, cut: bool = False) -> list[Event]:
        """The output ended: decide what is left, unless the reply was cut (then it is discarded)."""
        self.cut = self.cut or cut
        if self.cut:
            return []
        return self._decide_all(self.buffer.flush())

    def _decide_all(self, drafts: Iterable[Draft]) -> list[Event]:
        events: list[Event] = []
        for draft in drafts:
            decided: Sequence[Event | Verdict | None] = (
                self._decide_row(draft) if draft.cells else [self._decide(draft)]
            )
            for item in decided:
                if item is None:
                    continue
                if self._queue or isinstance(item, Verdict):  # behind an undecided sentence: wait
                    self._queue.append(item)
                else:
                    events.append(item)
        return events

    def judge_items(self) -> list[Item]:
        """The undecided sentences waiting for the judge, as its items (ids 1, 2, ... in order), each
        beside the ORIGINAL text of its cited spans and their documents' titles and dates."""
        by_n = {b.n: b for b in self.blocks}
        waiting = [v for v in self._queue if isinstance(v, Verdict)]
        return [
            Item(id=i, sentence=v.draft.text, spans=tuple(_span(c, by_n) for c in v.pending))
            for i, v in enumerate(waiting, start=1)
        ]

    def judged(self, rulings: Rulings) -> list[Event]:
        """The events that waited, in order, each undecided sentence decided by its ruling (none: the
        call failed, or gave none for it); the call's usage is added to this draft's, once."""
        self.usage = self.usage + rulings.usage
        queue, self._queue = self._queue, []
        events: list[Event] = []
        waiting = 0
        for item in queue:
            if isinstance(item, Verdict):
                waiting += 1
                events.append(self._ruled(item, rulings.of(waiting), rulings))
            else:
                events.append(item)
        return events

    def _ruled(self, verdict: Verdict, ruling: Ruling | None, rulings: Rulings) -> Event:
        draft = verdict.draft
        stage = f"{self.label} judge"
        if ruling is None:
            why = rulings.failure or "no ruling for this sentence"
            self.history.append(f"{verdict_line(verdict, stage)} | judge: {why}")
            return self._withheld(draft, verdict)
        if not ruling.supported:
            refs = "".join(f"[{n}]" for n in sorted({c.n for c in verdict.pending}))
            issue = Issue(
                "judged_unsupported", f"{refs} judged unsupported by {rulings.model}: {ruling.reason}"
            )
            rejected = replace(verdict, issues=(issue,), pending=())
            self.history.append(verdict_line(rejected, stage))
            return self._withheld(draft, rejected)
        kept = replace(verdict, citations=verdict.pending, issues=(), pending=())
        self.history.append(f"{verdict_line(kept, stage)} | {ruling.reason}")
        sentence = Sentence(
            text=draft.text, citations=kept.citations, starts=draft.starts, number=draft.number
        )
        self.sentences.append(sentence)
        return SentenceEvent(sentence=sentence)

    def _decide_row(self, row: Draft) -> list[Event]:
        """A table row, verified cell by cell: a cited cell is shown when its own citations verify, a
        label (uncited cell) stays as written; the row is shown when one of its cited cells is, after
        its table's header row; a cell that fails is left blank and reported."""
        if row.starts == "header":
            cells = tuple(c.text for c in row.cells)
            self._header = Sentence(text=row.text, citations=(), starts="header", cells=cells)
            return []
        shown: list[str] = []
        citations: list[Citation] = []
        events: list[Event] = []
        verified = False
        for cell in row.cells:
            if not cell.claims:
                shown.append(cell.text)
                continue
            event = self._decide(cell, keep=False)
            if isinstance(event, SentenceEvent):
                verified = True
                shown.append(cell.text)
                citations.extend(c for c in event.sentence.citations if c not in citations)
            else:
                shown.append("")
                if event is not None and not isinstance(event, Verdict):
                    events.append(event)
        if not verified:
            return events
        out: list[Event] = []
        if self._header is not None:
            self.sentences.append(self._header)
            out.append(SentenceEvent(sentence=self._header))
            self._header = None
        text = "| " + " | ".join(shown) + " |"
        sentence = Sentence(text=text, citations=tuple(citations), starts="row", cells=tuple(shown))
        self.sentences.append(sentence)
        return [*out, SentenceEvent(sentence=sentence), *events]

    def _decide(self, draft: Draft, *, keep: bool = True) -> Event | Verdict | None:
        """One sentence verified: its `sentence` event (kept among `sentences` unless `keep` is off, as
        for a table cell), its `dropped` event, None for structure and the model's refusal wording, or
        its verdict when it waits for the judge (a whole sentence, not a cell)."""
        started = time.perf_counter()
        verdict = verify([draft], self.blocks, min_overlap=self.min_overlap, support=self.support)[0]
        self.verify_ms += (time.perf_counter() - started) * 1000
        self.history.append(verdict_line(verdict, self.label))
        if verdict.ok:
            sentence = Sentence(
                text=draft.text,
                citations=verdict.citations,
                starts=draft.starts,
                withheld=verdict.issues,
                number=draft.number,
            )
            if keep:
                self.sentences.append(sentence)
            return SentenceEvent(sentence=sentence)
        if is_refusal(draft.text):
            self.model_refused = True  # the model's own refusal wording: an abstention, not a dropped claim
            return None
        if is_structure(draft):
            return None
        if self.judging and keep and verdict.pending:
            return verdict
        return self._withheld(draft, verdict)

    def _withheld(self, draft: Draft, verdict: Verdict) -> DroppedEvent:
        claim = carries_claim(draft)
        self.claims_dropped = self.claims_dropped or claim
        self.failed.append(verdict)
        self.dropped.append(Dropped(text=draft.text, detail=verdict.issues or ("no citation",)))
        return DroppedEvent(dropped=self.dropped[-1], claim=claim)

    @property
    def wants_regeneration(self) -> bool:
        """A second draft may help: a sentence that carried a claim was withheld, and the model did not
        refuse; a cut reply is not regenerated for its cut sentence alone."""
        return self.claims_dropped and not self.model_refused


@dataclass(frozen=True, slots=True, kw_only=True)
class SecondDraft:
    """What a second draft is asked with: the feedback lines and the output budget (None: the usual)."""

    feedback: tuple[str, ...]
    max_tokens: int | None = None


@dataclass(slots=True, kw_only=True)
class Session:
    """One answer's drafts (at most two), the same on both routes, so `/ask` and `/ask/stream` agree.

    The first draft's verified sentences go out as they come until one of its claims is withheld;
    later ones are held. When the first draft wants a second (`second_draft`), the second is asked
    for with feedback naming each withheld sentence and what was already shown; its verified
    sentences go out, except restatements of one already shown. When the second verifies nothing
    new, or cannot be had, the held sentences of the first go out instead. Nothing shown is ever
    taken back, and nothing of a first draft that a second replaced is shown after it.
    """

    first: Core
    second: Core | None = None
    # With Claude: the conflict the front half found (its sentences wait for the end), and what finds one
    # a sentence's figure is part of; a conflict shown one-sided turns the answer into line 2.
    conflict: Conflict | None = None
    conflict_of: Callable[[Sentence], Conflict | None] | None = None
    question: str = ""  # what a conflict is judged against: does it ask for the disputed quantity
    shown: list[Sentence] = field(default_factory=list)
    held: list[Event] = field(default_factory=list)
    waiting: list[Event] = field(default_factory=list)  # sentences held until a conflict is judged
    one_sided: Conflict | None = None  # the conflict the answer showed only one side of
    added: int = 0  # sentences the second draft added
    withheld: int = 0  # `dropped` events sent (a sentence withheld again by the second draft once)
    _withheld_claim: bool = False

    @property
    def current(self) -> Core:
        return self.second if self.second is not None else self.first

    @property
    def drafts(self) -> tuple[Core, ...]:
        return (self.first,) if self.second is None else (self.first, self.second)

    def feed(self, piece: Piece) -> list[Event]:
        """The events to send now for one piece of the current draft."""
        return self._pass(self.current.feed(piece))

    def close(self) -> list[Event]:
        """The current draft's output ended: the events of what it left."""
        return self._pass(self.current.close())

    def run(self, pieces: Iterable[Piece]) -> list[Event]:
        """Feed a whole draft and close it."""
        events = [e for piece in pieces for e in self.feed(piece)]
        return events + self.close()

    def judge_items(self) -> list[Item]:
        """What the current draft asks the judge, once it has ended (`Core.judge_items`)."""
        return self.current.judge_items()

    def judged(self, rulings: Rulings) -> list[Event]:
        """The events to send now that the judge answered (or failed: `Rulings.failure`)."""
        return self._pass(self.current.judged(rulings))

    def _pass(self, events: Iterable[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if isinstance(event, DroppedEvent):
                if self.second is not None and any(d.text == event.dropped.text for d in self.first.dropped):
                    continue  # the second draft withheld the same sentence again: said once
                self._withheld_claim = self._withheld_claim or event.claim
                self.withheld += 1
                out.append(event)
            elif not isinstance(event, SentenceEvent):
                out.append(event)
            elif self.second is None and self._withheld_claim:
                self.held.append(event)
            elif self.second is not None and _restates(event.sentence, [*self.shown, *self._waiting()]):
                continue
            elif self._waits(event.sentence):
                self.waiting.append(event)
                self.added += self.second is not None
            else:
                self.shown.append(event.sentence)
                self.added += self.second is not None
                out.append(event)
        return out

    def _waits(self, sentence: Sentence) -> bool:
        """A sentence waits for the end once a conflict is in play: found before generation, or about
        a figure this sentence states."""
        if self.conflict is None and self.conflict_of is not None:
            self.conflict = self.conflict_of(sentence)
        return self.conflict is not None

    def _waiting(self) -> list[Sentence]:
        return [e.sentence for e in self.waiting if isinstance(e, SentenceEvent)]

    def second_draft(self, *, max_tokens: int, retry_max_tokens: int) -> SecondDraft | None:
        """What to ask a second draft with, once the first has ended; None: the first stands. A claim
        withheld asks for one with feedback; a reply cut at `max_tokens` asks for a longer one when
        `retry_max_tokens` is larger."""
        first = self.first
        longer = retry_max_tokens if first.cut_by == "max_tokens" and retry_max_tokens > max_tokens else None
        if self.second is not None or not (first.wants_regeneration or longer):
            return None
        lines = feedback_lines(first.failed)
        if self.shown and lines:
            said = " ".join(f'"{s.text}"' for s in self.shown)
            lines.append(f"Already shown to the reader, so do not repeat it: {said}")
        return SecondDraft(feedback=tuple(lines), max_tokens=longer)

    def begin_second(self, core: Core) -> None:
        self.second = core

    def finish(self) -> list[Event]:
        """After the last draft: the held sentences of the first, unless the second added something;
        then the sentences that waited for a conflict, unless the answer cites only one side of it. Then,
        when the question asks for the disputed quantity (`conflicts.asks_for`), nothing more is shown
        and `one_sided` says which conflict; when it asks for none, only the sentences stating a side are
        withheld, and the answer is line 2 only when nothing else is left to show."""
        released, self.held = ([] if self.added else self.held), []
        waited, self.waiting = self.waiting, []
        out = [*released, *waited]
        said = [e.sentence for e in out if isinstance(e, SentenceEvent)]
        cited = frozenset(c.chunk_id for s in [*self.shown, *said] for c in s.citations)
        conflict = self.conflict
        sides = [] if conflict is None else [s for s in [*self.shown, *said] if _states_a_side(conflict, s)]
        if conflict is None or not sides or presented(conflict, cited):
            self.shown.extend(said)
            return out
        shown_side = any(s in self.shown for s in sides)  # sent already: only line 2 can qualify it
        if shown_side or asks_for(conflict, self.question) or len(sides) == len(self.shown) + len(said):
            self.one_sided = conflict
            return []
        return self._without_sides(conflict, out)

    def _without_sides(self, conflict: Conflict, events: list[Event]) -> list[Event]:
        """`events` with each sentence that states a side of `conflict` withheld, saying why."""
        out: list[Event] = []
        for event in events:
            if isinstance(event, SentenceEvent) and _states_a_side(conflict, event.sentence):
                text = event.sentence.text
                out.append(DroppedEvent(dropped=Dropped(text=text, detail=(one_side(conflict, text),))))
                self.withheld += 1
            else:
                if isinstance(event, SentenceEvent):
                    self.shown.append(event.sentence)
                out.append(event)
        return out

    @property
    def last(self) -> Core:
        """The draft whose end the answer reports: the second when it added something, else the first."""
        return self.second if self.second is not None and self.added else self.first

    @property
    def usage(self) -> Usage:
        """Every draft's usage, each provider call once."""
        return sum((d.usage for d in self.drafts), Usage())

    @property
    def history(self) -> tuple[str, ...]:
        return tuple(line for d in self.drafts for line in d.history)


def _states_a_side(conflict: Conflict, sentence: Sentence) -> bool:
    return states_a_side(conflict, sentence.text, frozenset(c.chunk_id for c in sentence.citations))


def _span(citation: Citation, by_n: dict[int, Block]) -> Span:
    """A citation as the judge sees it: its ORIGINAL text, its document's title and date."""
    block = by_n.get(citation.n)
    updated = block.chunk.updated_at if block is not None else None
    return Span(
        text=citation.cited_text, title=citation.title, updated=updated.isoformat() if updated else ""
    )


def _restates(sentence: Sentence, shown: Sequence[Sentence]) -> bool:
    """A second draft's sentence that says again what a shown one says: the same words, or the very
    same cited spans."""
    spans = {(c.chunk_id, c.start, c.end) for c in sentence.citations}
    words = normalise(sentence.text)
    for other in shown:
        if normalise(other.text) == words:
            return True
        if spans and spans == {(c.chunk_id, c.start, c.end) for c in other.citations}:
            return True
    return False


def run(core: Core, pieces: Iterable[Piece]) -> list[Event]:
    """Feed every piece to `core` and close it: the sentence and dropped events of one whole draft."""
    events: list[Event] = []
    for piece in pieces:
        events.extend(core.feed(piece))
    events.extend(core.close())
    return events


def verdict_line(verdict: Verdict, stage: str) -> str:
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


def joined_text(sentences: Sequence[Sentence]) -> str:
    """The sentences as one text, keeping paragraphs (blank line), list items ("- "), numbered items
    ("2. ") and table rows (a header with its rule, then one line per row)."""
    parts: list[str] = []
    for i, s in enumerate(sentences):
        if s.starts == "item":
            parts.append(("\n" if i else "") + "- " + s.text)
        elif s.starts == "numbered":
            parts.append(("\n" if i else "") + f"{s.number or 1}. " + s.text)
        elif s.starts == "header":
            rule = "|" + "---|" * len(s.cells)
            parts.append(("\n\n" if i else "") + s.text + "\n" + rule)
        elif s.starts == "row":
            first = i == 0 or sentences[i - 1].starts not in ("header", "row")
            parts.append(("\n\n" if first and i else "\n" if i else "") + s.text)
        elif s.starts == "paragraph" and i:
            parts.append("\n\n" + s.text)
        else:
            parts.append((" " if i else "") + s.text)
    return "".join(parts)


def fold(base: Answer, events: Iterable[Event]) -> Answer:
    """Read a run of events into an Answer; `base` carries what the events do not (question, closest,
    note, trace id). Sentences and dropped sentences are kept in event order; usage, timings and
    status are `done`'s (a run that never got there keeps `base`'s, with status None)."""
    sentences: list[Sentence] = []
    dropped: list[Dropped] = []
    answer = base
    for event in events:
        if isinstance(event, SentenceEvent):
            sentences.append(event.sentence)
        elif isinstance(event, DroppedEvent):
            dropped.append(event.dropped)
        elif isinstance(event, MetaEvent):
            answer = replace(answer, blocks=event.blocks, issued=True)
        elif isinstance(event, RefusalEvent):
            answer = replace(
                answer,
                abstained=True,
                reason=event.reason,
                message=event.message,
                closest=event.closest,
                conflict=event.conflict,
            )
        elif isinstance(event, DoneEvent):
            answer = replace(
                answer, usage=event.usage, cut=event.cut, timings=event.timings, status=event.status
            )
        elif isinstance(event, ErrorEvent):
            answer = replace(answer, cut=True, error=event.type)
    if answer.abstained:
        sentences = []
    return replace(
        answer,
        sentences=tuple(sentences),
        text=joined_text(sentences),
        citations=unique_citations(sentences),
        dropped=tuple(dropped),
    )
