"""The support set (fixtures/support/claims.jsonl): the verifier judging Claude-style sentences.

Each case is run as the native contract runs it: the cited document's chunks (read and chunked from
fixtures/corpus as ingest would) become the request's blocks, the chunk holding the span is block 1
(and the chunk holding `span2` block 2), the sentence goes through the same tidying the parser applies,
and `verify` judges it with a native claim (`cited_text` = the span) per cited block. A faithful case
counts as kept when every resulting sentence is kept; a harmful case as withheld when any is withheld.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag.answer.parse import parse_inline
from rag.answer.verify import verify
from rag.evals.datasets import SUPPORT_SET, SupportCase, load_support, repo_root
from rag.ingest.chunking import chunk_document
from rag.ingest.formats import parse_document
from rag.support.check import CheckOptions
from rag.types import Block, Chunk, Claim, Draft, Verdict

CORPUS = "fixtures/corpus"
MAX_BLOCKS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportOutcome:
    case: SupportCase
    kept: bool
    issues: tuple[str, ...]
    undecided: bool = False  # withheld, and every withheld sentence would go to the judge (`pending`)

    @property
    def correct(self) -> bool:
        return self.kept == (self.case.label == "faithful")


@lru_cache(maxsize=64)
def _chunks(doc: str, corpus: str) -> tuple[Chunk, ...]:
    root = Path(corpus)
    path = root / doc
    document = parse_document(path.read_bytes(), path, root=root)
    return tuple(chunk_document(document))


def _holding(chunks: Sequence[Chunk], span: str) -> int:
    squashed = " ".join(span.split())
    for i, chunk in enumerate(chunks):
        if span in chunk.text or squashed in " ".join(chunk.text.split()):
            return i
    return -1


def case_blocks(case: SupportCase, corpus: str) -> tuple[list[Block], list[Claim]]:
    """The blocks of one case (cited chunks first, then neighbours of the first) and its claims."""
    cited = _cited(case, corpus)
    neighbours = _neighbours(case, corpus, [c for c, _ in cited])
    chosen = [c for c, _ in cited] + neighbours[: max(0, MAX_BLOCKS - len(cited))]
    blocks = [Block(n=i, chunk=c, score=1.0, sent_text=c.text) for i, c in enumerate(chosen, start=1)]
    claims = [Claim(n=i, cited_text=span) for i, (_, span) in enumerate(cited, start=1)]
    return blocks, claims


def _cited(case: SupportCase, corpus: str) -> list[tuple[Chunk, str]]:
    """(chunk holding the span, span) for each of the case's cited spans; a span no chunk holds gets a
    chunk of its own."""
    cited: list[tuple[Chunk, str]] = []
    for doc, span in ((case.doc, case.span), (case.doc2, case.span2)):
        if not doc or not span:
            continue
        chunks = _chunks(doc, corpus)
        at = _holding(chunks, span)
        chunk = chunks[at] if at >= 0 else _loose_chunk(doc, span, len(cited))
        cited.append((chunk, span))
    return cited


def _neighbours(case: SupportCase, corpus: str, cited: Sequence[Chunk]) -> list[Chunk]:
    """The other chunks of the case's first document, nearest to its cited span first."""
    first_doc = _chunks(case.doc, corpus)
    at = _holding(first_doc, case.span)
    return sorted(
        (c for i, c in enumerate(first_doc) if all(c.chunk_id != x.chunk_id for x in cited)),
        key=lambda c: abs(first_doc.index(c) - at),
    )


def _loose_chunk(doc: str, span: str, i: int) -> Chunk:
    return Chunk(chunk_id=f"{doc}#span{i}", doc_id=doc, title=doc, section="", text=span, end_char=len(span))


def judge_case(
    case: SupportCase, *, min_overlap: float, corpus: str, support: CheckOptions | None = None
) -> SupportOutcome:
    blocks, claims = case_blocks(case, corpus)
    drafts = [replace(d, claims=tuple(claims)) for d in parse_inline(case.sentence)] or [
        Draft(text=case.sentence, claims=tuple(claims))
    ]
    verdicts: list[Verdict] = verify(drafts, blocks, min_overlap=min_overlap, support=support)
    kept = all(v.ok for v in verdicts)
    undecided = not kept and all(v.ok or v.pending for v in verdicts)
    issues = tuple(i for v in verdicts for i in v.issues)
    return SupportOutcome(case=case, kept=kept, issues=issues, undecided=undecided)


def support_metrics(outcomes: Sequence[SupportOutcome]) -> dict[str, Any]:
    """Share of faithful sentences kept and of harmful ones withheld, overall and per kind."""
    faithful = [o for o in outcomes if o.case.label == "faithful"]
    harmful = [o for o in outcomes if o.case.label == "harmful"]
    kinds = sorted({o.case.kind for o in outcomes})

    def rate(group: Sequence[SupportOutcome]) -> float | None:
        return round(sum(o.correct for o in group) / len(group), 4) if group else None

    return {
        "items": len(outcomes),
        "faithful_kept": rate(faithful),
        "harmful_withheld": rate(harmful),
        "accuracy": rate(outcomes),
        # withheld by the rules only for low overlap, nothing against them: what the judge is asked
        "to_judge": {
            "faithful": sum(o.undecided for o in faithful),
            "harmful": sum(o.undecided for o in harmful),
        },
        "by_kind": {
            k: {
                "n": sum(o.case.kind == k for o in outcomes),
                "correct": rate([o for o in outcomes if o.case.kind == k]),
            }
            for k in kinds
        },
    }


def run_support(
    *,
    min_overlap: float,
    path: str = SUPPORT_SET,
    limit: int | None = None,
    support: CheckOptions | None = None,
) -> dict[str, Any]:
    """The support report, overall and per split (tune on "dev", report "test"), as a JSON-ready dict;
    `support`: the support check's options (None: its defaults)."""
    corpus = str(repo_root() / CORPUS)
    outcomes = [
        judge_case(c, min_overlap=min_overlap, corpus=corpus, support=support)
        for c in load_support(path, limit=limit)
    ]
    splits = sorted({o.case.split for o in outcomes})
    return {
        "set": "support",
        **support_metrics(outcomes),
        "by_split": {
            split: {k: v for k, v in support_metrics([o for o in outcomes if o.case.split == split]).items()}
            for split in splits
        },
    }


def outcomes_for(split: str | None, *, min_overlap: float) -> list[SupportOutcome]:
    """Every case's outcome (for calibration and error analysis on the dev split)."""
    corpus = str(repo_root() / CORPUS)
    cases = [c for c in load_support() if split is None or c.split == split]
    return [judge_case(c, min_overlap=min_overlap, corpus=corpus) for c in cases]
