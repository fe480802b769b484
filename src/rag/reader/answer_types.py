"""Answer types: what kind of fact a question asks for, and whether a sentence states one.

Detected from the question's wording alone (plain English, no domain words): "time" (a duration or
frequency), "date" (a point in time), "number" (an amount, limit, size, price, version), "cause",
"place", "person", or "" when the wording names no type. Independently, a question may ask for a
default ("what is the default ...", "... by default?"). The offline generator uses these to prefer,
and for amounts, times, dates and defaults to require, a sentence that holds the asked kind of fact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Literal

from rag.language.lexicon import (
    ANSWER_TYPE_TERMS,
    ASKED_NOUN_RE,
    CALENDAR_DATE_RE,
    CAPITALISED_RE,
    CAUSE_FORWARD_RE,
    CAUSE_NOUN_RE,
    CAUSE_QUESTION_RE,
    CAUSE_RE,
    CLAUSE_END_RE,
    CLOCK_QUESTION_RE,
    CLOCK_RE,
    CODE_FORMS,
    CODE_QUESTION_RE,
    DATE_QUESTION_RE,
    DATE_RE,
    DEFAULT_QUESTION_RE,
    DEFAULT_STATEMENT_RE,
    FIGURE_RE,
    FREQUENCY_QUESTION_RE,
    FREQUENCY_RE,
    HOW_TO_QUESTION_RE,
    IDENTIFIER_RE,
    INLINE_CODE_RE,
    MEASURED_NOUN_RE,
    MONEY_RE,
    NAMED_VERSION_RE,
    NO_CHARGE_RE,
    NOT_ASKED_NOUNS,
    NOT_PLACES,
    NUMBER_QUESTION_RE,
    PERSON_QUESTION_RE,
    PLACE_QUESTION_RE,
    PLACE_RE,
    PRICE_QUESTION_RE,
    PRICE_TERMS,
    QUESTION_FILLERS,
    REFERRING_RE,
    RELEASE_RE,
    TIME_QUESTION_RE,
    TIME_WORD_RE,
    TYPE_NOUN_RE,
    VERSION_QUESTION_RE,
    VERSION_RE,
    WORD_TOKEN_RE,
)
from rag.language.text import stem, term_set, terms
from rag.reader.words import CODE_LITERAL_RE

AnswerType = Literal["time", "date", "number", "code", "cause", "place", "person", ""]
# How near (in words) the asked kind of thing must be named to a code literal that answers "which
# option / variable ...": "the ``X`` environment variable", "the variable is ``X``".
CODE_NOUN_WORDS = 3
# Types whose answer is a figure or a date: a question of one of these is answered only by a
# sentence stating one.
QUANTITY_KINDS: frozenset[AnswerType] = frozenset({"time", "date", "number"})

# Question patterns in the order they are tried: the first that matches names the type.
_QUESTION_PATTERNS: tuple[tuple[AnswerType, Callable[[str], re.Match[str] | None]], ...] = (
    ("time", TIME_QUESTION_RE.search),
    ("date", lambda q: DATE_QUESTION_RE.search(q) or TYPE_NOUN_RE.search(q)),
    ("number", NUMBER_QUESTION_RE.search),
    ("code", CODE_QUESTION_RE.search),
    ("cause", CAUSE_QUESTION_RE.search),
    ("place", PLACE_QUESTION_RE.search),
    ("person", PERSON_QUESTION_RE.search),
)


def answer_type(question: str) -> AnswerType:
    """The kind of fact `question` asks for: "time", "date", "number", "cause", "place", "person" or ""
    (a how-to question asks for a procedure: "")."""
    if HOW_TO_QUESTION_RE.search(question):
        return ""
    # The pattern matched earliest names the type: the wh-phrase governs ("Which worker option ...
    # after a given number of tasks" asks for an option, not a number); ties go to the list order.
    found = [
        (match.start(), order, kind)
        for order, (kind, matches) in enumerate(_QUESTION_PATTERNS)
        if (match := matches(question))
    ]
    return min(found)[2] if found else ""


def measured_noun(question: str) -> str:
    """The stem of the noun a "how many / how much" question counts ("threads" in "How many threads
    does ..."), or "" when it names none ("How much does it cost?") or names the kind of answer."""
    match = MEASURED_NOUN_RE.search(question)
    if match is None:
        return ""
    stems = terms(match.group(1))
    return stems[-1] if stems and stems[-1] not in ANSWER_TYPE_TERMS | PRICE_TERMS else ""


def measured_terms(question: str) -> frozenset[str]:
    """The stems of the noun phrase a "how many / how much" question counts ("worker processes" ->
    {"worker", "process"}): a figure about any of them counts it (documents say "1 worker" for "how
    many worker processes"). Empty when `measured_noun` finds no noun."""
    head = measured_noun(question)
    if not head:
        return frozenset()
    match = MEASURED_NOUN_RE.search(question)
    assert match is not None  # measured_noun found one
    return frozenset(terms(match.group(1))) - ANSWER_TYPE_TERMS - PRICE_TERMS


def default_terms(question: str) -> frozenset[str]:
    """Stems of the words asking for a default ("default", "unless I set", "without giving"): they
    name the kind of answer wanted, and a sentence stating a default covers them."""
    return frozenset(t for m in DEFAULT_QUESTION_RE.finditer(question) for t in terms(m.group(0)))


def asks_default(question: str) -> bool:
    """True when the question asks for a default ("What is the default ...", "... by default?")."""
    return bool(DEFAULT_QUESTION_RE.search(question))


def states_default(sentence: str) -> bool:
    """True when the sentence states a default: a "Default: X" field line or "by default" prose."""
    return bool(DEFAULT_STATEMENT_RE.search(sentence))


def type_terms(question: str, kind: AnswerType) -> frozenset[str]:
    """Stems of the question's words that name the kind of fact wanted rather than its topic: the
    noun of "what time"/"which days", price words in an amount question, and ANSWER_TYPE_TERMS.
    A sentence stating a fact of that kind covers them."""
    found = set(ANSWER_TYPE_TERMS)
    if kind in QUANTITY_KINDS:
        found |= term_set(" ".join(TYPE_NOUN_RE.findall(question)))
    if asks_price(question, kind):
        found |= PRICE_TERMS
    return frozenset(found)


def asks_price(question: str, kind: AnswerType) -> bool:
    """True for an amount question worded around a price ("How much does it cost", "what fee")."""
    return kind == "number" and bool(PRICE_QUESTION_RE.search(question))


def price_match(sentence: str, fit: float) -> float:
    """For a price question: `fit` when the sentence states a money amount, 0.5 when it says the thing
    is free or carries no charge (an answer, though less direct than an amount), else 0.0."""
    if MONEY_RE.search(sentence):
        return fit
    return 0.5 if NO_CHARGE_RE.search(sentence) else 0.0


def type_match(sentence: str, kind: AnswerType, question: str) -> float:
    """How well `sentence` holds a fact of type `kind` that the question does not already state:
    1.0 (a figure with a time word for "time", a date for "date", any figure for "number", a place
    after a preposition for "place", a causal phrase for "cause", a capitalised name for "person"),
    0.5 (a bare figure for a "time" or "date" question) or 0.0."""
    if not kind:
        return 0.0
    return _MATCHERS[kind](sentence, _asked_words(question), question)


@lru_cache(maxsize=4096)
def _asked_words(question: str) -> frozenset[str]:
    """The question's words, lowercased."""
    return frozenset(t.lower() for t in WORD_TOKEN_RE.findall(question))


def _new_figures(text: str, asked: AbstractSet[str]) -> list[str]:
    """The figure-bearing words of `text` the question does not already contain."""
    return [w for w in _figure_words(text) if w.lower() not in asked]


@lru_cache(maxsize=50_000)
def _figure_words(text: str) -> tuple[str, ...]:
    """The figure-bearing words of `text`, in order (cached by the text: sentences recur)."""
    return tuple(w for w in WORD_TOKEN_RE.findall(text) if FIGURE_RE.search(w))


def _number(sentence: str, asked: AbstractSet[str], question: str) -> float:
    if asks_version(question):
        # "which versions ...": a version written as one ("2.5", "v3", "iOS 16" for an asked "iOS"),
        # not any figure ("umask 0"), nor a release of one the question writes ("5.2.0" for
        # "Gutenprint 5.2": the subject's own)
        said = tuple(f"{w}." for w in asked if w[:1].isdigit())
        if any(_new_version(sentence, _figure_start(m), asked, said) for m in VERSION_RE.finditer(sentence)):
            return 1.0
        named = NAMED_VERSION_RE.finditer(sentence)
        found = any(
            m.group(1).lower() in asked and _new_version(sentence, m.start(2), asked, said) for m in named
        )
        return 1.0 if found else 0.0
    # a date ("3 June", "2026-05-12") or a release ("v5.0.0") is not an amount
    return 1.0 if _new_figures(RELEASE_RE.sub(" ", CALENDAR_DATE_RE.sub(" ", sentence)), asked) else 0.0


def _new_version(sentence: str, at: int, asked: AbstractSet[str], said: tuple[str, ...]) -> bool:
    """The version written from `at` (read whole: "5.2.0-beta4") is not the question's: not a word of
    it, nor a release of a figure it writes (`said`: each with a dot after it)."""
    found = WORD_TOKEN_RE.match(sentence, at)
    version = found.group(0).lower() if found else ""
    return version not in asked and not version.startswith(said)


def _figure_start(match: re.Match[str]) -> int:
    """Where the figure of a version match starts ("version 5.2" -> at "5")."""
    digit = re.search(r"\d", match.group(0))
    return match.start() + (digit.start() if digit else 0)


def asks_version(question: str) -> bool:
    """True for "which / what ... version(s)" questions: the answer is a version number."""
    return VERSION_QUESTION_RE.search(question) is not None


@lru_cache(maxsize=4096)
def asked_noun(question: str) -> str:
    """The stem of the noun a "what / which <noun> does ...?" question asks for ("error" in "What
    error does the console return?"), else ""."""
    match = ASKED_NOUN_RE.search(question)
    if match is None or match.group(1).lower() in NOT_ASKED_NOUNS:
        return ""
    found = terms(match.group(1))
    return found[-1] if found else ""


def _time(sentence: str, asked: AbstractSet[str], question: str) -> float:
    """1.0 for a figure with a time word, 0.5 for a bare figure; for "how often ...?", 1.0 for a rate
    (`FREQUENCY_RE`) or a figure with a time word and 0.0 for a bare figure: "runs two analyses"
    counts analyses, it gives no rate."""
    figures = _new_figures(sentence, asked)
    if figures and TIME_WORD_RE.search(sentence):
        return 1.0
    if FREQUENCY_QUESTION_RE.search(question):
        return 1.0 if FREQUENCY_RE.search(sentence) else 0.0
    return 0.5 if figures else 0.0


def _date(sentence: str, asked: AbstractSet[str], question: str) -> float:
    if CLOCK_QUESTION_RE.search(question):
        return 1.0 if CLOCK_RE.search(sentence) else 0.0
    if any(m.group(0).lower() not in asked for m in DATE_RE.finditer(sentence)):
        return 1.0
    return _time(sentence, asked, question)


def _code(sentence: str, asked: AbstractSet[str], question: str) -> float:
    """1.0 when the sentence names as code (an inline literal or an identifier) a thing the question
    does not name, and either calls it the asked kind of thing within CODE_NOUN_WORDS words ("the
    ``APP_DEBUG`` environment variable", "the option is ``--quiet``") or writes it in that kind's
    form ("pass ``--quiet``" for a flag, ``APP_DEBUG`` for a variable); else 0.0."""
    if "`" not in sentence and not IDENTIFIER_RE.search(sentence):
        return 0.0
    kind = code_kind(question)
    if not kind:
        return 0.0
    noun = stem(kind)
    words: list[tuple[int, str]] | None = None
    for literal, code in _unasked_code(sentence, question.lower()):
        if _in_form(kind, code):
            return 1.0
        if words is None:
            words = [(m.start(), stem(m.group(0).lower())) for m in WORD_TOKEN_RE.finditer(sentence)]
        if _called(noun, words, literal):
            return 1.0
    return 0.0


def _unasked_code(sentence: str, said: str) -> Iterator[tuple[re.Match[str], str]]:
    """The inline literals, then the identifiers, of `sentence` that `said` (the question,
    lowercased) does not name, each with its code (markup removed); reST links left out."""
    named = [m for m in INLINE_CODE_RE.finditer(sentence)] + [m for m in IDENTIFIER_RE.finditer(sentence)]
    for literal in named:
        if sentence[literal.end() : literal.end() + 1] == "_":
            continue  # a reST link ("`Click`_"), not code
        code = CODE_LITERAL_RE.sub("", literal.group(0)).strip()
        bare = code.lower()
        if bare and bare.lstrip("-") not in said:
            yield literal, code


def _in_form(kind: str, code: str) -> bool:
    """`code` is written in the form of the asked kind of thing ("--quiet" for a flag)."""
    return any(kind in kinds and form.fullmatch(code) for kinds, form in CODE_FORMS)


def _called(noun: str, words: Sequence[tuple[int, str]], literal: re.Match[str]) -> bool:
    """`noun` (the asked kind's stem) is one of the CODE_NOUN_WORDS word stems on either side of
    `literal` (`words`: each word's start and stem)."""
    before = [w for at, w in words if at < literal.start()][-CODE_NOUN_WORDS:]
    after = [w for at, w in words if at >= literal.end()][:CODE_NOUN_WORDS]
    return noun in before or noun in after


@lru_cache(maxsize=4096)
def code_kind(question: str) -> str:
    """The kind of named thing a "which option / variable ..." question asks for, else ""."""
    match = CODE_QUESTION_RE.search(question)
    return match.group(1).lower() if match else ""


# "the default setting", "by default": the default is the asked thing itself
_DEFAULT_BEFORE_RE = re.compile(r"\bdefaults?\s+$", re.IGNORECASE)
_BY_DEFAULT_RE = re.compile(r"\bby\s+default\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def asks_default_of_kind(question: str) -> bool:
    """The question asks which thing of the asked kind is the default ("what is the default setting for
    ...", "Which worker class is used by default?"): a default's value answers it. Else "default" is
    said of another thing ("Which environment variable sets the default line length?"), and only a
    name of the asked kind answers."""
    match = CODE_QUESTION_RE.search(question)
    if match is None:
        return False
    return bool(
        _BY_DEFAULT_RE.search(question) or _DEFAULT_BEFORE_RE.search(question, match.start(), match.start(1))
    )


def _cause(sentence: str, asked: AbstractSet[str], question: str) -> float:
    """1.0 when a causal phrase gives the reason for something the question asks about: the rest of
    the sentence (for "X causes Y", Y) names a question term or opens by referring back ("This is
    intended to ..."). "Due to how scopes work in Jinja, a macro ... does not override ..." gives
    the reason for the macro, not for the asked name."""
    topic = term_set(question) - QUESTION_FILLERS
    for match in CAUSE_RE.finditer(sentence):
        if CAUSE_NOUN_RE.search(sentence, 0, match.start()):
            return 1.0  # "X was identified as the cause": the cause of what the context describes
        end = CLAUSE_END_RE.search(sentence, match.end())
        stop = end.start() if end else len(sentence)
        if CAUSE_FORWARD_RE.match(match.group(0)):
            effect = sentence[match.end() : stop]
        else:
            effect = f"{sentence[: match.start()]} {sentence[stop:]}"
        if term_set(effect) & topic or REFERRING_RE.match(effect.strip()):
            return 1.0
    return 0.0


def _place(sentence: str, asked: AbstractSet[str], question: str) -> float:
    return 1.0 if any(w.lower() not in asked | NOT_PLACES for w in PLACE_RE.findall(sentence)) else 0.0


def _person(sentence: str, asked: AbstractSet[str], question: str) -> float:
    return 1.0 if any(w.lower() not in asked | NOT_PLACES for w in CAPITALISED_RE.findall(sentence)) else 0.0


_MATCHERS: dict[AnswerType, Callable[[str, AbstractSet[str], str], float]] = {
    "number": _number,
    "time": _time,
    "date": _date,
    "code": _code,
    "cause": _cause,
    "place": _place,
    "person": _person,
}
