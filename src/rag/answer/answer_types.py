"""Answer types: what kind of fact a question asks for, and whether a sentence states one.

Detected from the question's wording alone (plain English, no domain words): "time" (a duration or
frequency), "date" (a point in time), "number" (an amount, limit, size, price, version), "cause",
"place", "person", or "" when the wording names no type. The offline generator uses these to
prefer, and for amounts, times and dates to require, a sentence that holds the asked kind of fact.
"""

from __future__ import annotations

import re

from rag.text import term_set

# Words that name the kind of answer wanted ("deadline", "maximum") rather than its topic: the
# source states them as figures ("within 30 days", "up to 10"), so they weigh this much less.
ANSWER_TYPE_TERMS = frozenset(
    {"limit", "maximum", "minimum", "max", "min", "deadlin", "daili", "quota", "ahead", "advanc", "notic"}
)
WORD_TOKEN_RE = re.compile(r"[\w.,:'-]*\w")
AnswerType = str
_TIME_QUESTION_RE = re.compile(
    r"\bhow\s+(?:long|often|soon|quickly|fast|frequently|early|late)\b|\b(?:deadline|duration|timeout|frequency)\b"
    r"|\bhow\s+far\s+(?:ahead|in\s+advance)\b|\bhow\s+much\s+notice\b",
    re.IGNORECASE,
)
_DATE_QUESTION_RE = re.compile(
    r"^\W*when\b|\b(?:until|by|since)\s+when\b|\b(?:what|which)\s+(?:year|date|day|month|time)\b|,\s*when\b",
    re.IGNORECASE,
)
_NUMBER_QUESTION_RE = re.compile(
    r"\bhow\s+(?:many|much|big|large|far|old|high|low|small)\b"
    r"|\b(?:limit|limits|maximum|minimum|max|min|price|prices|cost|costs|size|quota|rate|percent|percentage"
    r"|number\s+of|amount\s+of|version|fee|fees|allowance)\b",
    re.IGNORECASE,
)
_PLACE_QUESTION_RE = re.compile(
    r"^\W*where\b|\b(?:in\s+)?(?:what|which)\s+(?:city|country|region|town)\b", re.I
)
_CAUSE_QUESTION_RE = re.compile(
    r"^\W*why\b|\bwhat\s+(?:caused|causes|led\s+to)\b|\b(?:the\s+)?reason\s+for\b", re.I
)
_CAUSE_RE = re.compile(
    r"\b(?:because|due\s+to|caused|causes|cause|reason|owing\s+to|led\s+to|result(?:ed)?\s+(?:of|from)"
    r"|so\s+that)\b",
    re.IGNORECASE,
)
_PERSON_QUESTION_RE = re.compile(r"^\W*who(?:m|se)?\b", re.IGNORECASE)
# The noun of "what time", "which days", "what year": it names the fact wanted, not the topic.
_TYPE_NOUN_RE = re.compile(r"\b(?:what|which)\s+(time|times|date|dates|days?|years?|months?)\b", re.I)
# Wording asking for a price ("how much ... pay", "does it cost", "what is the fee"): answered by a
# sentence stating a money amount (or that it is free). "Which costs ..." asks for a kind, not a price.
_PRICE_WORDS = r"(?:cost|costs|price|prices|priced|fee|fees|charge|charges|charged|pay)"
_PRICE_QUESTION_RE = re.compile(
    rf"\bhow\s+much\b.*\b{_PRICE_WORDS}\b|\b(?:do|does|did|will|would|to)\b.*\bcost\b"
    rf"|\bwhat(?:'s|\s+is|\s+are|\s+was)?\s+(?:\w+\s+){{0,4}}?{_PRICE_WORDS}\b",
    re.IGNORECASE,
)
_PRICE_TERMS = frozenset({"cost", "price", "fee", "charg", "pay"})
_MONEY_RE = re.compile(r"[$€£¥]\s?\d|\d\s?(?:cents?|dollars?|euros?|pounds?|usd|eur|gbp|aud|cad)\b", re.I)
_NO_CHARGE_RE = re.compile(r"\b(?:free|no\s+(?:extra\s+|additional\s+)?(?:charge|cost|fee))\b", re.I)
QUANTITY_KINDS = frozenset({"time", "date", "number"})
# "What time", "by what time": a time of day, stated as a clock time.
_CLOCK_QUESTION_RE = re.compile(r"\bwhat\s+time\b", re.IGNORECASE)
_CLOCK_RE = re.compile(
    r"\b\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d\d\b|\b(?:noon|midday|midnight)\b", re.I
)
# Figures: digits, or number words a source writes out ("three times", "twice").
_FIGURE_RE = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    r"|thirty|forty|fifty|sixty|hundred|thousand|million|billion|dozen|once|twice|half)\b",
    re.IGNORECASE,
)
_TIME_WORD_RE = re.compile(
    r"\b(?:milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|daily|weekly"
    r"|monthly|hourly|yearly|annually|quarterly|nightly)\b",
    re.IGNORECASE,
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE_RE = re.compile(
    rf"\b(?:{_MONTHS})\b\.?\s*\d|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\b|\b(?:1[5-9]|20)\d\d\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d\d\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b",
    re.IGNORECASE,
)
# Day-and-month or ISO dates: what a "how many / how much" answer is not.
_CALENDAR_DATE_RE = re.compile(
    rf"\b(?:{_MONTHS})\b\.?\s*\d{{1,2}}\b(?:,?\s*\d{{4}})?|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\b(?:\s+\d{{4}})?"
    r"|\b\d{4}-\d{2}-\d{2}\b",
    re.IGNORECASE,
)
# A capitalised word after a place preposition ("in Lisbon", "near Porto"), not a month or weekday.
_PLACE_RE = re.compile(r"\b(?:in|at|near|from|outside|inside)\s+(?:the\s+)?([A-Z][\w'-]+)")
CAPITALISED_RE = re.compile(r"(?<=[a-z,;:] )([A-Z][a-z][\w'-]*)")
NOT_PLACES = frozenset(_MONTHS.split("|")) | {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"
}  # fmt: skip


def answer_type(question: str) -> AnswerType:
    """The kind of fact `question` asks for: "time", "date", "number", "cause", "place", "person" or ""."""
    if _TIME_QUESTION_RE.search(question):
        return "time"
    if _DATE_QUESTION_RE.search(question) or _TYPE_NOUN_RE.search(question):
        return "date"
    if _NUMBER_QUESTION_RE.search(question):
        return "number"
    if _CAUSE_QUESTION_RE.search(question):
        return "cause"
    if _PLACE_QUESTION_RE.search(question):
        return "place"
    if _PERSON_QUESTION_RE.search(question):
        return "person"
    return ""


def type_terms(question: str, kind: AnswerType) -> frozenset[str]:
    """Stems of the question's words that name the kind of fact wanted rather than its topic: the
    noun of "what time"/"which days", price words in an amount question, and ANSWER_TYPE_TERMS.
    A sentence stating a fact of that kind covers them."""
    found = set(ANSWER_TYPE_TERMS)
    if kind in QUANTITY_KINDS:
        found |= term_set(" ".join(_TYPE_NOUN_RE.findall(question)))
    if kind == "number" and _PRICE_QUESTION_RE.search(question):
        found |= _PRICE_TERMS
    return frozenset(found)


def asks_price(question: str, kind: AnswerType) -> bool:
    """True for an amount question worded around a price ("How much does it cost", "what fee")."""
    return kind == "number" and bool(_PRICE_QUESTION_RE.search(question))


def price_match(sentence: str, fit: float) -> float:
    """For a price question: `fit` when the sentence states a money amount, 0.5 when it says the thing
    is free or carries no charge (an answer, though less direct than an amount), else 0.0."""
    if _MONEY_RE.search(sentence):
        return fit
    return 0.5 if _NO_CHARGE_RE.search(sentence) else 0.0


def type_match(sentence: str, kind: AnswerType, question: str) -> float:
    """How well `sentence` holds a fact of type `kind` that the question does not already state:
    1.0 (a figure with a time word for "time", a date for "date", any figure for "number", a place
    after a preposition for "place", a causal phrase for "cause", a capitalised name for "person"),
    0.5 (a bare figure for a "time" or "date" question) or 0.0."""
    if not kind:
        return 0.0
    asked = {t.lower() for t in WORD_TOKEN_RE.findall(question)}
    figures = [w for w in WORD_TOKEN_RE.findall(sentence) if w.lower() not in asked and _FIGURE_RE.search(w)]
    if kind == "number":
        # a date ("3 June", "2026-05-12") is not an amount
        undated = _CALENDAR_DATE_RE.sub(" ", sentence)
        return (
            1.0
            if any(_FIGURE_RE.search(w) for w in WORD_TOKEN_RE.findall(undated) if w.lower() not in asked)
            else 0.0
        )
    if kind == "time":
        if figures and _TIME_WORD_RE.search(sentence):
            return 1.0
        return 0.5 if figures else 0.0
    if kind == "date":
        if _CLOCK_QUESTION_RE.search(question):
            return 1.0 if _CLOCK_RE.search(sentence) else 0.0
        if any(m.group(0).lower() not in asked for m in _DATE_RE.finditer(sentence)):
            return 1.0
        if figures and _TIME_WORD_RE.search(sentence):
            return 1.0
        return 0.5 if figures else 0.0
    if kind == "cause":
        return 1.0 if _CAUSE_RE.search(sentence) else 0.0
    if kind == "place":
        places = [w for w in _PLACE_RE.findall(sentence) if w.lower() not in asked | NOT_PLACES]
        return 1.0 if places else 0.0
    names = [w for w in CAPITALISED_RE.findall(sentence) if w.lower() not in asked | NOT_PLACES]
    return 1.0 if names else 0.0
