"""Quantities: a number with a unit, normalised to one canonical unit per dimension.

Dimensions and canonical units:
- "bytes" (B): binary prefixes, so 1 KB = 1 KiB = 1024 B and "1 GB" equals "1024 MB";
- "duration" (s): ms, seconds, minutes, hours, days, weeks, months (365/12 days), years (365 days);
- "rate_per_minute" (/min): "100 requests per minute", "100 req/min", "6,000 per hour";
- "percent" (%);
- "money_usd" / "money_eur" / "money_gbp": "$12", "USD 12", "12 dollars", "€5", "£3", "$1.5 million";
- "money_usd_per_year" (and _eur_, _gbp_): money per period, normalised to one year: "$96 per year",
  "$72 a year", "$8/month" (= 96 per year), "$20 per day" (= 7,300 per year);
- "count:<stem>": a count of things named by the noun after the number, keyed by its Snowball stem:
  "4 items" and "up to six items" are "count:item", "two free bulky waste collections" is
  "count:collect" (the first plural word of the run that follows, else its first word). A count needs
  a lowercase noun right after the number; years ("in 2010"), labels ("page 12", "Route 5 buses"),
  times ("6:00 am") and numbers before stop words ("3 of") are not counts.
Other bare numbers are ignored. Offsets are end-exclusive into the given text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from rag.language.numbers import find_numbers
from rag.language.text import STOP_WORDS, stem

# Equal within this relative tolerance. Bytes allow one decimal/binary prefix step (1000 vs 1024: 2.4%);
# months and years are calendar approximations (12 months vs 360 days: 1.4%).
DEFAULT_REL_TOL = 0.01
BYTES_REL_TOL = 0.025
CALENDAR_REL_TOL = 0.03

_CURRENCY_PREFIX_RE = re.compile(r"(?:US\$|\$|€|£|\bUSD ?|\bEUR ?|\bGBP ?)$")
_MULTIPLIER_RE = re.compile(r" ?(thousand|million|billion|bn|mn|k|K|M|B)\b")

_BYTE_UNITS = {"b": 1, "byte": 1, "bytes": 1}
for _exp, _letter, _word in (
    (1, "k", "kilo"),
    (2, "m", "mega"),
    (3, "g", "giga"),
    (4, "t", "tera"),
    (5, "p", "peta"),
):
    for _name in (f"{_letter}b", f"{_letter}ib", f"{_word}byte", f"{_word}bytes"):
        _BYTE_UNITS[_name] = 1024**_exp

_DAY = 86_400.0
_DURATION_UNITS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": _DAY, "day": _DAY, "days": _DAY,
    "wk": 7 * _DAY, "wks": 7 * _DAY, "week": 7 * _DAY, "weeks": 7 * _DAY,
    "mo": 365 / 12 * _DAY, "mos": 365 / 12 * _DAY, "month": 365 / 12 * _DAY, "months": 365 / 12 * _DAY,
    "yr": 365 * _DAY, "yrs": 365 * _DAY, "year": 365 * _DAY, "years": 365 * _DAY,
}  # fmt: skip
_CALENDAR_UNITS = frozenset({"mo", "mos", "month", "months", "yr", "yrs", "year", "years"})
# Units of one letter are accepted only glued to the number ("30d", "5s"), never after a space.
_GLUED_ONLY = frozenset({"s", "h", "d"})

_RATE_PERIODS = {"second": 60.0, "sec": 60.0, "s": 60.0, "minute": 1.0, "min": 1.0, "m": 1.0,
                 "hour": 1 / 60, "hr": 1 / 60, "h": 1 / 60, "day": 1 / 1440, "d": 1 / 1440,
                 "week": 1 / 10_080, "month": 12 / 525_600, "year": 1 / 525_600}  # fmt: skip
_CURRENCY_SUFFIXES = {"usd": "money_usd", "dollar": "money_usd", "dollars": "money_usd", "eur": "money_eur",
                      "euro": "money_eur", "euros": "money_eur", "gbp": "money_gbp"}  # fmt: skip
_CURRENCY_PREFIXES = {"$": "money_usd", "us$": "money_usd", "usd": "money_usd", "€": "money_eur",
                      "eur": "money_eur", "£": "money_gbp", "gbp": "money_gbp"}  # fmt: skip
_MULTIPLIERS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9,
                "b": 1e9}  # fmt: skip

# Money per period, normalised to one year. Calendar tolerance: 52 weeks vs 365 days is 0.2%.
_PER_YEAR = {"year": 1.0, "yr": 1.0, "annum": 1.0, "month": 12.0, "mo": 12.0, "week": 365 / 7, "wk": 365 / 7,
             "day": 365.0, "hour": 365 * 24.0, "hr": 365 * 24.0}  # fmt: skip
_PER_YEAR_ALT = "|".join(sorted(_PER_YEAR, key=len, reverse=True))
_MONEY_PERIOD_RE = re.compile(
    rf" ?(?:per|a|an|each|every|/) ?(?:calendar )?(?P<period>{_PER_YEAR_ALT})\b", re.IGNORECASE
)
# Counts: up to four lowercase words after the number; the noun is picked among them (see the docstring).
_COUNT_WORDS_RE = re.compile(r"[ \u00a0](?P<words>[a-z]+(?: [a-z]+){0,3})")
_NOT_NOUNS = frozenset({"am", "pm", "th", "st", "nd", "rd", "percent", "times"}) | STOP_WORDS
# Words that make the number after them a label, not an amount ("page 12", "version 3 adds").
_LABEL_WORDS = frozenset(
    """page pages section sections step steps version chapter level levels article clause no number part phase
    stage route room unit line table figure question rule option tier grade year day week month since vol
    issue edition""".split()
)  # fmt: skip
_PREVIOUS_WORD_RE = re.compile(r"([A-Za-z]+)[ \u00a0]$")

_UNIT_ALT = "|".join(sorted(set(_BYTE_UNITS) | set(_DURATION_UNITS), key=len, reverse=True))
_UNIT_RE = re.compile(rf"(?P<sep>[ \u00a0]?-?[ \u00a0]?)(?P<unit>{_UNIT_ALT})(?![\w])", re.IGNORECASE)
_PERCENT_RE = re.compile(r" ?(?:%|percent\b|per cent\b)", re.IGNORECASE)
_CURRENCY_SUFFIX_RE = re.compile(r" ?(?P<cur>USD|EUR|GBP|dollars?|euros?)\b", re.IGNORECASE)
_PERIOD_ALT = "|".join(sorted(_RATE_PERIODS, key=len, reverse=True))
# "100 requests per minute", "100 req/min", "6,000 per hour", "100/min": up to two words for what is counted.
_RATE_RE = re.compile(
    rf"(?P<what>(?: [A-Za-z][\w-]*){{0,2}}?) ?(?:per|/) ?(?:an? )?(?P<period>{_PERIOD_ALT})(?![\w])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Quantity:
    """A number with a unit as found in text. `value` is in the canonical `unit` of its `dimension`.

    `text == source[start:end]` (end-exclusive); `rel_tol` is how close two values must be to count as equal.
    """

    value: float
    unit: str
    dimension: str
    text: str
    start: int
    end: int
    rel_tol: float = DEFAULT_REL_TOL
    number: float = 0.0

    @property
    def factor(self) -> float:
        """What the written unit multiplies the written number by (1 for "30 s", 86,400 for "30 days")."""
        return self.value / self.number if self.number else 1.0


def same_value(a: Quantity, b: Quantity, *, strict: bool = False) -> bool:
    """True when `a` and `b` state the same amount of the same dimension, within their tolerance.

    `strict`: written in the same unit, the numbers must be equal ("100 days" is not "101 days");
    the tolerance then only bridges different units ("30 days" = "1 month", "1 GB" = "1024 MB")."""
    if a.dimension != b.dimension:
        return False
    if strict and math.isclose(a.factor, b.factor, rel_tol=1e-9):
        return math.isclose(a.value, b.value, rel_tol=1e-9, abs_tol=1e-9)
    return math.isclose(a.value, b.value, rel_tol=max(a.rel_tol, b.rel_tol), abs_tol=1e-9)


def find_quantities(text: str, *, counts: bool = True, years: bool = False) -> list[Quantity]:
    """Every number with a recognised unit in `text`, in order of position; bare numbers are skipped.
    `counts=False` leaves out counts of things ("4 items"); `years=True` adds calendar years ("in 1856",
    "July 15, 1905") as dimension "year", equal only when identical."""
    return list(_find(text, counts, years))


@lru_cache(maxsize=4096)
def _find(text: str, counts: bool, years: bool) -> tuple[Quantity, ...]:
    # cached: the same chunk texts come back request after request
    found: list[Quantity] = []
    for start, end, number in _numbers(text):
        quantity = _with_unit(text, start, end, number, counts)
        if quantity is None and years and _is_year(text, start, end):
            quantity = _make(text, start, end, number, "year", "year", 0.0)
        if quantity is not None:
            found.append(replace(quantity, number=number))
    return tuple(found)


def _numbers(text: str) -> list[tuple[int, int, float]]:
    """Cardinal numbers in any spelling ("30", "thirty", "two and a half", "a dozen"); ordinals are not
    amounts."""
    return [(n.start, n.end, n.value) for n in find_numbers(text) if not n.ordinal]


def _with_unit(text: str, start: int, end: int, number: float, counts: bool) -> Quantity | None:
    """The quantity the number at `start:end` states with the unit around it: money, a percentage, bytes
    or a duration, a rate, a count (when `counts`); the first that reads decides. None: a bare number."""
    for read in (_prefixed_money, _percent, _suffixed_money, _measure, _rate):
        quantity = read(text, start, end, number)
        if quantity is not None:
            return quantity
    return _count(text, start, end, number) if counts else None


def _prefixed_money(text: str, start: int, end: int, number: float) -> Quantity | None:
    """ "$12", "USD 12", "$1.5 million" (a currency sign or code before digits)."""
    prefix = _CURRENCY_PREFIX_RE.search(text, max(0, start - 4), start)
    if prefix is None or not text[start].isdigit():
        return None
    value, stop = number, end
    multiplier = _MULTIPLIER_RE.match(text, end)
    if multiplier is not None:
        value *= _MULTIPLIERS[multiplier.group(1).lower()]
        stop = multiplier.end()
    dimension = _CURRENCY_PREFIXES[prefix.group().strip().lower()]
    return _money(text, prefix.start(), stop, value, dimension)


def _percent(text: str, start: int, end: int, number: float) -> Quantity | None:
    """ "30%", "30 percent", "30 per cent"."""
    percent = _PERCENT_RE.match(text, end)
    if percent is None:
        return None
    return _make(text, start, percent.end(), number, "percent", "%")


def _suffixed_money(text: str, start: int, end: int, number: float) -> Quantity | None:
    """ "12 USD", "12 dollars", "5 euros"."""
    currency = _CURRENCY_SUFFIX_RE.match(text, end)
    if currency is None:
        return None
    dimension = _CURRENCY_SUFFIXES[currency.group("cur").lower()]
    return _money(text, start, currency.end(), number, dimension)


def _measure(text: str, start: int, end: int, number: float) -> Quantity | None:
    """Bytes ("1 GB", "512KiB") or a duration ("30 days", "30d", "5 ms")."""
    unit = _UNIT_RE.match(text, end)
    if unit is None or not _unit_fits(unit, text[start:end], number):
        return None
    name = unit.group("unit").lower()
    if name in _BYTE_UNITS:
        return _make(text, start, unit.end(), number * _BYTE_UNITS[name], "bytes", "B", BYTES_REL_TOL)
    tol = CALENDAR_REL_TOL if name in _CALENDAR_UNITS else DEFAULT_REL_TOL
    return _make(text, start, unit.end(), number * _DURATION_UNITS[name], "duration", "s", tol)


def _unit_fits(unit: re.Match[str], written: str, number: float) -> bool:
    """False for a unit match that is not one: a one-letter unit after a space, a lowercase "b" (bits,
    or nothing), the "s" of a decade ("the 1990s")."""
    name = unit.group("unit").lower()
    if name in _GLUED_ONLY and unit.group("sep") != "":
        return False
    if name == "b" and unit.group("unit") != "B":
        return False
    return not (name == "s" and 1000 <= number < 3000 and written.isdigit())


def _rate(text: str, start: int, end: int, number: float) -> Quantity | None:
    """ "100 requests per minute", "100 req/min", "6,000 per hour", as a rate per minute."""
    rate = _RATE_RE.match(text, end)
    if rate is None or _names_a_unit(rate.group("what")):
        return None
    per_minute = number * _RATE_PERIODS[rate.group("period").lower()]
    return _make(text, start, rate.end(), per_minute, "rate_per_minute", "/min")


def _money(text: str, start: int, stop: int, value: float, dimension: str) -> Quantity:
    currency = dimension.removeprefix("money_").upper()
    period = _MONEY_PERIOD_RE.match(text, stop)
    if period is None:
        return _make(text, start, stop, value, dimension, currency)
    per_year = value * _PER_YEAR[period.group("period").lower()]
    return _make(
        text, start, period.end(), per_year, f"{dimension}_per_year", f"{currency}/yr", CALENDAR_REL_TOL
    )


def _count(text: str, start: int, end: int, number: float) -> Quantity | None:
    """A count of things ("4 items"), or None when the number is a year, a label, a time or a decimal."""
    if not _whole_amount(text[start:end], number) or _labelled(text, start):
        return None
    following = _COUNT_WORDS_RE.match(text, end)
    if following is None:
        return None
    run = _noun_run(following.group("words"))
    if not run:
        return None
    noun = next((i for i, w in enumerate(run) if _plural(w)), 0)
    stop = following.start("words") + len(" ".join(run[: noun + 1]))
    key = stem(run[noun])
    return _make(text, start, stop, number, f"count:{key}", key)


def _whole_amount(written: str, number: float) -> bool:
    """True when the number as `written` could count things: a whole number, not written as a year."""
    if not number.is_integer() or "." in written:
        return False
    return not (written.isdigit() and len(written) == 4 and 1000 <= number < 3000)


def _labelled(text: str, start: int) -> bool:
    """True when what comes before the number at `start` makes it a label, a time or a range: "6:00",
    "#3", "24/7", "1-2", "page 12", "Android 10 devices"."""
    if start > 0 and text[start - 1] in ":#/-–—":
        return True
    previous = _PREVIOUS_WORD_RE.search(text, max(0, start - 30), start)
    if previous is None:
        return False
    word = previous.group(1)
    return word.lower() in _LABEL_WORDS or (
        word[0].isupper() and not _starts_sentence(text, previous.start())
    )


def _noun_run(words: str) -> list[str]:
    """The leading words of `words` (space-separated) before a stop word or a single letter."""
    run: list[str] = []
    for word in words.split(" "):
        if word in _NOT_NOUNS or len(word) < 2:
            break
        run.append(word)
    return run


def _is_year(text: str, start: int, end: int) -> bool:
    written = text[start:end]
    if not (written.isdigit() and len(written) == 4 and 1000 <= int(written) < 2100):
        return False
    return not (end < len(text) and text[end].isalpha()) and not (start > 0 and text[start - 1] in "-–/#:")


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _starts_sentence(text: str, index: int) -> bool:
    before = text[:index].rstrip(" \u00a0*_\"'(")
    return not before or before[-1] in ".!?:;\n-•"


def _names_a_unit(words: str) -> bool:
    first = words.strip().split(" ")[0].lower() if words.strip() else ""
    return first in _BYTE_UNITS or first in _DURATION_UNITS


def _make(
    text: str, start: int, end: int, value: float, dimension: str, unit: str, rel_tol: float = DEFAULT_REL_TOL
) -> Quantity:
    return Quantity(
        value=value,
        unit=unit,
        dimension=dimension,
        text=text[start:end],
        start=start,
        end=end,
        rel_tol=rel_tol,
    )
