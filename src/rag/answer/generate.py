"""Generators: the `Generator` protocol and the offline extractive generator.

A generator receives the question and the numbered blocks and returns sentences
with *unverified* claims; verification happens later, always against the original
chunk text.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Protocol

from rag.answer.answer_types import (
    CAPITALISED_RE,
    NOT_PLACES,
    QUANTITY_KINDS,
    answer_type,
    asks_price,
    price_match,
    type_match,
    type_terms,
)
from rag.store import Store
from rag.text import is_proposal, normalise, sentence_spans, term_set, terms
from rag.types import Block, Claim, Draft, Fabrication, Generation, Piece


class Generator(Protocol):
    """Writes an answer from numbered blocks. `native_citations`: its citations are structured
    claims per content block (the only citations then); otherwise `[n]` markers in its text."""

    name: str
    native_citations: bool

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
    {"long", "much", "mani", "often", "far", "still", "happen", "whole", "anoth", "instead", "just", "exact"}
    | {"actual", "realli", "quick", "soon", "ever", "current", "typic", "usual", "possibl", "exist"}
)
ANSWER_TYPE_WEIGHT = 0.3
# Key terms: question terms weighing at least this share of the heaviest one; an eligible sentence
# (with its block's title and section) covers all of them. None disables the rule.
KEY_RATIO: float | None = None
# Title/section terms count this much toward a sentence's rank (fully toward eligibility).
CONTEXT_WEIGHT = 0.5
# How much a figure in the sentence adds to its rank for quantity questions, and how much the
# block's retrieval score (in [0, 1]) adds: both only order eligible sentences, never admit one.
NUMBER_BONUS = 0.6
BLOCK_WEIGHT = 0.3
# Sentences on either side (same block) whose question terms count toward a sentence's eligibility
# and, at CONTEXT_WEIGHT, its rank: "It keeps working until ..." follows the sentence naming "it".
NEIGHBOURS = 1
# Rank added for keeping the question's word order: the share of its adjacent term pairs that are
# adjacent in the sentence too ("failed sign-in attempts" over "sign-in attempts failed").
PHRASE_BONUS = 0.2
# A question asking for an amount, duration or date is answered only by a sentence stating one: a
# sentence without such a fact can lend context as a neighbour but is never itself the answer.
REQUIRE_TYPE = True
# A sentence that proposes or plans ("a proposal to raise the fee to $450") ranks this much lower
# than one that states what holds.
PROPOSAL_PENALTY = 0.5
# Shorter sentences without end punctuation are headings or labels, never answers (list items are
# content: "Books and magazines: 14 days").
_MIN_UNPUNCTUATED_TOKENS = 8
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s")
_SPACE_RE = re.compile(r"\s+")
_TABLE_RULE_RE = re.compile(r":?-{2,}:?|")
_HAS_LETTER_OR_DIGIT_RE = re.compile(r"[^\W_]")
_FEEDBACK_PREFIX = 60
_END_PUNCT = ".!?"
# Sentences that open by referring back ("It keeps ...", "This limit ...", "As a safety net, ...").
_ANAPHOR_RE = re.compile(
    r"^\W*(?:it|its|they|them|their|he|she|his|her)\b",
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
    return answer_type(question) in {"time", "date", "number"}


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
    each cited to every block that contains it, ranked by coverage, the answer type the
    question asks for (a figure, date, reason, place or name it does not already state),
    the question's word order and block score. A question asking for an amount, duration,
    date, clock time or price is answered only by sentences stating one (REQUIRE_TYPE); the
    words naming that type ("what time", "cost", "limit") count as covered by such a sentence.
    The neighbouring sentences count toward eligibility for sentences that hold the
    asked-for type or open with a pronoun; a sentence naming another subject than the
    question (a name absent from its block) is never used. It writes nothing when no
    sentence qualifies (so the grounding gate refuses). `fabricate` adds one bad sentence
    to first drafts, for demonstrations and verifier tests: "nonexistent" cites number
    n_max + 1, "unrelated" cites a real block that does not support the sentence. With
    `feedback`, the sentences it names and the fabrication are left out.
    """

    name = "offline-extractive"
    native_citations = False

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
        neighbours: int = NEIGHBOURS,
        phrase_bonus: float = PHRASE_BONUS,
        require_type: bool = REQUIRE_TYPE,
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
        self.neighbours = neighbours
        self.phrase_bonus = phrase_bonus
        self.require_type = require_type

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

    def _candidates(self, question: str, blocks: Sequence[Block]) -> list[_Candidate]:
        """Every distinct block sentence sharing a question term, scored (eligible or not)."""
        q_terms = question_terms(question)
        if not q_terms or not blocks:
            return []
        weights = dict(idf_weights(q_terms, blocks))
        if self.idf is not None:
            known = self.idf(q_terms) if callable(self.idf) else self.idf
            weights.update({t: known[t] for t in q_terms if t in known})
        kind = answer_type(question)
        typed = type_terms(question, kind) & weights.keys()
        for t in typed:
            weights[t] *= ANSWER_TYPE_WEIGHT
        total = sum(weights.values())
        if total <= 0:
            return []
        top = max(weights.values())
        ratio = self.key_ratio if self.key_ratio is not None else math.inf
        keys = frozenset(t for t, w in weights.items() if w >= ratio * top - 1e-9)
        price = asks_price(question, kind)
        required = self.require_type and kind in QUANTITY_KINDS
        pairs = _pairs(q_terms)
        names = _names(question)
        found: dict[str, _Candidate] = {}
        for block in blocks:
            context = term_set(f"{block.chunk.title} {block.chunk.section}") & weights.keys()
            sentences = _sentences(block.sent_text)
            block_terms = (
                term_set(f"{block.chunk.title} {block.chunk.section} {block.chunk.text}")
                if names
                else frozenset()
            )
            sentence_terms = [term_set(text) & weights.keys() for text in sentences]
            for pos, text in enumerate(sentences):
                fit = type_match(text, kind, question)
                if price:
                    fit = price_match(text, fit)
                if required and fit <= 0.0:
                    continue  # no fact of the asked-for kind: at most a neighbour of the answer
                # a sentence stating the asked-for kind of fact covers the words naming that kind
                own = sentence_terms[pos] | (typed if required and fit >= 1.0 else frozenset())
                # the neighbours in the same block name the topic a pronoun-heavy sentence is about
                near = frozenset().union(
                    *sentence_terms[max(0, pos - self.neighbours) : pos],
                    *sentence_terms[pos + 1 : pos + 1 + self.neighbours],
                )
                if not (fit >= 1.0 or _ANAPHOR_RE.match(text)):
                    near = frozenset()
                if not sentence_terms[pos] and not (fit >= 1.0 and (near or context)):
                    continue
                covered = own | context | near
                if names and _other_subject(text, names, block_terms, weights.keys()):
                    continue
                coverage = sum(weights[t] for t in covered) / total
                own_coverage = sum(weights[t] for t in own) / total
                phrase = self.phrase_bonus * _phrase_share(pairs, terms(text))
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
                    + self.number_bonus * fit
                    + phrase
                    + self.block_weight * block.score
                    - (PROPOSAL_PENALTY if is_proposal(text) else 0.0),
                    order=(block.n, pos),
                )
                prev = found.get(candidate.key)
                if prev is not None:
                    # the same sentence in several blocks: cite them all, keep the better-ranked copy
                    better = candidate if candidate.rank > prev.rank else prev
                    candidate = replace(better, ns=tuple(sorted({*prev.ns, block.n})))
                found[candidate.key] = candidate
        return list(found.values())

    def _choose(self, question: str, blocks: Sequence[Block]) -> list[_Candidate]:
        eligible = [
            c
            for c in self._candidates(question, blocks)
            if c.covers_keys and c.coverage >= self.min_coverage - 1e-9
        ]
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


def _table_cells(line: str) -> list[str] | None:
    """The cells of a Markdown table row ("| a | b |"), or None when the line is not one."""
    line = line.strip()
    if not line.startswith("|") or line.count("|") < 2:
        return None
    return [cell.strip() for cell in line.strip("|").split("|")]


def _table_row(cells: list[str], header: list[str] | None) -> str:
    """A data row as a statement: "label: Header2 cell2; Header3 cell3." (cells alone without a header)."""
    label, rest = cells[0], cells[1:]
    if header is not None and len(header) == len(cells):
        parts = [f"{h} {c}" if h else c for h, c in zip(header[1:], rest, strict=True) if c]
    else:
        parts = [c for c in rest if c]
    body = "; ".join(parts)
    sentence = f"{label}: {body}" if label and body else label or body
    return _SPACE_RE.sub(" ", sentence).strip().rstrip(".") + "."


def _sentences(text: str) -> list[str]:
    """The answer-worthy sentences of a block: bullets stripped, whitespace collapsed, headings skipped,
    table rows rendered as statements with their column headers."""
    out = []
    spans = sentence_spans(text)
    header: list[str] | None = None
    for i, (start, end) in enumerate(spans):
        raw = text[start:end]
        if _HEADING_RE.match(raw):
            continue
        cells = _table_cells(raw)
        if cells is not None:
            if all(_TABLE_RULE_RE.fullmatch(c) for c in cells):
                continue
            following = _table_cells(text[spans[i + 1][0] : spans[i + 1][1]]) if i + 1 < len(spans) else None
            if following is not None and all(_TABLE_RULE_RE.fullmatch(c) for c in following):
                header = cells  # a header row: the rule row follows it
                continue
            if any(_HAS_LETTER_OR_DIGIT_RE.search(c) for c in cells):
                out.append(_table_row(cells, header))
            continue
        header = None
        sentence = _SPACE_RE.sub(" ", _BULLET_RE.sub("", raw)).strip()
        if not sentence or "```" in sentence:
            continue  # code fences are layout, not prose
        if sentence.endswith("?"):
            continue  # a question in the source asks, it does not answer
        listed = bool(_BULLET_RE.match(raw))
        if sentence[-1] not in _END_PUNCT and not listed and len(terms(sentence)) < _MIN_UNPUNCTUATED_TOKENS:
            continue
        out.append(sentence)
    return out


def _names(text: str) -> frozenset[str]:
    """Stems of the capitalised words inside `text` (not its first word): the names it mentions."""
    return term_set(" ".join(w for w in CAPITALISED_RE.findall(text) if w.lower() not in NOT_PLACES))


def _other_subject(
    sentence: str, asked_names: frozenset[str], covered: frozenset[str], asked: Set[str]
) -> bool:
    """True when the sentence's block (`covered`: its text, title and section) misses a name the
    question mentions and the sentence mentions a name the question does not: it states the fact for
    another subject ("Business" for "Team", "Earth" for "Saturn")."""
    if not asked_names - covered:
        return False
    return bool(_names(sentence) - asked - asked_names)


def _pairs(q_terms: Sequence[str]) -> frozenset[tuple[str, str]]:
    return frozenset(zip(q_terms, q_terms[1:], strict=False))


def _phrase_share(pairs: frozenset[tuple[str, str]], sentence_terms: Sequence[str]) -> float:
    """Share of the question's adjacent term pairs that also occur adjacent, in order, in the sentence."""
    if not pairs:
        return 0.0
    return len(pairs & set(zip(sentence_terms, sentence_terms[1:], strict=False))) / len(pairs)


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
