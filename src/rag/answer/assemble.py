"""Assembly: lay the retrieved chunks on the table as numbered blocks.

For Claude, `with_neighbours` first adds the chunks next to the top chunk in its document (an answer
often sits just before or after the passage that matched best), with their cost added to the budget
(`neighbour_tokens`), so no ranked chunk makes way for them. Then: order by score (ties by chunk
id), deduplicate by fingerprint, fill a token budget by skipping what does not fit, cap the count,
reorder end-weighted, number 1..n.
Token counts use `rag.language.text.estimate_tokens` (its ratio to Claude's tokenizer is stated there).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.language.text import estimate_tokens, fingerprint
from rag.types import Block, Chunk, Scored

DEFAULT_BUDGET = 1200
DEFAULT_MAX_BLOCKS = 5
# A neighbour of the top chunk competes for the context at this share of the top chunk's score.
NEIGHBOUR_SHARE = 0.6


def block_tokens(block: Block) -> int:
    """Estimated tokens one block costs in the prompt: its provenance header, a newline, its text."""
    return estimate_tokens(f"{block.header}\n{block.sent_text}")


def context_tokens(blocks: Sequence[Block]) -> int:
    """Estimated tokens of all blocks together (the figure `meta` events report)."""
    return sum(block_tokens(b) for b in blocks)


def end_weighted(items: Sequence[Scored]) -> list[Scored]:
    """Most important at the ends, least in the middle: 1st, 3rd, 5th, ... then ..., 4th, 2nd."""
    front = list(items[0::2])
    back = list(items[1::2])
    return front + back[::-1]


def with_neighbours(
    scored: Sequence[Scored], neighbours: Sequence[Chunk], *, share: float = NEIGHBOUR_SHARE
) -> list[Scored]:
    """`scored` with each of `neighbours` (chunks offered beside the ranked ones: those next to the
    top chunk, a follow-up's own hits as typed) scored `share` of the top score; one already scored
    keeps the higher of its two scores. The scores only order
    the candidates for `assemble`, which still dedups by fingerprint and keeps to the budget."""
    if not scored or not neighbours:
        return list(scored)
    top = min(scored, key=lambda s: (-s.score, s.chunk.chunk_id))
    given = share * top.score
    out = {s.chunk.chunk_id: s for s in scored}
    for chunk in neighbours:
        held = out.get(chunk.chunk_id)
        if held is None:
            out[chunk.chunk_id] = Scored(chunk=chunk, score=given, scorer=top.scorer)
        elif held.score < given:
            out[chunk.chunk_id] = held.rescored(given, held.scorer)
    return list(out.values())


def neighbour_tokens(chunks: Sequence[Chunk]) -> int:
    """The budget `chunks` (offered beside the ranked chunks, which left them out) add: each costed as
    a block with the widest number a request can give, so the ranked chunks keep all of theirs."""
    return sum(_cost(chunk, 99) for chunk in chunks)


def assemble(
    scored: Sequence[Scored], *, budget: int = DEFAULT_BUDGET, max_blocks: int = DEFAULT_MAX_BLOCKS
) -> list[Block]:
    """Blocks numbered 1..n (n <= max_blocks) whose summed `block_tokens` never exceed `budget`.

    A chunk that does not fit is skipped and the next, smaller one may still fit. The
    result depends only on the input set (stable under input order), and `sent_text`
    is the original chunk text.
    """
    if max_blocks <= 0 or budget <= 0:
        return []
    ordered = sorted(scored, key=lambda s: (-s.score, s.chunk.chunk_id))
    seen: set[str] = set()
    kept: list[Scored] = []
    used = 0
    for item in ordered:
        if len(kept) >= max_blocks:
            break
        key = fingerprint(item.chunk.text)
        if key in seen:
            continue
        # Costed with the widest number this request can give, so renumbering never breaks the budget.
        cost = _cost(item.chunk, max_blocks)
        if used + cost > budget:
            continue
        seen.add(key)
        kept.append(item)
        used += cost
    return [
        Block(n=i, chunk=item.chunk, score=item.score, sent_text=item.chunk.text)
        for i, item in enumerate(end_weighted(kept), start=1)
    ]


def _cost(chunk: Chunk, n: int) -> int:
    return block_tokens(Block(n=n, chunk=chunk, score=0.0, sent_text=chunk.text))
