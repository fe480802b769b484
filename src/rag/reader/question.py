"""What the question asks, as the reader weighs it: its terms and their IDF weights over the issued
blocks, the asking sentence and the situation stated before it, the asked kind of answer (and
whether a default is asked), the identifiers and names it mentions, the words no block writes (the
asker's own wording: everyday words, WordNet-aligned paraphrase, foreign names), and the share of
the question's weight a set of covered terms carries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType

from rag.language.lexicon import (
    CODE_USE_RE,
    CONTRAST_PHRASE_RE,
    COUNT_QUESTION_RE,
    DEFAULT_SETUP_RE,
    DEFAULT_TERMS,
    LEAD_CLAUSE_RE,
    QUESTION_FILLERS,
    TRAILING_CONDITION_RE,
    WORD_TOKEN_RE,
    YES_NO_QUESTION_RE,
)
from rag.language.numbers import find_numbers
from rag.language.text import (
    content_words,
    english_frequency,
    normalise,
    sentence_spans,
    stem,
    term_set,
    terms,
    tokens,
)
from rag.language.wordnet import WordNet
from rag.reader.answer_types import (
    QUANTITY_KINDS,
    AnswerType,
    answer_type,
    asked_noun,
    asks_default,
    asks_price,
    code_kind,
    default_terms,
    measured_terms,
    type_terms,
)
from rag.reader.words import (
    identifiers,
    joined_terms,
    names_typed_in_lower_case,
    proper_names,
    sentence_terms,
    spelled,
)
from rag.types import Block

# Words naming the kind of answer wanted ("limit", "default") weigh this share of their IDF.
ANSWER_TYPE_WEIGHT = 0.3
# A question that first describes the asker's situation ("My test client stops at the 302. How do I
# make it follow the redirect?") asks in its last sentence: the words only the statements before it
# use weigh this share of their IDF (documentation states facts, not the reader's situation).
SCENARIO_WEIGHT = 0.3
# The words only an "instead of ..." phrase names ("one project instead of the whole workspace")
# weigh the same share: the asker sets that alternative aside, an answer need not name it.
# A question word no block contains weighs nothing for a sentence that carries the asked kind of
# answer when general English uses it at least this often (per word of running text: 2e-4 is
# "single", "though", "every"; "timeout", "refund", "fine" are rarer): the asker's own wording.
EVERYDAY_FREQUENCY = 2e-4
# A question word general English uses at least this often ("use", "run", "accept", "include",
# "allowed") says what is asked about its subject, not which subject: the answer sentence may leave it
# unsaid; a rarer one ("waived", "buses", "Windows", "renamed") names the subject, and the answer or
# its context must say it (`Candidate.unbound`). 2e-5 on the development sets (1e-5 lets wrong answers
# through on two of them; golden answered-correctly 0.84 either way).
GENERIC_FREQUENCY = 2e-5
# Paraphrase: a question word that no issued block writes (the asker's own wording, the heaviest by
# IDF) counts as covered by a sentence or its context that writes a word one WordNet link away from
# it (sharing a sense, a derived form, a direct hypernym: "thrown away" / "discarded", "delete" /
# "erase"), at this share of the word's weight (an exact match counts fully); only with WordNet's
# data installed (`Tools.wordnet`). Aligning words the blocks do write too, or following
# hyponyms, answered with neighbours of the answer on the held-out sets (docs/eval.md, round 4).
ALIGN_WEIGHT = 0.7
# Only the first senses of each part of speech are followed (WordNet lists the most used first):
# "task" as a piece of work, not its rarer senses.
ALIGN_SENSES = 4
# ... and never to a word general English uses this often or more (per word of running text: "name",
# "use", "take", "place", "set" have so many senses that a link to them shows no shared meaning).
ALIGN_MAX_FREQUENCY = 1e-4
# The tolerance of every comparison of a share with its floor (sums of float weights).
EPS = 1e-9

_NO_ALIGNMENT: Mapping[str, frozenset[str]] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """The question as the ranking reads it: weighted terms, the asked kind, identifiers and names."""

    question: str
    asked: frozenset[str]
    measured: frozenset[str]
    counts: bool
    weights: Mapping[str, float]
    total: float
    topic_total: float
    kind: AnswerType
    typed: frozenset[str]
    price: bool
    default: bool
    identifiers: frozenset[str]
    bound_ids: frozenset[str]
    literals: str
    names: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    # the weights with the situation's words discounted (None: the question states no situation)
    focus: Mapping[str, float] | None = None
    # the situation's words (only the asking sentence's topic terms are counted when weighing by focus)
    stated: frozenset[str] = frozenset()
    uncounted: frozenset[str] = frozenset()
    # everyday English words of the question that no block contains (paraphrase, not a subject)
    plain: frozenset[str] = frozenset()
    # the asking sentence asks whether something holds ("Can I ...?")
    yes_no: bool = False
    # the stem of the kind of named thing a "which option / command ..." question asks for
    code_noun: frozenset[str] = frozenset()
    # the stem of the noun a "what <noun> does ...?" question of no other kind asks for
    noun: str = ""
    # the topic terms of a condition trailing the asking sentence ("... once I graduate?")
    condition: frozenset[str] = frozenset()
    # question term -> the stems of the words one WordNet link away from it (see ALIGN_WEIGHT)
    aligned: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # the topic terms of words general English uses often (see GENERIC_FREQUENCY): what is asked
    # about the subject, which an answer may leave unsaid
    generic: frozenset[str] = frozenset()
    # the topic terms only an "instead of ..." / "rather than ..." phrase names: what the asker
    # does not want, which an answer need not say ("just one project instead of the whole workspace")
    contrasted: frozenset[str] = frozenset()
    # the figures the asking sentence writes ("3.2.7" in "When was 3.2.7 released?"): they name
    # the subject, and an answer's context must write each of them (see `answerable.names_figures`)
    figures: frozenset[str] = frozenset()

    @property
    def required(self) -> bool:
        """An amount, duration, date or default is asked: only a sentence stating one answers."""
        return self.kind in QUANTITY_KINDS or self.default


def idf_weights(question_terms: Sequence[str], blocks: Sequence[Block]) -> dict[str, float]:
    """Smoothed IDF of each question term over the blocks' original texts: ln((N + 1) / (df + 0.5)) > 0."""
    texts = [term_set(b.chunk.text) for b in blocks]
    n = len(texts)
    return {t: math.log((n + 1) / (sum(t in ts for ts in texts) + 0.5)) for t in question_terms}


def question_terms(question: str) -> list[str]:
    """The question's distinct content terms in order, interrogative fillers removed."""
    out: list[str] = []
    for t in sentence_terms(question):
        if t not in QUESTION_FILLERS and t not in out:
            out.append(t)
    return out


def read_question(question: str, blocks: Sequence[Block], wn: WordNet | None) -> Ask | None:
    """The question's weighted terms (IDF over the blocks; kind-naming words and words of the
    situation described before the asking sentence discounted), or None when it has no content term
    or there are no blocks. The asked kind is read from the asking sentence; `wn` aligns its words."""
    # the verb of using a named thing ("call flash()", "run ``celery purge``") adds no topic of its own
    q_terms = [t for t in question_terms(question) if t not in _usage_verbs(question)]
    if not q_terms or not blocks:
        return None
    asking, situation = split_question(question)
    weights, kind, typed, default = _weights(question, asking, q_terms, blocks)
    contrasted = _contrasted(question, weights.keys() - typed)
    for t in contrasted:
        weights[t] *= SCENARIO_WEIGHT  # the alternative set aside weighs as a situation does
    total = sum(weights.values())
    if total <= 0:
        return None
    stated = (term_set(situation) - term_set(asking)) & weights.keys()
    named = _asked_identifiers(question, blocks)
    return Ask(
        question=question,
        asked=term_set(question),
        measured=measured_terms(asking),
        counts=bool(COUNT_QUESTION_RE.search(asking)),
        weights=weights,
        total=total,
        topic_total=topic_total(weights, typed),
        kind=kind,
        typed=typed,
        price=asks_price(asking, kind),
        default=default,
        identifiers=named,
        bound_ids=_named_in(asking, named) if situation else named,
        literals=question.lower(),
        names=proper_names(question) | _typed_names(question, blocks),
        pairs=frozenset(zip(q_terms, q_terms[1:], strict=False)),
        focus=_focus(weights, stated),
        stated=frozenset(stated),
        plain=_everyday_absent(question, weights.keys() - typed, blocks),
        yes_no=YES_NO_QUESTION_RE.match(asking) is not None,
        code_noun=term_set(code_kind(question)) if kind == "code" else frozenset(),
        noun="" if kind else asked_noun(asking),
        condition=_condition_terms(asking, weights.keys() - typed),
        aligned=_alignments(wn, question, unwritten(weights.keys(), blocks)),
        generic=_generic(question, weights.keys() - typed),
        contrasted=contrasted,
        figures=written_figures(asking),
    )


def _typed_names(question: str, blocks: Sequence[Block]) -> frozenset[str]:
    """The names a question typed in lower case gives (`words.names_typed_in_lower_case`), read off
    the blocks' text and the parts of their section paths."""
    headings = [part.strip() for b in blocks for part in b.chunk.section.split(">")]
    return names_typed_in_lower_case(question, [b.chunk.text for b in blocks], headings)


def written_figures(text: str) -> frozenset[str]:
    """The digit-bearing words of `text`, trailing punctuation dropped and dashes read as hyphens
    ("3.2.7", "8", "R300", "2026-27" for "2026–27"); an arithmetic expression is one figure, its
    spaces dropped ("3**3**3", "2 * 8"): its numbers are not releases or amounts of their own."""
    expressions = [_SPACE_RE.sub("", m.group(0)) for m in _EXPRESSION_RE.finditer(text)]
    words = WORD_TOKEN_RE.findall(_DASH_RE.sub("-", _EXPRESSION_RE.sub(" ", text)))
    return frozenset(expressions + [w.rstrip(".,:'-").lower() for w in words if any(c.isdigit() for c in w)])


_DASH_RE = re.compile(r"[‐‑‒–—]")
_SPACE_RE = re.compile(r"\s+")
# numbers joined by arithmetic operators ("3**3**3", "(2 + 3) * 4"); "-" is a range or a hyphen
_EXPRESSION_RE = re.compile(r"\(?\d[\w.]*\)?(?:[ \t]*(?:\*\*|[*+/^])[ \t]*\(?\d[\w.]*\)?)+")


def _contrasted(question: str, topic: Set[str]) -> frozenset[str]:
    """The topic terms that only a contrast phrase of the question names (see `Ask.contrasted`)."""
    phrases = list(CONTRAST_PHRASE_RE.finditer(question))
    if not phrases:
        return frozenset()
    inside = term_set(" ".join(m.group(0) for m in phrases))  # "rather" with its phrase
    outside = term_set(CONTRAST_PHRASE_RE.sub(" ", question))
    return frozenset((inside - outside) & topic)


def _weights(
    question: str, asking: str, q_terms: Sequence[str], blocks: Sequence[Block]
) -> tuple[dict[str, float], AnswerType, frozenset[str], bool]:
    """(the terms' IDF weights with the words naming the asked kind, or the asked default, at
    ANSWER_TYPE_WEIGHT; the asked kind; those words; whether a default is asked)."""
    weights = idf_weights(q_terms, blocks)
    kind = answer_type(asking) or answer_type(question)
    wording = _default_wording(question, asking)
    # "Why doesn't it escape by default?" asks for a reason: the default is the situation, not the answer
    default = kind != "cause" and asks_default(wording)
    asked_default = DEFAULT_TERMS | default_terms(wording) if default else frozenset()
    typed = (type_terms(asking, kind) | asked_default) & weights.keys()
    for t in typed:
        weights[t] *= ANSWER_TYPE_WEIGHT
    return weights, kind, frozenset(typed), default


def _default_wording(question: str, asking: str) -> str:
    """The words a default may be asked in: a condition leading the asking sentence may ask for the
    default ("If I call it without a name, what ...?"); statements before it describe the asker's
    setup ("My default is X.")."""
    lead = LEAD_CLAUSE_RE.match(question.strip())
    # ... but "With the default retry policy, what ...?" describes a setup in force, it asks no default
    return asking if lead is None or DEFAULT_SETUP_RE.search(lead.group(0)) else question


def _focus(weights: Mapping[str, float], stated: Set[str]) -> Mapping[str, float] | None:
    """The weights with the situation's words at SCENARIO_WEIGHT; None when it states none."""
    focus = {t: w * SCENARIO_WEIGHT if t in stated else w for t, w in weights.items()}
    return focus if stated else None


def topic_total(weights: Mapping[str, float], typed: Set[str]) -> float:
    """The weight of the topic terms: those that do not name the asked kind of answer."""
    return sum(w for t, w in weights.items() if t not in typed)


def _alignments(wn: WordNet | None, question: str, keys: Set[str]) -> Mapping[str, frozenset[str]]:
    """For each question term, the stems of the words one WordNet link away from its word, or from
    the phrase it starts ("thrown away" -> "discard", "dispose", ...); empty without WordNet. Numbers
    and identifiers never align; stop words are no question terms."""
    if wn is None:
        return _NO_ALIGNMENT
    words = _tokens(question)
    found: dict[str, set[str]] = {}
    for i, word in enumerate(words):
        t = stem(word)
        if t not in keys or not word.isalpha() or find_numbers(word):
            continue  # a figure, a number word ("ten", "first") or an identifier's part
        lemmas = set(wn.related(word, ALIGN_SENSES))
        _align_phrases(wn, words, i, keys, lemmas, found)
        found.setdefault(t, set()).update(_stems(lemmas))
    return {t: frozenset(s - {t}) for t, s in found.items() if s - {t}}


def _align_phrases(
    wn: WordNet, words: Sequence[str], i: int, keys: Set[str], lemmas: set[str], found: dict[str, set[str]]
) -> None:
    """Adds to `lemmas` the words one link away from the phrase word `i` starts (as a verb, then as a
    noun); the next word, when a question term, aligns with what `lemmas` holds after each."""
    for pos in ("verb", "noun"):
        phrase = wn.phrase_lemma(tuple(words[i : i + 2]), pos)
        if phrase:
            lemmas |= wn.related(phrase, ALIGN_SENSES)
            if stem(words[i + 1]) in keys:
                found.setdefault(stem(words[i + 1]), set()).update(_stems(lemmas))


def unwritten(keys: Set[str], blocks: Sequence[Block]) -> frozenset[str]:
    """The question terms no block writes (in its text, title or section): the asker's own wording,
    to be matched by paraphrase; a term some block writes is matched by itself."""
    written: set[str] = set()
    for b in blocks:
        written |= joined_terms(b.chunk.title, b.chunk.section, b.chunk.text)
    return frozenset(keys - written)


def _stems(lemmas: Set[str]) -> frozenset[str]:
    """The stems of the one-word lemmas rarer in English than ALIGN_MAX_FREQUENCY, stop words left out."""
    kept = (w for w in lemmas if " " not in w and "-" not in w and english_frequency(w) < ALIGN_MAX_FREQUENCY)
    return term_set(" ".join(kept))


def matched(ask: Ask, found: frozenset[str]) -> frozenset[str]:
    """The question terms among `found` (a text's terms), with those a word of it paraphrases."""
    exact = found & ask.weights.keys()
    if not ask.aligned:
        return exact
    # a word that is itself a question term stands for that term only
    other = found - ask.weights.keys()
    return exact | {t for t, near in ask.aligned.items() if t not in exact and near & other}


def share(
    weights: Mapping[str, float], covered: Set[str], total: float, via: Set[str] = frozenset()
) -> float:
    """The share of `total` the `covered` terms weigh, those in `via` (paraphrased) at ALIGN_WEIGHT."""
    if total <= 0:
        return 0.0
    return sum(weights[t] * (ALIGN_WEIGHT if t in via else 1.0) for t in covered if t in weights) / total


def _condition_terms(asking: str, topic: Set[str]) -> frozenset[str]:
    """The topic terms of the conditions trailing the asking sentence ("once I graduate" ->
    {"graduat"}); "if I don't choose one" asks for the default and names no circumstance."""
    conditions = [m for m in TRAILING_CONDITION_RE.finditer(asking) if not asks_default(m.group(0))]
    return frozenset(t for m in conditions for t in terms(m.group(1)) if t in topic)


@lru_cache(maxsize=4096)
def _usage_verbs(question: str) -> frozenset[str]:
    """Stems of the verbs that only say a named code thing is used ("call" in "If I call flash()
    ...", "run" in "run ``make docs``"): documentation names the thing, not the act of using it."""
    return frozenset(stem(m.group(1).lower()) for m in CODE_USE_RE.finditer(question))


def variants(ask: Ask) -> list[tuple[Ask, bool]]:
    """The other weightings a sentence may qualify on: the situation's words discounted (the asking
    sentence's topic terms counted), and, for a sentence carrying the asked kind only (True), each
    of the two with the everyday words no block contains at zero (see EVERYDAY_FREQUENCY)."""
    bases: list[tuple[Mapping[str, float], frozenset[str]]] = [(ask.weights, frozenset())]
    if ask.focus is not None:
        bases.append((ask.focus, ask.stated))
    weighings = [(weights, uncounted, False) for weights, uncounted in bases[1:]]
    if ask.plain:
        weighings += [
            ({t: 0.0 if t in ask.plain else w for t, w in weights.items()}, uncounted | ask.plain, True)
            for weights, uncounted in bases
        ]
    return [
        (
            replace(
                ask,
                weights=weights,
                total=sum(weights.values()),
                topic_total=topic_total(weights, ask.typed),
                uncounted=uncounted,
            ),
            kind_only,
        )
        for weights, uncounted, kind_only in weighings
    ]


def _everyday_absent(question: str, candidates: Set[str], blocks: Sequence[Block]) -> frozenset[str]:
    """The question terms among `candidates` that no block contains and that general English uses at
    least EVERYDAY_FREQUENCY times per word ("though", "someone", "every"): wording of the asker's own,
    where a term rare in English ("timeout", "refund") is a subject the blocks do not cover."""
    texts = [term_set(b.chunk.text) for b in blocks]
    surface: dict[str, float] = {}
    for word in _content_words(question):
        t = stem(word)
        if t in candidates and not any(t in ts for ts in texts):
            surface[t] = max(surface.get(t, 0.0), english_frequency(word))
    return frozenset(t for t, f in surface.items() if f >= EVERYDAY_FREQUENCY)


def _generic(question: str, topic: Set[str]) -> frozenset[str]:
    """The terms of `topic` whose word in the question general English uses at least
    GENERIC_FREQUENCY times per word (a term written by several words counts by its most used one)."""
    found: set[str] = set()
    for word in _content_words(question):
        t = stem(word)
        # an inflected form is rarer than its word ("finishes", "finish"): the more used one counts
        if t in topic and max(english_frequency(word), english_frequency(t)) >= GENERIC_FREQUENCY:
            found.add(t)
    return frozenset(found)


def foreign_names(wn: WordNet | None, question: str, unwritten: Set[str]) -> frozenset[str]:
    """The question words no block writes that general English rarely uses (below EVERYDAY_FREQUENCY)
    and WordNet does not know ("telnet", "CVE"): names of things the blocks do not cover, not the
    asker's wording of what they say; meaning must not stand for them. Without WordNet every rare
    unwritten word counts."""
    return frozenset(
        word
        for word in _content_words(question)
        if stem(word) in unwritten
        and word.isalpha()
        and english_frequency(word) < EVERYDAY_FREQUENCY
        and not (wn is not None and wn.parts_of_speech(word))
    )


def split_question(question: str) -> tuple[str, str]:
    """(asking, situation): the trailing sentences that end in "?" and the statements before them
    ("My test client stops at the 302." / "How do I make it follow the redirect?"), or in a
    one-sentence question the condition leading it ("With the default limits," / "what is the most
    memory ...?"). A question without such a lead-in is all asking: (question, ""). A question typed
    without its question mark is read as if it had one; one ending in a full stop is a statement."""
    text = question.strip()
    if text and text[-1].isalnum():
        text += "?"  # "if my webhook endpoint is down, does it retry" asks as much as with the mark
    spans = sentence_spans(text)
    if not text.endswith("?"):
        return text, ""
    if len(spans) < 2:
        # a condition leading the one asking sentence ("If I call it without a name, what ...?")
        lead = LEAD_CLAUSE_RE.match(text)
        return (text[lead.end() :], text[: lead.end()]) if lead else (text, "")
    # the asking part: the trailing run of sentences that end in "?"
    cut = len(spans)
    while cut > 0 and text[spans[cut - 1][0] : spans[cut - 1][1]].rstrip().endswith("?"):
        cut -= 1
    if cut == 0:
        return text, ""
    start = spans[cut][0]
    return text[start:], text[:start]


def _asked_identifiers(question: str, blocks: Sequence[Block]) -> frozenset[str]:
    """The identifiers the question names, written as code or a snake_case name spelled out as words
    ("worker class" for a block's `worker_class`); never a part of a named one (`max_requests` in
    `max_requests_jitter`)."""
    named = identifiers(question)
    words = f" {normalise(question)} "
    found = identifiers(" ".join(f"{b.chunk.section} {b.sent_text}" for b in blocks))
    spelled_out = {i for i in found if "_" in i and "." not in i and f" {spelled(i)} " in words}
    return named | frozenset(i for i in spelled_out if not any(i in n for n in named | spelled_out if n != i))


def _named_in(text: str, named: frozenset[str]) -> frozenset[str]:
    """The identifiers of `named` that `text` writes, as code or spelled out in words."""
    words = f" {normalise(text)} "
    found = identifiers(text)
    return frozenset(i for i in named if i in found or ("_" in i and f" {spelled(i)} " in words))


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """The word tokens of a question (see `tokens`)."""
    return tuple(tokens(text))


@lru_cache(maxsize=4096)
def _content_words(text: str) -> tuple[str, ...]:
    """The content words of a question (see `content_words`)."""
    return tuple(content_words(text))
