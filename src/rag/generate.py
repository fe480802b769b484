"""Generators: the `Generator` protocol and the offline extractive generator.

A generator receives the question and the numbered blocks and returns sentences
with *unverified* claims; verification happens later, always against the original
chunk text.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from rag.store import Store
from rag.text import normalise, sentence_spans, term_set, terms
from rag.types import Block, Claim, Draft, Fabrication, Generation, Piece


class Generator(Protocol):
    name: str

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        """One complete answer. `feedback` holds specific reasons from a failed first draft."""
        ...

    def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        """The answer as pieces, in order, as they are produced."""
        ...


# A sentence is used only when it (with its block's title and section) covers at least this share
# of the question's IDF mass (IDF over the issued blocks, so a term no block contains weighs most).
# Tuned on the golden set: 0.4 answers more and refuses fewer near misses; 0.55+ refuses more.
MIN_COVERAGE = 0.5
MAX_SENTENCES = 3
# A further sentence must add a question term, or cover at least this share of what the best one covers.
EXTRA_RATIO = 0.8
# Generic words that carry no topic ("how long", "still", "the whole ..."): not counted as question
# terms. Stemmed forms; plain English, never domain words.
QUESTION_FILLERS = frozenset(
    {"long", "much", "mani", "often", "still", "happen", "whole", "anoth", "instead", "just", "exact"}
    | {"actual", "realli", "quick", "soon", "ever", "current", "typic", "usual", "possibl", "exist"}
)
# Words that name the kind of answer wanted ("deadline", "maximum") rather than its topic: the
# source states them as figures ("within 30 days", "up to 10"), so they weigh this much less.
ANSWER_TYPE_TERMS = frozenset({"limit", "maximum", "minimum", "max", "min", "deadlin", "daili", "quota"})
ANSWER_TYPE_WEIGHT = 0.3
# Key terms: question terms weighing at least this share of the heaviest one; an eligible sentence
# (with its block's title and section) covers all of them. None disables the rule.
KEY_RATIO: float | None = None
# Title/section terms count this much toward a sentence's rank (fully toward eligibility).
CONTEXT_WEIGHT = 0.5
# How much a figure in the sentence adds to its rank for quantity questions, and how much the
# block's retrieval score (in [0, 1]) adds: both only order eligible sentences, never admit one.
NUMBER_BONUS = 0.3
BLOCK_WEIGHT = 0.3
# Shorter sentences without end punctuation are headings or labels, never answers.
_MIN_UNPUNCTUATED_TOKENS = 8
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s")
_SPACE_RE = re.compile(r"\s+")
_FEEDBACK_PREFIX = 60
_END_PUNCT = ".!?"
_DIGIT_RE = re.compile(r"\d")
# Questions that ask for an amount, a duration, a limit or a date: sentences with figures rank higher.
_QUANTITY_QUESTION_RE = re.compile(
    r"^\W*(?:how\s+(?:many|much|long|often|soon|quickly|fast|big|large|far|old|frequently)|when|until\s+when"
    r"|by\s+when|what\s+time|what\s+year|which\s+year|what\s+date)\b"
    r"|\b(?:limit|limits|maximum|minimum|max|min|deadline|price|cost|costs|size|quota|rate|percent|percentage"
    r"|number\s+of|version|timeout|duration|allowance|fee|fees)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Candidate:
    text: str
    key: str
    ns: tuple[int, ...]
    own: frozenset[str]
    own_coverage: float
    coverage: float
    covers_keys: bool
    rank: float
    order: tuple[int, int]


IdfSource = Callable[[Sequence[str]], Mapping[str, float]]


def corpus_idf(store: Store) -> IdfSource:
    """IDF of terms over the whole store, ln((N + 1) / (df + 0.5)): how informative a term is anywhere."""

    def weights(question_terms: Sequence[str]) -> dict[str, float]:
        df = store.term_frequencies(list(question_terms))
        n = store.stats().chunks
        return {t: math.log((n + 1) / (df.get(t, 0) + 0.5)) for t in question_terms}

    return weights


def idf_weights(question_terms: Sequence[str], blocks: Sequence[Block]) -> dict[str, float]:
    """Smoothed IDF of each question term over the blocks' original texts: ln((N + 1) / (df + 0.5)) > 0."""
    texts = [term_set(b.chunk.text) for b in blocks]
    n = len(texts)
    return {t: math.log((n + 1) / (sum(t in ts for ts in texts) + 0.5)) for t in question_terms}


def wants_quantity(question: str) -> bool:
    """True when the question asks for an amount, duration, limit, version or date."""
    return bool(_QUANTITY_QUESTION_RE.search(question))


def question_terms(question: str) -> list[str]:
    """The question's distinct content terms in order, interrogative fillers removed."""
    out: list[str] = []
    for t in terms(question):
        if t not in QUESTION_FILLERS and t not in out:
            out.append(t)
    return out


def cite(sentence: str, ns: Sequence[int]) -> str:
    """The sentence with its `[n]` markers before the final period (after other end punctuation)."""
    marker = "".join(f"[{n}]" for n in ns)
    if sentence.endswith("."):
        return f"{sentence[:-1]} {marker}."
    if sentence and sentence[-1] in _END_PUNCT:
        return f"{sentence} {marker}"
    return f"{sentence} {marker}."


class OfflineGenerator:
    """Deterministic extractive generator following the inline `[n]` contract.

    It copies up to MAX_SENTENCES block sentences that cover the question's key terms
    (MIN_COVERAGE of the IDF mass; optionally every term within KEY_RATIO of the heaviest),
    each cited to every block that contains it, ranked by coverage, figures for quantity
    questions and block score; it writes nothing when no sentence qualifies (so the
    grounding gate refuses). `fabricate` adds one bad sentence to first drafts, for
    demonstrations and verifier tests: "nonexistent" cites number n_max + 1, "unrelated"
    cites a real block that does not support the sentence. With `feedback`, the
    sentences it names and the fabrication are left out.
    """

    name = "offline-extractive"

    def __init__(
        self,
        fabricate: Fabrication = "",
        *,
        min_coverage: float = MIN_COVERAGE,
        max_sentences: int = MAX_SENTENCES,
        idf: IdfSource | Mapping[str, float] | None = None,
        key_ratio: float | None = KEY_RATIO,
        context_weight: float = CONTEXT_WEIGHT,
        extra_ratio: float = EXTRA_RATIO,
        number_bonus: float = NUMBER_BONUS,
        block_weight: float = BLOCK_WEIGHT,
        extras_same_block: bool = True,
    ) -> None:
        self.fabricate: Fabrication = fabricate
        self.min_coverage = min_coverage
        self.max_sentences = max_sentences
        self.idf = idf
        self.key_ratio = key_ratio
        self.context_weight = context_weight
        self.extra_ratio = extra_ratio
        self.number_bonus = number_bonus
        self.block_weight = block_weight
        self.extras_same_block = extras_same_block

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Generation:
        """The extractive answer as drafts plus the inline text (`sentence [n].` joined by spaces)."""
        drafts = self.drafts(question, blocks, feedback=feedback)
        text = " ".join(cite(d.text, [c.n for c in d.claims]) for d in drafts)
        return Generation(drafts=drafts, text=text)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        """The same answer as `generate`, in 2-3 pieces per sentence with a yield to the loop between."""
        for i, draft in enumerate(self.drafts(question, blocks)):
            written = cite(draft.text, [c.n for c in draft.claims]) + " "
            for piece in _split(written, parts=2 + i % 2):
                await asyncio.sleep(0)
                yield Piece(text=piece)

    def drafts(
        self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()
    ) -> tuple[Draft, ...]:
        """The answer's sentences with their claims, before any marker is written."""
        chosen = self._choose(question, blocks)
        said = normalise(" ".join(feedback))
        if said:
            # Feedback quotes sentences, possibly shortened: a matching prefix names the sentence.
            chosen = [c for c in chosen if c.key[:_FEEDBACK_PREFIX] not in said]
        out = [Draft(text=c.text, claims=tuple(Claim(n=n) for n in c.ns)) for c in chosen]
        if self.fabricate and not feedback:
            fake = self._fabrication(blocks, {c.key for c in chosen})
            if fake is not None:
                out.append(fake)
        return tuple(out)

    def _choose(self, question: str, blocks: Sequence[Block]) -> list[_Candidate]:
        q_terms = question_terms(question)
        if not q_terms or not blocks:
            return []
        weights = dict(idf_weights(q_terms, blocks))
        if self.idf is not None:
            known = self.idf(q_terms) if callable(self.idf) else self.idf
            weights.update({t: known[t] for t in q_terms if t in known})
        for t in ANSWER_TYPE_TERMS & weights.keys():
            weights[t] *= ANSWER_TYPE_WEIGHT
        total = sum(weights.values())
        if total <= 0:
            return []
        top = max(weights.values())
        ratio = self.key_ratio if self.key_ratio is not None else math.inf
        keys = frozenset(t for t, w in weights.items() if w >= ratio * top - 1e-9)
        numeric = wants_quantity(question)
        found: dict[str, _Candidate] = {}
        for block in blocks:
            context = term_set(f"{block.chunk.title} {block.chunk.section}") & weights.keys()
            for pos, text in enumerate(_sentences(block.sent_text)):
                own = term_set(text) & weights.keys()
                if not own:
                    continue
                covered = own | context
                coverage = sum(weights[t] for t in covered) / total
                own_coverage = sum(weights[t] for t in own) / total
                bonus = self.number_bonus if numeric and _DIGIT_RE.search(text) else 0.0
                candidate = _Candidate(
                    text=text,
                    key=normalise(text),
                    ns=(block.n,),
                    own=frozenset(own),
                    own_coverage=own_coverage,
                    coverage=coverage,
                    covers_keys=keys <= covered,
                    rank=own_coverage
                    + self.context_weight * (coverage - own_coverage)
                    + bonus
                    + self.block_weight * block.score,
                    order=(block.n, pos),
                )
                prev = found.get(candidate.key)
                if prev is not None:
                    # the same sentence in several blocks: cite them all, keep the better-ranked copy
                    better = candidate if candidate.rank > prev.rank else prev
                    candidate = replace(better, ns=tuple(sorted({*prev.ns, block.n})))
                found[candidate.key] = candidate
        eligible = [c for c in found.values() if c.covers_keys and c.coverage >= self.min_coverage - 1e-9]
        eligible.sort(key=lambda c: (-c.rank, -c.own_coverage, c.order))
        chosen: list[_Candidate] = []
        covered_so_far: set[str] = set()
        for c in eligible:
            if len(chosen) >= self.max_sentences:
                break
            if chosen and not self._worth_adding(c, chosen[0], covered_so_far):
                continue
            chosen.append(c)
            covered_so_far |= c.own
        return chosen

    def _worth_adding(self, c: _Candidate, best: _Candidate, covered: set[str]) -> bool:
        """A further sentence covers enough on its own (no title/section help), comes from the best
        sentence's block (when `extras_same_block`), and adds a question term or nearly matches the best."""
        if c.own_coverage < self.min_coverage - 1e-9:
            return False
        if self.extras_same_block and not set(c.ns) & set(best.ns):
            return False
        return bool(c.own - covered) or c.own_coverage >= self.extra_ratio * best.own_coverage

    def _fabrication(self, blocks: Sequence[Block], used: set[str]) -> Draft | None:
        if not blocks:
            return None
        pool = [
            (text, block)
            for block in sorted(blocks, key=lambda b: b.n)
            for text in _sentences(block.sent_text)
            if len(term_set(text)) >= 3
        ]
        # Never reuse an answer sentence: feedback naming the fabrication would then drop it too.
        fresh = [p for p in pool if normalise(p[0]) not in used]
        if not fresh:
            return None
        if self.fabricate == "nonexistent" or len(blocks) < 2:
            text, _ = fresh[0]
            return Draft(text=text, claims=(Claim(n=max(b.n for b in blocks) + 1),))
        best: tuple[float, str, int] | None = None
        for text, source in fresh:
            sentence_terms = term_set(text)
            for other in blocks:
                if other.n == source.n:
                    continue
                share = len(sentence_terms & term_set(other.chunk.text)) / len(sentence_terms)
                if best is None or share < best[0]:
                    best = (share, text, other.n)
        if best is None:
            return None
        return Draft(text=best[1], claims=(Claim(n=best[2]),))


def _sentences(text: str) -> list[str]:
    """The answer-worthy sentences of a block: bullets stripped, whitespace collapsed, headings skipped."""
    out = []
    for start, end in sentence_spans(text):
        raw = text[start:end]
        if _HEADING_RE.match(raw):
            continue
        sentence = _SPACE_RE.sub(" ", _BULLET_RE.sub("", raw)).strip()
        if not sentence or sentence.count("|") >= 2 or "```" in sentence:
            continue  # table rows and code fences are layout, not prose
        if sentence.endswith("?"):
            continue  # a question in the source asks, it does not answer
        if sentence[-1] not in _END_PUNCT and len(terms(sentence)) < _MIN_UNPUNCTUATED_TOKENS:
            continue
        out.append(sentence)
    return out


def _split(text: str, *, parts: int) -> list[str]:
    """`text` cut at spaces into at most `parts` pieces that join back to it exactly."""
    if parts <= 1:
        return [text]
    cuts: list[int] = []
    for k in range(1, parts):
        at = text.find(" ", len(text) * k // parts)
        if at > 0 and (not cuts or at > cuts[-1]):
            cuts.append(at)
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
