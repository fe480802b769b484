"""Verification: every claimed citation is checked against the ORIGINAL chunk text (`block.chunk.text`).

Per claim, in order:
1. gate one: `n` is one of the block numbers issued for this request;
2. span: a claimed `cited_text` (native contract) occurs in the chunk verbatim, or verbatim up to
   whitespace; offsets are recomputed in the original chunk. Without a claimed span (inline contract)
   the chunk sentence with the highest overlap is chosen, so the UI can highlight it;
3. gate two: substantive overlap (below) between the sentence and its evidence (the claimed spans for
   native claims, the whole chunk for inline claims) is at least `min_overlap`;
4. figures: every number the sentence states must appear in the evidence of at least one claim that
   passed 1-3 (as written, or as the same quantity in another unit: "1 GB" = "1024 MB").
A sentence is kept iff at least one citation survives; each failure keeps a specific reason.

Substantive overlap = |S & E| / |S|, where S is the sentence's distinct content terms (stemmed, stop
words removed) minus the request's common terms, and E the evidence's terms. Common terms are the terms
present in more than half of the blocks, computed only when there are at least 3 blocks. When removing
common terms would leave nothing, S keeps them; a sentence with no content term at all ("Yes.") cannot
be verified and is withheld with "nothing substantive to verify".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from rag.answer.parse import strip_markers
from rag.answer.quantities import Quantity, find_quantities, same_value
from rag.text import sentence_spans, term_set
from rag.types import Block, Citation, Claim, Draft, Verdict

MIN_COMMON_BLOCKS = 3
NO_CITATION = "no citation"
NOTHING_TO_VERIFY = "nothing substantive to verify"

_WS_RE = re.compile(r"\s+")
# A figure the sentence states: digits not glued to a preceding letter ("v2" is a name, not a figure).
_FIGURE_RE = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")
# Any digit run in the evidence, however it is attached ("v2.3", "2FA", "2026-05-12").
_SOURCE_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def locate_span(cited_text: str, chunk_text: str) -> tuple[int, int] | None:
    """End-exclusive offsets of `cited_text` in `chunk_text`: exact substring first, then a match that
    differs only in whitespace (runs collapsed, ends stripped) mapped back to original offsets; else None."""
    if not cited_text.strip():
        return None
    exact = chunk_text.find(cited_text)
    if exact != -1:
        return exact, exact + len(cited_text)
    needle = _WS_RE.sub(" ", cited_text.strip())
    chars: list[str] = []
    origin: list[int] = []
    in_space = False
    for i, ch in enumerate(chunk_text):
        if ch.isspace():
            if not in_space:
                chars.append(" ")
                origin.append(i)
            in_space = True
        else:
            chars.append(ch)
            origin.append(i)
            in_space = False
    found = "".join(chars).find(needle)
    if found == -1:
        return None
    return origin[found], origin[found + len(needle) - 1] + 1


def common_terms(blocks: Sequence[Block]) -> frozenset[str]:
    """Terms present in more than half of the blocks' original texts; empty with fewer than 3 blocks."""
    if len(blocks) < MIN_COMMON_BLOCKS:
        return frozenset()
    counts: Counter[str] = Counter()
    for block in blocks:
        counts.update(_chunk_terms(block.chunk.text))
    return frozenset(t for t, c in counts.items() if c * 2 > len(blocks))


# Cached by chunk text: the same chunks come back request after request, and tokenising is most of the cost.
@lru_cache(maxsize=4096)
def _chunk_terms(text: str) -> frozenset[str]:
    return term_set(text)


@lru_cache(maxsize=4096)
def _chunk_sentences(text: str) -> tuple[tuple[int, int, frozenset[str]], ...]:
    return tuple((s, e, term_set(text[s:e])) for s, e in sentence_spans(text))


def substantive_terms(sentence: str, common: frozenset[str] = frozenset()) -> frozenset[str]:
    """Distinct content terms of the sentence, without citation markers and common terms (unless that
    leaves none)."""
    text, _ = strip_markers(sentence)
    found = term_set(text)
    return (found - common) or found


def overlap(sentence: str, source: str, *, common: frozenset[str] = frozenset()) -> float:
    """Share in [0, 1] of the sentence's substantive terms found in `source`; 0.0 when it has none."""
    wanted = substantive_terms(sentence, common)
    if not wanted:
        return 0.0
    return len(wanted & term_set(source)) / len(wanted)


def verify(drafts: Sequence[Draft], blocks: Sequence[Block], *, min_overlap: float = 0.3) -> list[Verdict]:
    """One Verdict per draft, in order. Reads only `block.chunk.text`, never `block.sent_text`."""
    by_n = {block.n: block for block in blocks}
    common = common_terms(blocks)
    return [_verify_one(draft, by_n, common, min_overlap) for draft in drafts]


def feedback_lines(verdicts: Iterable[Verdict]) -> list[str]:
    """One instruction per withheld sentence, naming its specific reasons, for a regeneration prompt."""
    lines = []
    for verdict in verdicts:
        if verdict.ok or not verdict.issues:
            continue
        text = verdict.draft.text
        short = text if len(text) <= 120 else text[:117].rstrip() + "..."
        reasons = "; ".join(verdict.issues)
        lines.append(
            f'Sentence "{short}" was withheld: {reasons}. Cite a block that states it, or leave it out.'
        )
    return lines


def _verify_one(draft: Draft, by_n: dict[int, Block], common: frozenset[str], min_overlap: float) -> Verdict:
    if not draft.claims:
        return Verdict(draft=draft, citations=(), issues=(NO_CITATION,))
    wanted = substantive_terms(draft.text, common)
    if not wanted:
        return Verdict(draft=draft, citations=(), issues=(NOTHING_TO_VERIFY,))

    issues: list[str] = []
    passed: list[tuple[Block, list[tuple[int, int]], str]] = []  # block, spans, evidence text
    for n, claims in _group(draft.claims):
        block = by_n.get(n)
        if block is None:
            issues.append(f"cited a nonexistent chunk number [{n}]")
            continue
        chunk_text = block.chunk.text
        quoted = [c.cited_text for c in claims if c.cited_text is not None]
        if quoted:
            spans = []
            for cited in quoted:
                span = locate_span(cited, chunk_text)
                if span is None:
                    issues.append(f"[{n}] quotes text that is not in its source")
                elif span not in spans:
                    spans.append(span)
            if not spans:
                continue
            evidence = " ".join(chunk_text[s:e] for s, e in spans)
            share = _share(wanted, term_set(evidence))
        else:
            share = _share(wanted, _chunk_terms(chunk_text))
            spans = [_best_sentence(wanted, _chunk_sentences(chunk_text), len(chunk_text))]
            evidence = chunk_text
        if share < min_overlap:
            issues.append(f"[{n}] has only {share:.2f} substantive overlap with this sentence")
            continue
        passed.append((block, spans, evidence))

    missing = _missing_figures(draft.text, [evidence for _, _, evidence in passed])
    if missing:
        label = "figure" if len(missing) == 1 else "figures"
        issues.extend(
            f"[{block.n}] does not contain the {label} {', '.join(missing)}" for block, _, _ in passed
        )
        passed = []

    citations = tuple(
        Citation(
            n=block.n,
            chunk_id=block.chunk.chunk_id,
            title=block.chunk.title,
            url=block.chunk.url,
            cited_text=block.chunk.text[s:e],
            start=s,
            end=e,
            page=block.chunk.page,
        )
        for block, spans, _ in passed
        for s, e in spans
    )
    return Verdict(draft=draft, citations=citations, issues=tuple(issues))


def _group(claims: Sequence[Claim]) -> list[tuple[int, list[Claim]]]:
    """Claims grouped by block number, in order of first appearance; exact repeats removed."""
    groups: dict[int, list[Claim]] = {}
    for claim in claims:
        bucket = groups.setdefault(claim.n, [])
        if claim not in bucket:
            bucket.append(claim)
    return list(groups.items())


def _share(wanted: frozenset[str], found: frozenset[str]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


def _best_sentence(
    wanted: frozenset[str], sentences: Sequence[tuple[int, int, frozenset[str]]], length: int
) -> tuple[int, int]:
    """The chunk sentence sharing most of `wanted` (earliest on ties); the whole chunk if it has none."""
    best: tuple[int, int] | None = None
    best_share = -1.0
    for start, end, found in sentences:
        share = _share(wanted, found)
        if share > best_share:
            best, best_share = (start, end), share
    return best if best is not None else (0, length)


def _canonical(number: str) -> str | None:
    try:
        value = Decimal(number).normalize()
    except InvalidOperation:
        return None
    return format(value, "f")


def _source_numbers(text: str) -> set[str]:
    found: set[str] = set()
    for match in _SOURCE_NUMBER_RE.finditer(text):
        raw = match.group()
        if _THOUSANDS_RE.fullmatch(raw):
            parts = [raw.replace(",", "")]
        else:
            pieces = re.split(r"[.,]", raw)
            parts = pieces + [f"{a}.{b}" for a, b in zip(pieces, pieces[1:], strict=False)]
        for part in parts:
            canonical = _canonical(part)
            if canonical is not None:
                found.add(canonical)
    return found


def _missing_figures(sentence: str, evidence: Sequence[str]) -> list[str]:
    """Figures stated in `sentence` that no evidence text contains, as written or as an equal quantity."""
    figures = [m for m in _FIGURE_RE.finditer(sentence)]
    if not figures or not evidence:
        return []
    numbers: set[str] = set()
    for text in evidence:
        numbers |= _source_numbers(text)
    stated: list[Quantity] | None = None
    source_quantities: list[Quantity] | None = None
    missing: list[str] = []
    for match in figures:
        if _canonical(match.group().replace(",", "")) in numbers:
            continue
        if stated is None:
            stated = find_quantities(sentence)
            source_quantities = [q for text in evidence for q in find_quantities(text)]
        holder = next((q for q in stated if q.start <= match.start() < q.end), None)
        if holder is not None and any(same_value(holder, q) for q in source_quantities or ()):
            continue
        if match.group() not in missing:
            missing.append(match.group())
    return missing
