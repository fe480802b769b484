"""HTML: the text of a page's main content, Markdown-like, so chunking reads it as it reads Markdown.

`rag.ingest.furniture` finds the main content and removes the page furniture (navigation, banners,
sidebars, forms, hidden elements, permalink marks, link-dense blocks). What is written of it: h1-h6
as '#' heading lines (so chunking sees the sections), list items as "- " lines ("1. " in an
ordered list; an item without text is left out), `<pre>` as fenced code kept whole, whitespace
and line breaks intact (so a '#' comment line is never a heading), inline `<code>` as `backticked`
text, and tables by `rag.ingest.tables` (a row under a header row as "- Header: cell; ..."). The
title is the content's own heading (its sole h1), else `<title>` without the site's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rag.errors import IngestError
from rag.ingest.furniture import HEADINGS, main_content, tag_of
from rag.ingest.parsed import Parsed
from rag.ingest.tables import Cell, table_text

_SPACES_RE = re.compile(r"\s+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
_XML_DECLARATION_RE = re.compile(r"\A\s*<\?xml[^>]*\?>")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# a heading numbered as a section of its page ("1. Overview", "2.3 Limits"), not the page's name
_SECTION_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)*\.\s|^\d+(?:\.\d+)+\s")
_BACKTICKS_RE = re.compile(r"`+")
_PLACEHOLDER_RE = re.compile(r"\0(\d+)\0")  # where `_Text` puts a code block until the text is done
_FENCE_START_RE = re.compile(r"^ {0,3}(`{3,})", re.MULTILINE)
_BLOCK = frozenset(
    "p div section article header footer main nav aside ul ol dl dt dd blockquote hr figure"
    " figcaption form fieldset legend address details summary center caption".split()
)
_INLINE_CODE = frozenset({"code", "kbd", "samp", "tt"})
# a table holding one of these lays out the page; it is not a table of data
_LAYOUT_INSIDE = ".//table|.//pre|.//h1|.//h2|.//h3|.//h4|.//h5|.//h6"
# separators before (or after) a site's name in a <title> ("Session Basics — SQLAlchemy 1.4
# Documentation"); " - " also joins the words of a name, so only a heading confirms a cut there
_TITLE_SEPARATORS_RE = re.compile(r"\s+(?:[—–|·]|-{1,2}|::)\s+")
_SURE_SEPARATORS = frozenset("—–|·")


def parse_html(body: str, where: str) -> Parsed:
    """An HTML page's main-content text and title; raises IngestError for markup it cannot parse or
    that holds no text outside page furniture."""
    truncated = body.rfind("<") > body.rfind(">")  # an unterminated tag at the end: a cut-off file
    no_text = "HTML has no text" + (" (truncated markup)" if truncated else "")
    root = _document(body, where)
    if root is None:
        raise IngestError(where, no_text)
    page_title = _SPACES_RE.sub(" ", " ".join(root.xpath("//title//text()"))).strip()
    content = main_content(root)
    out = _Text()
    _write_children(content, out)
    text = out.text()
    if not text.strip():
        raise IngestError(where, no_text)
    return Parsed(text=text, title=_title(content, page_title))


def _document(body: str, where: str) -> Any:
    """The parsed page (an lxml element), or None when it holds nothing to parse."""
    import lxml.etree
    import lxml.html

    body = _CONTROL_RE.sub(" ", _XML_DECLARATION_RE.sub("", body, count=1))
    if not body.strip():
        return None
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True)
    try:
        return lxml.html.document_fromstring(body, parser=parser)
    except lxml.etree.ParserError:
        return None  # "Document is empty": only comments or blanks
    except (ValueError, lxml.etree.LxmlError) as exc:
        raise IngestError(where, f"unparseable HTML: {exc}") from None


# --- the title -------------------------------------------------------------------------------------


def _title(content: Any, page_title: str) -> str:
    """The content's sole h1 (unless numbered as a section), else `page_title` without a site
    suffix, else the content's first h1."""
    h1s = [t for t in (_inline_text(h) for h in content.iter("h1")) if t]
    if len(h1s) == 1 and not (page_title and _SECTION_NUMBER_RE.match(h1s[0])):
        return h1s[0]
    if page_title:
        headings = [_inline_text(h) for h in content.iter("h1", "h2", "h3")]
        return page_title_without_site(page_title, headings)
    return h1s[0] if h1s else ""


def page_title_without_site(title: str, headings: list[str]) -> str:
    """`title` without the site's name: the part of it before or after a separator that is one of
    the page's `headings`, else the part before the last " — ", " | " (or "–", "·") separator; a
    " - " is cut only where a heading confirms it (it also joins the words of a name)."""
    cuts = list(_TITLE_SEPARATORS_RE.finditer(title))
    if not cuts:
        return title
    known = {_key(h) for h in headings if h}
    parts = [title[: m.start()] for m in cuts] + [title[m.end() :] for m in cuts]
    confirmed = [p for p in parts if _key(p) in known]
    if confirmed:
        return max(confirmed, key=len).strip()
    return _before_sure_separator(title, cuts[-1])


def _before_sure_separator(title: str, last: re.Match[str]) -> str:
    """The title before its last separator when that one never joins words (" — ", " | "), else whole."""
    head = title[: last.start()].strip()
    return head if last.group().strip() in _SURE_SEPARATORS and head else title


def _key(text: str) -> str:
    return _SPACES_RE.sub(" ", text).strip().casefold()


# --- the text --------------------------------------------------------------------------------------


class _Text:
    """The document text being written: inline text with whitespace collapsed, line and block
    breaks, and code blocks kept verbatim (as placeholders until `text()`). `inline` writers (a
    heading, a table cell) turn every break into a space and code blocks into inline code."""

    def __init__(self, *, inline: bool = False) -> None:
        self.parts: list[str] = []
        self.code: list[str] = []
        self.inline = inline
        self._bullet: str | None = None  # a list item's marker, written with its first text
        self._items = 0  # list items open: inside one, a block break is a line break

    def add(self, data: str | None) -> None:
        if not data:
            return
        if self._bullet is not None and data.strip():
            self.parts.append(self._bullet if self._line_start() else f"\n{self._bullet}")
            self._bullet = None
            data = data.lstrip()
        self.parts.append(_SPACES_RE.sub(" ", data))

    def brk(self, breaks: str = "\n") -> None:
        if self._bullet is not None:
            return
        if self.inline:
            self.parts.append(" ")
        elif not self._items:
            self.parts.append(breaks)
        elif not self._line_start():
            self.parts.append("\n")

    def _line_start(self) -> bool:
        """Whether what is written so far ends a line (or nothing is)."""
        for part in reversed(self.parts):
            if part.strip(" "):
                return part.rstrip(" ").endswith("\n")
        return True

    def open_item(self, marker: str) -> None:
        """A list item: `marker` is written before its first text, never for an empty item."""
        self._bullet = None if self.inline else marker
        self.parts.append(" " if self.inline else "")
        self._items += 1

    def close_item(self) -> None:
        self._bullet = None
        self.brk("\n")
        self._items -= 1

    def block(self, line: str) -> None:
        """A line of its own (a heading, a table row), between blank lines."""
        self._bullet = None
        self.parts.append(" " + line + " " if self.inline else f"\n\n{line}\n\n")

    def code_block(self, code: str) -> None:
        if self.inline:
            self.add(_backticked(code))
            return
        self._bullet = None
        self.parts.append(f"\n\n\0{len(self.code)}\0\n\n")
        self.code.append(code)

    def text(self) -> str:
        if self.inline:
            return _SPACES_RE.sub(" ", "".join(self.parts)).strip()
        lines = (line.strip() for line in "".join(self.parts).split("\n"))
        text = _BLANK_LINES_RE.sub("\n\n", "\n".join(lines)).strip("\n")
        text = _PLACEHOLDER_RE.sub(lambda m: _fenced(self.code[int(m.group(1))]), text)
        return text + "\n" if text else ""


def _fenced(code: str) -> str:
    """`code` between fences longer than any backtick fence inside it."""
    longest = max((len(m.group(1)) for m in _FENCE_START_RE.finditer(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def _backticked(code: str) -> str:
    """Inline code as Markdown writes it: `code`, with a longer run of backticks when it holds some."""
    code = _SPACES_RE.sub(" ", code).strip()
    if not code:
        return ""
    longest = max((len(m.group()) for m in _BACKTICKS_RE.finditer(code)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _pre_text(el: Any) -> str:
    """A <pre>'s text as written, without its blank first and last lines."""
    lines = el.text_content().replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)


def _inline_text(el: Any) -> str:
    out = _Text(inline=True)
    _write_children(el, out)
    return out.text()


def _write_children(el: Any, out: _Text) -> None:
    out.add(el.text)
    for child in el:
        _write(child, out)
        out.add(child.tail)


def _write(el: Any, out: _Text) -> None:
    tag = tag_of(el)
    special = _WRITERS.get(tag)
    if tag in HEADINGS:
        if box_title(el):
            out.block(_inline_text(el))  # "Note": the label of a box in the text, not a section
        else:
            _write_heading(el, out)
    elif special is not None:
        special(el, out)
    else:
        if tag in _BLOCK:
            out.brk("\n\n")
        _write_children(el, out)
        if tag in _BLOCK:
            out.brk("\n\n")


def box_title(el: Any) -> bool:
    """A heading that titles a box of its section (DocBook's `<div class="note"><h3>Note</h3>`): its
    text, lowercased, is a class of the element around it, or that element is an "admonition". Such
    a heading opens no section: the text after the box still belongs to the section before it."""
    parent = el.getparent()
    if parent is None:
        return False
    classes = {c.lower() for c in (parent.get("class") or "").split()}
    if not classes and parent.getparent() is not None and len(parent) == 1:
        classes = {c.lower() for c in (parent.getparent().get("class") or "").split()}
    word = _inline_text(el).strip().rstrip(":").lower()
    return bool(word) and (word in classes or "admonition" in classes)


def _write_heading(el: Any, out: _Text) -> None:
    heading = _inline_text(el)
    if heading:
        out.block(f"{'#' * HEADINGS[tag_of(el)]} {heading}")


def _write_pre(el: Any, out: _Text) -> None:
    code = _pre_text(el)
    if code.strip():
        out.code_block(code)


def _write_inline_code(el: Any, out: _Text) -> None:
    out.add(_backticked(el.text_content()))


def _write_break(el: Any, out: _Text) -> None:
    out.brk("\n")


def _write_list(el: Any, out: _Text) -> None:
    """A list's items as "- " lines ("1. ", "2. " in an ordered list); empty items are left out."""
    ordered = tag_of(el) == "ol"
    try:
        number = int(el.get("start") or 1)
    except ValueError:
        number = 1
    out.brk("\n\n")
    out.add(el.text)
    for child in el:
        if tag_of(child) == "li":
            out.open_item(f"{number}. " if ordered else "- ")
            _write_children(child, out)
            out.close_item()
            number += 1
        else:
            _write(child, out)
        out.add(child.tail)
    out.brk("\n\n")


# --- tables ----------------------------------------------------------------------------------------


def _write_table(table: Any, out: _Text) -> None:
    """A data table as `table_text` writes it, after its caption; its header rows are its <thead>'s,
    else a first row of <th> cells. A table that lays out the page (holding a table, code or
    headings) is written cell by cell as blocks."""
    rows = table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")
    if table.xpath(_LAYOUT_INSIDE):
        _write_layout_cells(rows, out)
        return
    caption = table.find("caption")
    if caption is not None and (text := _inline_text(caption)):
        out.block(text)
    if lines := table_text(_grid(rows), _header_rows(table, rows)):
        out.block(lines)


def _write_layout_cells(rows: list[Any], out: _Text) -> None:
    """A layout table's cells, each as its own block."""
    for cell in (c for row in rows for c in row.xpath("./td|./th")):
        out.brk("\n\n")
        _write_children(cell, out)
        out.brk("\n\n")


def _header_rows(table: Any, rows: list[Any]) -> int:
    """How many of `rows` are headers: the <thead>'s rows, else 1 for a first row of <th> cells."""
    head = len(table.xpath("./thead/tr"))
    if head or len(rows) <= 1:
        return head
    first = rows[0].xpath("./td|./th")
    return int(bool(first) and all(tag_of(c) == "th" for c in first))


# The elements written their own way (`_write`); headings are written by `_write_heading`.
_WRITERS: dict[str, Callable[[Any, _Text], None]] = {
    "pre": _write_pre,
    **dict.fromkeys(_INLINE_CODE, _write_inline_code),
    "table": _write_table,
    "br": _write_break,
    "ul": _write_list,
    "ol": _write_list,
}


def _grid(rows: list[Any]) -> list[list[Cell]]:
    """The rows' cells by column: a colspan takes its columns, a rowspan repeats the cell below."""
    grid: list[list[Cell]] = []
    below: dict[int, tuple[Cell, int]] = {}  # column -> (cell, rows it still spans)
    for row in rows:
        line: list[Cell] = []
        for cell in row.xpath("./td|./th"):
            _carry(line, below)
            text = _inline_text(cell)
            span, down = _span(cell.get("colspan")), _span(cell.get("rowspan"))
            for k in range(span):
                at = (text, span) if k == 0 else ("", 0)
                if down > 1:
                    below[len(line)] = (at, down - 1)
                line.append(at)
        _carry(line, below)
        grid.append(line)
    return grid


def _carry(line: list[Cell], below: dict[int, tuple[Cell, int]]) -> None:
    """Fill the columns a rowspan from above still covers at the end of `line`."""
    while len(line) in below:
        cell, left = below.pop(len(line))
        if left > 1:
            below[len(line)] = (cell, left - 1)
        line.append(cell)


def _span(value: str | None) -> int:
    try:
        return min(max(int(value or 1), 1), 100)
    except ValueError:
        return 1
