"""Refusal line 2: two documents give different values for the same quantity in the asked context.

Calendar years ("founded in 1856", dimension "year") are quantities only when the question asks for a
point in time ("when", "what year", "what date"); counts of things ("4 items") and money per period
("$96 per year") are dimensions of their own (see quantities.py).

Only statements in prose count: a figure inside code, a literal block or pasted terminal output
(`rag.language.text.code_spans`) is an example, never a side.

A pair of quantities conflicts when all hold:
- they come from blocks of different `doc_id`s, in the same dimension, with different normalised values
  (beyond the dimension's rounding tolerance, see quantities.py);
- their contexts share at least `MIN_SHARED` topic keys, and at least `MIN_JACCARD` of all their keys,
  and at least one shared key comes from both sentences. A quantity's keys are the stemmed content terms
  of its own sentence in a window of `WINDOW_BEFORE` terms before it (not reaching back past another
  quantity) plus up to `WINDOW_AFTER` terms after it up to the next clause break ("250 MB per file" adds
  "file"); numbers and units are not keys. Its context is its keys plus the terms of its chunk's
  section heading (a statement under "Bulky waste collections" is about bulky waste collections);
- the keys do not carry opposite bounds (one says minimum, the other maximum);
- the sides are not about distinct subjects: each side has a key the other lacks (its qualifier, e.g.
  "first" vs "second", "desexed" vs "standard") and one side's own document gives a different value to
  another statement of the dimension that carries the other side's qualifier but not its own (the
  document itself tells the two subjects apart);
- with a question (minus how-question words like "long", "many"): a shared key or unit word is a
  question term, each side addresses (in its keys, unit words, chunk title or section) more than
  `MIN_QUESTION_SHARE` of the question's terms; no question term occurs in one side's sentence or
  section heading but nowhere in the other's chunk (text, title, section): a question about "webhook
  retries" is not about payment retries, while a word elsewhere in one chunk or in one document title
  does not decide, nor, for money, a word that only asks for a price ("cost", "fee"); no other
  statement of the same dimension covers more of the question than both sides (a question about the
  Team plan is not about two prices of another plan); and no question term that both sides leave
  unaddressed is addressed by another statement of that dimension (its keys, unit words, title or
  section) whose value differs from both sides' and that shares `MIN_SHARED` keys with a side
  (the question names a subject another statement on the same topic is about; "car" in a car park
  rate does not make a question about a parking permit's fee about that rate).
The strongest conflict has the most shared keys touching the question, then the most keys shared by the
two sentences, then the highest share of the two sentences' keys in common, then the most shared context
keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache

from rag.language.lexicon import ASKS_WHEN_RE, HOW_FORMS, LOWER_BOUND, MONEY_FORMS, UPPER_BOUND, WEAK_KEYS
from rag.language.quantities import Quantity, find_quantities, same_value
from rag.language.text import code_spans, is_hypothetical, sentence_spans, term_set, terms
from rag.reader.answer_types import QUANTITY_KINDS, answer_type
from rag.types import Block, Conflict, ConflictPolicy, Statement

MIN_SHARED = 2
MIN_JACCARD = 0.25
MIN_QUESTION_SHARE = 0.5
WINDOW_BEFORE = 8
WINDOW_AFTER = 4

_CLAUSE_BREAK_RE = re.compile(r"[;:,()]|\s[–—-]\s")
# Why a sentence of an answer that does not ask for the disputed quantity is withheld (the rest shown).
ONE_SIDE = "states one side of a figure the issued documents disagree on"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Found:
    block: Block
    quantity: Quantity
    keys: frozenset[str]
    sentence: tuple[int, int]
    chunk_terms: frozenset[str]  # the chunk's text, title and section
    own_terms: frozenset[str]  # the statement's sentence and its chunk's section heading
    unit_terms: frozenset[str]  # words of the quantity itself ("requests", "minute")
    section_terms: frozenset[str]  # the chunk's section heading

    @property
    def context(self) -> frozenset[str]:
        """Keys plus section heading terms: what the pair test compares."""
        return self.keys | self.section_terms

    def coverage(self, asked: frozenset[str]) -> int:
        """How many question terms this statement addresses (keys, unit words, title and section)."""
        return len(self.addressed(asked))

    def addressed(self, asked: frozenset[str]) -> frozenset[str]:
        """The question terms this statement addresses (keys, unit words, title and section)."""
        return asked & (self.keys | self.unit_terms | self.heading_terms)

    @property
    def heading_terms(self) -> frozenset[str]:
        return _headings(self.block)


# A conflict with its rank key (see the module docstring), and per dimension each statement with the
# question terms it addresses.
_Ranked = tuple[tuple[int, int, float, int], Conflict]
_Addressed = dict[str, list[tuple[_Found, frozenset[str]]]]


def detect_conflict(
    question: str, blocks: Sequence[Block], *, policy: ConflictPolicy = "present_both"
) -> Conflict | None:
    """The strongest conflict among `blocks` that touches `question`, or None. With `prefer_newest` the
    conflict is still returned (the caller decides); statements are ordered newest first."""
    found = find_conflicts(question, blocks)
    if not found:
        return None
    return replace(found[0], policy=policy)


def conflict_about(sentence: str, cited: frozenset[str], blocks: Sequence[Block]) -> Conflict | None:
    """The strongest conflict among `blocks` about what `sentence` states, one side of it in a chunk the
    sentence cites (`cited`: chunk ids): the sentence's figure is contradicted by another block."""
    for conflict in find_conflicts(sentence, blocks):
        if any(s.chunk_id in cited for s in conflict.statements):
            return conflict
    return None


def presented(conflict: Conflict, cited: frozenset[str]) -> bool:
    """Both sides of `conflict` are among the chunks an answer cites: it shows the disagreement."""
    return all(s.chunk_id in cited for s in conflict.statements)


def asks_for(conflict: Conflict, question: str) -> bool:
    """Whether `question` asks for the disputed quantity: it asks for an amount, a time or a date
    (`answer_types.answer_type`), or names the quantity's measure (a money word such as "spend" or "pay"
    for money, a unit word of either side such as "days"). "What does the plan include?" asks for none."""
    if answer_type(question) in QUANTITY_KINDS:
        return True
    measure = MONEY_FORMS if conflict.dimension.startswith("money") else frozenset()
    units = term_set(" ".join(s.unit for s in conflict.statements)) - WEAK_KEYS
    return bool(term_set(question) & (measure | units))


def one_side(conflict: Conflict, sentence: str) -> str:
    """Why `sentence` is withheld for stating one side of `conflict`: both sides with their documents."""
    sides = "; ".join(
        f"{s.title} ({s.updated_at.isoformat() if s.updated_at else 'undated'}) says {s.quantity}"
        for s in conflict.statements
    )
    return f"{ONE_SIDE}: {sides}"


def states_a_side(conflict: Conflict, sentence: str, cited: frozenset[str]) -> bool:
    """`sentence`, citing the chunks `cited`, gives the disputed figure of one side: the value of a
    statement whose chunk it cites (a sentence on something else in that chunk takes no side)."""
    found = [q for q in find_quantities(sentence, years=conflict.dimension == "year")]
    for statement in conflict.statements:
        if statement.chunk_id not in cited:
            continue
        for q in found:
            if q.dimension == conflict.dimension and abs(q.value - statement.value) <= q.rel_tol * max(
                abs(q.value), abs(statement.value), 1e-9
            ):
                return True
    return False


def find_conflicts(question: str | None, items: Sequence[Block]) -> list[Conflict]:
    """Every conflicting pair among `items`, strongest first; `question=None` applies no relevance filter."""
    years = question is not None and bool(ASKS_WHEN_RE.search(question))
    every = [f for block in items for f in _quantities(block, years)]
    found = every
    asked = term_set(question) - HOW_FORMS if question is not None else None
    best: dict[str, int] = {}
    addressed: _Addressed = {}
    if asked is not None:
        found = [f for f in found if (f.keys | f.unit_terms) & asked]
        best, addressed = _by_dimension(found, asked)
    ranked = _ranked_pairs(found, every, asked, best, addressed)
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [conflict for _, conflict in ranked]


def _ranked_pairs(
    found: Sequence[_Found],
    every: Sequence[_Found],
    asked: frozenset[str] | None,
    best: dict[str, int],
    addressed: _Addressed,
) -> list[_Ranked]:
    """Each conflicting pair of `found` statements with its rank key, in the order of `found`."""
    ranked: list[_Ranked] = []
    for i, a in enumerate(found):
        for b in found[i + 1 :]:
            scored = _pair(a, b, asked)
            if scored is None or _distinct_subjects(a, b, every):
                continue
            if asked is not None and _about_another(a, b, asked, best, addressed):
                continue
            ranked.append(scored)
    return ranked


def _by_dimension(found: Sequence[_Found], asked: frozenset[str]) -> tuple[dict[str, int], _Addressed]:
    """Per dimension: the most question terms one statement addresses, and each statement with the
    question terms it addresses (in `found` order)."""
    best: dict[str, int] = {}
    addressed: _Addressed = {}
    for f in found:
        best[f.quantity.dimension] = max(best.get(f.quantity.dimension, 0), f.coverage(asked))
        addressed.setdefault(f.quantity.dimension, []).append((f, f.addressed(asked)))
    return best, addressed


def _about_another(
    a: _Found,
    b: _Found,
    asked: frozenset[str],
    best: dict[str, int],
    addressed: _Addressed,
) -> bool:
    """True when the question is better answered, or names a subject, elsewhere in the dimension."""
    # another statement of this dimension answers the question better than either side
    if max(a.coverage(asked), b.coverage(asked)) < best[a.quantity.dimension]:
        return True
    # the question names a subject ("Team") that another statement of this dimension is about
    # and neither side is: the pair is about something else ("Business")
    return _named_elsewhere(a, b, asked, addressed[a.quantity.dimension])


def _headings(block: Block) -> frozenset[str]:
    return term_set(f"{block.chunk.title} {block.chunk.section}")


def context_keys(
    text: str, quantity: Quantity, others: Sequence[Quantity], sentence: tuple[int, int]
) -> frozenset[str]:
    """Stemmed content terms around `quantity` inside its sentence (see the module docstring)."""
    start, end = sentence
    before_from = max([q.end for q in others if start <= q.end <= quantity.start], default=start)
    after_to = min([q.start for q in others if quantity.end <= q.start < end], default=end)
    clause = _CLAUSE_BREAK_RE.search(text, quantity.end, after_to)
    if clause is not None:
        after_to = clause.start()
    before = [t for t in terms(text[before_from : quantity.start]) if not t.isdigit()][-WINDOW_BEFORE:]
    after = [t for t in terms(text[quantity.end : after_to]) if not t.isdigit()][:WINDOW_AFTER]
    return frozenset(before + after)


def _topic(keys: frozenset[str]) -> frozenset[str]:
    return keys - WEAK_KEYS


def _quantities(block: Block, years: bool = False) -> list[_Found]:
    analysed, chunk_terms = _analyse(block.chunk.text, years)
    if not analysed:
        return []
    chunk_terms |= _headings(block)
    section = term_set(block.chunk.section)
    return [
        _Found(
            block=block,
            quantity=quantity,
            keys=keys,
            sentence=sentence,
            chunk_terms=chunk_terms,
            unit_terms=frozenset(t for t in terms(quantity.text) if not t.isdigit()),
            section_terms=section,
            own_terms=term_set(block.chunk.text[sentence[0] : sentence[1]]) | section,
        )
        for quantity, keys, sentence in analysed
    ]


# Cached by chunk text: the same chunks come back request after request.
@lru_cache(maxsize=4096)
def _analyse(
    text: str, years: bool
) -> tuple[tuple[tuple[Quantity, frozenset[str], tuple[int, int]], ...], frozenset[str]]:
    quantities = find_quantities(text, years=years)
    if not quantities:
        return (), term_set(text)
    spans = sentence_spans(text)
    code = code_spans(text)
    found = []
    for quantity in quantities:
        if any(s <= quantity.start < e for s, e in code):
            continue  # a figure in code or pasted terminal output is an example, not a statement
        sentence = next(((s, e) for s, e in spans if s <= quantity.start < e), (quantity.start, quantity.end))
        if is_hypothetical(text[sentence[0] : sentence[1]]):
            continue  # a proposal or a possibility does not state what currently holds
        found.append((quantity, context_keys(text, quantity, quantities, sentence), sentence))
    return tuple(found), term_set(text)


def _pair(a: _Found, b: _Found, asked: frozenset[str] | None) -> _Ranked | None:
    if a.block.chunk.doc_id == b.block.chunk.doc_id:
        return None
    if a.quantity.dimension != b.quantity.dimension or same_value(a.quantity, b.quantity):
        return None
    shared = _topic(a.context) & _topic(b.context)
    if len(shared) < MIN_SHARED or len(shared) < MIN_JACCARD * len(_topic(a.context) | _topic(b.context)):
        return None
    in_sentences = _topic(a.keys) & _topic(b.keys)
    if not in_sentences:
        return None
    if _opposite_bounds(a.keys, b.keys):
        return None
    touching = 0 if asked is None else _touching(a, b, shared, asked)
    if touching is None:
        return None
    jaccard = len(in_sentences) / len(a.keys | b.keys)
    statements = sorted((_statement(a), _statement(b)), key=_newest_first)
    conflict = Conflict(
        dimension=a.quantity.dimension, context=tuple(sorted(shared)), statements=tuple(statements)
    )
    return (touching, len(in_sentences), jaccard, len(shared)), conflict


def _touching(a: _Found, b: _Found, shared: frozenset[str], asked: frozenset[str]) -> int | None:
    """How many of the shared keys and unit words are question terms; None when the pair does not
    touch the question, or one side covers too little of it, or one side's own words name a question
    term the other's chunk lacks (see the module docstring)."""
    touching = len((shared | (a.unit_terms & b.unit_terms)) & asked)
    least = min(a.coverage(asked), b.coverage(asked))
    if not touching or least <= MIN_QUESTION_SHARE * len(asked):
        return None
    decisive = asked - MONEY_FORMS if a.quantity.dimension.startswith("money") else asked
    if decisive & ((a.own_terms - b.chunk_terms) | (b.own_terms - a.chunk_terms)):
        return None
    return touching


def _named_elsewhere(
    a: _Found, b: _Found, asked: frozenset[str], others: Sequence[tuple[_Found, frozenset[str]]]
) -> bool:
    """True when some question term is addressed by another statement of the dimension (its keys,
    unit words, title or section) with a value unlike both sides', but by neither side of the pair.
    A statement with either side's value restates that side and names no other subject."""
    missing = asked - a.addressed(asked) - b.addressed(asked)
    if not missing:
        return False
    return any(
        missing & terms
        and not same_value(f.quantity, a.quantity)
        and not same_value(f.quantity, b.quantity)
        and _on_topic(f, a, b)
        for f, terms in others
    )


def _on_topic(f: _Found, a: _Found, b: _Found) -> bool:
    """True when `f` shares at least `MIN_SHARED` topic keys (its sentence's, not the section's) with `a`
    or with `b`: a sibling statement, not a neighbour under the same heading."""
    keys = _topic(f.keys)
    return len(keys & _topic(a.keys)) >= MIN_SHARED or len(keys & _topic(b.keys)) >= MIN_SHARED


def _distinct_subjects(a: _Found, b: _Found, every: Sequence[_Found]) -> bool:
    """True when each side carries a qualifier the other lacks and one side's document states another
    value of the dimension for the other side's qualifier (and not for its own): two subjects, not one."""
    a_only, b_only = _topic(a.keys - b.keys), _topic(b.keys - a.keys)
    if not a_only or not b_only:
        return False
    return _tells_apart(a, a_only, b_only, every) or _tells_apart(b, b_only, a_only, every)


def _tells_apart(side: _Found, own: frozenset[str], theirs: frozenset[str], every: Sequence[_Found]) -> bool:
    """True when `side`'s document gives another value of its dimension to a statement that carries
    the other side's qualifier (`theirs`) but not its own (`own`)."""
    return any(
        sibling.block.chunk.doc_id == side.block.chunk.doc_id
        and sibling.quantity.dimension == side.quantity.dimension
        and sibling is not side
        and not same_value(sibling.quantity, side.quantity)
        and sibling.keys & theirs
        and not sibling.keys & own
        for sibling in every
    )


def _opposite_bounds(a: frozenset[str], b: frozenset[str]) -> bool:
    def bound(keys: frozenset[str]) -> str:
        lower, upper = bool(keys & LOWER_BOUND), bool(keys & UPPER_BOUND)
        return "lower" if lower and not upper else "upper" if upper and not lower else ""

    return {bound(a), bound(b)} == {"lower", "upper"}


def _statement(found: _Found) -> Statement:
    chunk = found.block.chunk
    start, end = found.sentence
    return Statement(
        n=found.block.n,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        title=chunk.title,
        url=chunk.url,
        updated_at=chunk.updated_at,
        text=chunk.text[start:end],
        quantity=found.quantity.text,
        value=found.quantity.value,
        unit=found.quantity.unit,
        start=start,
        end=end,
    )


def _newest_first(statement: Statement) -> tuple[int, int, int]:
    when = statement.updated_at or date.min
    return (-when.toordinal(), statement.n, statement.start)
