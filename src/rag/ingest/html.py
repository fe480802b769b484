"""HTML: a page's text, with h1-h6 as '#' heading lines (so chunking sees its sections), list items
as "- " lines and table rows as Markdown rows ("| a | b |", a rule under a header row). Scripts,
styles and page furniture (navigation, footers) are left out. The title is <title>, else the
first <h1>; chunking finds sections and code in the text as it does for Markdown.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from rag.errors import IngestError
from rag.ingest.parsed import Parsed

_SPACES_RE = re.compile(r"\s+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Page furniture is not content: navigation menus and footers repeat on every page.
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "nav", "footer"})
_BLOCK = frozenset(
    "p div section article header footer main nav aside ul ol table thead tbody tr blockquote pre hr"
    " dl dt dd figure figcaption form address details summary".split()
)
_TABLE_PARTS = frozenset({"table", "tr", "td", "th"})
# what the start tag of a block element, list item or line break writes
_START_BREAKS = {**dict.fromkeys(_BLOCK - _TABLE_PARTS, "\n\n"), "li": "\n- ", "br": "\n"}


class _HtmlText(HTMLParser):
    """HTML to plain text: block elements become line breaks, h1-h6 become '#' heading lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.first_h1 = ""
        self._skip_depth = 0
        self._in_title = False
        self._heading: list[str] | None = None
        self._heading_level = 0
        self._cells = 0  # cells opened in the current table row
        self._header_row = False  # the current row has <th> cells
        self._rows = 0  # rows written in the current table

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip_depth += 1
        elif tag in _HEADINGS:
            self._heading, self._heading_level = [], int(tag[1])
        elif tag in _TABLE_PARTS:
            self._start_table_part(tag)
        elif tag in _START_BREAKS:
            self.parts.append(_START_BREAKS[tag])

    def _start_table_part(self, tag: str) -> None:
        if tag == "table":
            self._rows = 0
            self.parts.append("\n\n")
        elif tag == "tr":
            self._cells, self._header_row = 0, False
            self.parts.append("\n|")
        else:
            # table rows become Markdown rows ("| a | b |"), so cells stay apart and headers stay known
            self._cells += 1
            self._header_row = self._header_row or (tag == "th" and self._rows == 0)
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _HEADINGS:
            self._end_heading()
        elif tag in ("td", "th"):
            self.parts.append(" |")
        elif tag == "tr":
            if self._header_row and self._cells:
                self.parts.append("\n|" + "---|" * self._cells)
            self._rows += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def _end_heading(self) -> None:
        if self._heading is None:
            return  # a closing tag with no opening one
        heading = _SPACES_RE.sub(" ", "".join(self._heading)).strip()
        self._heading = None
        if heading:
            if self._heading_level == 1 and not self.first_h1:
                self.first_h1 = heading
            self.parts.append(f"\n\n{'#' * self._heading_level} {heading}\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._skip_depth:
            return
        elif self._heading is not None:
            self._heading.append(data)
        else:
            self.parts.append(_SPACES_RE.sub(" ", data))

    def text(self) -> str:
        lines = (line.strip() for line in "".join(self.parts).split("\n"))
        return _BLANK_LINES_RE.sub("\n\n", "\n".join(lines)).strip("\n") + "\n"


def parse_html(body: str, where: str) -> Parsed:
    """An HTML file's text and title (<title>, else the first <h1>); raises IngestError for markup it
    cannot parse or that holds no text."""
    parser = _HtmlText()
    try:
        parser.feed(body)
        # an unterminated tag at the end (truncated file) stays unparsed: drop it, never emit it as text
        truncated = parser.rawdata.lstrip().startswith("<")
        if not truncated:
            parser.close()
    except Exception as exc:  # html.parser is lenient; anything it still rejects is broken markup
        raise IngestError(where, f"unparseable HTML: {exc}") from None
    text = parser.text()
    title = _SPACES_RE.sub(" ", parser.title).strip() or parser.first_h1
    if not text.strip():
        raise IngestError(where, "HTML has no text" + (" (truncated markup)" if truncated else ""))
    return Parsed(text=text, title=title)
