"""What content owners review: refused questions grouped by wording, answers marked wrong, exports.

Pure functions over ask-log rows (the dicts `Store.ask_log`/`recent_asks` return), coverage-gap
entries and feedback; the `/admin` routes read the store and call these.

Grouping: two questions are "similar" when the Jaccard overlap of their stemmed content terms
(`rag.language.text.term_set`) is at least `SIMILAR` (0.5): "How do I export my data?" and "Can I
export all my data?" group; "export data" and "delete data" do not. Each question joins the group whose first
question it overlaps most; questions without content terms group by their normalised text.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.language.text import normalise, term_set
from rag.types import Feedback, Gap

SIMILAR = 0.5
# Passages shown per group, and trace ids kept per group (newest first).
CLOSEST_SHOWN = 3
TRACES_KEPT = 20
# Spreadsheet applications run a cell that starts with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(slots=True, kw_only=True)
class RefusalGroup:
    """Refused questions worded alike: how often, why, and the passages retrieval came closest with."""

    question: str
    count: int = 0
    questions: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    closest: Counter[str] = field(default_factory=Counter)
    traces: list[str] = field(default_factory=list)
    last_asked: str = ""
    top_score: float = 0.0
    terms: frozenset[str] = frozenset()

    def as_json(self, titles: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        return {
            "question": self.question,
            "count": self.count,
            "questions": [{"question": q, "count": n} for q, n in self.questions.most_common()],
            "reasons": dict(self.reasons.most_common()),
            "closest": [
                {"chunk_id": cid, "count": n, **titles.get(cid, {})}
                for cid, n in self.closest.most_common(CLOSEST_SHOWN)
            ],
            "traces": self.traces,
            "last_asked": self.last_asked,
            "top_score": round(self.top_score, 4),
        }


def closest_of(row: Mapping[str, Any], gaps: Mapping[str, Gap]) -> list[str]:
    """The passages one refused ask came closest with: its blocks, else its best retrieved chunks,
    else the coverage-gap queue's entry for the question (older logs)."""
    blocks = [str(b[1]) for b in row.get("blocks") or () if len(b) > 1]
    if blocks:
        return blocks
    retrieved = (row.get("retrieval") or {}).get("retrieved") or ()
    if retrieved:
        return [str(r[0]) for r in retrieved[:CLOSEST_SHOWN]]
    gap = gaps.get(normalise(str(row.get("question", ""))))
    return list(gap.closest) if gap else []


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def group_refusals(rows: Iterable[Mapping[str, Any]], gaps: Iterable[Gap] = ()) -> list[RefusalGroup]:
    """Refusal rows (newest first) grouped by similar questions, most asked group first."""
    by_question = {normalise(g.question): g for g in gaps}
    groups: list[RefusalGroup] = []
    exact: dict[str, RefusalGroup] = {}
    for row in rows:
        if not row.get("abstained"):
            continue
        question = str(row.get("question", "")).strip()
        terms = term_set(question)
        group = _joined_group(groups, exact, question, terms)
        if group is None:
            group = RefusalGroup(question=question, terms=terms, last_asked=str(row.get("ts", "")))
            groups.append(group)
            if not terms:
                exact[normalise(question)] = group
        _count_refusal(group, row, question, by_question)
    for group in groups:
        group.question = group.questions.most_common(1)[0][0]
    return sorted(groups, key=lambda g: (-g.count, g.question))


def _joined_group(
    groups: Sequence[RefusalGroup], exact: Mapping[str, RefusalGroup], question: str, terms: frozenset[str]
) -> RefusalGroup | None:
    """The group a refused question joins: the most similar one (at least SIMILAR) by terms, or for a
    question without terms the one of the same normalised text; None to start a new group."""
    if not terms:
        return exact.get(normalise(question))
    best = max(groups, key=lambda g: _similarity(terms, g.terms), default=None)
    if best is not None and _similarity(terms, best.terms) >= SIMILAR:
        return best
    return None


def _count_refusal(
    group: RefusalGroup, row: Mapping[str, Any], question: str, gaps: Mapping[str, Gap]
) -> None:
    """Add one refusal row to `group`: its question, reason, closest passages, trace and top score."""
    group.count += 1
    group.questions[question] += 1
    group.reasons[str(row.get("reason", ""))] += 1
    group.closest.update(closest_of(row, gaps))
    if len(group.traces) < TRACES_KEPT:
        group.traces.append(str(row.get("trace_id", "")))
    group.top_score = max(group.top_score, float(row.get("top_score") or 0.0))


def wrong_answers(
    feedback: Iterable[Feedback], asks: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Answers marked wrong, newest first, with the answer and refusal reason the ask log holds."""
    out = []
    for item in feedback:
        logged = asks.get(item.trace_id) or {}
        out.append(
            {
                "trace_id": item.trace_id,
                "created_at": item.created_at,
                "question": item.question or logged.get("question", ""),
                "note": item.note,
                "answer": logged.get("answer", ""),
                "reason": logged.get("reason", ""),
                "logged": bool(logged),
            }
        )
    return out


def refusal_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One refused ask, flat, for the admin list and the CSV export."""
    retrieval = row.get("retrieval") or {}
    return {
        "trace_id": row.get("trace_id", ""),
        "ts": row.get("ts", ""),
        "question": row.get("question", ""),
        "reason": row.get("reason", ""),
        "top_score": row.get("top_score", 0.0),
        "threshold": retrieval.get("threshold", ""),
        "reranker": retrieval.get("reranker", ""),
        "closest": " ".join(str(b[1]) for b in row.get("blocks") or () if len(b) > 1)
        or " ".join(str(r[0]) for r in (retrieval.get("retrieved") or ())[:CLOSEST_SHOWN]),
    }


def ask_row_flat(row: Mapping[str, Any]) -> dict[str, Any]:
    """One ask, flat (answer, outcome, usage and total time), for the CSV export of the ask log."""
    usage = row.get("usage") or {}
    timings = row.get("timings") or {}
    retrieval = row.get("retrieval") or {}
    return {
        "trace_id": row.get("trace_id", ""),
        "ts": row.get("ts", ""),
        "question": row.get("question", ""),
        "reason": row.get("reason", ""),
        "abstained": row.get("abstained", False),
        "top_score": row.get("top_score", 0.0),
        "threshold": retrieval.get("threshold", ""),
        "answer": row.get("answer", ""),
        "model_calls": usage.get("calls", 0),
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "total_ms": timings.get("total", ""),
    }


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """`rows` as CSV with a header line; a cell a spreadsheet would run as a formula is prefixed with '."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue()
