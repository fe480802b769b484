"""Numbers as written in English text, in any spelling, with their values and offsets.

Recognised (each a `Number` with end-exclusive offsets into the given text):
- digits: "30", "1,200", "2.5", with a scale word "1.5 million", a half "2 and a half", "2½";
- cardinal words: "ninety", "twenty-five", "twenty five", "three hundred and forty-two",
  "two thousand five hundred", "a hundred", "a dozen", "two dozen", "half a dozen";
- fractions: "two and a half", "one and a quarter", "half an", "a third of", "two-thirds", "three quarters",
  "½" ("a quarter" alone is a period: "once a quarter");
- multiplicatives: "twice" (2), "thrice" (3);
- ordinals: "third", "twenty-first", "hundredth", "3rd", "21st" (`ordinal=True`). "second" is an ordinal
  only after "the", "every" or "each" (otherwise it is the unit of time).
Not numbers: vague amounts ("dozens", "hundreds of", "a couple"), "one" inside words. The parser was
written here because the PyPI parsers tried (text2num 3.1, number-parser 0.3) rewrite text instead of
returning offsets and read neither "two and a half" nor "a dozen".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}  # fmt: skip
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
    "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "sixtieth": 60, "seventieth": 70,
    "eightieth": 80, "ninetieth": 90, "hundredth": 100, "thousandth": 1000, "millionth": 1e6,
}  # fmt: skip
# Denominators of spoken fractions ("a third", "three quarters"); "second" is never one.
_DENOMINATORS = {
    "half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4, "fourths": 4,
    "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "eighth": 8, "eighths": 8, "tenth": 10, "tenths": 10,
}  # fmt: skip
# Multiplicatives: "twice a year" states 2 as "two times a year" does ("once" is too often "as soon as").
_TIMES = {"twice": 2.0, "thrice": 3.0}
_PERIODS = frozenset({"minute", "hour", "day", "week", "fortnight", "month", "year"})
_RATE_WORDS = frozenset({"once", "twice", "thrice", "times", "per", "every", "each", "than", "half", "in"})
_VULGAR = {"½": 0.5, "¼": 0.25, "¾": 0.75, "⅓": 1 / 3, "⅔": 2 / 3, "⅛": 0.125}
_ORDINAL_SECOND_AFTER = frozenset({"the", "every", "each"})
_A = frozenset({"a", "an", "one"})

# Tokens: digit numbers (thousands separators, decimals, ordinal suffix, a glued vulgar fraction),
# vulgar fractions, words, hyphens; everything else separates.
_TOKEN_RE = re.compile(
    r"(?P<digits>(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:(?P<suffix>st|nd|rd|th)\b)?(?P<vf>[½¼¾⅓⅔⅛])?"
    r"(?![\d]))"
    r"|(?P<vulgar>[½¼¾⅓⅔⅛])"
    r"|(?P<word>[A-Za-z]+)"
    r"|(?P<hyphen>-)"
)
_NUMBER_WORD_RE = re.compile(
    r"\b(?:"
    + "|".join(
        sorted(
            [*_UNITS, *_TENS, *_ORDINALS, *_TIMES, "hundred", "dozen", "half", "a", "an"],
            key=len,
            reverse=True,
        )
    )
    + r")\b|\d|[½¼¾⅓⅔⅛]",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Number:
    """A number found in text: `text == source[start:end]`; `ordinal` for "third"/"3rd"; `spelled` when
    written (at least partly) in words."""

    value: float
    start: int
    end: int
    text: str
    ordinal: bool = False
    spelled: bool = False


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "digits", "vulgar", "word", "hyphen"
    text: str
    start: int
    end: int
    gap: str  # the text between the previous token and this one


def find_numbers(text: str) -> list[Number]:
    """Every number in `text`, in order of position; spans never overlap."""
    return list(_find(text))


@lru_cache(maxsize=4096)
def _find(text: str) -> tuple[Number, ...]:
    if not _NUMBER_WORD_RE.search(text):
        return ()
    tokens = _tokens(text)
    found: list[Number] = []
    i = 0
    while i < len(tokens):
        parsed = _parse_at(tokens, i, text)
        if parsed is None:
            i += 1
            continue
        number, i = parsed
        found.append(number)
    return tuple(found)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    last = 0
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup or ""
        if kind in ("suffix", "vf"):
            kind = "digits"
        tokens.append(_Token(kind, match.group(), match.start(), match.end(), text[last : match.start()]))
        last = match.end()
    return tokens


def _joined(token: _Token, hyphen_ok: bool = True) -> bool:
    """True when `token` follows the previous one with only spaces (or a hyphen, when allowed) between."""
    gap = token.gap
    return gap in (" ", "\u00a0") or (hyphen_ok and gap == "") or (gap.strip() == "" and 0 < len(gap) <= 2)


def _word(tokens: list[_Token], i: int) -> str:
    return tokens[i].text.lower() if i < len(tokens) and tokens[i].kind == "word" else ""


def _next(tokens: list[_Token], i: int) -> int | None:
    """Index of the next word-like token after `i`, skipping one hyphen, when joined by space or hyphen."""
    j = i + 1
    if j < len(tokens) and tokens[j].kind == "hyphen" and tokens[j].gap == "":
        j += 1
        if j < len(tokens) and tokens[j].gap == "":
            return j
        return None
    if j < len(tokens) and _joined(tokens[j]) and tokens[j].gap != "":
        return j
    return None


def _parse_at(tokens: list[_Token], i: int, text: str) -> tuple[Number, int] | None:
    token = tokens[i]
    if token.kind == "vulgar":
        value = _VULGAR[token.text]
        return _number(text, token.start, token.end, value, spelled=False), i + 1
    if token.kind == "digits":
        return _digits_at(tokens, i, text)
    return _words_at(tokens, i, text)


_CARDINAL_WORDS = frozenset({*_UNITS, *_TENS, "hundred", *_ORDINALS})


def _words_at(tokens: list[_Token], i: int, text: str) -> tuple[Number, int] | None:
    """A number written in words from token `i`: after an article, "half ...", "twice", a cardinal."""
    token = tokens[i]
    word = _word(tokens, i)
    if word in _A:
        return _article_at(tokens, i, text)
    if word == "half":
        return _half_at(tokens, i, text, 0.0, token.start)
    if word in _TIMES:
        return _number(text, token.start, token.end, _TIMES[word]), i + 1
    if word not in _CARDINAL_WORDS:
        return None
    if word == "second" and _word(tokens, i - 1) not in _ORDINAL_SECOND_AFTER:
        return None
    if word == "hundred":
        return None  # "hundreds" is a separate word; a bare "hundred" needs "a" or a number
    return _cardinal_words_at(tokens, i, text)


def _digits_at(tokens: list[_Token], i: int, text: str) -> tuple[Number, int]:
    token = tokens[i]
    raw = token.text
    if raw[-1] in _VULGAR:
        value = float(raw[:-1].replace(",", "")) + _VULGAR[raw[-1]]
        return _number(text, token.start, token.end, value, spelled=False), i + 1
    if raw[-2:].lower() in ("st", "nd", "rd", "th"):
        value = float(raw[:-2].replace(",", ""))
        return _number(text, token.start, token.end, value, ordinal=True, spelled=False), i + 1
    value = float(raw.replace(",", ""))
    end, j, spelled = token.end, i + 1, False
    nxt = _next(tokens, i)
    if nxt is not None and _word(tokens, nxt) in _SCALES:
        value *= _SCALES[_word(tokens, nxt)]
        end, j, spelled = tokens[nxt].end, nxt + 1, True
    elif nxt is not None and _word(tokens, nxt) == "dozen":
        value *= 12
        end, j, spelled = tokens[nxt].end, nxt + 1, True
    with_fraction = _with_fraction(tokens, j - 1, value, end, j)
    if with_fraction != (value, end, j):
        (value, end, j), spelled = with_fraction, True
    return _number(text, token.start, end, value, spelled=spelled), j


def _article_at(tokens: list[_Token], i: int, text: str) -> tuple[Number, int] | None:
    """ "a hundred", "a thousand", "a dozen", "a half", "a third", "a quarter", "one ..." (any cardinal)."""
    word = _word(tokens, i)
    nxt = _next(tokens, i)
    if nxt is None:
        return _cardinal_words_at(tokens, i, text) if word == "one" else None
    after = _word(tokens, nxt)
    if after == "hundred" or after in _SCALES:
        return _cardinal_words_at(tokens, i, text)
    start = tokens[i].start
    amount = _article_amount(tokens, nxt, after)
    if amount is not None:
        return _number(text, start, tokens[nxt].end, amount), nxt + 1
    if word == "one":
        return _cardinal_words_at(tokens, i, text)
    if word in ("a", "an") and after in _PERIODS and _counts_one(tokens, i):
        return _number(text, start, tokens[i].end, 1.0), i + 1  # "a week before expiry": one week
    return None


def _article_amount(tokens: list[_Token], nxt: int, after: str) -> float | None:
    """What an article and the word `after` (token `nxt`) state: "a dozen" 12, "a third of" 1/3; else
    None."""
    if after == "dozen":
        return 12.0
    if after in _DENOMINATORS and not after.endswith("s") and _word(tokens, nxt + 1) == "of":
        return 1 / _DENOMINATORS[after]
    return None


def _counts_one(tokens: list[_Token], i: int) -> bool:
    """True when "a" before a unit of time is one of it ("a week before"), not a frequency ("once a
    week", "$8 a month", "per a year")."""
    if i == 0:
        return True
    before = tokens[i - 1]
    return before.kind == "word" and before.text.lower() not in _RATE_WORDS and tokens[i].gap.strip() == ""


def _half_at(tokens: list[_Token], i: int, text: str, base: float, start: int) -> tuple[Number, int] | None:
    """ "half a dozen" (6), "half an hour" / "half a day" (0.5, the article is part of the number)."""
    nxt = _next(tokens, i)
    if nxt is None or _word(tokens, nxt) not in ("a", "an"):
        return None
    after = _next(tokens, nxt)
    if after is not None and _word(tokens, after) == "dozen":
        return _number(text, start, tokens[after].end, base + 6.0), after + 1
    return _number(text, start, tokens[nxt].end, base + 0.5), nxt + 1


# What one word does to a run of number words: extends it, ends it (the word included), or is not part of it.
_MORE, _LAST, _STOP = "more", "last", "stop"
_OPEN_KINDS = ("", "tens", "hundred", "scale", "and")  # after these a unit, tens or ordinal word may follow


@dataclass(slots=True)
class _CardinalRun:
    """The running value of a run of number words ("three hundred and forty-two thousand"), fed word by
    word; `last_kind` is what the previous word was: "unit", "tens", "hundred", "scale", "dozen", "and",
    "article" (a leading "a"/"an"), "fraction"."""

    tokens: list[_Token]
    first: int
    total: float = 0.0
    current: float = 0.0
    last_kind: str = ""
    ordinal: bool = False

    def take(self, word: str, j: int) -> str:
        """Add the word at token `j`: _MORE, _LAST or _STOP (the first rule that applies decides)."""
        rules = (
            self._article,
            self._unit,
            self._tens,
            self._hundred,
            self._scale,
            self._dozen,
            self._ordinal,
            self._fraction,
        )
        for rule in rules:
            outcome = rule(word, j)
            if outcome is not None:
                return outcome
        return _STOP

    def _article(self, word: str, j: int) -> str | None:
        """A leading "a"/"an" (1, not yet a number alone) or "one"."""
        if word not in _A or self.last_kind != "" or j != self.first:
            return None
        self.current, self.last_kind = 1.0, "unit" if word == "one" else "article"
        return _MORE

    def _unit(self, word: str, j: int) -> str | None:
        """ "five", "twelve"; after a tens word only 1-9 ("twenty-five"), and "twenty zero" ends the run."""
        if word not in _UNITS or self.last_kind not in _OPEN_KINDS:
            return None
        if self.last_kind == "tens" and _UNITS[word] >= 10:
            return None
        if self.last_kind == "tens" and _UNITS[word] == 0:
            return _STOP
        self.current += _UNITS[word]
        self.last_kind = "unit"
        return _MORE

    def _tens(self, word: str, j: int) -> str | None:
        """ "twenty" .. "ninety", at the start or after a hundred, a scale or "and"."""
        if word not in _TENS or self.last_kind not in ("", "hundred", "scale", "and"):
            return None
        self.current += _TENS[word]
        self.last_kind = "tens"
        return _MORE

    def _hundred(self, word: str, j: int) -> str | None:
        """ "hundred" after a single unit or an article ("three hundred", "a hundred")."""
        if word != "hundred" or self.last_kind not in ("unit", "article") or self.current >= 10:
            return None
        self.current *= 100
        self.last_kind = "hundred"
        return _MORE

    def _scale(self, word: str, j: int) -> str | None:
        """ "thousand", "million", ...: the amount so far moves into the total."""
        if word not in _SCALES or self.last_kind not in ("unit", "tens", "hundred", "article"):
            return None
        self.total += self.current * _SCALES[word]
        self.current, self.last_kind = 0.0, "scale"
        return _MORE

    def _dozen(self, word: str, j: int) -> str | None:
        """ "dozen" after a small unit or an article ("two dozen", "a dozen")."""
        if word != "dozen" or self.last_kind not in ("unit", "article") or self.current >= 20:
            return None
        self.current *= 12
        self.last_kind = "dozen"
        return _MORE

    def _ordinal(self, word: str, j: int) -> str | None:
        """ "third", "twenty-first", "hundredth": ends the run; a leading "second" only after "the",
        "every" or "each"."""
        if word not in _ORDINALS or self.last_kind not in _OPEN_KINDS:
            return None
        if (
            word == "second"
            and j == self.first
            and _word(self.tokens, self.first - 1) not in _ORDINAL_SECOND_AFTER
        ):
            return _STOP
        if self.last_kind == "tens" and _ORDINALS[word] >= 10:
            return _STOP
        value = _ORDINALS[word]
        self.current = self.current * value if value >= 100 and self.current else self.current + value
        self.ordinal = True
        return _LAST

    def _fraction(self, word: str, j: int) -> str | None:
        """ "two-thirds", "three quarters": a small unit over a denominator ends the run."""
        if (
            word not in _DENOMINATORS
            or self.last_kind != "unit"
            or not 0 < self.current < 20
            or self.total != 0
        ):
            return None
        self.current = self.current / _DENOMINATORS[word]
        self.last_kind = "fraction"
        return _LAST


def _cardinal_words_at(tokens: list[_Token], i: int, text: str) -> tuple[Number, int] | None:
    """A run of number words: "three hundred and forty-two thousand", "twenty-first", "two-thirds"."""
    run = _CardinalRun(tokens, i)
    start, end = tokens[i].start, tokens[i].end
    j = i
    while True:
        outcome = run.take(_word(tokens, j), j)
        if outcome == _LAST:
            end, j = tokens[j].end, j + 1
        if outcome != _MORE:
            break
        end = tokens[j].end
        nxt = _next(tokens, j)
        if nxt is None:
            j += 1
            break
        after_and = _after_and(tokens, nxt, run.last_kind)
        if after_and is not None:
            run.last_kind, j = "and", after_and
            continue
        j = nxt
        if not _word(tokens, j):
            break
    if run.last_kind == "article":
        return None  # a bare "a"/"an"
    value = run.total + run.current
    if not run.ordinal and run.last_kind != "fraction":
        value, end, j = _with_fraction(tokens, _last_index(tokens, end), value, end, j)
    return _number(text, start, end, value, ordinal=run.ordinal), j


def _after_and(tokens: list[_Token], nxt: int, last_kind: str) -> int | None:
    """Index of the unit or tens word after an "and" at `nxt` that continues the run ("three hundred and
    forty"), when the run is at a hundred or a scale word; else None."""
    if _word(tokens, nxt) != "and" or last_kind not in ("hundred", "scale"):
        return None
    after = _next(tokens, nxt)
    if after is not None and (_word(tokens, after) in _UNITS or _word(tokens, after) in _TENS):
        return after
    return None


def _with_fraction(tokens: list[_Token], i: int, value: float, end: int, j: int) -> tuple[float, int, int]:
    """`value` extended by "and a half" (and then a scale word: "one and a half million") after token `i`:
    (value, end offset, next token index)."""
    fraction = _and_fraction(tokens, i)
    if fraction is None:
        return value, end, j
    value += fraction[0]
    last = fraction[1] - 1
    scale = _next(tokens, last)
    if scale is not None and _word(tokens, scale) in _SCALES:
        return value * _SCALES[_word(tokens, scale)], tokens[scale].end, scale + 1
    return value, tokens[last].end, fraction[1]


def _last_index(tokens: list[_Token], end: int) -> int:
    for k, token in enumerate(tokens):
        if token.end == end:
            return k
    return len(tokens) - 1


def _and_fraction(tokens: list[_Token], i: int) -> tuple[float, int] | None:
    """ "and a half", "and a quarter", "and three quarters", "and a third" after token `i`:
    (the fraction, index after it)."""
    nxt = _next(tokens, i)
    if nxt is None or _word(tokens, nxt) != "and":
        return None
    art = _next(tokens, nxt)
    if art is None:
        return None
    first = _word(tokens, art)
    den = _next(tokens, art)
    if den is None:
        return None
    denominator = _word(tokens, den)
    if denominator not in _DENOMINATORS:
        return None
    if first in ("a", "an", "one") and not denominator.endswith("s"):
        return 1 / _DENOMINATORS[denominator], den + 1
    if first in _UNITS and 1 < _UNITS[first] < _DENOMINATORS[denominator]:
        return _UNITS[first] / _DENOMINATORS[denominator], den + 1
    return None


def _number(
    text: str, start: int, end: int, value: float, *, ordinal: bool = False, spelled: bool = True
) -> Number:
    return Number(value=value, start=start, end=end, text=text[start:end], ordinal=ordinal, spelled=spelled)
