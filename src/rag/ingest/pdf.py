"""PDF: text per page with pypdf; each page is a region, so every chunk carries its 1-based page.

The document text is the pages' text joined by blank lines, so offsets stay exact. Before that,
each page's lines lose what is not the document's prose (`pdf_lines`): running headers, footers
and page numbers, and whole table-of-contents pages, never enter the text; a word broken over a
line end is joined; typographic ligatures ("ﬁ") are spelled out. The title is the PDF's metadata
title, else a short first line of page one; a broken, encrypted or image-only PDF raises
`IngestError` with the reason.
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from rag.errors import IngestError
from rag.ingest.parsed import DEFAULT_LIMITS, Layout, Limits, Parsed, Region
from rag.ingest.pdf_lines import furniture, is_contents_page, join_broken_words
from rag.language.lexicon import STOP_WORDS
from rag.language.text import normalise

PAGE_SEPARATOR = "\n\n"
MAX_TITLE_CHARS = 120
MAX_HEADING_CHARS = 80
# A line of WRAPPED_SHARE of the usual prose line's length or more is wrapped prose (measured when the
# document has MIN_WIDTH_LINES lines of prose); RUN_LINES heading-shaped lines in a row are a table.
WRAPPED_SHARE = 0.85
MIN_WIDTH_LINES = 20
RUN_LINES = 3
_CODE_CHARS_RE = re.compile(r"[=${}<>|\\]")
# A section number before a heading: two or more levels, each number at most three digits ("2.7.3",
# "A.3.1", "6.2.1)"), or one level without a full stop ("1 Obtaining R", "7) List of options").
_SECTION_NUMBER_RE = re.compile(r"(?:(?:\d{1,3}|[A-Z])(?:\.\d{1,3})+[.)]?|\d{1,3}\)?)\s+")
_BRACKETS = (("(", ")"), ("[", "]"))
# what may close a sentence after its full stop ("... R version.)"), or open one ("[The rest", "‘r-devel’")
_CLOSERS = ")]'\"’”"
_OPENERS = "([‘“'\""
_SENTENCE_ENDS = (".", "!", "?", ":", ";", ",")
_SPACES_RE = re.compile(r"[ \t]+")
# the Latin ligatures of the Alphabetic Presentation Forms block, as the letters they join
_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
# what some producers put in the metadata title instead of one ("Microsoft Word - report.docx")
_TOOL_TITLE_RE = re.compile(r"^(?:microsoft \w+ - |untitled\b)|\.(?:docx?|pdf|odt|rtf|txt)$", re.IGNORECASE)


def _heading_shaped(line: str, width: float | None) -> bool:
    """A short capitalised line without end punctuation (`_row_like`), not a line of code or program
    output (an assignment, a prompt, markup, a template) and not a piece of a sentence
    (`_sentence_like`); or a numbered heading ("2.7.3 C++ Support", "1.1) What is it?", `_numbered`)."""
    if _numbered(line, width):
        return True
    return (
        _row_like(line, width)
        and line[0].isupper()
        and not _CODE_CHARS_RE.search(line)
        and not _sentence_like(line)
    )


def _numbered(line: str, width: float | None) -> bool:
    """A section number ("2.7.3", "6.2)", "1"; never "1." alone, a list item's number) and a short
    capitalised heading after it, which may be a question; a footnote ("8 using a path ...", "1 Including
    GCC 9 on Linux.") has a lower-case word or a closing full stop."""
    m = _SECTION_NUMBER_RE.match(line)
    if m is None:
        return False
    rest = line[m.end() :]
    head = rest[:-1] if rest.endswith("?") else rest
    return (
        bool(head)
        and head[0].isupper()
        and _row_like(line.removesuffix("?"), width)
        and not _CODE_CHARS_RE.search(line)
    )


def _subsection(line: str) -> bool:
    """A section number of two or more levels ("3.1.1 The Windows toolset"): a heading even among
    other short lines (a chapter, its section and its subsection in a row) and after a line that
    ends no sentence. A one-level number in such a run is a numbered list ("1 Open the lid", "2 Pour
    the water", "3 Close the lid")."""
    m = _SECTION_NUMBER_RE.match(line)
    return m is not None and "." in m.group(0).rstrip(". )")


def _sentence_like(line: str) -> bool:
    """A line that is a piece of a sentence, not a heading: it ends in a function word ("The
    exceptions are", "... attempts by the"), holds a clause break or a sentence end before further
    words ("First, we read in the data using", "... from https://example.org/. Download"), leaves a
    bracket open ("... Printer #1 (EPSON") or is a copyright notice."""
    words = line.split()
    last = words[-1].strip("\"'’”)").lower() if words else ""
    if last in STOP_WORDS or ", " in line or ". " in line or "©" in line:
        return True
    return any(line.count(a) != line.count(b) for a, b in _BRACKETS)


def _prose_width(pages: list[list[str]]) -> float | None:
    """The median length of the document's lines of prose (six words or more): a line of about that
    length that ends without punctuation is a line the layout wrapped, not a heading. None when the
    document has fewer than MIN_WIDTH_LINES such lines."""
    lengths = sorted(len(line) for lines in pages for line in lines if len(line.split()) >= 6)
    if len(lengths) < MIN_WIDTH_LINES:
        return None
    return float(lengths[len(lengths) // 2])


def _row_like(line: str, width: float | None) -> bool:
    """A short line that ends no sentence, narrower than the document's wrapped prose lines (`width`:
    their usual length; None when there are too few to tell): a heading, or a row of a table, a list
    or a block of code."""
    return (
        0 < len(line) <= MAX_HEADING_CHARS
        and not line.endswith(_SENTENCE_ENDS)
        and (width is None or len(line) < WRAPPED_SHARE * width)
    )


def _in_runs(lines: list[str], width: float | None) -> set[int]:
    """Indexes of the lines that stand in a run of RUN_LINES or more short lines that end no sentence
    (`_row_like`), with no line of prose between them: the rows of a table, a list or a block of code,
    never headings (a heading is followed by its text; a chapter number and its name make two lines,
    not three)."""
    out: set[int] = set()
    run: list[int] = []
    for i, line in enumerate([*lines, "."]):  # the closing "." ends the last run
        if _row_like(line, width):
            run.append(i)
        elif line:  # a blank line neither extends a run nor ends it
            if len(run) >= RUN_LINES:
                out.update(run)
            run = []
    return out


def _lines(page_text: str) -> list[str]:
    """The page's extracted lines, spaces collapsed, ligatures spelled out."""
    text = page_text.replace("\r", "\n").replace("\0", " ").translate(_LIGATURES)
    return [_SPACES_RE.sub(" ", line).strip() for line in text.split("\n")]


def _prose(pages: list[list[str]]) -> list[list[str]]:
    """The pages' lines without running headers, footers and page numbers; a contents page loses
    all of them; broken words joined."""
    marked = furniture(pages)
    kept = [
        [line for i, line in enumerate(lines) if i not in drop]
        for lines, drop in zip(pages, marked, strict=True)
    ]
    return join_broken_words([[] if is_contents_page(lines) else lines for lines in kept])


def _clean(lines: list[str], width: float | None) -> tuple[str, list[tuple[int, str]]]:
    """Page text from its lines, blank runs cut to one blank line; heading-like lines get a blank
    line on each side, so a heading never runs into the sentence after it. Also the (offset, text)
    of each heading-like line: heading-shaped (`_heading_shaped`, `width` the document's prose line
    length), after a sentence end or another heading, before a capitalised line, and not one of a run
    of such lines (`_in_runs`)."""
    out: list[str] = []
    headings: list[tuple[int, str]] = []
    pos = 0
    after_break = True  # the previous line ended a sentence or was a heading
    rows = _in_runs(lines, width)

    def add(line: str) -> None:
        nonlocal pos
        if not line and (not out or not out[-1]):
            return  # no leading blank line, no blank runs
        out.append(line)
        pos += len(line) + 1

    for i, line in enumerate(lines):
        after = lines[i + 1] if i + 1 < len(lines) else ""
        subsection = _subsection(line) and _numbered(line, width)
        if (
            (after_break or subsection)
            and _starts_text(after, width)
            and (i not in rows or subsection)
            and _heading_shaped(line, width)
        ):
            add("")
            headings.append((pos, line))
            add(line)
            add("")
            after_break = True
        elif line:
            add(line)
            after_break = line.rstrip(_CLOSERS).endswith(_SENTENCE_ENDS)
        else:
            add(line)
    return "\n".join(out).rstrip(), headings


def _starts_text(line: str, width: float | None) -> bool:
    """What may follow a heading: a capitalised line, or the numbered heading of its first subsection."""
    return line.lstrip(_OPENERS)[:1].isupper() or _numbered(line, width)


Page = tuple[str, list[tuple[int, str]]]
"""One page's cleaned text and the (offset, text) of its heading-like lines (`_clean`)."""


def parse_pdf(raw: bytes, where: str, limits: Limits = DEFAULT_LIMITS) -> Parsed:
    """The text, title ("" when the PDF has none) and page regions of a PDF; raises IngestError,
    before any page is read, for more pages than `limits.pdf_pages`, and as soon as the text read
    passes `limits.expanded_bytes` characters."""
    texts, meta_title = _read_pages(raw, where, limits)
    prose = _prose([_lines(text) for text in texts])
    width = _prose_width(prose)
    pages = [_clean(lines, width) for lines in prose]
    title = _title(meta_title, pages)
    parts: list[str] = []
    regions: list[Region] = []
    pos = 0
    section = ""
    title_key = normalise(title)
    for number, (page_text, headings) in enumerate(pages, start=1):
        if not page_text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            pos += len(PAGE_SEPARATOR)
        section = _page_regions(regions, pos, number, page_text, headings, title_key, section)
        parts.append(page_text)
        pos += len(page_text)
    text = "".join(parts)
    if not text.strip():
        raise IngestError(where, f"PDF has no extractable text ({len(pages)} pages; scanned images?)")
    return Parsed(text=text + "\n", title=title, layout=Layout(regions=tuple(regions)))


def _read_pages(raw: bytes, where: str, limits: Limits) -> tuple[list[str], str]:
    """Each page's extracted text, and the metadata title ("" when none); raises IngestError for a
    damaged PDF, one that needs a password, or one past `limits`."""
    # pypdf logs (not raises) on recoverable damage; keep that out of the ingest output
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(raw))
        _decrypt(reader, where)
        _check_pages(reader, where, limits.pdf_pages)
        texts = _page_texts(reader, where, limits.expanded_bytes)
        meta = reader.metadata
        meta_title = str(meta.title or "").strip() if meta is not None else ""
    except IngestError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files; any of them means unreadable
        raise IngestError(where, f"unreadable PDF: {type(exc).__name__}: {exc}") from None
    return texts, meta_title


def _check_pages(reader: Any, where: str, budget: int) -> None:
    """Raise IngestError when the PDF has more than `budget` pages: the count its page tree declares
    is read first (no page is visited), then the pages the tree really holds (their dictionaries
    only, no content stream is decoded)."""
    tree = reader.trailer["/Root"]["/Pages"]
    declared = tree["/Count"] if "/Count" in tree else 0
    count = int(declared) if isinstance(declared, int) and declared > budget else len(reader.pages)
    if count > budget:
        raise IngestError(
            where, f"{count:,} pages, over the limit of {budget:,} per PDF (RAG_INGEST_MAX_PDF_PAGES)"
        )


def _page_texts(reader: Any, where: str, budget: int) -> list[str]:
    """Each page's text, page by page; raises IngestError as soon as they add up to more than
    `budget` characters (a page whose streams expand without end stops the file, not the run)."""
    texts: list[str] = []
    total = 0
    for page in reader.pages:
        texts.append(page.extract_text() or "")
        total += len(texts[-1])
        if total > budget:
            raise IngestError(
                where,
                f"its text passes {budget / 2**20:,.1f} M characters by page {len(texts):,},"
                " over the limit per file (RAG_INGEST_MAX_EXPANDED_MB)",
            )
    return texts


def _decrypt(reader: Any, where: str) -> None:
    """Open an encrypted PDF with the empty password; raises IngestError when it needs another."""
    from pypdf.errors import PyPdfError

    if not reader.is_encrypted:
        return
    try:
        if not reader.decrypt(""):
            raise IngestError(where, "encrypted PDF (needs a password)")
    except (NotImplementedError, PyPdfError):
        raise IngestError(where, "encrypted PDF (needs a password)") from None


def _title(meta_title: str, pages: list[Page]) -> str:
    """The metadata title unless a tool wrote it, else a short first line of the first page with
    text that does not end like a sentence, else ""."""
    if meta_title and not _TOOL_TITLE_RE.search(meta_title):
        return meta_title
    first_line = next((page_text.split("\n", 1)[0].strip() for page_text, _ in pages if page_text), "")
    if 0 < len(first_line) <= MAX_TITLE_CHARS and not first_line.endswith(_SENTENCE_ENDS):
        return first_line
    return ""


def _page_regions(
    regions: list[Region],
    pos: int,
    number: int,
    page_text: str,
    headings: list[tuple[int, str]],
    title_key: str,
    section: str,
) -> str:
    """Append page `number`'s regions (its text starts at `pos`) to `regions`, cut at its heading
    lines; `section` is the heading in force from earlier pages. Returns the one in force after it."""
    # each piece carries the latest heading as its section (the heading line stays in the text:
    # a misjudged line must not drop out of every chunk)
    start = 0
    for offset, heading in headings:
        if offset > start:
            regions.append(Region(start=pos + start, end=pos + offset, section=section, page=number))
        if normalise(heading) == title_key:
            # the title line itself: provenance carries it, so it is in no chunk
            start, section = offset + len(heading), ""
        else:
            start, section = offset, heading
    regions.append(Region(start=pos + start, end=pos + len(page_text), section=section, page=number))
    return section
