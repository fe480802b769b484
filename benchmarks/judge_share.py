"""How many sentences of the realistic Claude replies the support rules leave to the small-model judge.

Every cited sentence of fixtures/claude_replies and fixtures/claude_replies2 (first replies and the
second replies of a regeneration) is cut by the product's sentence buffer and verified against the
chunks of the bundled corpus that hold its cited spans, as the native contract verifies it; no retrieval,
so a reply whose question the retriever would not reach (the German ones) is counted too. A sentence is
kept, withheld by a rule, or undecided (`Verdict.pending`: what a judge call would be asked).

Usage: PYTHONPATH=src python -m benchmarks.judge_share [-v]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag.answer.claude import drafts_of
from rag.answer.verify import verify
from rag.evals.support import _chunks, _holding
from rag.support.check import default_options
from rag.types import Block, Chunk, Claim, Piece

ROOT = Path(__file__).resolve().parent.parent
CORPUS = str(ROOT / "fixtures" / "corpus")
SETS = ("fixtures/claude_replies/replies.jsonl", "fixtures/claude_replies2/replies.jsonl")
MIN_OVERLAP = 0.42


def _replies(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            yield case["id"], case
            if case.get("second"):
                yield f"{case['id']}/2", case["second"]


def _pieces(spec: dict[str, Any], chunks: list[Chunk]) -> list[Piece]:
    """The reply's text blocks as the adapter's pieces; each cited span's chunk becomes a block."""
    pieces: list[Piece] = []
    for i, block in enumerate(spec.get("blocks") or []):
        claims = []
        for c in block["cites"]:
            held = _chunks(c["doc"], CORPUS)
            at = _holding(held, c["cited_text"])
            if at < 0:
                continue
            if held[at] not in chunks:
                chunks.append(held[at])
            claims.append(Claim(n=chunks.index(held[at]) + 1, cited_text=c["cited_text"]))
        if claims:
            pieces.append(Piece(index=i, claims=tuple(claims)))
        pieces += [Piece(index=i, text=block["text"]), Piece(index=i + 1)]
    return pieces


def measure(path: Path, *, verbose: bool = False) -> Counter[str]:
    tally: Counter[str] = Counter()
    for reply_id, spec in _replies(path):
        chunks: list[Chunk] = []
        pieces = _pieces(spec, chunks)
        blocks = [Block(n=n, chunk=c, score=1.0, sent_text=c.text) for n, c in enumerate(chunks, start=1)]
        drafts = [d for d in drafts_of(pieces) if d.claims]
        for verdict in verify(drafts, blocks, min_overlap=MIN_OVERLAP, support=default_options()):
            kind = "kept" if verdict.ok else "undecided" if verdict.pending else "withheld"
            tally[kind] += 1
            if verbose and kind == "undecided":
                print(f"  {reply_id}: {verdict.draft.text[:100]}")
    return tally


def main() -> None:
    verbose = "-v" in sys.argv
    for name in SETS:
        tally = measure(ROOT / name, verbose=verbose)
        total = sum(tally.values())
        print(
            f"{name}: {total} cited sentences, {tally['kept']} kept, {tally['withheld']} withheld by a rule,"
        )
        print(f"  {tally['undecided']} undecided (to the judge with a key)")


if __name__ == "__main__":
    main()
