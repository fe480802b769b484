"""Document formats: the table of them (`FORMATS`), the dispatch from a file to its format's parser,
and what every format shares: decoding, YAML front matter, document ids and the content hash.

A format is one module whose parser returns `Parsed` (`markdown.py`, `rst.py`, `html.py`, `pdf.py`,
`word.py`) plus one row here. A file's suffix picks its row, and a text format may claim files of
another suffix by their text: reST takes the `.txt` files that `looks_like_rst`. `read_document`
reads a suffix in no row as plain text; the indexer skips such files (`format_of` is None).

A text file's body is what follows any YAML front matter, newlines normalised to "\\n"; its parser
makes the document text of it (reST and Markdown keep it as written, HTML becomes text with '#'
heading lines). Front matter keys, read in any case: `title`, `updated` (YYYY-MM-DD), `url`, `doc_id`,
`access` or its alias `audience` (the groups that may read it, see `rag.access`; absent means the
ingest's default audience, none means everyone). A file's audience may narrow the ingest's `--access`,
never widen it: groups outside it, or an empty list under it, are an IngestError. Binary files
(PDF, DOCX) have no front matter and take the default audience. Without
these keys the title is the one the file gives itself (`<title>`, reST title, PDF or DOCX
metadata), else its first '#' heading, else the file name; the doc_id is the slug of the path
relative to the root.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import charset_normalizer
import yaml

from rag.access import group_names
from rag.errors import IngestError
from rag.ingest.chunking import find_headings
from rag.ingest.html import parse_html
from rag.ingest.markdown import parse_markdown
from rag.ingest.parsed import DEFAULT_LIMITS, Layout, Limits, Parsed
from rag.ingest.pdf import parse_pdf
from rag.ingest.rst import looks_like_rst, parse_rst
from rag.ingest.word import parse_docx
from rag.store.base import unstorable
from rag.types import Document

# Bump when chunking, a parser or the indexed terms change so the next ingest re-reads unchanged files
# (4: a capital letter standing alone, "R", "C", and a one-letter flag, "-C", became terms;
# 5: an HTML anchor without href, `<a name=...>` left open, no longer makes the text after it link text;
# 6: an HTML list of links that a paragraph ending in ":" introduces, or whose items are not mostly
# links, such as a short parameter list, is content, not a menu; 7: "pls" and "plz" are stop words, as
# "please" is; 8: an HTML block whose class or id names it navigation or the page footer is
# furniture, and a heading that titles a box ("Note" in `<div class="note">`) opens no section; 9: an
# `<aside>` of footnotes, docutils' `<aside class="footnote-list">`, is content, and so is a block
# named "navigation" or "footer" that holds a heading: a section whose id came from its title).
CHUNKER_VERSION = 9
# The default bound on an archive-based file (DOCX): one whose members expand to more than this is
# skipped unread; a 716 KB DOCX expanding to 200 MB took 2.5 GB and 102 s to parse (a text-heavy
# 1,000-page manual is ~30 MB). `Limits` carries the bounds in force (RAG_INGEST_MAX_EXPANDED_MB).
MAX_UNCOMPRESSED_BYTES = DEFAULT_LIMITS.expanded_bytes

# libyaml's safe loader when PyYAML was built with it (about 10x faster), else the pure-Python one
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
_SLUG_RE = re.compile(r"[^a-z0-9]+")

TextParser = Callable[[str, str], Parsed]
"""(the body after the front matter, where) -> Parsed; raises IngestError with the reason."""
BytesParser = Callable[[bytes, str, Limits], Parsed]
"""(the file's bytes, where, the bounds in force) -> Parsed; raises IngestError with the reason."""


def _never(text: str) -> bool:
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class TextFormat:
    """A format read from UTF-8 text, after its front matter."""

    kind: Literal["text"] = "text"
    name: str
    suffixes: frozenset[str]
    parse: TextParser
    # other rows' suffixes whose files this format takes when `sniff` recognises their text
    claims: frozenset[str] = frozenset()
    sniff: Callable[[str], bool] = _never
    # "---" lines are also markup (reST section adornment): a leading "---" block that is not a
    # YAML mapping is part of the body, not broken front matter
    dashes_are_markup: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BinaryFormat:
    """A format parsed from the file's bytes; such files have no front matter."""

    kind: Literal["binary"] = "binary"
    name: str
    suffixes: frozenset[str]
    parse: BytesParser
    # a zip archive (DOCX, and any other Office Open XML or OpenDocument format): its members'
    # uncompressed sizes are checked against `Limits.expanded_bytes` before it is parsed
    archive: bool = False


Format = TextFormat | BinaryFormat

_MARKDOWN = TextFormat(name="markdown", suffixes=frozenset({".md", ".markdown"}), parse=parse_markdown)
FORMATS: tuple[Format, ...] = (
    _MARKDOWN,
    TextFormat(name="text", suffixes=frozenset({".txt"}), parse=parse_markdown),
    TextFormat(
        name="rst",
        suffixes=frozenset({".rst", ".rest"}),
        parse=parse_rst,
        claims=frozenset({".txt"}),
        sniff=looks_like_rst,
        dashes_are_markup=True,
    ),
    TextFormat(name="html", suffixes=frozenset({".html", ".htm"}), parse=parse_html),
    BinaryFormat(name="pdf", suffixes=frozenset({".pdf"}), parse=parse_pdf),
    BinaryFormat(name="docx", suffixes=frozenset({".docx"}), parse=parse_docx, archive=True),
)
_BY_SUFFIX: dict[str, Format] = {suffix: row for row in FORMATS for suffix in row.suffixes}


def format_of(path: Path) -> Format | None:
    """The row of `path`'s suffix (in any case), or None when no format reads such files."""
    return _BY_SUFFIX.get(path.suffix.lower())


def _claimed(suffix: str, text: str) -> TextFormat | None:
    """The text format that claims files of `suffix` whose text it recognises, or None."""
    for row in FORMATS:
        if row.kind == "text" and suffix in row.claims and row.sniff(text):
            return row
    return None


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """A file read for ingest: its Document, and the Layout its chunks follow."""

    document: Document
    layout: Layout = Layout()
    # the text encoding it was read in, when not UTF-8 (detected; "" for UTF-8 and binary formats)
    encoding: str = ""


def parse_document(
    raw: bytes,
    path: Path,
    *,
    root: Path,
    content_hash: str = "",
    access: tuple[str, ...] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> Document:
    """Decode and parse one file into a Document; raises IngestError with the reason when it cannot.

    `access` is the audience of a file whose front matter has no `access` key (() = everyone)."""
    return read_document(
        raw, path, root=root, content_hash=content_hash, access=access, limits=limits
    ).document


def read_document(
    raw: bytes,
    path: Path,
    *,
    root: Path,
    content_hash: str = "",
    access: tuple[str, ...] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> ParsedFile:
    """One file -> Document and Layout, by its format (a suffix in no row: plain text); raises
    IngestError with the reason when the file cannot be read or would cost more than `limits`.
    `access` is the audience of a file whose front matter has no `access` key (() = everyone)."""
    where = str(path)
    row = format_of(path) or _MARKDOWN
    meta: dict[str, Any] = {}
    encoding = ""
    if row.kind == "binary":
        if row.archive:
            _check_archive(raw, where, limits.expanded_bytes)
        parsed = row.parse(raw, where, limits)
    else:
        meta, parsed, encoding = _read_text(row, raw, path.suffix.lower(), where)
    document = _document(parsed, meta, path, root=root, content_hash=content_hash, access=access)
    return ParsedFile(document, parsed.layout, encoding)


def _read_text(row: TextFormat, raw: bytes, suffix: str, where: str) -> tuple[dict[str, Any], Parsed, str]:
    """The front matter and the parse of a text file, by `row` or a format that claims the file, and
    the encoding it was read in when not UTF-8."""
    decoded, encoding = _decode_text(raw, where)
    row = _claimed(suffix, decoded) or row
    meta, body = _front_matter(decoded, where, dashes_are_markup=row.dashes_are_markup)
    parsed = row.parse(body, where)
    # checked after the parse: HTML reports a page without text itself ("HTML has no text"), however
    # blank its source; the other parsers return blank text as it is
    if not parsed.text.strip():
        raise IngestError(where, "empty file" if not decoded.strip() else "no text after front matter")
    return meta, parsed, encoding


def _document(
    parsed: Parsed,
    meta: dict[str, Any],
    path: Path,
    *,
    root: Path,
    content_hash: str,
    access: tuple[str, ...],
) -> Document:
    """The Document of a parsed file: front matter first, then what the file says, then its path."""
    where = str(path)
    title = str(meta.get("title") or "").strip() or parsed.title
    document = Document(
        doc_id=str(meta.get("doc_id") or "").strip() or derive_doc_id(path, root),
        title=title or _first_heading(parsed.text) or _file_title(path),
        text=parsed.text,
        source_path=str(path.resolve()),
        url=_link(str(meta.get("url") or "").strip()),
        updated_at=_parse_updated(meta.get("updated"), where),
        content_hash=content_hash,
        access=_parse_access(meta, access, where),
    )
    # a NUL (front matter "\0", PDF or DOCX metadata) would abort the write on PostgreSQL alone
    for name in ("doc_id", "title", "url", "text"):
        if why := unstorable(getattr(document, name)):
            raise IngestError(where, f"{'front matter ' if name in meta else ''}{name} {why}")
    return document


# Citations link to a document's url, so only web links and site-relative paths are kept
# ("javascript:" or "data:" urls in front matter would run in the browser of whoever opens them).
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
    """The file's audience: its front matter's, which must lie within `default` when that is set."""
    if "access" not in meta:
        return default
    try:
        groups = tuple(sorted(group_names(meta["access"], where="front matter 'access'")))
    except ValueError as exc:
        raise IngestError(where, str(exc)) from None
    wider = sorted(set(groups) - set(default)) if groups else ["(everyone)"]
    if default and wider:
        raise IngestError(
            where,
            f"front matter access {list(groups)} is wider than --access {','.join(default)}"
            f" ({', '.join(wider)} not in it); a file may only narrow its folder's audience",
        )
    return groups


# front matter key -> the key it stands for
_KEY_ALIASES = {"audience": "access"}


def _normalised_keys(meta: dict[Any, Any], where: str) -> dict[str, Any]:
    """Front matter with its keys lowercased and aliases resolved; two spellings of one key with
    different values are an IngestError (neither may silently win, least of all for `access`)."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in meta.items():
        name = str(key).strip().lower()
        name = _KEY_ALIASES.get(name, name)
        if name in out and out[name] != value:
            raise IngestError(where, f"front matter {spelled[name]!r} and {str(key)!r} disagree")
        out[name], spelled[name] = value, str(key)
    return out


def _check_archive(raw: bytes, where: str, budget: int) -> None:
    """Raise IngestError when the zip in `raw` declares members expanding past `budget` bytes.
    Reads only the central directory; a reader that later finds a member longer than declared
    fails on its CRC, so the declared sizes bound what is inflated."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            expanded = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError):
        return  # not a zip at all: the format's parser says how it is broken, in its words
    if expanded > budget:
        raise IngestError(
            where,
            f"expands to {expanded / 2**20:,.1f} MB uncompressed, over the"
            f" {budget / 2**20:,.1f} MB limit for archive-based files (RAG_INGEST_MAX_EXPANDED_MB)",
        )


# Byte-order marks of the encodings whose text holds NUL bytes (UTF-32 first: its LE mark starts
# with UTF-16's), with the codec that reads them.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode_text(raw: bytes, where: str) -> tuple[str, str]:
    """The text with "\\n" line ends, and its encoding when not UTF-8 ("" for UTF-8; a BOM dropped).
    Bytes that are not UTF-8 are read in the encoding charset-normalizer finds for them (a Latin-1 or
    Windows-1252 file from an older editor); raises IngestError for binary bytes or when no encoding
    reads them as text."""
    decoded, encoding = _decoded(raw, where)
    return decoded.replace("\r\n", "\n").replace("\r", "\n"), encoding


def _decoded(raw: bytes, where: str) -> tuple[str, str]:
    """`raw` as text, and its encoding when not UTF-8: a UTF-16/32 byte-order mark's, else UTF-8,
    else the detected one."""
    bom = next((name for mark, name in _BOMS if raw.startswith(mark)), "")
    if bom:
        try:
            return raw.decode(bom), bom
        except UnicodeDecodeError:
            raise IngestError(
                where, f"starts with a {bom.upper()} byte-order mark but is not valid {bom.upper()}"
            ) from None
    if b"\0" in raw:
        raise IngestError(where, "binary file (contains NUL bytes)")
    try:
        return raw.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        return _detected(raw, where, exc.start)


def _detected(raw: bytes, where: str, bad_at: int) -> tuple[str, str]:
    """`raw` decoded in its detected encoding, with that encoding's name: charset-normalizer's best
    reading (least chaos, then most coherence as a language). Where readings tie without a language (a
    short file) or Windows-1252 is among the best, Windows-1252 it is when it reads the bytes: the
    common legacy encoding of Western text files (and what the web reads "latin-1" as). UTF-16 and
    UTF-32 are never guessed: their text without a byte-order mark holds NUL bytes, refused above."""
    readings = [
        r for r in charset_normalizer.from_bytes(raw) if not r.encoding.startswith(("utf_16", "utf_32"))
    ]
    if not readings:
        raise IngestError(
            where, f"not valid UTF-8 (bad byte at offset {bad_at}) and no other text encoding reads it"
        )
    best = min((r.chaos, -r.coherence) for r in readings)
    tied = [r for r in readings if (r.chaos, -r.coherence) == best]
    if best[1] == 0.0 or any(r.encoding == "cp1252" for r in tied):
        try:
            return raw.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            pass
    return str(tied[0]), tied[0].encoding


def _front_matter(decoded: str, where: str, *, dashes_are_markup: bool) -> tuple[dict[str, Any], str]:
    """The YAML front matter (a mapping, else IngestError) and the body after it. Where "---" lines
    are also markup, a leading "---" block that is not a YAML mapping is no front matter: no
    metadata, the whole text is body."""
    match = _FRONT_MATTER_RE.match(decoded)
    if not match:
        return {}, decoded
    block, rest = match.group(1) or "", decoded[match.end() :]
    if dashes_are_markup:
        loaded = _load_yaml(block, where, strict=False)
        return (_normalised_keys(loaded, where), rest) if isinstance(loaded, dict) else ({}, decoded)
    loaded = _load_yaml(block, where, strict=True)
    if loaded is not None and not isinstance(loaded, dict):
        raise IngestError(where, "front matter is not a mapping")
    return _normalised_keys(loaded or {}, where), rest


def _load_yaml(block: str, where: str, *, strict: bool) -> Any:
    """The YAML value of a front matter block; broken YAML raises IngestError when `strict`, else is None."""
    try:
        return yaml.load(block, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        if not strict:
            return None
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IngestError(where, f"invalid YAML front matter: {reason}") from None


def _file_title(path: Path) -> str:
    return path.stem.replace("_", " ").replace("-", " ").strip() or path.name


def _first_heading(text: str) -> str:
    return next((h.text for h in find_headings(text) if h.text), "")
