"""Evaluation cases: the golden set for the bundled corpus and the three external samples.

Every loader returns frozen dataclasses in file order; `limit` keeps the first N rows.
The external files are third-party data (see their README); they are read, never written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rag.errors import ConfigError

GoldenLabel = Literal["answer", "abstain", "conflict"]
ExternalName = Literal["squad2", "attribution", "conflicts"]

EXTERNAL_FILES: dict[str, str] = {
    "squad2": "squad2_dev_unanswerable.jsonl",
    "attribution": "attributionbench_claims.jsonl",
    "conflicts": "ramdocs_numeric_conflicts.jsonl",
}
_LABELS = frozenset({"answer", "abstain", "conflict"})


def repo_root() -> Path:
    """The project checkout this module runs from (src/rag/evals/ is three levels below it)."""
    return Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenCase:
    """One golden question. `chunks` are the supporting chunk ids (answer cases); `kind` is far|near or ""."""

    id: str
    question: str
    label: GoldenLabel
    chunks: tuple[str, ...] = ()
    expect: str = ""
    kind: str = ""

    @property
    def should_abstain(self) -> bool:
        """True for cases the system must not answer outright (off topic, near miss, conflict)."""
        return self.label != "answer"


@dataclass(frozen=True, slots=True, kw_only=True)
class SquadCase:
    """A SQuAD 2.0 question against one paragraph; `answers` is empty when unanswerable."""

    id: str
    title: str
    question: str
    context: str
    answerable: bool
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AttributionCase:
    """An AttributionBench (claim, evidence) pair; `supported` is the source dataset's label."""

    id: str
    split: str
    src_dataset: str
    question: str
    claim: str
    references: tuple[str, ...]
    supported: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ConflictDoc:
    text: str
    type: str
    answer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConflictCase:
    """A RAMDocs question with its documents; `has_misinfo` marks injected wrong answers."""

    id: str
    question: str
    documents: tuple[ConflictDoc, ...]
    gold_answers: tuple[str, ...]
    wrong_answers: tuple[str, ...]
    has_misinfo: bool
    ambiguous: bool


SupportLabel = Literal["faithful", "harmful"]
SUPPORT_SET = "fixtures/support/claims.jsonl"


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportCase:
    """A sentence and the verbatim span(s) it cites (`doc`/`span`, and `doc2`/`span2` for merged
    sentences): `faithful` must be kept, `harmful` withheld (fixtures/support/README.md)."""

    id: str
    doc: str
    span: str
    sentence: str
    label: SupportLabel
    kind: str
    split: str
    doc2: str = ""
    span2: str = ""


def load_support(path: str | Path = SUPPORT_SET, *, limit: int | None = None) -> list[SupportCase]:
    """The support calibration set; a row without its fields or with an unknown label raises ConfigError."""
    source = resolve_dataset(path)
    cases = []
    for lineno, row in _rows(source, limit):
        label = row.get("label")
        if label not in ("faithful", "harmful") or not all(
            row.get(k) for k in ("id", "doc", "span", "sentence")
        ):
            raise ConfigError(f"{source}:{lineno}: needs id, doc, span, sentence and label faithful|harmful")
        cases.append(
            SupportCase(
                id=str(row["id"]),
                doc=str(row["doc"]),
                span=str(row["span"]),
                sentence=str(row["sentence"]),
                label=label,
                kind=str(row.get("kind") or ""),
                split=str(row.get("split") or ""),
                doc2=str(row.get("doc2") or ""),
                span2=str(row.get("span2") or ""),
            )
        )
    return cases


def _rows(path: Path, limit: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        count = 0
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if limit is not None and count >= limit:
                return
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{path}:{lineno}: expected a JSON object")
            count += 1
            yield lineno, row


def jsonl_rows(path: Path, limit: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-blank line of a JSONL file, at most `limit`; ConfigError (file:line)
    for a line that is not a JSON object."""
    return _rows(path, limit)


def resolve_dataset(path: str | Path) -> Path:
    """A dataset path as given, else relative to the repo root; ConfigError when neither exists."""
    candidate = Path(path)
    for option in (candidate, repo_root() / candidate):
        if option.is_file():
            return option
    raise ConfigError(f"eval set not found: {str(path)!r}")


def load_golden(path: str | Path, *, limit: int | None = None) -> list[GoldenCase]:
    """Golden cases from JSONL; a row with a missing field or an unknown label raises ConfigError."""
    source = resolve_dataset(path)
    return [_golden_case(row, f"{source}:{lineno}") for lineno, row in _rows(source, limit)]


def _golden_case(row: dict[str, Any], where: str) -> GoldenCase:
    """One golden row as a case; ConfigError (naming `where`, file:line) when a field is missing."""
    _check_golden(row, where)
    return GoldenCase(
        id=str(row["id"]),
        question=str(row["question"]),
        label=row["label"],
        chunks=tuple(str(c) for c in row.get("chunks") or ()),
        expect=str(row.get("expect") or ""),
        kind=str(row.get("kind") or ""),
    )


def _check_golden(row: dict[str, Any], where: str) -> None:
    label = row.get("label")
    if label not in _LABELS or not row.get("question") or not row.get("id"):
        raise ConfigError(f"{where}: needs id, question and a label in {sorted(_LABELS)}")
    if label == "answer" and not (row.get("chunks") and row.get("expect")):
        raise ConfigError(f"{where}: an answer case needs chunks and expect")


def external_dir(configured: str = "") -> Path:
    """The samples' folder: `configured` (RAG_EVAL_EXTERNAL_DIR), else <repo>/../shared/eval-external."""
    return Path(configured) if configured else repo_root().parent / "shared" / "eval-external"


def external_path(name: str, directory: Path) -> Path:
    """The file of one external set; ConfigError with the expected location when it is absent."""
    if name not in EXTERNAL_FILES:
        raise ConfigError(f"unknown external set {name!r}; choose one of {sorted(EXTERNAL_FILES)}")
    path = directory / EXTERNAL_FILES[name]
    if not path.is_file():
        raise ConfigError(
            f"external benchmark files not found at {directory} (missing {EXTERNAL_FILES[name]}); "
            "they live in shared/eval-external next to the repository, or set RAG_EVAL_EXTERNAL_DIR"
        )
    return path


def load_squad2(directory: Path, *, limit: int | None = None) -> list[SquadCase]:
    return [
        SquadCase(
            id=str(row["id"]),
            title=str(row.get("title", "")),
            question=str(row["question"]),
            context=str(row["context"]),
            answerable=bool(row["answerable"]),
            answers=tuple(str(a) for a in row.get("answers") or ()),
        )
        for _, row in _rows(external_path("squad2", directory), limit)
    ]


def load_attribution(directory: Path, *, limit: int | None = None) -> list[AttributionCase]:
    return [
        AttributionCase(
            id=str(row["id"]),
            split=str(row.get("split", "")),
            src_dataset=str(row.get("src_dataset", "")),
            question=str(row.get("question", "")),
            claim=str(row["claim"]),
            references=tuple(str(r) for r in row.get("references") or ()),
            supported=bool(row["supported"]),
        )
        for _, row in _rows(external_path("attribution", directory), limit)
    ]


def load_conflicts(directory: Path, *, limit: int | None = None) -> list[ConflictCase]:
    return [
        ConflictCase(
            id=str(row["id"]),
            question=str(row["question"]),
            documents=tuple(
                ConflictDoc(
                    text=str(d.get("text", "")), type=str(d.get("type", "")), answer=str(d.get("answer", ""))
                )
                for d in row.get("documents") or ()
            ),
            gold_answers=tuple(str(a) for a in row.get("gold_answers") or ()),
            wrong_answers=tuple(str(a) for a in row.get("wrong_answers") or ()),
            has_misinfo=bool(row.get("has_misinfo", False)),
            ambiguous=bool(row.get("ambiguous", False)),
        )
        for _, row in _rows(external_path("conflicts", directory), limit)
    ]
