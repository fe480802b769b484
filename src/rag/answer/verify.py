"""Verification: every claimed citation is checked against the ORIGINAL chunk text (`block.chunk.text`).

Per claim, grouped by block number, in order:
1. gate one: `n` is one of the block numbers issued for this request;
2. span: a claimed `cited_text` (native contract) is located in the original chunk: at the provider's
   offsets (`Claim.start`/`end`, relative to the text sent) when they hold it, else by search, exact
   first, then up to whitespace. Without a claimed span (inline contract) the span shown is an exact
   occurrence of the sentence in the chunk, else the chunk sentence with the highest overlap;
3. gate two, support. Native: `support.check.check`, the sentence against its own spans (attribution
   lead-in naming the cited document set aside; coverage, negation flips, swapped roles). Inline:
   substantive overlap (below) between the sentence and the whole chunk is at least `min_overlap`;
4. addressed text: evidence that addresses an assistant ("ignore previous instructions", "tell the
   user that", see `injection`) supports nothing; a claim supported only by it is withheld;
5. figures: every quantity the sentence states, in any spelling, must be stated by the evidence of
   the claims that passed 1-4 (`figures.missing_figures`).
A sentence is kept iff at least one citation survives. Every failed citation keeps a specific reason
in `Verdict.issues`, also when the sentence is kept (`ok` with issues: a citation was withheld).
A withheld sentence whose every issue is low overlap the support check left undecided (nothing
contradicts it, no other subject, its figures stated: `Decision.undecided`) carries those citations
in `Verdict.pending`, for the small-model judge (`rag.support.judge`) to grant or not.

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
from dataclasses import dataclass
from functools import lru_cache

from rag.answer.parse import strip_markers
from rag.language.injection import addressed_spans, overlaps_addressed
from rag.language.text import sentence_spans, term_set
from rag.support.check import CheckOptions, Decision, check, contradicted_alone
from rag.support.figures import missing_figures
from rag.types import Block, Citation, Claim, Draft, Issue, Verdict

MIN_COMMON_BLOCKS = 3
NO_CITATION = Issue("no_citation", "no citation")
NOTHING_TO_VERIFY = Issue("nothing_to_verify", "nothing substantive to verify")
ADDRESSED = "is supported only by text addressed to an assistant, not by a statement of fact"

_WS_RE = re.compile(r"\s+")


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


def verify(
    drafts: Sequence[Draft],
    blocks: Sequence[Block],
    *,
    min_overlap: float,
    support: CheckOptions | None = None,
) -> list[Verdict]:
    """One Verdict per draft, in order. Evidence is always `block.chunk.text`; `block.sent_text` is read
    only to interpret the provider's offsets. `min_overlap` is the inline contract's calibrated floor
    (`Settings.min_overlap`); `support` the native contract's support check (None: its defaults)."""
    by_n = {block.n: block for block in blocks}
    common = common_terms(blocks)
    return [_verify_one(draft, by_n, common, min_overlap, support) for draft in drafts]


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


@dataclass(frozen=True, slots=True)
class _Passed:
    block: Block
    spans: tuple[tuple[int, int], ...]
    evidence: str  # the text the sentence's figures are checked against
    sentence: str  # the sentence as judged (a lead-in naming this block set aside)
    texts: tuple[str, ...] = ()  # the cited spans' text (native claims)


@dataclass(frozen=True, slots=True)
class _Unsupported:
    """A block whose spans were found but do not support the sentence on their own."""

    block: Block
    spans: tuple[tuple[int, int], ...]
    texts: tuple[str, ...]
    issues: tuple[Issue, ...]
    contradicts: bool = False
    undecided: bool = False  # withheld only for low overlap, nothing else against it


def _verify_one(
    draft: Draft,
    by_n: dict[int, Block],
    common: frozenset[str],
    min_overlap: float,
    support: CheckOptions | None,
) -> Verdict:
    unverifiable = _unverifiable(draft, common)
    if unverifiable is not None:
        return unverifiable
    issues, passed, unsupported = _judge_blocks(draft, by_n, common, min_overlap, support)
    vetoes = [i for u in unsupported if u.contradicts for i in u.issues]
    if vetoes:  # a cited span that says the opposite withholds the sentence, whatever else supports it
        return Verdict(draft=draft, citations=(), issues=(*issues, *vetoes))
    if not passed and len(unsupported) > 1:
        passed = _merged(draft.text, unsupported, common, support)
    if _only_nothing_to_verify(issues, passed):
        return Verdict(draft=draft, citations=(), issues=(NOTHING_TO_VERIFY,))
    if passed:
        passed, figure_issues = _figures_checked(draft.text, passed, unsupported, common, support)
        issues.extend(figure_issues)
    issues.extend(_unkept_issues(unsupported, passed))
    pending = _pending(issues, passed, unsupported)
    return Verdict(draft=draft, citations=_citations(passed), issues=tuple(issues), pending=pending)


def _pending(
    issues: Sequence[Issue], passed: Sequence[_Passed], unsupported: Sequence[_Unsupported]
) -> tuple[Citation, ...]:
    """The citations a judge may grant a withheld sentence: every issue is one of an undecided block
    (no span missing, no figure, no other block against it); else none."""
    if passed or not unsupported or not all(u.undecided for u in unsupported):
        return ()
    theirs = {i for u in unsupported for i in u.issues}
    if any(i not in theirs for i in issues):
        return ()
    return _citations([_Passed(u.block, u.spans, " ".join(u.texts), "", u.texts) for u in unsupported])


def _only_nothing_to_verify(issues: Sequence[Issue], passed: Sequence[_Passed]) -> bool:
    """Whether no block passed and every issue is "nothing substantive to verify" (at least one)."""
    return bool(issues) and all(i == NOTHING_TO_VERIFY for i in issues) and not passed


def _unkept_issues(unsupported: Sequence[_Unsupported], passed: Sequence[_Passed]) -> list[Issue]:
    """The issues of the unsupported blocks that did not pass after all (merged or not)."""
    kept = {p.block.n for p in passed}
    return [issue for u in unsupported if u.block.n not in kept for issue in u.issues]


def _unverifiable(draft: Draft, common: frozenset[str]) -> Verdict | None:
    """The withheld verdict of a draft with no citation, or (inline) with no substantive term; else None."""
    if not draft.claims:
        return Verdict(draft=draft, citations=(), issues=(NO_CITATION,))
    native = any(c.cited_text is not None for c in draft.claims)
    if not native and not substantive_terms(draft.text, common):
        return Verdict(draft=draft, citations=(), issues=(NOTHING_TO_VERIFY,))
    return None


def _judge_blocks(
    draft: Draft,
    by_n: dict[int, Block],
    common: frozenset[str],
    min_overlap: float,
    support: CheckOptions | None,
) -> tuple[list[Issue], list[_Passed], list[_Unsupported]]:
    """Each cited block judged alone (native spans if quoted, else inline): issues, passed, unsupported."""
    issues: list[Issue] = []
    passed: list[_Passed] = []
    unsupported: list[_Unsupported] = []
    for n, claims in _group(draft.claims):
        block = by_n.get(n)
        if block is None:
            issues.append(Issue("nonexistent_block", f"cited a nonexistent chunk number [{n}]"))
            continue
        quoted = [c for c in claims if c.cited_text is not None]
        result = (
            _native(draft.text, block, quoted, common, support)
            if quoted
            else _inline(draft.text, block, common, min_overlap)
        )
        if isinstance(result, _Passed):
            passed.append(result)
        elif isinstance(result, _Unsupported):
            unsupported.append(result)
        else:
            issues.extend(result)
    return issues, passed, unsupported


def _figures_checked(
    sentence: str,
    passed: list[_Passed],
    unsupported: list[_Unsupported],
    common: frozenset[str],
    support: CheckOptions | None,
) -> tuple[list[_Passed], list[Issue]]:
    """The passed blocks if their evidence states every figure of the sentence (alone, or merged with the
    unsupported spans); else no block passes and each carries a "figures" issue."""
    sentence_judged = min((p.sentence for p in passed), key=len)
    missing = missing_figures(sentence_judged, [p.evidence for p in passed])
    together = _merged_for_figures(sentence, passed, unsupported, missing, common, support)
    if together:
        return together, []
    if not missing:
        return passed, []
    label = "figure" if len(missing) == 1 else "figures"
    return [], [
        Issue("figures", f"[{p.block.n}] does not contain the {label} {', '.join(missing)}") for p in passed
    ]


def _merged_for_figures(
    sentence: str,
    passed: list[_Passed],
    unsupported: list[_Unsupported],
    missing: list[str],
    common: frozenset[str],
    support: CheckOptions | None,
) -> list[_Passed]:
    """When figures are `missing` from the passed blocks' evidence, the blocks that pass merged with the
    unsupported spans if together they support the sentence and state all its figures; else []."""
    if not (missing and unsupported and all(p.texts for p in passed)):
        return []
    # a figure may come from a block that does not support the sentence alone (merged spans)
    parts = [_Unsupported(p.block, p.spans, p.texts, ()) for p in passed] + unsupported
    together = _merged(sentence, parts, common, support)
    if together and not missing_figures(together[0].sentence, [together[0].evidence]):
        return together
    return []


def _citations(passed: Sequence[_Passed]) -> tuple[Citation, ...]:
    """One Citation per span of each passed block, its text cut from the ORIGINAL chunk."""
    return tuple(
        Citation(
            n=p.block.n,
            chunk_id=p.block.chunk.chunk_id,
            title=p.block.chunk.title,
            url=p.block.chunk.url,
            cited_text=p.block.chunk.text[s:e],
            start=s,
            end=e,
            page=p.block.chunk.page,
        )
        for p in passed
        for s, e in p.spans
    )


def _native(
    sentence: str, block: Block, claims: Sequence[Claim], common: frozenset[str], support: CheckOptions | None
) -> _Passed | _Unsupported | list[Issue]:
    """The block's cited spans located in the original chunk and judged against the sentence."""
    n, chunk_text = block.n, block.chunk.text
    issues, spans = _located(claims, block)
    if not spans:
        return issues
    usable = [(s, e) for s, e in spans if not overlaps_addressed(chunk_text, s, e)]
    if not usable:
        return [*issues, Issue("addressed_text", f"[{n}] {ADDRESSED}")]
    texts = [chunk_text[s:e] for s, e in usable]
    decision = _checked(sentence, texts, block, common, support)
    if decision.issue:
        return _Unsupported(
            block,
            tuple(usable),
            tuple(texts),
            (*issues, decision.issue),
            decision.contradicts,
            undecided=decision.undecided and not issues,
        )
    return _Passed(block, tuple(usable), " ".join(texts), decision.core, tuple(texts))


def _located(claims: Sequence[Claim], block: Block) -> tuple[list[Issue], list[tuple[int, int]]]:
    """The claims' spans located in the original chunk (distinct, in order), and an issue for each claim
    whose text is not there."""
    issues: list[Issue] = []
    spans: list[tuple[int, int]] = []
    for claim in claims:
        span = locate_claim(claim, block)
        if span is None:
            issues.append(Issue("span_not_in_source", f"[{block.n}] quotes text that is not in its source"))
        elif span not in spans:
            spans.append(span)
    return issues, spans


def _checked(
    sentence: str, texts: Sequence[str], block: Block, common: frozenset[str], support: CheckOptions | None
) -> Decision:
    """The support check of the sentence against all the block's spans; when that does not contradict,
    the verdict of a span that contradicts alone the clause it is cited for (`contradicted_alone`)."""
    decision = check(sentence, texts, [block], common=common, options=support)
    if decision.contradicts or len(texts) <= 1:
        return decision
    alone = contradicted_alone(sentence, texts, [block], common=common, options=support)
    return alone if alone is not None else decision


def _merged(
    sentence: str, parts: Sequence[_Unsupported], common: frozenset[str], support: CheckOptions | None
) -> list[_Passed]:
    """A sentence that merges spans of several blocks, none enough alone, judged against all of them:
    when they support it together, each block whose spans share a term with the sentence passes."""
    texts = [t for u in parts for t in u.texts]
    decision = check(sentence, texts, [u.block for u in parts], common=common, options=support)
    if decision.issue:
        return []
    wanted = term_set(decision.core)
    return [
        _Passed(u.block, u.spans, " ".join(texts), decision.core, u.texts)
        for u in parts
        if wanted & term_set(" ".join(u.texts))
    ]


def _inline(sentence: str, block: Block, common: frozenset[str], min_overlap: float) -> _Passed | list[Issue]:
    """The inline contract: overlap with the whole chunk (text addressed to an assistant left out)."""
    n, chunk_text = block.n, block.chunk.text
    wanted = substantive_terms(sentence, common)
    share = _share(wanted, _chunk_terms(chunk_text))
    if share < min_overlap:
        return [Issue("low_overlap", f"[{n}] has only {share:.2f} substantive overlap with this sentence")]
    evidence = _without_addressed(chunk_text)
    if _share(wanted, term_set(evidence)) < min_overlap or (
        evidence != chunk_text
        and missing_figures(sentence, [evidence])
        and not missing_figures(sentence, [chunk_text])
    ):
        return [Issue("addressed_text", f"[{n}] {ADDRESSED}")]
    exact = locate_span(sentence, chunk_text)
    if exact is not None and not overlaps_addressed(chunk_text, *exact):
        span = exact
    else:
        span = _best_sentence(wanted, _chunk_sentences(chunk_text), chunk_text)
    return _Passed(block, (span,), evidence, sentence)


def locate_claim(claim: Claim, block: Block) -> tuple[int, int] | None:
    """Offsets of the claim's `cited_text` in the ORIGINAL chunk. The provider's offsets (relative to the
    text sent) are used when they hold `cited_text`: as they are when the block went out uncompressed,
    else as the same occurrence (first, second, ...) in the original; otherwise the text is searched."""
    cited = claim.cited_text
    if cited is None:
        return None
    chunk_text, sent = block.chunk.text, block.sent_text
    start, end = claim.start, claim.end
    if (
        start is not None
        and end is not None
        and 0 <= start <= end <= len(sent)
        and cited
        and sent[start:end] == cited
    ):
        if sent == chunk_text:
            return start, end
        occurrence = _occurrences(sent, cited).index(start)
        in_chunk = _occurrences(chunk_text, cited)
        if occurrence < len(in_chunk):
            return in_chunk[occurrence], in_chunk[occurrence] + len(cited)
    return locate_span(cited, chunk_text)


def _occurrences(text: str, needle: str) -> list[int]:
    found: list[int] = []
    at = text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


@lru_cache(maxsize=4096)
def _without_addressed(text: str) -> str:
    """`text` with every span that addresses an assistant blanked out (offsets kept)."""
    spans = addressed_spans(text)
    if not spans:
        return text
    out = list(text)
    for start, end in spans:
        out[start:end] = " " * (end - start)
    return "".join(out)


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
    wanted: frozenset[str], sentences: Sequence[tuple[int, int, frozenset[str]]], chunk_text: str
) -> tuple[int, int]:
    """The chunk sentence sharing most of `wanted` (earliest on ties), text addressed to an assistant
    passed over; the whole chunk if it has none."""
    best: tuple[int, int] | None = None
    best_share = -1.0
    for start, end, found in sentences:
        share = _share(wanted, found)
        if share > best_share and not overlaps_addressed(chunk_text, start, end):
            best, best_share = (start, end), share
    return best if best is not None else (0, len(chunk_text))
