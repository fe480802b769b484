"""Reading source files: bytes -> `Document` (Markdown, text, reST, HTML, PDF, DOCX) plus the
`Layout` chunking needs, or an `IngestError` with the reason.

A text document's text is its body after any YAML front matter, newlines normalised to "\\n";
reST (`.rst`, and `.txt` files that `looks_like_rst`) stays its source text, with sections and
code ranges from docutils (`rst.py`); HTML is converted to text with '#' heading lines so
chunking sees its sections; PDF text is kept per page (`pdf.py`); DOCX becomes Markdown-like
text (`word.py`). Front matter keys: `title`, `updated` (YYYY-MM-DD), `url`, `doc_id`, `access`
(the groups that may read it, see `rag.access`; absent means the ingest's default audience, none
means everyone; PDF and DOCX files, which have no front matter, take the default audience).
Without them the title comes from the document (first heading, `<title>`, reST title, PDF or
DOCX metadata) and only then from the file name; the doc_id is the slug of the path relative to
the root.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

from rag.access import group_names
from rag.errors import IngestError
from rag.ingest.chunking import Layout, find_headings
from rag.ingest.pdf import parse_pdf
from rag.ingest.rst import looks_like_rst, parse_rst
from rag.ingest.word import parse_docx
from rag.types import Document

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({".txt"})
RST_SUFFIXES = frozenset({".rst", ".rest"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
SUPPORTED_SUFFIXES = (
    MARKDOWN_SUFFIXES | TEXT_SUFFIXES | RST_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | DOCX_SUFFIXES
)
# Bump when chunking changes so the next ingest re-chunks unchanged files.
CHUNKER_VERSION = 2

# libyaml's safe loader when PyYAML was built with it (about 10x faster), else the pure-Python one
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
_SLUG_RE = re.compile(r"[^a-z0-9]+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
_SPACES_RE = re.compile(r"\s+")


class _HtmlText(HTMLParser):
    """HTML to plain text: block elements become line breaks, h1-h6 become '#' heading lines."""

    # Page furniture is not content: navigation menus and footers repeat on every page.
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "nav", "footer"})
    _BLOCK = frozenset(
        "p div section article header footer main nav aside ul ol table thead tbody tr blockquote pre hr"
        " dl dt dd figure figcaption form address details summary".split()
    )

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
        elif tag in self._SKIP:
            self._skip_depth += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._heading, self._heading_level = [], int(tag[1])
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "table":
            self._rows = 0
            self.parts.append("\n\n")
        elif tag == "tr":
            self._cells, self._header_row = 0, False
            self.parts.append("\n|")
        elif tag in ("td", "th"):
            # table rows become Markdown rows ("| a | b |"), so cells stay apart and headers stay known
            self._cells += 1
            self._header_row = self._header_row or (tag == "th" and self._rows == 0)
            self.parts.append(" ")
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456" and self._heading is not None:
            heading = _SPACES_RE.sub(" ", "".join(self._heading)).strip()
            self._heading = None
            if heading:
                if self._heading_level == 1 and not self.first_h1:
                    self.first_h1 = heading
                self.parts.append(f"\n\n{'#' * self._heading_level} {heading}\n\n")
        elif tag in ("td", "th"):
            self.parts.append(" |")
        elif tag == "tr":
            if self._header_row and self._cells:
                self.parts.append("\n|" + "---|" * self._cells)
            self._rows += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

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


# Citations link to a document's url, so only web links and site-relative paths are kept
# ("javascript:" or "data:" urls in front matter would run in a reader's browser).
_LINK_RE = re.compile(r"^(?:https?://|/(?!/))", re.IGNORECASE)


def _link(url: str) -> str:
    return url if _LINK_RE.match(url) else ""


def slugify(value: str) -> str:
    return _SLUG_RE.sub("-", value.lower()).strip("-")


def derive_doc_id(path: Path, root: Path, *, keep_suffix: bool = False) -> str:
    """Stable id: the slugified path relative to the ingest root, without extension ("a/B.md" -> "a-b"),
    or with it when `keep_suffix` ("a/B.pdf" -> "a-b-pdf", for a name two files share)."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        relative = Path(path.name)
    shown = relative if keep_suffix else relative.with_suffix("")
    return slugify(str(shown)) or slugify(path.name) or "document"


def content_hash(raw: bytes, *, min_tokens: int, max_tokens: int, access: tuple[str, ...] = ()) -> str:
    """sha256 over the raw file bytes, the chunker parameters and the ingest's default audience:
    changing any of them re-ingests the file."""
    digest = hashlib.sha256(raw)
    digest.update(f"\0chunker={CHUNKER_VERSION}:{min_tokens}:{max_tokens}".encode())
    if access:
        digest.update(f"\0access={','.join(sorted(access))}".encode())
    return digest.hexdigest()


def _parse_updated(value: object, where: str) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise IngestError(where, f"front matter 'updated' is not YYYY-MM-DD: {value!r}") from None


def _parse_access(meta: dict[str, Any], default: tuple[str, ...], where: str) -> tuple[str, ...]:
    if "access" not in meta:
        return default
    try:
        return tuple(sorted(group_names(meta["access"], where="front matter 'access'")))
    except ValueError as exc:
        raise IngestError(where, str(exc)) from None


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed file: the document, and the layout its chunks follow (None: from the text)."""

    document: Document
    layout: Layout | None = None


def parse_document(
    raw: bytes, path: Path, *, root: Path, content_hash: str = "", access: tuple[str, ...] = ()
) -> Document:
    """Decode and parse one file into a Document; raises IngestError with the reason when it cannot.

    `access` is the audience of a file whose front matter has no `access` key (() = everyone)."""
    return read_document(raw, path, root=root, content_hash=content_hash, access=access).document


def _file_title(path: Path) -> str:
    return path.stem.replace("_", " ").replace("-", " ").strip() or path.name


def read_document(
    raw: bytes, path: Path, *, root: Path, content_hash: str = "", access: tuple[str, ...] = ()
) -> Parsed:
    """One file -> Document and Layout, by suffix (`.txt` that is reST is read as reST);
    raises IngestError with the reason when the file cannot be read. `access` is the audience of
    a file whose front matter has no `access` key (() = everyone)."""
    where = str(path)
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES or suffix in DOCX_SUFFIXES:
        return _read_binary(raw, path, root=root, content_hash=content_hash, access=access)
    decoded = _decode_text(raw, where)
    is_rst = suffix in RST_SUFFIXES or (suffix in TEXT_SUFFIXES and looks_like_rst(decoded))
    meta, body = _front_matter(decoded, where, is_rst=is_rst)
    html_title = ""
    layout = None
    if suffix in HTML_SUFFIXES:
        body, html_title = _html_text(body, where)
    if not body.strip():
        raise IngestError(where, "empty file" if not decoded.strip() else "no text after front matter")
    title = str(meta.get("title") or "").strip() or html_title
    if is_rst:
        rst = parse_rst(body, where)
        layout = rst.layout
        title = title or rst.title
    if not title:
        title = _first_heading(body) or _file_title(path)
    doc_id = str(meta.get("doc_id") or "").strip() or derive_doc_id(path, root)
    return Parsed(
        Document(
            doc_id=doc_id,
            title=title,
            text=body,
            source_path=str(path.resolve()),
            url=_link(str(meta.get("url") or "").strip()),
            updated_at=_parse_updated(meta.get("updated"), where),
            content_hash=content_hash,
            access=_parse_access(meta, access, where),
        ),
        layout,
    )


def _read_binary(
    raw: bytes, path: Path, *, root: Path, content_hash: str, access: tuple[str, ...] = ()
) -> Parsed:
    """A PDF (with its page layout) or a Word file; titled by its metadata, first heading or file name.
    Such files have no front matter: `access` is the ingest's default audience."""
    where = str(path)
    layout: Layout | None = None
    if path.suffix.lower() in PDF_SUFFIXES:
        title, body, layout = parse_pdf(raw, where)
    else:
        title, body = parse_docx(raw, where)
    document = Document(
        doc_id=derive_doc_id(path, root),
        title=title or _first_heading(body) or _file_title(path),
        text=body,
        source_path=str(path.resolve()),
        content_hash=content_hash,
        access=access,
    )
    return Parsed(document, layout)


def _decode_text(raw: bytes, where: str) -> str:
    """UTF-8 text (a BOM dropped) with "\\n" line ends; raises IngestError for binary or non-UTF-8 bytes."""
    if b"\0" in raw:
        raise IngestError(where, "binary file (contains NUL bytes)")
    try:
        decoded = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(where, f"not valid UTF-8 (bad byte at offset {exc.start})") from None
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


def _front_matter(decoded: str, where: str, *, is_rst: bool) -> tuple[dict[str, Any], str]:
    """The YAML front matter (a mapping, else IngestError) and the body after it. In reST a leading
    "---" block that is not a YAML mapping is section adornment: no metadata, the whole text is body."""
    match = _FRONT_MATTER_RE.match(decoded)
    if not match:
        return {}, decoded
    try:
        loaded = yaml.load(match.group(1) or "", Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        if not is_rst:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise IngestError(where, f"invalid YAML front matter: {reason}") from None
        loaded = None  # in reST, "---" lines are also section adornments
    if loaded is not None and not isinstance(loaded, dict) and not is_rst:
        raise IngestError(where, "front matter is not a mapping")
    if isinstance(loaded, dict) or not is_rst:
        return loaded or {}, decoded[match.end() :]
    return {}, decoded


def _html_text(body: str, where: str) -> tuple[str, str]:
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
    return text, title


def _first_heading(text: str) -> str:
    return next((h.text for h in find_headings(text) if h.text), "")
