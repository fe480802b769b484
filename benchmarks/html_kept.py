"""What HTML ingest leaves out of a page's prose: the other half of "no page furniture in any chunk".

    PYTHONPATH=src python -m benchmarks.html_kept [--all] [DIR ...]

DIR: folders of HTML pages (default: every fixtures/*/corpus). For each page, every paragraph, list
item, table cell, definition or quotation of 40 characters or more that holds no block of its own
and whose text is mostly not link text is looked for in the page's parsed text (letters and digits
only, so markup, fences and table layout do not count); one that is missing is reported with the
start of its text. Pages that lose none are left out unless `--all`. Navigation and page furniture
are mostly links, so they are not looked for; what is reported is prose that never reaches a chunk
(an unclosed `<a name=...>` that swallowed the rest of a page, and short parameter lists dropped as
menus, were found this way), or text the reader restated. Read the lines, do not count them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import lxml.html

from rag.ingest.html import parse_html

ROOT = Path(__file__).resolve().parent.parent
# the elements whose text a reader would call a passage of the page
_PROSE_TAGS = frozenset({"p", "li", "dd", "td", "blockquote"})
# an element holding one of these is looked for through it (its own text is read another way)
_BLOCK_TAGS = frozenset({"p", "div", "table", "ul", "ol", "dl", "pre", "blockquote"})
_MIN_CHARS = 40
_NOT_WORD = re.compile(r"\W+")


def _letters(text: str) -> str:
    return _NOT_WORD.sub("", text)


def lost_passages(raw: bytes, where: str) -> Iterator[str]:
    """The prose elements of the page at `where` whose sentences are not all in its parsed text."""
    page = lxml.html.fromstring(raw)
    for dropped in page.xpath("//script|//style|//noscript|//template"):
        dropped.drop_tree()
    kept = _letters(parse_html(raw.decode("utf-8", "replace"), where).text)
    for element in page.iter():
        if not isinstance(element.tag, str) or element.tag not in _PROSE_TAGS:
            continue
        if any(isinstance(d.tag, str) and d.tag in _BLOCK_TAGS for d in element.iterdescendants()):
            continue
        text = " ".join(element.text_content().split())
        linked = sum(len(a.text_content()) for a in element.iter("a"))
        if len(text) < _MIN_CHARS or linked * 2 >= len(text):
            continue
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if len(_letters(s)) > 30]
        if any(_letters(s) not in kept for s in sentences):
            yield f"<{element.tag}> {text[:110]}"


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    folders = [Path(a) for a in argv if not a.startswith("--")] or sorted(ROOT.glob("fixtures/*/corpus"))
    pages = losing = 0
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".html", ".htm")):
            pages += 1
            lost = list(lost_passages(path.read_bytes(), str(path)))
            losing += bool(lost)
            if lost or show_all:
                print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(lost)} lost")
                for line in lost[:5]:
                    print(f"    {line}")
    print(f"{pages} pages, {losing} with a prose passage missing from their text")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
