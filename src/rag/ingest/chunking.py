"""Section-aware chunking: a document's text -> chunks with exact, end-exclusive offsets.

Chunks follow the document's regions and never cross one: by default the sections under ATX
('#') headings outside code fences, or the `Layout` a format's parser found (reST sections, PDF pages).
Heading lines belong to no chunk (the section path "H1 > H2" carries them). Inside a region,
sentences (`rag.language.text.sentence_spans`) and whole code blocks (`Layout.code`, else
`rag.language.text.code_spans`) are packed up to `max_tokens`, sized evenly so no tail is tiny; a code
block stays in the chunk of the text that introduces it when it fits, so `code_spans` finds it
again in the chunk's own text. A single unit longer than the limit is cut at whitespace. Every
non-whitespace, non-heading character is in exactly one chunk, and
`doc.text[chunk.start_char:chunk.end_char] == chunk.text`. A chunk that starts inside a reST
entry's description (".. py:data:: NAME" and its indented body) ends its section path with NAME.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from rag.ingest.parsed import Layout, Region
from rag.language.lexicon import DIRECTIVE_RE, ENTRY_DIRECTIVES
from rag.language.text import CHARS_PER_TOKEN, code_spans, estimate_tokens, normalise, sentence_spans
from rag.types import Chunk, Document

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# The markup around an entry's name (".. py:function:: send_file(path)" -> "send_file").
_ENTRY_MARKUP_RE = re.compile(r"[`*]+|\(.*$")


@dataclass(frozen=True, slots=True)
class Heading:
    start: int  # start of the heading line
    end: int  # end of the heading line, excluding its newline
    level: int
    text: str


def find_headings(text: str) -> list[Heading]:
    """ATX ('#') heading lines outside fenced code blocks, in order."""
    headings: list[Heading] = []
    fence = ""
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        fence_match = _FENCE_RE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
        elif not fence:
            match = _HEADING_RE.match(line)
            if match:
                title = _CLOSING_HASHES_RE.sub("", match.group(2) or "").strip()
                headings.append(Heading(pos, end, len(match.group(1)), title))
        pos = end + 1
    return headings


def _sections(text: str, title: str) -> list[tuple[str, int, int]]:
    """(section path, start, end) for the text before the first heading and after each heading line.

    The path joins the enclosing headings with " > ", leaving out a top heading that repeats the title.
    """
    regions: list[tuple[str, int, int]] = []
    stack: list[Heading] = []
    start = 0
    path = ""
    title_key = normalise(title)
    for heading in find_headings(text):
        regions.append((path, start, heading.start))
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        names = [
            h.text for i, h in enumerate(stack) if h.text and not (i == 0 and normalise(h.text) == title_key)
        ]
        path = " > ".join(names)
        start = heading.end
    regions.append((path, start, len(text)))
    return regions


@dataclass(frozen=True, slots=True)
class Entry:
    """A reST entry directive (".. py:data:: NAME", ".. option:: --flag", ".. envvar:: X"): its
    description runs from the end of the directive line to `end` (its indented body)."""

    body: int
    end: int
    name: str


def find_entries(text: str) -> list[Entry]:
    """The entry directives of `text` with the extent of their indented descriptions, in order."""
    entries: list[Entry] = []
    lines = text.split("\n")
    pos = 0
    open_: list[tuple[int, int, str]] = []  # (indent, body start, name) of entries still open
    for line in lines:
        end = pos + len(line)
        if line.strip():
            indent = len(line) - len(line.lstrip())
            while open_ and indent <= open_[-1][0]:
                _, body, name = open_.pop()
                entries.append(Entry(body, pos, name))
            name = _entry_name(line)
            if name:
                open_.append((indent, end, name))
        pos = end + 1
    entries.extend(Entry(body, len(text), name) for _, body, name in reversed(open_))
    return sorted(entries, key=lambda e: e.body)


def _entry_name(line: str) -> str:
    match = DIRECTIVE_RE.match(line)
    directive = (match.group(1) or "").lower() if match else ""
    if not directive or directive.split(":")[-1] not in ENTRY_DIRECTIVES:
        return ""
    return _ENTRY_MARKUP_RE.sub("", line.split("::", 1)[1]).strip()


def _with_entry(section: str, start: int, entries: list[Entry]) -> str:
    """The section path of a chunk starting at `start`, ending in the name of the innermost entry
    whose description the chunk starts inside (the chunker cut the entry after its name)."""
    inside = [e for e in entries if e.body < start < e.end]
    if not inside:
        return section
    name = inside[-1].name
    return f"{section} > {name}" if section else name


def _split_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut one over-long sentence at whitespace into pieces of at most `max_chars` (hard cut if no space)."""
    pieces: list[tuple[int, int]] = []
    while end - start > max_chars:
        cut = start + max_chars
        while cut > start and not text[cut].isspace():
            cut -= 1
        if cut == start:
            cut = start + max_chars
        resume = cut
        piece_end = cut
        while piece_end > start and text[piece_end - 1].isspace():
            piece_end -= 1
        pieces.append((start, piece_end))
        start = resume
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append((start, end))
    return pieces


Size = Callable[[int, int], int]
"""Estimated tokens of the text from span `first` through span `last` (both included)."""


def _pack(
    text: str,
    spans: list[tuple[int, int]],
    min_tokens: int,
    max_tokens: int,
    glued: frozenset[int] = frozenset(),
) -> list[tuple[int, int]]:
    """Group consecutive spans into chunks of at most `max_tokens`, sized evenly so no tail is tiny.

    A span index in `glued` stays with the span before it whenever both fit in `max_tokens`.
    """

    def size(first: int, last: int) -> int:
        return estimate_tokens(text[spans[first][0] : spans[last][1]])

    groups = _groups(len(spans), size, max_tokens, glued)
    if len(groups) > 1:
        _even_out_tail(groups, size, min_tokens, max_tokens, glued)
    return [(spans[a][0], spans[b][1]) for a, b in groups]


def _groups(count: int, size: Size, max_tokens: int, glued: frozenset[int]) -> list[list[int]]:
    """[first, last] span indexes of each chunk, filled greedily towards an even size."""
    total = size(0, count - 1)
    target = total / max(1, math.ceil(total / max_tokens))
    groups: list[list[int]] = [[0, 0]]
    for i in range(1, count):
        first = groups[-1][0]
        grown, current = size(first, i), size(first, i - 1)
        # close the chunk when adding span i would overshoot the even size more than stopping undershoots it
        if grown > max_tokens or (grown - target > target - current and i not in glued):
            groups.append([i, i])
        else:
            groups[-1][1] = i
    return groups


def _even_out_tail(
    groups: list[list[int]], size: Size, min_tokens: int, max_tokens: int, glued: frozenset[int]
) -> None:
    """A last chunk under `min_tokens` joins the one before when both fit, else takes sentences
    from it while that evens them out (in place)."""
    prev, last = groups[-2], groups[-1]
    if size(last[0], last[1]) < min_tokens and size(prev[0], last[1]) <= max_tokens:
        groups[-2:] = [[prev[0], last[1]]]
        return
    while (
        prev[1] > prev[0]
        and last[0] not in glued
        and size(last[0], last[1]) < min_tokens
        and size(prev[1], last[1]) <= max_tokens
        and size(prev[0], prev[1] - 1) >= size(prev[1], last[1])
    ):
        prev[1] -= 1
        last[0] -= 1


def _units(
    text: str, start: int, end: int, code: list[tuple[int, int]], max_tokens: int
) -> tuple[list[tuple[int, int]], frozenset[int]]:
    """Sentences of the prose and whole code blocks in [start, end), cut to `max_tokens`; the indexes
    of code units (glued to what precedes them)."""
    max_chars = max(1, int(max_tokens * CHARS_PER_TOKEN))
    units: list[tuple[int, int]] = []
    glued: set[int] = set()

    def add(s: int, e: int, is_code: bool) -> None:
        pieces = _split_long(text, s, e, max_chars) if estimate_tokens(text[s:e]) > max_tokens else [(s, e)]
        if is_code and pieces:
            glued.add(len(units))
        units.extend(pieces)

    pos = start
    for c_start, c_end in code:
        c_start, c_end = max(c_start, start), min(c_end, end)
        if c_end <= c_start:
            continue
        for s, e in sentence_spans(text[pos:c_start]):
            add(s + pos, e + pos, False)
        pos = c_end
        while c_start < c_end and text[c_start].isspace():
            c_start += 1
        while c_end > c_start and text[c_end - 1].isspace():
            c_end -= 1
        if c_end > c_start:
            add(c_start, c_end, True)
    for s, e in sentence_spans(text[pos:end]):
        add(s + pos, e + pos, False)
    return units, frozenset(glued)


def chunk_document(
    doc: Document,
    *,
    min_tokens: int = 120,
    max_tokens: int = 220,
    layout: Layout | None = None,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """Section-aware chunks of `doc.text` with ids `{doc_id}#cNN` (00, 01, ...) and exact offsets.

    Heading lines are not part of any chunk (the section path carries them); every other
    non-whitespace character is in exactly one chunk. Sizes use `estimate_tokens`. `layout`
    (from the format's parser) gives the regions, pages and code ranges; without it they come from the text.
    `max_chunks`: stop at the first region that starts with that many made (a caller's budget: the
    document is then cut short, and more than `max_chunks` may be returned).
    """
    text = doc.text
    layout = layout or Layout()
    regions = _regions(text, doc.title, layout)
    code = sorted(layout.code) if layout.code is not None else code_spans(text)
    entries = find_entries(text) if ".. " in text else []
    chunks: list[Chunk] = []
    for region in regions:
        if max_chunks is not None and len(chunks) >= max_chunks:
            break
        for s, e in _region_spans(text, region, code, min_tokens, max_tokens):
            chunks.append(
                Chunk(
                    chunk_id=f"{doc.doc_id}#c{len(chunks):02d}",
                    doc_id=doc.doc_id,
                    title=doc.title,
                    section=_with_entry(region.section, s, entries),
                    text=text[s:e],
                    updated_at=doc.updated_at,
                    url=doc.url,
                    page=region.page,
                    start_char=s,
                    end_char=e,
                )
            )
    return chunks


def _regions(text: str, title: str, layout: Layout) -> tuple[Region, ...]:
    """The layout's regions, else the sections under the text's '#' headings."""
    if layout.regions is not None:
        return layout.regions
    return tuple(Region(start=s, end=e, section=p) for p, s, e in _sections(text, title))


def _region_spans(
    text: str, region: Region, code: list[tuple[int, int]], min_tokens: int, max_tokens: int
) -> list[tuple[int, int]]:
    """The (start, end) of each chunk inside `region`, in order; [] when it holds no text."""
    inside = [(s, e) for s, e in code if s < region.end and e > region.start]
    spans, glued = _units(text, region.start, region.end, inside, max_tokens)
    return _pack(text, spans, min_tokens, max_tokens, glued) if spans else []
