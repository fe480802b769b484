"""Section-aware chunking: a document's text -> chunks with exact, end-exclusive offsets.

Chunks follow ATX ('#') headings outside code fences and never cross one; the heading line
itself belongs to no chunk (the section path "H1 > H2" carries it). Inside a section,
sentences (`rag.text.sentence_spans`) are packed up to `max_tokens`, sized evenly so no tail
is tiny; a single sentence longer than the limit is cut at whitespace. Every non-whitespace,
non-heading character of the document is in exactly one chunk, and
`doc.text[chunk.start_char:chunk.end_char] == chunk.text`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rag.text import CHARS_PER_TOKEN, estimate_tokens, normalise, sentence_spans
from rag.types import Chunk, Document

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


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


def _pack(text: str, spans: list[tuple[int, int]], min_tokens: int, max_tokens: int) -> list[tuple[int, int]]:
    """Group consecutive spans into chunks of at most `max_tokens`, sized evenly so no tail is tiny."""

    def size(first: int, last: int) -> int:
        return estimate_tokens(text[spans[first][0] : spans[last][1]])

    total = size(0, len(spans) - 1)
    target = total / max(1, math.ceil(total / max_tokens))
    groups: list[list[int]] = [[0, 0]]
    for i in range(1, len(spans)):
        first = groups[-1][0]
        grown, current = size(first, i), size(first, i - 1)
        # close the chunk when adding span i would overshoot the even size more than stopping undershoots it
        if grown > max_tokens or grown - target > target - current:
            groups.append([i, i])
        else:
            groups[-1][1] = i
    if len(groups) > 1:
        prev, last = groups[-2], groups[-1]
        if size(last[0], last[1]) < min_tokens and size(prev[0], last[1]) <= max_tokens:
            groups[-2:] = [[prev[0], last[1]]]
        else:
            # move sentences from the previous chunk into a small tail while that evens them out
            while (
                prev[1] > prev[0]
                and size(last[0], last[1]) < min_tokens
                and size(prev[1], last[1]) <= max_tokens
                and size(prev[0], prev[1] - 1) >= size(prev[1], last[1])
            ):
                prev[1] -= 1
                last[0] -= 1
    return [(spans[a][0], spans[b][1]) for a, b in groups]


def chunk_document(doc: Document, *, min_tokens: int = 120, max_tokens: int = 220) -> list[Chunk]:
    """Section-aware chunks of `doc.text` with ids `{doc_id}#cNN` (00, 01, ...) and exact offsets.

    Heading lines are not part of any chunk (the section path carries them); every other
    non-whitespace character is in exactly one chunk. Sizes use `estimate_tokens`.
    """
    text = doc.text
    max_chars = max(1, int(max_tokens * CHARS_PER_TOKEN))
    chunks: list[Chunk] = []
    for path, start, end in _sections(text, doc.title):
        spans: list[tuple[int, int]] = []
        for s, e in sentence_spans(text[start:end]):
            s, e = s + start, e + start
            if estimate_tokens(text[s:e]) > max_tokens:
                spans.extend(_split_long(text, s, e, max_chars))
            else:
                spans.append((s, e))
        if not spans:
            continue
        for s, e in _pack(text, spans, min_tokens, max_tokens):
            chunks.append(
                Chunk(
                    chunk_id=f"{doc.doc_id}#c{len(chunks):02d}",
                    doc_id=doc.doc_id,
                    title=doc.title,
                    section=path,
                    text=text[s:e],
                    updated_at=doc.updated_at,
                    url=doc.url,
                    start_char=s,
                    end_char=e,
                )
            )
    return chunks
