"""reStructuredText: detection, and a docutils parse mapped back onto the source text.

The stored text stays the reST source, so citations highlight the characters the author wrote;
docutils supplies the structure: the document title, section titles (inline markup resolved,
"``SESSION_COOKIE_AGE``" -> "SESSION_COOKIE_AGE") and their nesting, and the literal, doctest
and code-directive blocks, located in the source by their line numbers and content. Sphinx-only
directives and roles (unknown to plain docutils) never fail a parse: their text stays as prose.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import accumulate
from typing import Any

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.transforms.frontmatter import DocInfo, DocTitle
from docutils.utils import SystemMessage, new_document

from rag.errors import IngestError
from rag.ingest.parsed import Layout, Parsed, Region
from rag.language.text import CODE_DIRECTIVES, code_spans, normalise

_ADORNMENT_CHARS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ADORNMENT_RE = re.compile(r"^([" + re.escape(_ADORNMENT_CHARS) + r"])\1{2,}[ \t]*$")
_DIRECTIVE_RE = re.compile(r"^\.\.\s+[A-Za-z][\w:+.-]*::", re.MULTILINE)
_TARGET_RE = re.compile(r"^\.\.\s+_[^:\n]+:", re.MULTILINE)
_ROLE_RE = re.compile(r"(?<![\w`]):[A-Za-z][\w:+.-]*:`[^`\n]+`")
_FIELD_RE = re.compile(r"^[ \t]*:[A-Za-z][\w .-]*:(?:[ \t]|$)", re.MULTILINE)
_INLINE_LITERAL_RE = re.compile(r"``[^`\n]+``")
_LITERAL_INTRO_RE = re.compile(r"::[ \t]*\n[ \t]*\n[ \t]+\S")
_DIRECTIVE_NAME_RE = re.compile(r"^\s*\.\.\s+([A-Za-z][\w:+.-]*)::")

_DOCUTILS_SETTINGS = {
    "report_level": 5,  # silent: Sphinx roles and directives are expected
    "halt_level": 5,
    "warning_stream": False,
    "file_insertion_enabled": False,  # never read other files (`.. include::`) while ingesting
    "raw_enabled": False,
    "input_encoding": "unicode",
    "doctitle_xform": True,
    "docinfo_xform": True,
    "sectsubtitle_xform": False,
    "syntax_highlight": "none",
}


@cache
def _parser() -> tuple[Parser, Any]:
    """One parser and one settings object for every file (building them is a third of a small
    file's parse time with `publish_doctree`)."""
    settings = get_default_settings(Parser)
    for name, value in _DOCUTILS_SETTINGS.items():
        setattr(settings, name, value)
    return Parser(), settings


def rst_signals(text: str) -> set[str]:
    """The kinds of reST markup found in `text`: heading, directive, target, role, field, literal."""
    found: set[str] = set()
    lines = text.split("\n")
    headings = 0
    for i in range(1, len(lines)):
        title = lines[i - 1].strip()
        match = _ADORNMENT_RE.match(lines[i])
        if match and title and not _ADORNMENT_RE.match(title) and len(lines[i].rstrip()) >= len(title):
            headings += 1
    if headings:
        found.add("heading")
    if headings >= 2:
        found.add("headings")
    for name, pattern in (
        ("directive", _DIRECTIVE_RE),
        ("target", _TARGET_RE),
        ("role", _ROLE_RE),
        ("field", _FIELD_RE),
        ("literal", _LITERAL_INTRO_RE),
        ("inline_literal", _INLINE_LITERAL_RE),
    ):
        if pattern.search(text):
            found.add(name)
    return found


def looks_like_rst(text: str) -> bool:
    """True for a plain-text file written in reStructuredText: two kinds of reST markup, or two
    underlined section titles. One kind alone (a stray "``x``" or ":note:") is not enough."""
    return len(rst_signals(text)) >= 2


_HEADER_LINE_RE = re.compile(r"^([A-Z][\w-]*):[ \t]+(\S.*)$")


def _header_title(lines: list[str]) -> str:
    """The `Title:` of an RFC 822-style header block opening the file (PEPs and similar), or ""."""
    for line in lines:
        match = _HEADER_LINE_RE.match(line)
        if not match:
            return ""
        if match.group(1).lower() == "title":
            return match.group(2).strip()
    return ""


def _line_starts(lines: list[str]) -> list[int]:
    """Offset of each line's first character in the text the lines were split from."""
    return [0, *accumulate(len(line) + 1 for line in lines[:-1])]


def _heading_lines(lines: list[str], underline: int) -> tuple[int, int] | None:
    """(first, last) 0-based lines of the heading whose underline is line `underline`, or None."""
    if not (0 < underline < len(lines)) or not _ADORNMENT_RE.match(lines[underline]):
        return None
    first = underline - 1
    if first > 0 and _ADORNMENT_RE.match(lines[first - 1]) and lines[first - 1][0] == lines[underline][0]:
        first -= 1
    return first, underline


def _find_heading(lines: list[str], hint: int, title: str) -> tuple[int, int] | None:
    """Locate a section title near docutils' line number `hint` (1-based line of its underline)."""
    key = normalise(title).replace(" ", "")[:12]
    if not hint:  # docutils gives no line for some titles (a promoted subtitle): the first match
        for underline in range(1, len(lines)):
            found = _heading_lines(lines, underline)
            if found and key in normalise(lines[underline - 1]).replace(" ", ""):
                return found
        return None
    target = hint - 1
    nearby = sorted(range(max(1, target - 3), min(len(lines), target + 4)), key=lambda n: abs(n - target))
    for underline in nearby:
        found = _heading_lines(lines, underline)
        if found and key in normalise(lines[underline - 1]).replace(" ", ""):
            return found
    return _heading_lines(lines, target)


def _block_range(lines: list[str], starts: list[int], node: nodes.Element) -> tuple[int, int] | None:
    """Source range of a literal/doctest block: its first and last content lines, searched from
    docutils' line number (which points at or just after the block's first line)."""
    content = node.astext().split("\n")
    first = next((line.strip() for line in content if line.strip()), "")
    last = next((line.strip() for line in reversed(content) if line.strip()), "")
    if not first:
        return None
    hint = (node.line or 1) - 1
    candidates = sorted(range(max(0, hint - 4), min(len(lines), hint + 4)), key=lambda n: abs(n - hint))
    i = next((n for n in candidates if lines[n].strip() == first), None)
    if i is None:
        return None
    j = _last_line(lines, i, len(content), last)
    start = starts[i] + len(lines[i]) - len(lines[i].lstrip())
    return start, starts[j] + len(lines[j].rstrip())


def _last_line(lines: list[str], first: int, count: int, last: str) -> int:
    """The line holding `last` among the `count` lines a block of `count` lines from line `first`
    spans (cut at the end of the text), searched upwards; `first` when none does."""
    j = min(first + count - 1, len(lines) - 1)
    while j > first and lines[j].strip() != last:
        j -= 1
    return j


def parse_rst(text: str, where: str) -> Parsed:
    """The source text as it is (already newline-normalised), its title, and its sections and code
    ranges from docutils; raises IngestError for reST docutils cannot parse."""
    tree = _doctree(text, where)
    lines = text.split("\n")
    starts = _line_starts(lines)
    headings = _headings(tree, lines, starts)
    title = str(tree.get("title") or "").strip() or _header_title(lines) or next((h[3] for h in headings), "")
    regions = _section_regions(text, sorted({h[0]: h for h in headings}.values()), title)
    # what docutils calls code and what the text-level detector finds, so downstream agrees
    code = _merge(_code_ranges(tree, lines, starts) + code_spans(text))
    return Parsed(text=text, title=title, layout=Layout(regions=tuple(regions), code=tuple(code)))


def _doctree(text: str, where: str) -> nodes.document:
    """The docutils tree of `text`, with the title and docinfo transforms applied."""
    try:
        parser, settings = _parser()
        tree = new_document(where, settings)
        parser.parse(text, tree)
        # only the transforms whose result is read here: the title, and docinfo fields
        tree.transformer.add_transform(DocTitle)
        tree.transformer.add_transform(DocInfo)
        tree.transformer.apply_transforms()
    except (SystemMessage, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise IngestError(where, f"unparseable reStructuredText: {exc}") from None
    return tree


Heading = tuple[int, int, float, str]
"""A section title in the source: (its first char, the char after it, its depth, its text)."""


def _headings(tree: nodes.document, lines: list[str], starts: list[int]) -> list[Heading]:
    """The document's and its sections' titles found in the source, in document order."""
    headings: list[Heading] = []
    for title_node in tree.findall(lambda n: isinstance(n, nodes.title | nodes.subtitle)):
        if not isinstance(title_node.parent, nodes.section | nodes.document):
            continue  # topic, sidebar, admonition titles are not sections
        text_of = title_node.astext().strip()
        found = _find_heading(lines, title_node.line or 0, text_of)
        if found is None:
            continue
        first, last = found
        headings.append((starts[first], starts[last] + len(lines[last]), _depth(title_node), text_of))
    return headings


def _depth(title_node: nodes.Element) -> float:
    """0 for the document title, 1 for a top section, and so on; a document subtitle was the lone
    section under the title: the sections after it are its children, so it sits at 0.5."""
    depth = 0.5 if isinstance(title_node, nodes.subtitle) else 0.0
    ancestor = title_node.parent
    while isinstance(ancestor, nodes.section):
        depth += 1
        ancestor = ancestor.parent
    return depth


def _section_regions(text: str, headings: list[Heading], title: str) -> list[Region]:
    """The text between headings (one per start, in source order), each with its section path;
    a top heading that repeats the title is in no path, and regions of markup only are dropped."""
    regions: list[Region] = []
    path: list[tuple[float, str]] = []
    title_key = normalise(title)
    start = 0
    for h_start, h_end, depth, name in headings:
        regions.append(Region(start=start, end=h_start, section=" > ".join(n for _, n in path)))
        while path and path[-1][0] >= depth:
            path.pop()
        if not (depth <= 1 and normalise(name) == title_key):
            path.append((depth, name))
        start = h_end
    regions.append(Region(start=start, end=len(text), section=" > ".join(n for _, n in path)))
    # a region of explicit markup only (".. setting:: NAME", ".. _label:", ".. contents::") has
    # nothing to read or cite; its names are in the section titles that follow
    return [r for r in regions if not _markup_only(text[r.start : r.end])]


def _code_ranges(tree: nodes.document, lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
    """Source ranges of the literal, doctest and code-directive blocks docutils found."""
    code: list[tuple[int, int]] = []
    for block in tree.findall(lambda n: isinstance(n, nodes.literal_block | nodes.doctest_block)):
        if not _is_code(block):
            continue
        found_range = _block_range(lines, starts, block)
        if found_range:
            code.append(found_range)
    return code


def _is_code(block: nodes.Element) -> bool:
    """False for the body of an unknown (Sphinx) directive that is not a code directive."""
    if not any(isinstance(a, nodes.system_message) for a in _ancestors(block)):
        return True
    directive = _DIRECTIVE_NAME_RE.match(block.astext())
    return directive is not None and directive.group(1).lower() in CODE_DIRECTIVES


_EXPLICIT_RE = re.compile(r"^\.\.(?:\s|$)")


def _markup_only(region: str) -> bool:
    """True when every line is blank, an explicit markup line ("..") or an option under one
    ("   :local:"); a directive with a body (".. note::" and its text) is content."""
    seen = False
    for line in region.split("\n"):
        if not line.strip():
            continue
        if _EXPLICIT_RE.match(line):
            seen = True
        elif not (seen and line[:1] in " \t" and line.lstrip().startswith(":")):
            return False
    return seen


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged
