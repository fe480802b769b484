"""Word (.docx) with python-docx: paragraphs, headings, lists and tables as Markdown-like text.

Headings become '#' lines (so chunking sees the sections), list paragraphs "- " items, and tables
(`rag.ingest.tables`) one line per row, a row under a header row as "- Header: cell; Header: cell",
in body order. The title is the core-properties title, else the first "Title"-styled paragraph,
else the first heading.
"""

from __future__ import annotations

import io
import re
from typing import Any

from rag.errors import IngestError
from rag.ingest.parsed import DEFAULT_LIMITS, Limits, Parsed
from rag.ingest.tables import Cell, table_text

_HEADING_STYLE_RE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_SPACES_RE = re.compile(r"\s+")
# the "header row" bit of a table look's hex value (ECMA-376 part 1, 17.4.56)
_LOOK_FIRST_ROW = 0x0020


class _StyleNames:
    """Paragraph style names by style id, looked up once per id (python-docx's `paragraph.style`
    scans every style of the document for each unstyled paragraph)."""

    def __init__(self, word: Any) -> None:
        self._word = word
        self._names: dict[str, str] = {}

    def __call__(self, paragraph: Any) -> str:
        ppr = paragraph._p.pPr
        style_id = ppr.pStyle.val if ppr is not None and ppr.pStyle is not None else None
        if style_id is None:
            return ""
        if style_id not in self._names:
            from docx.enum.style import WD_STYLE_TYPE

            style = self._word.part.styles.get_by_id(style_id, WD_STYLE_TYPE.PARAGRAPH)
            self._names[style_id] = str(getattr(style, "name", "") or "")
        return self._names[style_id]


_LIST_LEVEL_RE = re.compile(r"list.*?(\d)$", re.IGNORECASE)


def _list_level(paragraph: Any, style: str) -> int | None:
    """0-based nesting level of a list paragraph ("List Bullet 2" -> 1, numbering level), else None."""
    ppr = paragraph._p.pPr  # numbering set on the paragraph itself, with or without a list style
    numbered = ppr is not None and ppr.numPr is not None
    if numbered and ppr.numPr.ilvl is not None and ppr.numPr.ilvl.val is not None:
        return int(ppr.numPr.ilvl.val)
    if "list" in style.lower():
        level = _LIST_LEVEL_RE.search(style)
        return int(level.group(1)) - 1 if level else 0
    return 0 if numbered else None


def _cell(text: str) -> str:
    return _SPACES_RE.sub(" ", text).strip()


def parse_docx(raw: bytes, where: str, limits: Limits = DEFAULT_LIMITS) -> Parsed:
    """The Markdown-like text and title ("" when the document has none) of a .docx file. Its bound is
    the archive's (`Limits.expanded_bytes`, checked before this is called: see `rag.ingest.formats`)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    core_title, items, style_name = _open(raw, where)
    body = _Body(style_name)
    for item in items:
        if isinstance(item, Paragraph):
            body.add_paragraph(item)
        elif isinstance(item, Table):
            body.add_table(item)
    text = "\n\n".join(body.blocks)
    if not text.strip():
        raise IngestError(where, "DOCX has no text")
    return Parsed(text=text + "\n", title=core_title or body.styled_title or body.first_heading)


def _open(raw: bytes, where: str) -> tuple[str, list[Any], _StyleNames]:
    """The core-properties title, the body's paragraphs and tables in order, and the style lookup;
    raises IngestError for a file python-docx cannot open."""
    from docx import Document as open_docx

    try:
        word = open_docx(io.BytesIO(raw))
        return (
            str(word.core_properties.title or "").strip(),
            list(word.iter_inner_content()),
            _StyleNames(word),
        )
    except Exception as exc:  # zipfile, lxml and python-docx raise their own types on damaged parts
        raise IngestError(where, f"unreadable DOCX: {type(exc).__name__}: {exc}") from None


class _Body:
    """The text blocks of a document body, built item by item, and the titles met on the way."""

    def __init__(self, style_name: _StyleNames) -> None:
        self._style_name = style_name
        self.blocks: list[str] = []
        self.styled_title = ""  # the first "Title"-styled paragraph
        self.first_heading = ""
        self._list_at = 0  # the number of blocks when the last one was a list (a table's rows are not)

    def add_paragraph(self, paragraph: Any) -> None:
        """A heading as a "#" line, a list paragraph as a "- " item, else the text; blank ones are dropped."""
        text = _SPACES_RE.sub(" ", paragraph.text).strip()
        if not text:
            return
        style = self._style_name(paragraph)
        heading = _HEADING_STYLE_RE.match(style)
        if style.lower() == "title":
            self.styled_title = self.styled_title or text
            self.blocks.append(f"# {text}")
        elif heading:
            self.first_heading = self.first_heading or text
            self.blocks.append(f"{'#' * min(6, int(heading.group(1)))} {text}")
        elif (level := _list_level(paragraph, style)) is not None:
            self._add_item(f"{'  ' * min(level, 8)}- {text}")
        else:
            self.blocks.append(text)

    def _add_item(self, line: str) -> None:
        # consecutive items form one block; a blank line only before the first
        if self.blocks and self._list_at == len(self.blocks):
            self.blocks[-1] += f"\n{line}"
        else:
            self.blocks.append(line)
        self._list_at = len(self.blocks)

    def add_table(self, table: Any) -> None:
        """The table as `table_text` writes it: under a header row (`_header_row`), each row as one
        "- Header: cell; ..." line; else "| a | b |" rows. Empty rows and tables are left out."""
        grid = [_row_cells(row) for row in table.rows]
        grid = [row for row in grid if any(text for text, _ in row)]
        head = int(len(grid) > 1 and _header_row(table))
        if text := table_text(grid, head):
            self.blocks.append(text)


def _row_cells(row: Any) -> list[Cell]:
    """A row's cells by grid column: a cell merged across columns once, with its span (python-docx
    repeats it per column); a cell merged down rows repeats in each."""
    cells = list(row.cells)
    out: list[Cell] = []
    first = 0  # where in `out` the cell of the current column run is
    for i, cell in enumerate(cells):
        if i and cell._tc is cells[i - 1]._tc:
            text, span = out[first]
            out[first] = (text, span + 1)
            out.append(("", 0))
        else:
            first = len(out)
            out.append((_cell(cell.text), 1))
    return out


def _header_row(table: Any) -> bool:
    """Whether the table's first row is its header: marked to repeat as one on every page
    (w:tblHeader), else unless the table's look turns header-row formatting off (w:tblLook, on by
    default in Word)."""
    from docx.oxml.ns import qn

    repeat = table.rows[0]._tr.xpath("./w:trPr/w:tblHeader")
    if repeat:
        return _on(repeat[0].get(qn("w:val")))
    look = table._tbl.xpath("./w:tblPr/w:tblLook")
    if not look:
        return True
    first_row = look[0].get(qn("w:firstRow"))
    if first_row is not None:
        return _on(first_row)
    bits = look[0].get(qn("w:val"))
    try:
        return bits is None or bool(int(bits, 16) & _LOOK_FIRST_ROW)
    except ValueError:
        return True


def _on(value: str | None) -> bool:
    """An OOXML on/off value (absent means on)."""
    return value is None or value.lower() not in ("0", "false", "off")
