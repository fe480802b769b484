"""Parse generator output into draft sentences with the citations they claim.

Inline contract: `[n]` markers after each claim. A marker run is taken as citations when it
- holds only block numbers 1..999, separated by commas, with ranges `a-b`/`a–b` (a <= b, at most
  `MAX_RANGE` numbers), e.g. `[1]`, `[1][3]`, `[1, 3]`, `[1-3]`;
- and is not glued to a word, unless it sits at a clause end: "50 MB [1]." and "50 MB.[1]" and
  "50 MB[1]." are citations, "array[1] holds" is prose. `[sic]`, `[2.0]`, `[v2]`, `[a]`, `[0]` are prose.
Markers are removed from the sentence text together with the whitespace before them.

Native contract: pieces carry claims per content block; the claims of a block attach to every
sentence that overlaps the block's character range (an empty block attaches to the sentence it follows).
Only those claims are citations: `[n]` typed in the text is not one. Such markers are still taken out
of the sentence (a reader would take them for citations), but they claim nothing, so a sentence the
API did not cite is withheld as uncited.

The contract is chosen by the caller (`SentenceBuffer(native=...)`), never guessed from the pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from rag.language.text import ABBREVIATIONS, sentence_spans
from rag.types import Claim, Draft, Piece, SentenceStart

MAX_RANGE = 50

_NUM = r"[1-9]\d{0,2}"
_ITEM = rf"{_NUM}(?:\s*[-–—]\s*{_NUM})?"
_MARKER = rf"\[\s*{_ITEM}(?:\s*,\s*{_ITEM})*\s*\]"
# A run of markers, possibly wrapped in emphasis ("**[1]**") that goes with it.
MARKER_RUN_RE = re.compile(
    rf"(?P<space>\s*)(?P<open>\*{{1,3}}|_{{1,3}})?(?P<run>(?:{_MARKER})+)(?(open)(?P=open))"
)
_MARKER_ONE_RE = re.compile(_MARKER)
_ITEM_RE = re.compile(rf"(?P<lo>{_NUM})(?:\s*[-–—]\s*(?P<hi>{_NUM}))?")
_CLAUSE_END = frozenset(".,;:!?")
_LEAD_RE = re.compile(r"^(?:\s*(?:#{1,6}|[-*+•>])\s+)+")
_ENUMERATOR_RE = re.compile(r"(?:\d{1,3}|[a-zA-Z])[.)]")
_HAS_WORD_RE = re.compile(r"\w")
# A "sentence" that is only markers and closing punctuation: the tail of the one before
# (`"at any time." [1].`).
_TAIL_RE = re.compile(rf"(?:\s*[*_]{{0,3}}(?:{_MARKER})+[*_]{{0,3}})+\s*[.!?]*[\"'”’)\]*_]*")
# Terminal punctuation, then closing quotes, brackets, emphasis and marker runs, then space: a sentence
# end the splitter misses when emphasis is among them ("**30 days.**", "30 days.**[1]**").
_WRAPPED_END_RE = re.compile(rf"[.!?](?:[\"'”’)\]*_]|\s*{_MARKER})+(?=\s)")
# A sentence whose closing quote or bracket follows its own full stop needs no second one: `"at any time.".`
_DOUBLE_STOP_RE = re.compile(r"(?<=[.!?][\"'”’)\]])\.$")
# What may still turn into trailing markers of the sentence before: whitespace and (partial) [n] runs.
_PENDING_RE = re.compile(r"\s*(?:\[[\d\s,–—-]*\]?\s*)*")
_NON_SPACE_RE = re.compile(r"\S")
# A sentence end that no later text can extend: terminal punctuation after a word (not a digit,
# not a single letter), optionally closed by quotes or brackets.
_FIRM_END_RE = re.compile(r"[^\W\d_]{2,}[.!?]+[\"'”’)\]]*$")


_LIST_ITEM_RE = re.compile(r"\s*(?:[-*+•]|\d{1,3}[.)])\s")
_NUMBER_ITEM_RE = re.compile(r"\s*(\d{1,3})[.)]\s")
_ENUMERATOR_BEFORE_RE = re.compile(r"(?:^|\n)[ \t]*(\d{1,3})[.)][ \t]*$")
# A Markdown table row ("| a | b |") and its rule ("|---|:--:|").
_ROW_RE = re.compile(r"[ \t]*\|.*\|[ \t]*")
_RULE_START_RE = re.compile(r"\n?[ \t]*\|[ \t]*:?-")


def list_number(text: str, start: int) -> int:
    """The number of the numbered item the sentence at `start` opens ("2. ..."), else 0."""
    match = _NUMBER_ITEM_RE.match(text, start) or _ENUMERATOR_BEFORE_RE.search(text, 0, start)
    return int(match.group(1)) if match else 0


def sentence_start(text: str, start: int) -> SentenceStart:
    """How the sentence at `start` begins the layout: a numbered or bulleted list item (a number or a
    bullet before it on its line), a new paragraph (a blank line or a heading line before it), or
    running on ("")."""
    if list_number(text, start):
        return "numbered"
    if _LIST_ITEM_RE.match(text, start):
        return "item"
    lead = len(text[start:]) - len(text[start:].lstrip())
    before = start
    while before > 0 and text[before - 1].isspace():
        before -= 1
    if before == 0:
        return ""
    gap = text[before : start + lead]
    previous_line = text[:before].rsplit("\n", 1)[-1].lstrip()
    if "\n\n" in gap or ("\n" in gap and previous_line.startswith("#")):
        return "paragraph"
    return ""


def parse_inline(text: str) -> tuple[Draft, ...]:
    """Split inline-contract output into sentences; `[n]` markers become Claims (n only), out of the text."""
    drafts = []
    for start, end in _sentence_spans(text):
        starts = sentence_start(text, start)
        draft = _draft(text[start:end], starts=starts)
        if draft is not None and starts == "numbered":
            draft = replace(draft, number=list_number(text, start))
        if draft is not None:
            drafts.append(draft)
    return tuple(drafts)


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """`text.sentence_spans`, with a span that holds only markers and closing punctuation joined to the
    sentence before it (the splitter cuts `"at any time." [1].` after the closing quote), and every
    table row one span (a full stop inside a cell does not end it)."""
    spans: list[tuple[int, int]] = []
    for start, end in _wrapped_cuts(text, sentence_spans(text)):
        if spans and _TAIL_RE.fullmatch(text, start, end) and not text[spans[-1][1] : start].count("\n"):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return _whole_rows(text, spans)


def _row_line(text: str, at: int) -> tuple[int, int] | None:
    """The [start, end) of the table-row line holding offset `at`, or None when that line is no row."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    return (start, end) if _ROW_RE.fullmatch(text, start, end) else None


def _whole_rows(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        row = _row_line(text, start)
        if row is None:
            out.append((start, end))
            continue
        lead = row[0] + len(text[row[0] : row[1]]) - len(text[row[0] : row[1]].lstrip())
        if out and out[-1][0] == lead:
            continue  # the rest of a row already taken whole
        out.append((lead, len(text[: row[1]].rstrip())))
    return out


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The [start, end) of each cell of the table row text[start:end], trimmed of spaces."""
    bars = [i for i in range(start, end) if text[i] == "|"]
    cells = []
    for left, right in zip(bars, bars[1:], strict=False):
        a, b = left + 1, right
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        cells.append((a, b))
    return cells


def _wrapped_cuts(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for match in _WRAPPED_END_RE.finditer(text, start, end):
            if not any(c in "*_" for c in match.group()):
                continue
            out.append((start, match.end()))
            start = match.end()
            while start < end and text[start].isspace():
                start += 1
        if start < end:
            out.append((start, end))
    return out


def citation_numbers(marker_run: str) -> tuple[int, ...] | None:
    """The block numbers in a marker run like "[1][3-4]", or None when it is not a valid citation run."""
    numbers: list[int] = []
    for marker in _MARKER_ONE_RE.findall(marker_run):
        for item in _ITEM_RE.finditer(marker):
            lo = int(item.group("lo"))
            hi = int(item.group("hi") or lo)
            if hi < lo or hi - lo >= MAX_RANGE:
                return None
            numbers.extend(range(lo, hi + 1))
    return tuple(numbers)


def strip_markers(sentence: str) -> tuple[str, tuple[int, ...]]:
    """The sentence without its citation markers, and the cited numbers in order of first appearance."""
    numbers: list[int] = []
    out: list[str] = []
    last = 0
    for match in MARKER_RUN_RE.finditer(sentence):
        if _in_prose(sentence, match):
            continue
        found = citation_numbers(match.group("run"))
        if found is None:
            continue
        numbers.extend(n for n in found if n not in numbers)
        out.append(sentence[last : match.start()])
        last = match.end()
    out.append(sentence[last:])
    return "".join(out), tuple(numbers)


def _in_prose(sentence: str, match: re.Match[str]) -> bool:
    """True when the marker run is glued to the word before it and no clause end follows ("array[1]
    holds"): prose, not a citation."""
    run_start, run_end = match.start("run"), match.end("run")
    before = sentence[run_start - 1] if run_start else " "
    after = sentence[run_end] if run_end < len(sentence) else ""
    return (before.isalnum() or before == "_") and not (after == "" or after in _CLAUSE_END)


def _draft(
    sentence: str, extra: tuple[Claim, ...] = (), *, native: bool = False, starts: SentenceStart = ""
) -> Draft | None:
    text, numbers = strip_markers(sentence)
    text = _DOUBLE_STOP_RE.sub("", _LEAD_RE.sub("", text).strip())
    if not _HAS_WORD_RE.search(text) or _ENUMERATOR_RE.fullmatch(text):
        return None
    claims: list[Claim] = [] if native else [Claim(n=n) for n in numbers]
    for claim in extra:
        if claim not in claims:
            claims.append(claim)
    return Draft(text=text, claims=tuple(claims), starts=starts)


@dataclass(slots=True)
class _Segment:
    index: int
    start: int
    end: int
    claims: list[Claim] = field(default_factory=list)
    claims_first: bool = False  # its citations arrived before any of its text (the usual wire order)


class SentenceBuffer:
    """Accumulates streamed pieces and returns each sentence as soon as it is complete.

    A sentence is complete when the splitter cuts after it and non-space text that cannot be a
    citation marker follows (or at `flush`). Inline (`native=False`): fed the same text in any piece
    sizes, the drafts equal `parse_inline(text)`; a piece with claims is a contract error. Native
    (`native=True`): claims come only from pieces; a sentence that overlaps the still-open content
    block is held until the block ends, because a block's citations may arrive after its text, unless
    that block's citations arrived before its text (the usual order on the wire): then a sentence
    inside it is released as soon as it ends.
    """

    def __init__(self, *, native: bool) -> None:
        self._text = ""
        self._done = 0  # sentences starting before this offset have been returned
        self._segments: list[_Segment] = []
        self._native = native

    @property
    def text(self) -> str:
        """Everything fed so far, markers included."""
        return self._text

    def feed(self, piece: Piece) -> list[Draft]:
        """Append one piece; return the sentences it completed, in order. Raises ValueError for a
        piece with claims in an inline buffer."""
        if piece.claims and not self._native:
            raise ValueError("a piece with native claims was fed to an inline-contract SentenceBuffer")
        current, same_block = self._segment_for(piece.index)
        if piece.claims:
            current.claims_first = not self._text[current.start : current.end].strip()
        current.claims.extend(piece.claims)
        self._text += piece.text
        current.end = len(self._text)
        if same_block and not piece.claims and not piece.text.strip():
            return []  # whitespace alone completes no sentence
        return self._drain(final=False)

    def _segment_for(self, index: int) -> tuple[_Segment, bool]:
        """The open segment and True when it is content block `index`; otherwise a new segment for that
        block, opened at the end of the text, and False."""
        current = self._segments[-1] if self._segments else None
        if current is not None and current.index == index:
            return current, True
        position = len(self._text)
        current = _Segment(index=index, start=position, end=position)
        self._segments.append(current)
        return current, False

    def flush(self) -> list[Draft]:
        """Return every sentence not returned yet; the stream has ended."""
        return self._drain(final=True)

    def _drain(self, *, final: bool) -> list[Draft]:
        out: list[Draft] = []
        unsent = self._unsent()
        if not final and self._awaiting_text():
            return out
        for start, end, following in unsent:
            if not final and not self._complete(start, end, following):
                break
            draft = self._sentence(start, end, following)
            self._done = end
            if draft is not None:
                out.append(draft)
        if final:
            self._done = len(self._text) + 1
        return out

    def _unsent(self) -> list[tuple[int, int, int | None]]:
        """The sentences not returned yet, in order: (start, end, start of the next one or None)."""
        spans = [span for span in _sentence_spans(self._text) if span[0] >= self._done]
        following: list[int | None] = [start for start, _ in spans[1:]]
        following.append(None)
        return [(start, end, after) for (start, end), after in zip(spans, following, strict=False)]

    def _sentence(self, start: int, end: int, following: int | None) -> Draft | None:
        """The sentence [start, end) as a draft (None when it holds no words), with its native claims;
        a table row as a row of cell drafts, each with the claims of its own text."""
        text = self._text
        if _ROW_RE.fullmatch(text, start, end):
            return self._row(start, end, following)
        claims = self._native_claims(start, end, following) if self._native else ()
        starts = sentence_start(text, start)
        draft = _draft(text[start:end], claims, native=self._native, starts=starts)
        if draft is not None and starts == "numbered":
            draft = replace(draft, number=list_number(text, start))
        return draft

    def _row(self, start: int, end: int, following: int | None) -> Draft | None:
        """A table row: None for its rule, a `header` when the rule follows it, else a `row`."""
        text = self._text
        cells: list[Draft] = []
        for a, b in _cells(text, start, end):
            claims = self._native_claims(a, b, b) if self._native and a < b else ()
            value, numbers = strip_markers(text[a:b])
            inline = () if self._native else tuple(Claim(n=n) for n in numbers)
            cells.append(Draft(text=value.strip(), claims=tuple(claims) + inline))
        if not any(_HAS_WORD_RE.search(c.text) for c in cells):
            return None  # the rule under the header ("|---|---|")
        header = following is not None and bool(_RULE_START_RE.match(text, end))
        merged = tuple(dict.fromkeys(c for cell in cells for c in cell.claims))
        row = "| " + " | ".join(c.text for c in cells) + " |"
        return Draft(text=row, claims=merged, starts="header" if header else "row", cells=tuple(cells))

    def _complete(self, start: int, end: int, following: int | None) -> bool:
        """True when the sentence [start, end) can go out before the stream ends: another sentence and
        non-marker text follow it, or (native) it ends a closed block firmly; a sentence in the open
        block waits unless that block's citations came first."""
        in_open_block = self._native and self._open_overlaps(end)
        # an open block whose citations came first: its sentences go as soon as they end
        if in_open_block and not self._segments[-1].claims_first:
            return False
        if following is not None and self._tail_may_join(following):
            return False
        if self._native and not in_open_block and following is None and self._firm_end(start, end):
            return True  # it ends a closed block
        return self._followed(end, following)

    def _followed(self, end: int, following: int | None) -> bool:
        """True when another sentence follows the one ending at `end` and the text after it is more
        than whitespace and (partial) citation markers."""
        if following is None:
            return False
        pending = _PENDING_RE.match(self._text, end)
        return pending is not None and pending.end() != len(self._text)

    def _tail_may_join(self, following: int) -> bool:
        """True when the next span starts with markers and nothing but markers follows them yet
        ("X. [2]. [1]"): once its words arrive, the splitter may join those markers to the sentence
        before (as `_sentence_spans` does), so that sentence must not go out without them."""
        text = self._text
        tail = _TAIL_RE.match(text, following)
        if tail is None or tail.end() == following:
            return False
        rest = _PENDING_RE.match(text, tail.end())
        return rest is not None and rest.end() == len(text)

    def _awaiting_text(self) -> bool:
        """The open block has citations but no text yet: they belong to the text about to come (the
        usual order), or, if the block closes empty, to the sentence before. Nothing goes out until
        that is known."""
        if not self._native or not self._segments:
            return False
        open_segment = self._segments[-1]
        return bool(open_segment.claims) and not self._text[open_segment.start : open_segment.end].strip()

    def _firm_end(self, start: int, end: int) -> bool:
        """True when the sentence ends a closed content block with punctuation nothing can extend.

        Native citations never arrive as inline markers, and a cited block always carries the text
        it claims (the period often comes in an uncited block of its own), so such a sentence need
        not wait for the next block's first characters: it is released the moment its block closes.
        This assumes what the API sends: text after a finished sentence starts with whitespace.
        """
        sentence = self._text[start:end]
        if not _FIRM_END_RE.search(sentence):
            return False
        word = sentence.rstrip("\"'”’)]").rstrip(".!?").rsplit(None, 1)[-1].lower()
        return word not in ABBREVIATIONS

    def _open_overlaps(self, end: int) -> bool:
        if not self._segments:
            return False
        open_segment = self._segments[-1]
        return open_segment.start < end and open_segment.end > open_segment.start

    def _native_claims(self, start: int, end: int, following: int | None) -> tuple[Claim, ...]:
        """Claims of every content block overlapping [start, end). A closed block without text (or only
        whitespace) attaches to the sentence it follows: the one whose zone (start, following] holds it.
        """
        claims: list[Claim] = []
        lead = _NON_SPACE_RE.search(self._text)
        first = lead is not None and lead.start() == start
        for segment in self._segments:
            if segment.claims and self._attaches(segment, start, end, following, first=first):
                claims.extend(c for c in segment.claims if c not in claims)
        return tuple(claims)

    def _attaches(
        self, segment: _Segment, start: int, end: int, following: int | None, *, first: bool
    ) -> bool:
        """True when the segment's claims belong to the sentence [start, end): its text overlaps the
        sentence, or, without text, it lies in the sentence's zone (start, following] (`first`: the
        sentence is the first one, so its zone reaches back to the start of the text)."""
        seg_start, seg_end = self._stripped(segment)
        if seg_end > seg_start:
            return seg_start < end and start < seg_end
        return (seg_start > start or first) and (following is None or seg_start <= following)

    def _stripped(self, segment: _Segment) -> tuple[int, int]:
        chunk = self._text[segment.start : segment.end]
        lead = len(chunk) - len(chunk.lstrip())
        trail = len(chunk) - len(chunk.rstrip())
        if lead == len(chunk):
            return segment.start, segment.start
        return segment.start + lead, segment.end - trail
