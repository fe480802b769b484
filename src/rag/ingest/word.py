"""Word (.docx) with python-docx: paragraphs, headings, lists and tables as Markdown-like text.

Headings become '#' lines (so chunking sees the sections), list paragraphs "- " items, and
tables "| a | b |" rows with a header rule under the first row, in body order. The title is the
core-properties title, else the first "Title"-styled paragraph, else the first heading.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from rag.errors import IngestError

_HEADING_STYLE_RE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_SPACES_RE = re.compile(r"\s+")


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
    return _SPACES_RE.sub(" ", text).strip().replace("|", "\\|")


def parse_docx(raw: bytes, where: str) -> tuple[str, str]:
    """(title, text) of a .docx file; the title is "" when the document has none."""
    from docx import Document as open_docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        word = open_docx(io.BytesIO(raw))
        core_title = str(word.core_properties.title or "").strip()
        items = list(word.iter_inner_content())
        style_name = _StyleNames(word)
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise IngestError(where, f"unreadable DOCX: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # lxml and python-docx raise their own types on damaged parts
        raise IngestError(where, f"unreadable DOCX: {type(exc).__name__}: {exc}") from None
    blocks: list[str] = []
    styled_title = first_heading = ""
    for item in items:
        if isinstance(item, Paragraph):
            text = _SPACES_RE.sub(" ", item.text).strip()
            if not text:
                continue
            style = style_name(item)
            heading = _HEADING_STYLE_RE.match(style)
            if style.lower() == "title":
                styled_title = styled_title or text
                blocks.append(f"# {text}")
            elif heading:
                first_heading = first_heading or text
                blocks.append(f"{'#' * min(6, int(heading.group(1)))} {text}")
            elif (level := _list_level(item, style)) is not None:
                # consecutive items form one block; a blank line only before the first
                line = f"{'  ' * min(level, 8)}- {text}"
                if blocks and blocks[-1].lstrip().startswith("- "):
                    blocks[-1] += f"\n{line}"
                else:
                    blocks.append(line)
            else:
                blocks.append(text)
        elif isinstance(item, Table):
            rows = [[_cell(cell.text) for cell in row.cells] for row in item.rows]
            rows = [row for row in rows if any(row)]
            if not rows:
                continue
            lines = ["| " + " | ".join(rows[0]) + " |"]
            if len(rows) > 1:
                lines.append("|" + "---|" * len(rows[0]))
            lines.extend("| " + " | ".join(row) + " |" for row in rows[1:])
            blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if not text.strip():
        raise IngestError(where, "DOCX has no text")
    return core_title or styled_title or first_heading, text + "\n"
