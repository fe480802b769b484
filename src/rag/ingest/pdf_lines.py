"""What a PDF's extracted lines need before they are document text: page furniture out, contents
pages out, words broken at a line end joined. Every rule is decided from the document itself.

Furniture. A printed page repeats lines at its top and bottom edge: the book's title, the chapter's
or section's, a page number ("12", "xii", "Page 3 of 40", "3 / 92"). A page's edge lines (up to
`EDGE_LINES` from each edge; a short page's top and bottom get half its lines each) are compared
with the other pages' edge lines, digits and roman numerals made '#'. A line is furniture when
- it is the page's printed number, or its first or last word is, that end being where this edge
  of the document's pages carries numbers: the document numbers its pages with a fixed offset
  from their position (a number at an edge minus the page's index, the same on at least
  `_min_pages` pages, or in roman numerals on a run of nearby pages), and this page's number is
  that offset away (so "1 About this manual", chapter 1 on page 1, stays where numbers end lines);
- its form has letters and recurs at the same edge on at least `_min_pages` pages, its numbers steady (never
  going down from page to page but for a few: a page or section number, a release, not the
  line numbers of examples), or its first `PREFIX_WORDS` words do (a book title on every other
  page; a header whose section number and name change);
- it is the edge line, its form has words and recurs at the same edge on a run of at least
  `RUN_PAGES` pages, each within `RUN_GAP` of the next (a chapter title over its chapter's
  pages), at an edge where the first two kinds are found on `_min_pages` pages;
- it lies between the edge and a line of the first two kinds (a chapter title printed only on
  its chapter's pages, between the page number and the book title).

Contents pages: most lines are entries (a title then dot leaders and a page number, a title ending
in a page number, or a title over a line of leaders) and at least `MIN_LEADERS` have dot leaders.

Broken words: a line ending in a letter and a hyphen, followed by a line starting with a lowercase
letter, is joined to it. The hyphen is kept when the document writes the hyphenated form more
often than the closed one elsewhere ("con-tinue" becomes "continue"); when it writes neither, when
it writes other hyphenated words with the same first or second half ("well-typed" stays beside
"well-known"; "success-fully" becomes "successfully").
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

EDGE_LINES = 3
PREFIX_WORDS = 4
MIN_PREFIX_CHARS = 16
PAGE_SHARE = 0.12  # of the pages with text: a title on every other page, a marker on one page in eight
RUN_PAGES = 3
RUN_GAP = 2
MIN_RUN_LETTERS = 4
MAX_DESCENTS = 0.1
MAX_FURNITURE_CHARS = 160
MIN_LEADERS = 3
ENTRY_SHARE = 0.6

_DIGITS_RE = re.compile(r"\d+")
_ROMAN_RE = re.compile(r"^(?=[mdclxvi])m{0,3}(?:c[md]|d?c{0,3})(?:x[cl]|l?x{0,3})(?:i[xv]|v?i{0,3})$")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
_LEADER_RE = re.compile(r"(?:\.\s*){4,}(?:\d+|[ivxlcdm]+)?\s*$", re.IGNORECASE)
_LEADER_ONLY_RE = re.compile(r"^\s*(?:\.\s*){4,}(?:\d+|[ivxlcdm]+)?\s*$", re.IGNORECASE)
_ENTRY_RE = re.compile(r"^\S.*\s(?:\d+|[ivxlcdm]+)$", re.IGNORECASE)
_NUMBER_MARKS = "-\u2013\u2014|()[]<>.,:"
_HYPHENS = ("-", "\u00ad", "\u2010")  # hyphen-minus, soft hyphen, hyphen
_WORD_START_RE = re.compile(r"^[^\W\d_]+")
_LETTERS_RE = re.compile(r"[^\W\d_]")
_WORD_RE = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")

# --- furniture ------------------------------------------------------------------------------------


def _number(token: str) -> int | None:
    """The value of a page number token: arabic ("12") or roman ("xii", "XII"), else None."""
    if token.isdigit():
        return int(token)
    low = token.lower()
    if not _ROMAN_RE.match(low):
        return None
    values = [_ROMAN_VALUES[c] for c in low]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def line_form(line: str) -> str:
    """The line lowercased with digit runs and a roman numeral first or last made '#': equal for
    the same running line on two pages."""
    words = _DIGITS_RE.sub("#", line.lower()).split()
    for i in {0, len(words) - 1} if words else set():
        if _ROMAN_RE.match(words[i]):
            words[i] = "#"
    return " ".join(words)


def _numbers_in(line: str) -> tuple[int, ...]:
    """The numbers `line_form` makes '#', in order: what changes in a running line."""
    words = line.split()
    numbers = [int(d) for d in _DIGITS_RE.findall(line)]
    if words and _ROMAN_RE.match(words[0].lower()):
        numbers.insert(0, _number(words[0]) or 0)
    if len(words) > 1 and _ROMAN_RE.match(words[-1].lower()):
        numbers.append(_number(words[-1]) or 0)
    return tuple(numbers)


def _steady(numbers: Sequence[tuple[int, ...]]) -> bool:
    """Whether numbers seen page after page never go down, but for a few (MAX_DESCENTS): a page
    number, a section number, a release do not; an example's line numbers do."""
    descents = sum(1 for a, b in zip(numbers, numbers[1:], strict=False) if b < a)
    return descents <= MAX_DESCENTS * max(1, len(numbers) - 1)


def _prefix(form: str) -> str | None:
    """The form's first `PREFIX_WORDS` words, when the line is longer than that and they are long
    enough to be more than a coincidence: what a header whose end changes keeps."""
    words = form.split()
    prefix = " ".join(words[:PREFIX_WORDS])
    return prefix if len(words) > PREFIX_WORDS and len(prefix.replace("#", "")) >= MIN_PREFIX_CHARS else None


def _edge_lines(lines: Sequence[str]) -> tuple[list[int], list[int]]:
    """The indices of a page's first and last `EDGE_LINES` non-blank lines, each from its edge; a
    short page's top and bottom each get half of its lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    half = (len(filled) + 1) // 2
    return filled[: min(EDGE_LINES, half)], filled[half:][::-1][:EDGE_LINES]


def _min_pages(n_pages: int) -> int:
    """On how many pages a line must recur to be running: 2 of a short document, else a share."""
    return 2 if n_pages <= 4 else max(RUN_PAGES, math.ceil(PAGE_SHARE * n_pages))


def _in_run(pages: Sequence[int], page: int, need: int) -> bool:
    """Whether `page` is in a run of at least `need` of the sorted `pages`, each within RUN_GAP."""
    i = pages.index(page)
    lo = hi = i
    while lo > 0 and pages[lo] - pages[lo - 1] <= RUN_GAP:
        lo -= 1
    while hi + 1 < len(pages) and pages[hi + 1] - pages[hi] <= RUN_GAP:
        hi += 1
    return hi - lo + 1 >= need


class _Edge:
    """One edge (top or bottom) of the document's pages: the lines at it, from the edge inwards,
    and what recurs there."""

    def __init__(
        self,
        pages: Sequence[Sequence[str]],
        at_edge: Sequence[list[int]],
        numbers: list[set[int]],
        min_pages: int,
    ) -> None:
        self.pages, self.at_edge, self.numbers, self.min_pages = pages, at_edge, numbers, min_pages
        self.forms: dict[str, list[int]] = defaultdict(list)
        changing: dict[str, list[tuple[int, ...]]] = defaultdict(list)
        self.prefixes: Counter[str] = Counter()
        for page, indices in enumerate(at_edge):
            forms = {line_form(pages[page][i]): _numbers_in(pages[page][i]) for i in indices}
            for form, numbers_in in forms.items():
                self.forms[form].append(page)
                changing[form].append(numbers_in)
            self.prefixes.update({p for p in map(_prefix, forms) if p})
        self.steady = {form for form, seen in changing.items() if _steady(seen)}
        # which end of a line of words (first word, last word) carries the page number at this edge
        sides: Counter[int] = Counter()
        for page, indices in enumerate(at_edge):
            lines = [pages[page][i] for i in indices if len(_number_words(pages[page][i])) > 1]
            sides.update({side for line in lines for side in (0, -1) if self._numbered(page, line, {side})})
        self.sides = {side for side, count in sides.items() if count >= RUN_PAGES}
        # whether this edge carries furniture at all: a run of nearby pages is furniture only here
        sure = sum(1 for page, indices in enumerate(at_edge) if indices and self._sure(page, indices[0]))
        self.carries = sure >= min_pages

    def _sure(self, page: int, i: int) -> bool:
        """The line is the page's number, or it (or its first words) recurs on `min_pages` pages,
        its numbers steady."""
        line = self.pages[page][i]
        if self._numbered(page, line, self.sides):
            return True
        form = line_form(line)
        if not _LETTERS_RE.search(form):
            return False  # a bare number, "3 / 92": the page's number, or no furniture
        if len(self.forms[form]) >= self.min_pages and form in self.steady:
            return True
        prefix = _prefix(form)
        return bool(prefix and self.prefixes[prefix] >= self.min_pages)

    def _numbered(self, page: int, line: str, sides: set[int]) -> bool:
        """The line is the page's number, or it starts or ends (`sides`) with it."""
        words = _number_words(line)
        if len(words) == 1:
            return _number(words[0]) in self.numbers[page]
        return any(words and _number(words[side]) in self.numbers[page] for side in sides)

    def _in_a_run(self, page: int, i: int) -> bool:
        """The line has words and recurs on a run of nearby pages, at an edge that carries furniture."""
        form = line_form(self.pages[page][i])
        if len(_LETTERS_RE.findall(form)) < MIN_RUN_LETTERS or not self.carries:
            return False
        return form in self.steady and _in_run(self.forms[form], page, RUN_PAGES)

    def furniture(self, page: int) -> list[int]:
        """The page's lines at this edge that are furniture: the edge line when it is sure or in a
        run, then inwards each sure line and any line between it and the edge."""
        indices = [i for i in self.at_edge[page] if len(self.pages[page][i]) <= MAX_FURNITURE_CHARS]
        sure = [self._sure(page, i) for i in indices]
        if not indices or not (sure[0] or self._in_a_run(page, indices[0])):
            return []
        deepest = max((d for d in range(1, len(sure)) if sure[d]), default=0)
        return indices[: deepest + 1]


def _page_numbers(
    pages: Sequence[Sequence[str]], edges: Sequence[list[int]], min_pages: int
) -> list[set[int]]:
    """Each page's printed number(s), from how the document numbers its pages: an offset (a number
    first or last on an edge line, minus the page's index) that at least `min_pages` pages show
    holds for every page; a roman one that a run of nearby pages shows (front matter), for those."""
    seen: dict[tuple[bool, int], list[int]] = defaultdict(list)
    for page, indices in enumerate(edges):
        found = {(roman, value - page) for i in indices for roman, value in _end_numbers(pages[page][i])}
        for key in sorted(found):
            seen[key].append(page)
    numbers: list[set[int]] = [set() for _ in pages]
    for (roman, offset), on in seen.items():
        if len(on) >= max(min_pages, RUN_PAGES):
            for page in range(len(pages)):
                numbers[page].add(page + offset)
        elif roman:
            for page in (p for p in on if _in_run(on, p, RUN_PAGES)):
                numbers[page].add(page + offset)
    return numbers


def _number_words(line: str) -> list[str]:
    """The line's words without the marks around a page number ("- 12 -", "[xii]")."""
    return [w for w in (w.strip(_NUMBER_MARKS) for w in line.split()) if w]


def _end_numbers(line: str) -> set[tuple[bool, int]]:
    """(roman, value) of the line's first and last words read as page numbers."""
    words = _number_words(line)
    return {
        (not word.isdigit(), value) for word in words[:1] + words[-1:] if (value := _number(word)) is not None
    }


def furniture(pages: Sequence[Sequence[str]]) -> list[set[int]]:
    """For each page (its lines), the indices of its lines that are running headers, footers or
    page numbers (see the module docstring)."""
    at_edges = [_edge_lines(lines) for lines in pages]
    min_pages = _min_pages(sum(1 for top, _ in at_edges if top))
    numbers = _page_numbers(pages, [t + b for t, b in at_edges], min_pages)
    top = _Edge(pages, [t for t, _ in at_edges], numbers, min_pages)
    bottom = _Edge(pages, [b for _, b in at_edges], numbers, min_pages)
    return [set(top.furniture(page) + bottom.furniture(page)) for page in range(len(pages))]


# --- contents pages -------------------------------------------------------------------------------


def is_contents_page(lines: Sequence[str]) -> bool:
    """Whether the page is a table of contents (see the module docstring): a list of where things
    are, not an answer to anything."""
    filled = [line.strip() for line in lines if line.strip()]
    leaders = [bool(_LEADER_RE.search(line)) for line in filled]
    if sum(leaders) < MIN_LEADERS:
        return False
    entries = 0
    for i, line in enumerate(filled):
        over_leaders = i + 1 < len(filled) and bool(_LEADER_ONLY_RE.match(filled[i + 1]))
        if leaders[i] or over_leaders or _ENTRY_RE.match(line):
            entries += 1
    return entries >= ENTRY_SHARE * len(filled)


# --- broken words ---------------------------------------------------------------------------------


def word_counts(pages: Iterable[Sequence[str]]) -> Counter[str]:
    """How often each word (lowercased, hyphenated compounds whole) is written in the pages, not
    counting the two halves of a word broken over a line end."""
    counts: Counter[str] = Counter()
    broken_before = False
    for lines in pages:
        for line in lines:
            words = [w.lower() for w in _WORD_RE.findall(line)]
            broken = _broken_word(line) is not None
            counts.update(words[int(broken_before and line[:1].islower()) : len(words) - int(broken)])
            broken_before = broken
    return counts


def _broken_word(line: str) -> str | None:
    """The letters (and inner hyphens) before a hyphen that ends the line, else None."""
    if not line.endswith(_HYPHENS) or line.endswith("--"):
        return None
    end = start = len(line) - 1
    while start > 0 and (
        line[start - 1].isalpha() or (line[start - 1] == "-" and start > 1 and line[start - 2].isalpha())
    ):
        start -= 1
    word = line[start:end]
    return word if word[:1].isalpha() else None


def _keeps_hyphen(word: str, rest: str, counts: Counter[str], halves: set[str]) -> bool:
    """Whether `word`-`rest`, broken at its hyphen, is a hyphenated word: the document writes it
    so more often than closed up; when it writes neither, when it writes other hyphenated words
    with the same first or second half ("well-typed" beside "well-known", "non-defined" beside
    "non-empty"; not "success-fully")."""
    hyphenated, closed = counts[f"{word}-{rest}".lower()], counts[f"{word}{rest}".lower()]
    if hyphenated or closed:
        return hyphenated > closed
    first = word.rsplit("-", 1)[-1].lower()
    return f"{first}-" in halves or f"-{rest.lower()}" in halves


def _halves(counts: Counter[str]) -> set[str]:
    """The halves of the hyphenated words the document writes: "well-" and "-known" for "well-known"."""
    found: set[str] = set()
    for word in counts:
        parts = word.split("-")
        for i in range(1, len(parts)):
            found.update((parts[i - 1] + "-", "-" + parts[i]))
    return found


def _joined(head: str, tail: str, counts: Counter[str], halves: set[str]) -> str | None:
    """`head` (ending in a hyphen) and `tail` as one line, the broken word made whole; None when
    they are not a broken word (no letter before the hyphen, no lowercase letter after it)."""
    word = _broken_word(head)
    start = _WORD_START_RE.match(tail)
    if word is None or start is None or not tail[0].islower():
        return None
    keep = head.endswith("-") and _keeps_hyphen(word, start.group(), counts, halves)
    first, _, after = tail.partition(" ")
    return (head if keep else head[:-1]) + first + ("\n" + after.strip() if after.strip() else "")


def join_broken_words(pages: Sequence[Sequence[str]]) -> list[list[str]]:
    """The pages' lines with each word broken over a line end (or a page end) joined onto the
    first line; a line left empty goes."""
    counts = word_counts(pages)
    halves = _halves(counts)
    out = [list(lines) for lines in pages]
    emptied: set[tuple[int, int]] = set()
    flat = [(p, i) for p, lines in enumerate(out) for i, line in enumerate(lines) if line.strip()]
    for (p, i), (q, j) in zip(flat, flat[1:], strict=False):
        if (p, i) in emptied or (p == q and j != i + 1):
            continue  # moved up by an earlier join, or a blank line (a paragraph end) between them
        joined = _joined(out[p][i], out[q][j], counts, halves)
        if joined is not None:
            out[p][i], _, out[q][j] = joined.partition("\n")
            if not out[q][j]:
                emptied.add((q, j))
    return [[line for i, line in enumerate(lines) if (p, i) not in emptied] for p, lines in enumerate(out)]
