"""Figures: every quantity a sentence states must be one its evidence states, in any spelling.

A sentence's figures are its numbers (`numbers.find_numbers`): digits always; number words and fractions
("ninety", "two and a half", "a dozen"); ordinals ("third", "21st") when they qualify a noun ("the third
attempt", not "First, open Settings"); "one" only when it counts or measures something ("one day").

A figure is matched when
- it belongs to a quantity with a unit (duration, bytes, percent, money, rate): the evidence states an
  equal quantity (same unit: the same number; another unit: equal after conversion, "30 days" =
  "1 month"); only when the evidence states no quantity of that dimension at all, the bare value will do;
- a proportion (a percentage, or a spoken fraction below one: "a quarter of", "two thirds", "half"):
  the evidence states the same share either way ("25%" = "a quarter"; "two thirds" = "67%", to the
  whole percent); a percentage against evidence with other percentages is judged as a quantity;
- an ordinal: the evidence has the same ordinal ("3rd" = "third");
- otherwise (counts, bare numbers): the evidence has the same value in any spelling, or as a part of a
  digit run ("2026" in "2026-03-18", "3" in "v2.3").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

from rag.language.numbers import Number, find_numbers
from rag.language.quantities import Quantity, find_quantities, same_value
from rag.language.text import STOP_WORDS

# Any digit run in the evidence, however it is attached ("v2.3", "2FA", "2026-05-12").
_SOURCE_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_NOUN_AFTER_RE = re.compile(r"[ \u00a0-]([a-z][a-z-]*)")
_WORD_BEFORE_RE = re.compile(r"([A-Za-z]+)[ \u00a0]+$")
_DETERMINERS = frozenset("the a an its your their our his her each every this that these those my".split())
# "half" alone ("more than half", "half of the seats"): a share the number reader leaves out (it
# reads "half an hour" and "half a dozen" as amounts)
_HALF_RE = re.compile(r"\bhalf\b", re.IGNORECASE)
# two shares are the same when they agree to the whole percent ("two thirds" = "67%", not "66%")
_PERCENT_TOLERANCE = 0.5


def missing_figures(sentence: str, evidence: Sequence[str]) -> list[str]:
    """The figures of `sentence` (as written) that no text in `evidence` states; [] when all are there."""
    stated = [n for n in _numbers(sentence) if _is_figure(sentence, n)]
    if not stated:
        return []
    quantities = find_quantities(sentence)
    source = [_Evidence.of(text) for text in evidence]
    missing: list[str] = []
    for number in stated:
        holder = _holder(quantities, number)
        if any(e.states(number, holder) for e in source):
            continue
        written = _written(number, holder)
        if written not in missing:
            missing.append(written)
    return missing


def _written(number: Number, holder: Quantity | None) -> str:
    """The figure as the sentence writes it; "a" alone says nothing: the quantity it starts ("a month")."""
    return holder.text if holder is not None and number.text.lower() in ("a", "an") else number.text


def _numbers(text: str) -> list[Number]:
    """The numbers of `text`, with "half" alone ("half of the seats", "more than half") as the share
    0.5 where no number the reader found covers it ("half an hour" is an amount already)."""
    found = find_numbers(text)
    for m in _HALF_RE.finditer(text):
        if not any(n.start <= m.start() < n.end for n in found):
            found.append(Number(value=0.5, start=m.start(), end=m.end(), text=m.group(), spelled=True))
    return sorted(found, key=lambda n: n.start)


def _holder(quantities: Sequence[Quantity], number: Number) -> Quantity | None:
    return next((q for q in quantities if q.start <= number.start < q.end), None)


def _is_figure(sentence: str, number: Number) -> bool:
    if number.ordinal:
        if not number.spelled:
            return True
        # "the third attempt", "your first day"; not "First, open Settings" nor "first add the key"
        after = _NOUN_AFTER_RE.match(sentence, number.end)
        before = _WORD_BEFORE_RE.search(sentence, 0, number.start)
        determined = before is not None and before.group(1).lower() in _DETERMINERS
        return determined and after is not None and after.group(1) not in STOP_WORDS
    if number.spelled and number.value == 1 and number.text.lower() in ("one", "a", "an"):
        return any(q.start <= number.start < q.end for q in find_quantities(sentence))
    return True


class _Evidence:
    """The numbers, ordinals and quantities one evidence text states."""

    __slots__ = ("ordinals", "proportions", "quantities", "values")

    def __init__(
        self,
        values: frozenset[float],
        ordinals: frozenset[float],
        quantities: tuple[Quantity, ...],
        proportions: frozenset[float] = frozenset(),
    ):
        self.values = values
        self.ordinals = ordinals
        self.quantities = quantities
        self.proportions = proportions  # shares it states, in percent: "25%", "a quarter", "half"

    @staticmethod
    def of(text: str) -> _Evidence:
        return _evidence(text)

    def states(self, number: Number, holder: Quantity | None) -> bool:
        if number.ordinal:
            return _has(self.ordinals, number.value)
        if holder is not None and not holder.dimension.startswith("count:"):
            return self._states_quantity(holder, number.value)
        if _is_share(number) and self._states_share(number.value * 100):
            return True
        return _has(self.values, number.value)

    def _states_quantity(self, holder: Quantity, value: float) -> bool:
        """A quantity with a unit: an equal one of its dimension; with none of that dimension, the same
        share (a percentage) or the bare `value`."""
        same_dimension = [q for q in self.quantities if q.dimension == holder.dimension]
        if same_dimension:
            return any(same_value(holder, q, strict=True) for q in same_dimension)
        if holder.dimension == "percent" and self._states_share(holder.value):
            return True
        return _has(self.values, value)

    def _states_share(self, percent: float) -> bool:
        return any(abs(percent - p) <= _PERCENT_TOLERANCE + 1e-9 for p in self.proportions)


@lru_cache(maxsize=4096)
def _evidence(text: str) -> _Evidence:
    numbers = _numbers(text)
    values = {n.value for n in numbers if not n.ordinal}
    ordinals = {n.value for n in numbers if n.ordinal}
    values |= _digit_values(text)
    quantities = tuple(find_quantities(text))
    shares = {q.value for q in quantities if q.dimension == "percent"}
    shares |= {n.value * 100 for n in numbers if _is_share(n)}
    return _Evidence(frozenset(values), frozenset(ordinals), quantities, frozenset(shares))


def _digit_values(text: str) -> set[float]:
    """Every digit run of `text` as a value: "1,000" whole; "v2.3" as 2, 3 and 2.3."""
    values: set[float] = set()
    for match in _SOURCE_NUMBER_RE.finditer(text):
        raw = match.group()
        if _THOUSANDS_RE.fullmatch(raw):
            values.add(float(raw.replace(",", "")))
            continue
        pieces = re.split(r"[.,]", raw)
        for part in pieces + [f"{a}.{b}" for a, b in zip(pieces, pieces[1:], strict=False)]:
            values.add(float(part))
    return values


def _is_share(number: Number) -> bool:
    """A spoken fraction below one ("a quarter", "two thirds"): a share of something."""
    return number.spelled and not number.ordinal and 0 < number.value < 1


def _has(values: frozenset[float], value: float) -> bool:
    return value in values or any(math.isclose(value, v, rel_tol=1e-9) for v in values)
