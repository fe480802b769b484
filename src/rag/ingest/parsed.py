"""What every format's parser returns: `Parsed`, the text with its title and `Layout` (the regions
chunks never cross, with their sections and pages, and the code ranges). Offsets are into `text`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Region:
    """A stretch of document text chunks never cross, with its section path and 1-based page."""

    start: int
    end: int
    section: str = ""
    page: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """What a parser found beyond the text. `regions` None: derive sections from '#' headings;
    `code` None: find code with `rag.language.text.code_spans`. Offsets are into the document text."""

    regions: tuple[Region, ...] | None = None
    code: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    """One file as its format's parser read it: the document text, the title the file gives itself
    ("" when none: then its first '#' heading, then its file name), and the layout chunks follow."""

    text: str
    title: str = ""
    layout: Layout = Layout()


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What reading one file may cost before it is skipped with the reason (`RAG_INGEST_MAX_*`).

    `expanded_bytes`: an archive-based file's (DOCX) members, added up as the zip's directory declares
    them, and a PDF's extracted text (in characters); `pdf_pages`: a PDF's pages, counted from its page
    tree before any page is read; `chunks`: the chunks of one document (chunking stops past it)."""

    expanded_bytes: int = 100 * 1024 * 1024
    pdf_pages: int = 5_000
    chunks: int = 20_000


DEFAULT_LIMITS = Limits()
"""The bounds when no setting changes them."""
