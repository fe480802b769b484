"""A block's layout as the offline generator reads it: prose sentences and the line they sit under.

Code (fenced, indented after `::`, code directives), doctests, shell sessions, template lines and
reST/Markdown markup (directives, options, underlines, admonition headers) are context: they are
never returned as sentences. Headings, title lines and definition terms are returned as the
`label` of the sentences below them; a chunk whose text starts below its heading takes the last
part of its section path as the label. Detection reads the text alone (Markdown, reST or plain).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from rag.language.lexicon import (
    ADMONITION_RE,
    BULLET_RE,
    CODE_DIRECTIVES,
    CODE_LINE_RE,
    CUT_DIRECTIVE_RE,
    DIRECTIVE_RE,
    DOCTEST_RE,
    ENTRY_DIRECTIVES,
    FENCE_RE,
    FIELD_RE,
    HEADING_RE,
    OPTION_RE,
    PROSE_DIRECTIVES,
    SHELL_RE,
    STOP_WORDS,
    TAB_TITLE_RE,
    TABLE_BORDER_RE,
    TABLE_RULE_RE,
    TEMPLATE_RE,
    UNDERLINE_RE,
)
from rag.language.text import sentence_spans, terms

LineKind = Literal["prose", "code", "markup", "heading", "blank"]

# Shorter sentences without end punctuation are headings or labels, never answers (list items and
# field lines are content: "Books and magazines: 14 days", "Default: 30").
MIN_UNPUNCTUATED_TERMS = 8
# A definition-list term is a short line: longer lines, or lines with a sentence end inside, are
# the first line of a paragraph whose indentation the chunker cut off.
MAX_TERM_WORDS = 8
# A sentence ending in a colon introduces what follows ("Send TTIN to the master process:"): it
# is an answer only with at least this many terms of its own.
MIN_INTRO_TERMS = 4
_END_PUNCT = ".!?"
_SPACE_RE = re.compile(r"\s+")
_HAS_LETTER_OR_DIGIT_RE = re.compile(r"[^\W_]")
_MARKUP_CHARS_RE = re.compile(r"[`*#\"]+|^\s*=+|(?<!\w)_+|_+(?!\w)")
_INNER_END_RE = re.compile(r"[.!?]\s+\S")
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")
# a table row stated with its column headers, as HTML and DOCX tables are ingested ("- Role: Engineer;
# Memory: 32 GB"): two or more "header: cell" pairs on one list line
_KEYED_ROW_RE = re.compile(r"- [^:;\n]{1,80}: [^\n]*?; [^:;\n]{1,80}: ")
# one "header: cell" pair of such a row
_ROW_PAIR_RE = re.compile(r"([^:;\n]{1,80}): \S")
# A reST list table's directive line, and its header-rows option.
_LIST_TABLE_RE = re.compile(r"^(\s*)\.\.\s+list-table::")
_HEADER_ROWS_RE = re.compile(r"^:header-rows:\s*(\d+)")
# A reST simple table's border: two or more runs of "=" separated by spaces.
_SIMPLE_BORDER_RE = re.compile(r"^\s*=+(?: +=+)+\s*$")
# A command's option entry as help output and option lists lay it out: the option, its aliases and
# value name at the start of a line, then two spaces or more before its description, or nothing more
# on that line ("-l, --showlocals      Show locals in tracebacks", "--tb=style    Traceback print
# mode"). Each entry is a statement of its own, however its lines end.
_OPTION = r"--?[A-Za-z0-9?]"
_OPTION_ENTRY_RE = re.compile(
    rf"[ \t]*{_OPTION}\S*(?: --?[A-Za-z0-9]\S*| [A-Za-z<{{\[]\S*){{0,2}}(?: {{2,}}\S|[ \t]*$)", re.M
)
# An option entry's sentence, its layout collapsed ("--band=BAND Log on BAND only.").
_OPTION_START_RE = re.compile(_OPTION)
# A list item's whole text when it is one inline code literal ("``LOG_LEVEL``", "`--workers`").
_LONE_LITERAL_RE = re.compile(r"(?::[\w:-]+:)?``([^`]+)``|(?::[\w:-]+:)?`([^`]+)`")


@dataclass(frozen=True, slots=True, kw_only=True)
class Prose:
    """One answer-worthy sentence of a block, whitespace collapsed.

    `label` is the heading, title line or definition term it sits under ("" when none);
    `field` is the field name of a field line ("Default" for "Default: 30"; "" for other
    sentences), whose subject is its whole `entry`: the prose under the same label in this block.
    `unit` numbers the paragraph or list item the sentence belongs to, in the block: sentences of
    one unit continue each other, neighbouring list items are separate statements."""

    text: str
    label: str
    field: str = ""
    entry: str = ""
    unit: int = 0


@dataclass(slots=True)
class _Scan:
    """Line-classifier state: an open fence, or an indented block and what its lines are."""

    fence: str = ""
    block_indent: int = -1
    block_kind: LineKind = "prose"
    doctest: bool = False
    options: bool = False  # right after a directive line, before a blank line: its options


@lru_cache(maxsize=20_000)
def prose(text: str, section: str = "", lead: str = "") -> tuple[Prose, ...]:
    """The answer-worthy sentences of `text`, in order, each with its label (see the module doc).
    `lead` is the label in force where the text starts when the caller knows it (the label open at
    the end of the chunk before); else the last part of `section`. Cached: the same chunks are read
    question after question."""
    lines = _simple_tables(_list_tables(text.split("\n")))
    kinds = classify(lines)
    labels = _labels(lines, kinds, lead or _leaf(section))
    out: list[Prose] = []
    units = 0
    for label, paragraph in _paragraphs(lines, kinds, labels):
        entry = " ".join(paragraph)
        found: list[Prose] = []
        for sentence, starts_unit in _sentences("\n".join(paragraph)):
            units += starts_unit or not (out or found)
            found.append(
                Prose(text=sentence, label=label, field=field_name(sentence), entry=entry, unit=units)
            )
        out.extend(_by_entry(found) if _listing(paragraph) else found)
        units += 1
    return tuple(out)


def _listing(paragraph: Sequence[str]) -> bool:
    """The paragraph is a command's help listing: two option entries or more (`_OPTION_ENTRY_RE`)."""
    return sum(1 for line in paragraph if _OPTION_ENTRY_RE.match(line)) >= 2


def _by_entry(found: Sequence[Prose]) -> list[Prose]:
    """A help listing's sentences, each with its own option's text as its entry: a field line
    ("Default: all.") is about the option it closes, not every option of the listing."""
    groups: list[list[Prose]] = []
    for p in found:
        if not groups or _OPTION_START_RE.match(p.text):
            groups.append([])
        groups[-1].append(p)
    return [replace(p, entry=" ".join(q.text for q in group)) for group in groups for p in group]


def _simple_tables(lines: list[str]) -> list[str]:
    """reST simple tables rewritten as Markdown rows, which the sentence reader renders as
    statements: the rows next to a column border ("=====  ======") are cut at its columns ("| a | b
    |"), a row with an empty first cell continues the row above, and a border between rows (the
    header's underline) becomes a rule row. Other lines, and borders at a table's edge, are kept."""
    borders = [i for i, line in enumerate(lines) if _SIMPLE_BORDER_RE.match(line)]
    if not borders:
        return lines
    out = list(lines)
    for b in borders:
        starts = [m.start() for m in re.finditer(r"=+", lines[b])]
        if _is_row(lines, b - 1, borders) and _is_row(lines, b + 1, borders):
            out[b] = "|" + " -- |" * len(starts)
        for i in _rows_beside(lines, b, borders):
            out[i] = _simple_row(lines[i], starts)
    return _join_continued(out)


def _is_row(lines: Sequence[str], i: int, borders: Sequence[int]) -> bool:
    """Line `i` exists, is not blank and is no border: a row of a simple table."""
    return 0 <= i < len(lines) and bool(lines[i].strip()) and i not in borders


def _rows_beside(lines: Sequence[str], b: int, borders: Sequence[int]) -> list[int]:
    """The rows directly above border `b` (back to a blank line or another border), in order, then
    those below it (the body under a top border or the header's underline)."""
    above: list[int] = []
    i = b - 1
    while _is_row(lines, i, borders):
        above.append(i)
        i -= 1
    below: list[int] = []
    i = b + 1
    while _is_row(lines, i, borders):
        below.append(i)
        i += 1
    return [*reversed(above), *below]


def _list_tables(lines: list[str]) -> list[str]:
    """reST list tables (".. list-table::" with "* - a" / "  - b" items) rewritten as Markdown rows,
    a rule row after its ":header-rows:"; the directive and its options become blank lines."""
    if not any(_LIST_TABLE_RE.match(line) for line in lines):
        return lines
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _LIST_TABLE_RE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        i, rows, header_rows = _list_table(lines, i + 1, len(match.group(1)))
        for n, cells in enumerate(rows):
            out.append("| " + " | ".join(cells) + " |")
            if n + 1 == header_rows:
                out.append("|" + " -- |" * len(cells))
        out.append("")
    return out


def _list_table(lines: Sequence[str], i: int, indent: int) -> tuple[int, list[list[str]], int]:
    """The list table whose body starts at line `i`, under a directive indented `indent`: (the line
    after it, its rows of cells, its header-rows count)."""
    header_rows = 0
    rows: list[list[str]] = []
    while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
        header_rows = _list_table_line(lines[i].strip(), rows, header_rows)
        i += 1
    return i, rows, header_rows


def _list_table_line(line: str, rows: list[list[str]], header_rows: int) -> int:
    """One stripped line of a list table's body added to `rows`: a new row ("* - a"), a further cell
    ("- b") or a cell's continuation; the header-rows count, `header_rows` unless the line sets it."""
    option = _HEADER_ROWS_RE.match(line)
    if option:
        return int(option.group(1))
    if line.startswith("* -") or line.startswith("*   -"):
        rows.append([line[1:].strip()[1:].strip()])
    elif line.startswith("- ") and rows:
        rows[-1].append(line[2:].strip())
    elif line and rows and not line.startswith(":"):
        rows[-1][-1] = f"{rows[-1][-1]} {line}".strip()
    return header_rows


def _simple_row(line: str, starts: list[int]) -> str:
    """A simple-table line cut at the border's column starts, as a Markdown row; the line unchanged
    when text runs across a column gap (a line the chunker cut mid-row is not aligned)."""
    if any(0 < at <= len(line) and not line[at - 1].isspace() for at in starts[1:]):
        return line
    bounds = [*starts[1:], max(len(line), starts[-1])]
    cells = [line[a:b].strip() for a, b in zip([0, *starts[1:]], bounds, strict=True)]
    cells[-1] = line[starts[-1] :].strip() if len(line) > starts[-1] else cells[-1]
    return "| " + " | ".join(cells) + " |"


def _join_continued(lines: list[str]) -> list[str]:
    """A Markdown row whose first cell is empty continues the row above it: its cells are appended."""
    out: list[str] = []
    for line in lines:
        cells = _table_cells(line)
        prev = _table_cells(out[-1]) if out else None
        if (
            cells
            and prev
            and not cells[0]
            and len(cells) == len(prev)
            and not TABLE_RULE_RE.fullmatch(prev[-1])
        ):
            merged = [f"{a} {b}".strip() for a, b in zip(prev, cells, strict=True)]
            out[-1] = "| " + " | ".join(merged) + " |"
        else:
            out.append(line)
    return out


def classify(lines: Sequence[str]) -> list[LineKind]:
    """Each line's kind: prose, code (incl. doctests, shell and template lines), markup, heading, blank."""
    kinds: list[LineKind] = []
    scan = _Scan()
    for i, line in enumerate(lines):
        kind = _classify_line(_restored(line) if i == 0 else line, scan)
        if kind == "markup" and UNDERLINE_RE.match(line) and i > 0 and kinds[i - 1] == "prose":
            kinds[i - 1] = "heading"  # a reST or setext title: the line above its underline
        kinds.append(kind)
    return _mark_terms(lines, kinds)


def _restored(first: str) -> str:
    """A text's first line with the ".." of a directive marker the chunker cut off put back."""
    return f".. {first.lstrip()}" if CUT_DIRECTIVE_RE.match(first) else first


def entry_name(line: str) -> str:
    """The name an entry directive describes (".. py:data:: MAX_SIZE" -> "MAX_SIZE"), else ""."""
    match = DIRECTIVE_RE.match(line)
    name = (match.group(1) or "").lower() if match else ""
    if not name or not (name in ENTRY_DIRECTIVES or ":" in name):
        return ""
    return _MARKUP_CHARS_RE.sub("", line.split("::", 1)[1]).strip()


def _classify_line(line: str, scan: _Scan) -> LineKind:
    stripped = line.strip()
    if scan.fence:
        if stripped.startswith(scan.fence):
            scan.fence = ""
        return "code"
    fence = FENCE_RE.match(line)
    if fence:
        scan.fence = fence.group(0).strip()[:3]
        return "code"
    if not stripped:
        scan.doctest = False
        scan.options = False
        return "blank"
    indent = len(line) - len(line.lstrip())
    if scan.block_indent >= 0:
        if indent > scan.block_indent and scan.block_kind != "prose":
            return scan.block_kind
        if indent <= scan.block_indent:
            scan.block_indent = -1
    return _line_kind(line, stripped, indent, scan)


def _line_kind(line: str, stripped: str, indent: int, scan: _Scan) -> LineKind:
    if DIRECTIVE_RE.match(line):
        return _directive_kind(line, indent, scan)
    code = _code_kind(line, stripped, scan)
    if code is not None:
        return code
    marked = _marked_kind(line, stripped, scan)
    if marked is not None:
        return marked
    if stripped.endswith("::"):
        scan.block_indent, scan.block_kind = indent, "code"  # reST: a literal block follows
    return "prose"


def _marked_kind(line: str, stripped: str, scan: _Scan) -> LineKind | None:
    """ "markup" for an underline, a table border, a directive's option or an admonition header,
    "heading" for a heading or tab title, "prose" for a field list's field; else None."""
    if UNDERLINE_RE.match(line) or table_border(line):
        return "markup"
    if OPTION_RE.match(line):
        # a directive's option (":alt: a screenshot" under ".. image::"), or a bare ":orphan:";
        # elsewhere a field list's field (":Default: 30", ":param size: ..."): a field line
        return "markup" if scan.options or not field_name(stripped) else "prose"
    if ADMONITION_RE.match(line):
        return "markup"
    if HEADING_RE.match(line) or TAB_TITLE_RE.match(line):
        return "heading"
    return None


def table_border(line: str) -> bool:
    """A reST simple or grid table border: runs of "=", "+" and "-" with room for two columns of at
    least three characters each (a "+" alone may sit between runs). Linear in the line's length."""
    if not TABLE_BORDER_RE.fullmatch(line):
        return False
    return sum(len(run) // 3 for run in line.split() if len(run) >= 3) >= 2


def _directive_kind(line: str, indent: int, scan: _Scan) -> LineKind:
    """A directive line: a named entry's heading, or markup opening a code, prose or markup block."""
    directive = DIRECTIVE_RE.match(line)
    name = (directive.group(1) or "").lower() if directive else ""
    scan.block_indent = indent
    scan.block_kind = "markup"
    # an entry's options (":type: int", ":default: 8") are its own fields, read as field lines
    scan.options = not entry_name(line)
    if not scan.options:
        scan.block_kind = "prose"  # the description of the named entry
        return "heading"
    if name in CODE_DIRECTIVES or name in PROSE_DIRECTIVES:
        scan.block_kind = "code" if name in CODE_DIRECTIVES else "prose"
    return "markup"


def _code_kind(line: str, stripped: str, scan: _Scan) -> LineKind | None:
    """ "code" for a doctest (and its output), a shell prompt, a template or a code-like line, else None."""
    if DOCTEST_RE.match(line) or (scan.doctest and not stripped.startswith(("-", "*"))):
        scan.doctest = True
        return "code"
    if SHELL_RE.match(line) or TEMPLATE_RE.search(line) or CODE_LINE_RE.match(line):
        return "code"
    return None


def _mark_terms(lines: Sequence[str], kinds: list[LineKind]) -> list[LineKind]:
    """A short unpunctuated prose line after a blank, directly above a more indented prose line, is
    a definition-list term: a heading for its definition; so is a list item that is only a name in
    code, described below it."""
    for i in range(len(lines) - 1):
        if _definition_term(lines, kinds, i):
            kinds[i] = "heading"
    for i, line in enumerate(lines):
        if kinds[i] == "prose" and bullet_term(line) and _described_below(lines, kinds, i):
            kinds[i] = "heading"
    return kinds


def _definition_term(lines: Sequence[str], kinds: Sequence[LineKind], i: int) -> bool:
    """Line `i` is a term-like prose line after a blank (or first), above a more indented prose line."""
    if kinds[i] != "prose" or kinds[i + 1] != "prose" or (i > 0 and kinds[i - 1] != "blank"):
        return False
    here, below = lines[i], lines[i + 1]
    deeper = len(below) - len(below.lstrip()) > len(here) - len(here.lstrip())
    return deeper and _term_like(here)


def bullet_term(line: str) -> str:
    """The name a list item consists of, when it is only a name in code ("* ``LOG_LEVEL``",
    "- `--workers`"): in a reference list such an item names the entry described below it."""
    bullet = BULLET_RE.match(line)
    if bullet is None:
        return ""
    rest = line[bullet.end() :].strip()
    literal = _LONE_LITERAL_RE.fullmatch(rest)
    return (literal.group(1) or literal.group(2)).strip() if literal else ""


def _described_below(lines: Sequence[str], kinds: Sequence[LineKind], i: int) -> bool:
    """The next non-blank line after line `i` is prose indented deeper than the line's text."""
    bullet = BULLET_RE.match(lines[i])
    text_indent = bullet.end() if bullet else 0
    for j in range(i + 1, len(lines)):
        if kinds[j] == "blank":
            continue
        below = lines[j]
        return kinds[j] == "prose" and len(below) - len(below.lstrip()) >= text_indent
    return False


def _term_like(line: str) -> bool:
    """Short, unpunctuated, not a list item, not ending in a function word ("Defaults to", "If it":
    a sentence the chunker cut mid-line): a definition-list term rather than a cut paragraph line."""
    words = line.split()
    return (
        line.rstrip()[-1:] not in ".!?:,"
        and bool(words)
        and words[-1].lower() not in STOP_WORDS
        and not BULLET_RE.match(line)
        and len(line.split()) <= MAX_TERM_WORDS
        and not _INNER_END_RE.search(line)
    )


def _labels(lines: Sequence[str], kinds: Sequence[LineKind], first: str) -> list[str]:
    """The label in force at each line: the last heading above it, else `first`. An entry
    directive's name labels the lines indented below it; the label before it resumes after them."""
    labels: list[str] = []
    current = first
    scopes: list[tuple[int, str]] = []  # open entries: (directive indent, the label outside it)
    for i, (line, kind) in enumerate(zip(lines, kinds, strict=True)):
        indent = len(line) - len(line.lstrip())
        while line.strip() and scopes and indent <= scopes[-1][0]:
            current = scopes.pop()[1]
        if kind == "heading":
            name = entry_name(_restored(line) if i == 0 else line) or bullet_term(line)
            if name:
                scopes.append((indent, current))
                current = name
            else:
                scopes.clear()
                current = _MARKUP_CHARS_RE.sub("", line).strip()
        labels.append(current)
    return labels


def closing_label(text: str, section: str = "", lead: str = "") -> str:
    """The label in force at the end of `text`: the label where the text that follows it starts."""
    lines = text.split("\n")
    labels = _labels(lines, classify(lines), lead or _leaf(section))
    return labels[-1] if labels else lead or _leaf(section)


def _paragraphs(
    lines: Sequence[str], kinds: Sequence[LineKind], labels: Sequence[str]
) -> list[tuple[str, list[str]]]:
    """Runs of prose lines under one label; any other line closes the run (a blank line is kept
    inside it, so list items and paragraphs still split into sentences)."""
    out: list[tuple[str, list[str]]] = []
    run: list[str] = []
    label = ""
    for line, kind, at in zip(lines, kinds, labels, strict=True):
        if kind == "prose" and (not run or at == label):
            run.append(line)
            label = at
            continue
        if kind == "blank" and run:
            run.append("")
            continue
        if _has_text(run):
            out.append((label, run))
        run = [line] if kind == "prose" else []
        label = at
    if _has_text(run):
        out.append((label, run))
    return out


def _has_text(run: Sequence[str]) -> bool:
    return any(r.strip() for r in run)


def _sentences(text: str) -> list[tuple[str, bool]]:
    """The answer-worthy sentences of a prose run, each with whether it starts a new paragraph,
    list item or table row: bullets stripped, whitespace collapsed, table rows rendered as
    statements with their column headers, questions and labels skipped."""
    out: list[tuple[str, bool]] = []
    spans = _option_entries(text, _whole_rows(text, sentence_spans(text)))
    header: list[str] | None = None
    new_unit = True
    for i, (start, end) in enumerate(spans):
        raw = text[start:end]
        gap = text[spans[i - 1][1] : start] if i else ""
        listed = bool(BULLET_RE.match(raw) or _OPTION_ENTRY_RE.match(raw))  # an item of a list
        new_unit = new_unit or bool(_BLANK_LINE_RE.search(gap)) or listed
        cells = _table_cells(raw)
        if cells is not None:
            following = _table_cells(text[spans[i + 1][0] : spans[i + 1][1]]) if i + 1 < len(spans) else None
            header, row = _table_step(cells, following, header)
            if row:
                out.append((row, True))
                new_unit = False
            continue
        header = None
        sentence = _SPACE_RE.sub(" ", BULLET_RE.sub("", raw)).strip()
        if _answer_worthy(sentence, listed=listed, continued=not new_unit):
            out.append((sentence, new_unit or bool(field_name(sentence))))  # a field is an item
            new_unit = False
    return out


def _whole_rows(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` with a table row that a sentence end inside a cell cut ("| a | Keeps it open. |",
    "- Name: a; Meaning: Keeps it open.") put back together: a span continuing a row's line joins
    the row."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if (
            out
            and "\n" not in text[out[-1][1] : start]
            and (text[out[-1][0]] == "|" or _KEYED_ROW_RE.match(text, out[-1][0]))
        ):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _option_entries(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` cut where a line inside one starts an option entry (`_OPTION_ENTRY_RE`): a help
    listing's lines end without a full stop, and its entries would otherwise run together."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        cut = start
        at = text.find("\n", start, end)
        while at != -1:
            if _OPTION_ENTRY_RE.match(text, at + 1) and text[cut:at].strip():
                out.append((cut, at))
                cut = at + 1
            at = text.find("\n", at + 1, end)
        out.append((cut, end))
    return out


def _answer_worthy(sentence: str, *, listed: bool, continued: bool = False) -> bool:
    """A sentence may answer unless it is a question, or short and unpunctuated where it opens a
    paragraph (a label); one continuing its paragraph ("Full path. Default is /var/run/x.pid") is
    content whatever its end."""
    if not sentence or sentence.endswith("?"):
        return False  # a question in the source asks, it does not answer
    if sentence.rstrip("\"'”’)]")[-1:] in tuple(_END_PUNCT) or listed or continued or field_name(sentence):
        return True
    n = len(terms(sentence))
    if sentence.endswith(":"):
        return n >= MIN_INTRO_TERMS
    return n >= MIN_UNPUNCTUATED_TERMS


def field_name(sentence: str) -> str:
    """The field name of a short field line ("**Default:** `30`" -> "Default"), else "". A table row
    stated with its headers ("Room: Wet lab A; Capacity: 12 people") is a record of all its fields:
    its name is every header ("Room / Capacity"), so it answers for any column, not only the first."""
    headers = _row_headers(sentence)
    if headers:
        return " / ".join(headers)
    match = FIELD_RE.match(sentence)
    return match.group(1) if match and len(sentence) <= 160 else ""


def _row_headers(sentence: str) -> list[str]:
    """The headers of a row stated as "header: cell; header: cell" (two or more pairs), else []."""
    parts = sentence.removeprefix("- ").split("; ")
    if len(parts) < 2:
        return []
    headers = [m.group(1) for m in map(_ROW_PAIR_RE.match, parts) if m]
    return headers if len(headers) == len(parts) else []


def _table_step(
    cells: list[str], following: list[str] | None, header: list[str] | None
) -> tuple[list[str] | None, str]:
    """One table line: (the header in force after it, the row as a statement or "")."""
    if all(TABLE_RULE_RE.fullmatch(c) for c in cells):
        return header, ""
    if following is not None and all(TABLE_RULE_RE.fullmatch(c) for c in following):
        return cells, ""  # a header row: the rule row follows it
    if any(_HAS_LETTER_OR_DIGIT_RE.search(c) for c in cells):
        return header, _table_row(cells, header)
    return header, ""


def _table_cells(line: str) -> list[str] | None:
    """The cells of a Markdown table row ("| a | b |"), or None when the line is not one."""
    line = line.strip()
    if not line.startswith("|") or line.count("|") < 2:
        return None
    return [cell.strip() for cell in line.strip("|").split("|")]


def _table_row(cells: list[str], header: list[str] | None) -> str:
    """A data row as a statement: "label: Header2 cell2; Header3 cell3." (cells alone without a header)."""
    label = cells[0]
    body = "; ".join(_row_parts(cells, header))
    sentence = f"{label}: {body}" if label and body else label or body
    return _SPACE_RE.sub(" ", sentence).strip().rstrip(".") + "."


def _row_parts(cells: list[str], header: list[str] | None) -> list[str]:
    """The row's cells after the first, each after its column's header when the header fits the row."""
    rest = cells[1:]
    if header is not None and len(header) == len(cells):
        return [f"{h} {c}" if h else c for h, c in zip(header[1:], rest, strict=True) if c]
    return [c for c in rest if c]


def _leaf(section: str) -> str:
    """The last part of a section path ("Admin guide > Limits" -> "Limits"), markup removed."""
    return _MARKUP_CHARS_RE.sub("", section.rsplit(">", 1)[-1]).strip()
