"""Follow-up questions measured: does a later turn's answer-bearing passage reach the reader?

Input: JSONL, one conversation per line:
`{"id", "corpus", "turns": [{"question", "label", "chunks", "expect", "kind"?, "standalone"?}, ...]}`;
`kind` (follow-ups) is elliptical | self_contained | topic_switch | unanswerable, `label` answer |
unanswerable, `corpus` a folder under fixtures/ ("corpus": fixtures/corpus; "holdout7":
fixtures/holdout7/corpus) unless the run names one directory for every conversation.

For every follow-up (turn 2 onward), the whole request path runs with the earlier turns (their
questions, and their expected facts standing in for the answers shown), without them (the follow-up
alone), and as its self-contained rewrite (`standalone`, when given): with Claude configured (the
recording reader of `rag.evals.reach`, so no model is called) and with the offline reader. Reach is
measured on answerable follow-ups; offline precision when answered counts every follow-up answered with
its earlier turns (an unanswerable one answered is wrong). First turns are measured alone, as single
questions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rag.answer.pipeline import Pipeline, build_pipeline
from rag.config import Settings
from rag.errors import ConfigError
from rag.evals.datasets import GoldenCase, jsonl_rows, repo_root, resolve_dataset
from rag.evals.metrics import contains_fact
from rag.evals.reach import RecordingReader
from rag.evals.runner import corpus_store
from rag.types import Answer, Turn

FollowUpKind = Literal["elliptical", "self_contained", "topic_switch", "unanswerable"]
KINDS: tuple[FollowUpKind, ...] = ("elliptical", "self_contained", "topic_switch", "unanswerable")
_LABELS = frozenset({"answer", "unanswerable"})
Variant = Literal["with", "without", "standalone"]
VARIANTS: tuple[Variant, ...] = ("with", "without", "standalone")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationTurn:
    question: str
    label: str
    chunks: tuple[str, ...] = ()
    expect: str = ""
    kind: str = ""
    standalone: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    id: str
    corpus: str
    turns: tuple[ConversationTurn, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowUpResult:
    """One follow-up, per variant: whether a labelled chunk reached Claude (`claude`) and the offline
    reader (`offline`: read, or among the closest passages of its refusal); None: the variant was
    not run (no `standalone` given, or an unanswerable follow-up, whose reach means nothing)."""

    id: str
    kind: str
    label: str
    searched_for: str
    claude: dict[str, bool | None]
    offline: dict[str, bool | None]
    answered: bool  # offline, with the earlier turns
    correct: bool  # ... and the expected fact is in the answer (never for an unanswerable follow-up)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationReport:
    dataset: str
    stores: tuple[str, ...]
    first_turns: tuple[tuple[str, bool, bool], ...]  # (id, reached Claude, reached offline)
    follow_ups: tuple[FollowUpResult, ...]

    def json(self) -> dict[str, Any]:
        answerable = [f for f in self.follow_ups if f.label == "answer"]
        answered = [f for f in self.follow_ups if f.answered]
        return {
            "set": self.dataset,
            "stores": list(self.stores),
            "conversations": len(self.first_turns),
            "first_turn_reach_claude": _share([c for _, c, _ in self.first_turns]),
            "first_turn_reach_offline": _share([o for _, _, o in self.first_turns]),
            "follow_ups": len(self.follow_ups),
            "answerable_follow_ups": len(answerable),
            "reach": _reach(answerable),
            "reach_by_kind": {
                kind: _reach(group) for kind in KINDS if (group := [f for f in answerable if f.kind == kind])
            },
            "offline_answered": len(answered),
            "offline_precision_when_answered": _share([f.correct for f in answered]),
            "missed_claude_with_history": [f.id for f in answerable if f.claude["with"] is False],
            "missed_offline_with_history": [f.id for f in answerable if f.offline["with"] is False],
            "searched_for": {f.id: f.searched_for for f in self.follow_ups},
        }


def _share(flags: Sequence[bool | None]) -> float | None:
    known = [f for f in flags if f is not None]
    return round(sum(known) / len(known), 4) if known else None


def _reach(results: Sequence[FollowUpResult]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for variant in VARIANTS:
        out[f"claude_{variant}"] = _share([r.claude[variant] for r in results])
        out[f"offline_{variant}"] = _share([r.offline[variant] for r in results])
    return out


def load_conversations(path: str | Path, *, limit: int | None = None) -> list[Conversation]:
    """Conversations from JSONL; a row without an id, a corpus or turns, or a turn without a question or
    with an unknown label or kind, raises ConfigError naming file:line."""
    source = resolve_dataset(path)
    return [_conversation(row, f"{source}:{lineno}") for lineno, row in jsonl_rows(source, limit)]


def _conversation(row: dict[str, Any], where: str) -> Conversation:
    turns = row.get("turns")
    if not row.get("id") or not isinstance(turns, list) or not turns:
        raise ConfigError(f"{where}: a conversation needs an id and a non-empty list of turns")
    return Conversation(
        id=str(row["id"]),
        corpus=str(row.get("corpus") or "corpus"),
        turns=tuple(_turn(t, f"{where} turn {i}") for i, t in enumerate(turns, start=1)),
    )


def _turn(row: Any, where: str) -> ConversationTurn:
    if not isinstance(row, dict) or not row.get("question") or row.get("label") not in _LABELS:
        raise ConfigError(f"{where}: needs a question and a label in {sorted(_LABELS)}")
    kind = str(row.get("kind") or "")
    if kind and kind not in KINDS:
        raise ConfigError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if row["label"] == "answer" and not row.get("chunks"):
        raise ConfigError(f"{where}: an answer turn needs chunks")
    return ConversationTurn(
        question=str(row["question"]),
        label=str(row["label"]),
        chunks=tuple(str(c) for c in row.get("chunks") or ()),
        expect=str(row.get("expect") or ""),
        kind=kind,
        standalone=str(row.get("standalone") or ""),
    )


def corpus_dir(name: str) -> Path:
    """The folder a conversation's `corpus` names: fixtures/corpus for "corpus", else
    fixtures/<name>/corpus (fixtures/<name> when it has no corpus folder)."""
    fixtures = repo_root() / "fixtures"
    if name == "corpus":
        return fixtures / "corpus"
    nested = fixtures / name / "corpus"
    return nested if nested.is_dir() else fixtures / name


@dataclass(slots=True)
class _Readers:
    claude: Pipeline
    offline: Pipeline
    recorder: RecordingReader

    def sent_to_claude(self, question: str, history: Sequence[Turn]) -> list[str]:
        """The chunk ids the recording reader was sent for `question` (none: refused before generation)."""
        before = len(self.recorder.sent)
        self.claude.answer(question, history=history)
        return [b.chunk.chunk_id for call in self.recorder.sent[before:] for b in call]


def run_conversations(
    settings: Settings,
    dataset: str | Path,
    *,
    corpus: str | Path | None = None,
    limit: int | None = None,
    prepared: Mapping[Path, Path] | None = None,
) -> ConversationReport:
    """The follow-up report of `dataset`; `corpus` one directory for every conversation (None: each
    conversation's own `corpus`), ingested fresh, unless `prepared` maps that directory to a SQLite
    store already holding it (embedded, say), which is then read through a private copy."""
    conversations = load_conversations(dataset, limit=limit)
    offline_settings = settings.model_copy(update={"anthropic_api_key": "", "mock": True})
    firsts: list[tuple[str, bool, bool]] = []
    results: list[FollowUpResult] = []
    stores: list[str] = []
    for directory, group in _by_corpus(conversations, corpus):
        cases = [_case(c.id, t) for c in group for t in c.turns if t.label == "answer"]
        db = (prepared or {}).get(directory)
        opened = (
            corpus_store(offline_settings.model_copy(update={"db": str(db)}), cases)
            if db is not None
            else corpus_store(offline_settings, cases, corpus=directory)
        )
        with opened as (store, note):
            stores.append(note)
            recorder = RecordingReader()
            readers = _Readers(
                claude=build_pipeline(offline_settings, store=store, generator=recorder),
                offline=build_pipeline(offline_settings, store=store),
                recorder=recorder,
            )
            for conversation in group:
                firsts.append(_first_turn(readers, conversation))
                results.extend(_follow_ups(readers, conversation))
    return ConversationReport(
        dataset=str(dataset), stores=tuple(stores), first_turns=tuple(firsts), follow_ups=tuple(results)
    )


def _by_corpus(
    conversations: Sequence[Conversation], corpus: str | Path | None
) -> Iterator[tuple[Path, list[Conversation]]]:
    if corpus is not None:
        yield Path(corpus), list(conversations)
        return
    groups: dict[str, list[Conversation]] = {}
    for conversation in conversations:
        groups.setdefault(conversation.corpus, []).append(conversation)
    for name, group in groups.items():
        yield corpus_dir(name), group


def _case(conversation_id: str, turn: ConversationTurn) -> GoldenCase:
    return GoldenCase(
        id=conversation_id, question=turn.question, label="answer", chunks=turn.chunks, expect=turn.expect
    )


def _labelled(turn: ConversationTurn, chunk_ids: Sequence[str]) -> bool:
    return any(c in turn.chunks for c in chunk_ids)


def _offline_reached(turn: ConversationTurn, answer: Answer) -> bool:
    if not answer.abstained:
        return _labelled(turn, [b.chunk.chunk_id for b in answer.blocks])
    return _labelled(turn, [r.chunk_id for r in answer.closest])


def _first_turn(readers: _Readers, conversation: Conversation) -> tuple[str, bool, bool]:
    first = conversation.turns[0]
    if first.label != "answer":
        return conversation.id, False, False
    to_claude = _labelled(first, readers.sent_to_claude(first.question, ()))
    return conversation.id, to_claude, _offline_reached(first, readers.offline.answer(first.question))


def _follow_ups(readers: _Readers, conversation: Conversation) -> Iterator[FollowUpResult]:
    for i, turn in enumerate(conversation.turns[1:], start=2):
        history = tuple(Turn(question=t.question, answer=t.expect) for t in conversation.turns[: i - 1])
        asked: dict[Variant, tuple[str, tuple[Turn, ...]] | None] = {
            "with": (turn.question, history),
            "without": (turn.question, ()),
            "standalone": (turn.standalone, ()) if turn.standalone else None,
        }
        claude: dict[str, bool | None] = {}
        offline: dict[str, bool | None] = {}
        with_history: Answer | None = None
        for variant, ask in asked.items():
            if ask is None:
                claude[variant] = offline[variant] = None
                continue
            answer = readers.offline.answer(ask[0], history=ask[1])
            with_history = answer if variant == "with" else with_history
            if turn.label != "answer":
                claude[variant] = offline[variant] = None
                continue
            claude[variant] = _labelled(turn, readers.sent_to_claude(*ask))
            offline[variant] = _offline_reached(turn, answer)
        assert with_history is not None
        answered = not with_history.abstained
        yield FollowUpResult(
            id=f"{conversation.id}/{i}",
            kind=turn.kind,
            label=turn.label,
            searched_for=with_history.searched_for,
            claude=claude,
            offline=offline,
            answered=answered,
            correct=answered and turn.label == "answer" and contains_fact(with_history.text, turn.expect),
        )
