"""The fabrication switch for demonstrations and verifier tests: one unsupported sentence added to an
offline answer, citing a block that does not exist ("nonexistent") or a real block that does not
support it ("unrelated"). The verifier must drop it; nothing here decides what the answer is.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from rag.language.text import normalise, term_set
from rag.reader.prose import prose
from rag.types import Block, Claim, Draft, Fabrication


def fabrication(kind: Fabrication, blocks: Sequence[Block], used: Set[str]) -> Draft | None:
    """One unsupported sentence: citing number n_max + 1 ("nonexistent"), or a real block that shares
    the fewest of its terms ("unrelated"). Never a sentence already in the answer (`used`: their keys)."""
    if not blocks:
        return None
    fresh = _fresh_sentences(blocks, used)
    if not fresh:
        return None
    if kind == "nonexistent" or len(blocks) < 2:
        text, _ = fresh[0]
        return Draft(text=text, claims=(Claim(n=max(b.n for b in blocks) + 1),))
    best = _least_supported(fresh, blocks)
    if best is None:
        return None
    return Draft(text=best[1], claims=(Claim(n=best[2]),))


def _fresh_sentences(blocks: Sequence[Block], used: Set[str]) -> list[tuple[str, Block]]:
    """The prose sentences of three terms or more, by block number, each with its block; those of
    the answer left out."""
    pool = [
        (p.text, block)
        for block in sorted(blocks, key=lambda b: b.n)
        for p in prose(block.sent_text, block.chunk.section)
        if len(term_set(p.text)) >= 3
    ]
    # Never reuse an answer sentence: feedback naming the fabrication would then drop it too.
    return [p for p in pool if normalise(p[0]) not in used]


def _least_supported(
    fresh: Sequence[tuple[str, Block]], blocks: Sequence[Block]
) -> tuple[float, str, int] | None:
    """(share, sentence, block number): the first sentence and other block sharing the smallest
    share of the sentence's terms; None when no sentence has another block."""
    best: tuple[float, str, int] | None = None
    for text, source in fresh:
        sentence_terms = term_set(text)
        for other in blocks:
            if other.n == source.n:
                continue
            share = len(sentence_terms & term_set(other.chunk.text)) / len(sentence_terms)
            if best is None or share < best[0]:
                best = (share, text, other.n)
    return best
