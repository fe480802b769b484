"""What of an HTML page is content: its main content element, with the page furniture removed.

The content is the page's `<main>`, else its `[role=main]`, else its sole `<article>`, when that
holds real content; else the body. Furniture is removed everywhere: what is never text (scripts,
styles, media, form controls), hidden elements (`hidden`, `aria-hidden="true"`, an inline
`display:none`), the ARIA landmarks that are not content (navigation, banner, contentinfo,
complementary, search: `<nav>`, `<aside>` (not one of footnotes), `<search>`, a page-level
`<header>`/`<footer>`, or an explicit `role`), the blocks a page generator names as its navigation
or page footer (a `class` or `id` such as "navheader", "topNav", "nav-panel", "footer":
`_named_furniture`, the class-name signal main-content extractors read) and permalink marks (a link
to a fragment of the page whose text is only a symbol, such as the "¶" after a generated heading).
Inside the content, forms, a `<header>` or `<footer>` that holds no heading, and link-dense blocks
(tables of contents, breadcrumbs, "previous / next" bars: decided by measured link density and
size, `_link_dense`) are removed too. Elements are lxml.html elements, changed in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_SPACES_RE = re.compile(r"\s+")
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# never text: code, media and the controls of forms
_SKIP = frozenset(
    "script style noscript template svg head iframe object embed canvas audio video"
    " map button input select option optgroup textarea datalist meter progress dialog".split()
)
# ARIA landmark roles that are page furniture, and the role each element has by default (HTML-AAM)
_FURNITURE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_IMPLICIT_ROLES = {"nav": "navigation", "aside": "complementary", "search": "search"}
# a class or id token naming a navigation block ("navheader", "navfooter", "topNav", "nav-panel",
# "sidenav", "navbar", "navigation") or the page's footer ("footer", "footer-text", "page-footer")
_FURNITURE_NAME_RE = re.compile(
    r"(?:(?:top|bottom|side|sub|site|page|main)[-_]?)?nav(?:igation)?(?:[-_]?(?:bar|header|footer|panel|path|links|menu))?"
    r"|(?:page[-_]|site[-_])?footer(?:[-_]text)?",
    re.IGNORECASE,
)
# a <header>/<footer> inside one of these is that section's own, not the page's banner/contentinfo
_SECTIONING = frozenset({"article", "aside", "main", "nav", "section"})
# blocks whose link density is measured (a table or list of links is a menu as much as a <div>), and
# the elements inside which a paragraph is measured with its table, list or definition list only
_MEASURED = frozenset("div section article header footer ul ol dl table p blockquote details".split())
_CELLS = frozenset({"td", "th", "li", "dt", "dd"})
_CONTAINERS = _MEASURED - {"p", "blockquote"}
_LISTS = frozenset({"ul", "ol", "dl"})
# a block is link-dense when links hold this share of its text, or at least _LINK_SHARE_SHORT of it
# with fewer than _CHARS_PER_LINK other characters per link (a menu's separators, a TOC's numbers)
_LINK_SHARE = 0.8
_LINK_SHARE_SHORT = 0.5
_CHARS_PER_LINK = 12
# a block below a link-dense one with this many characters outside links is prose, and keeps it
_PROSE_CHARS = 40
# a <main>/[role=main]/<article> is the content when it holds this many words, or half the page's
_REAL_CONTENT_WORDS = 50


def main_content(root: Any) -> Any:
    """The element of the parsed page `root` that holds its main content, furniture removed."""
    _prune(root, _furniture)
    content = _main_element(root)
    _drop_in_content(content)
    return content


def tag_of(el: Any) -> str:
    """The element's tag name ("" for a comment or processing instruction)."""
    return el.tag if isinstance(el.tag, str) else ""


def _drop(el: Any) -> None:
    """Remove `el` and its subtree, keeping the text that follows it."""
    if el.getparent() is not None:
        el.drop_tree()


def _prune(root: Any, unwanted: Callable[[Any], bool]) -> None:
    """Remove every element under `root` that is `unwanted`, with its subtree, outermost first."""
    stack = [root]
    while stack:
        for child in list(stack.pop()):
            if unwanted(child):
                _drop(child)
            else:
                stack.append(child)


def _furniture(el: Any) -> bool:
    """Never text, anywhere: code and media, hidden elements, landmarks that are not content and
    permalink marks."""
    tag = tag_of(el)
    return (
        not tag
        or tag in _SKIP
        or _hidden(el)
        or _role(el) in _FURNITURE_ROLES
        or _named_furniture(el)
        or _permalink(el)
    )


def _named_furniture(el: Any) -> bool:
    """A block whose `class` or `id` names it navigation or the page footer (`_FURNITURE_NAME_RE`, a
    whole token: "navheader", not "canvas" or "unavailable"); never the body or a main landmark, and
    never a block holding a heading: a generator derives a section's id from its title, so a manual's
    own section "Navigation" is `<section id="navigation"><h2>Navigation</h2>...`."""
    if tag_of(el) in ("body", "main", "html") or (el.get("role") or "") == "main":
        return False
    names = f"{el.get('class') or ''} {el.get('id') or ''}".split()
    if not any(_FURNITURE_NAME_RE.fullmatch(name) for name in names):
        return False
    return not any(tag_of(d) in HEADINGS for d in el.iter())


def _hidden(el: Any) -> bool:
    return (
        el.get("hidden") is not None
        or (el.get("aria-hidden") or "").strip().lower() == "true"
        or bool(_HIDDEN_STYLE_RE.search(el.get("style") or ""))
    )


def _role(el: Any) -> str:
    """The element's ARIA role: its explicit `role` (first token), else the one its tag implies."""
    explicit = (el.get("role") or "").split()
    if explicit:
        return explicit[0].lower()
    tag = tag_of(el)
    if tag == "aside" and any(c.lower().startswith("footnote") for c in (el.get("class") or "").split()):
        return ""  # docutils' `<aside class="footnote-list">`: the page's own notes, not a sidebar
    if tag in ("header", "footer"):
        scoped = any(tag_of(a) in _SECTIONING or (a.get("role") or "") == "main" for a in el.iterancestors())
        if not scoped:
            return "banner" if tag == "header" else "contentinfo"
        return ""
    return _IMPLICIT_ROLES.get(tag, "")


def _permalink(el: Any) -> bool:
    """A link to a fragment of this page whose text is only symbols or nothing (the "¶" after a
    generated heading)."""
    if tag_of(el) != "a":
        return False
    href = el.get("href")
    if href is None or not (href.strip().startswith("#") or not href.strip()):
        return False
    return not any(ch.isalnum() for ch in el.text_content())


def _main_element(root: Any) -> Any:
    """The page's main content: its <main>, else [role=main], else its sole <article>, when that
    holds real content; else the body (or the whole page when it has none)."""
    body = root.find("body")
    body = body if body is not None else root
    page_words = _words(body)
    candidates = root.xpath("//main") + root.xpath("//*[@role='main']")
    articles = root.xpath("//article")
    if len(articles) == 1:
        candidates.append(articles[0])
    for el in candidates:
        words = _words(el)
        if words >= _REAL_CONTENT_WORDS or (words and words * 2 >= page_words):
            return el
    return body


def _words(el: Any) -> int:
    return len(el.text_content().split())


def _drop_in_content(content: Any) -> None:
    """Remove, inside the content: forms that are not the content itself, a <header>/<footer>
    without a heading, and link-dense blocks."""
    words = _words(content)

    def unwanted(el: Any) -> bool:
        tag = tag_of(el)
        if tag == "form":
            return _words(el) * 2 < words
        return tag in ("header", "footer") and not any(tag_of(d) in HEADINGS for d in el.iter())

    _prune(content, unwanted)
    _drop_link_dense(content)


def _drop_link_dense(content: Any) -> None:
    """Remove the link-dense blocks of `content` that hold no prose, outermost first."""
    dense = _link_dense_blocks(content)
    _prune(content, lambda el: el in dense)


def _link_dense_blocks(content: Any) -> set[Any]:
    """The blocks under `content` that are link-dense (`_link_dense`) and hold no prose: no element
    below them that is not link-dense and has _PROSE_CHARS characters outside links. Inside a table
    cell or list item, a paragraph is measured with its table or list, never alone (a cell that
    names a linked object is data), and another block only when it is nearly all the text of two
    links or more (a menu nested in an item). Heading text counts as text, never as link text (a
    heading that links back to a contents list is a label). An `<a>` without `href` is an anchor, not
    a link: a page that opens `<a name=...>` and never closes it puts the rest of the page inside it."""
    dense: set[Any] = set()

    def visit(el: Any, in_link: bool, in_heading: bool, in_cell: bool) -> tuple[int, int, int, bool]:
        """(characters, characters in links, links, holds prose) of `el`'s subtree."""
        tag = tag_of(el)
        is_link = tag == "a" and el.get("href") is not None and not in_heading
        in_link, in_heading = in_link or is_link, in_heading or tag in HEADINGS
        text = _chars(el.text)
        linked, links, prose = (text if in_link else 0), int(is_link), False
        items = linked_items = 0
        for child in el:
            c_text, c_linked, c_links, c_prose = visit(child, in_link, in_heading, in_cell or tag in _CELLS)
            tail = _chars(child.tail)
            text, linked = text + c_text + tail, linked + c_linked + (tail if in_link else 0)
            links, prose = links + c_links, prose or c_prose
            if tag_of(child) == "li":
                items += 1
                linked_items += _link_dense("li", c_text, c_linked, c_links)
        is_dense = _link_dense(tag, text, linked, links)
        if items and tag in _LISTS:  # a list is a menu when its items are links, not when it is short
            is_dense = is_dense and linked_items * 2 >= items
        if in_cell:  # only a menu: a container of links and nearly nothing else
            measured = tag in _CONTAINERS and links >= 2 and linked >= _LINK_SHARE * text
        else:
            measured = tag in _MEASURED
        if is_dense and not prose and measured and not _introduced_list(el):
            dense.add(el)
        return text, linked, links, prose or (not is_dense and text - linked >= _PROSE_CHARS)

    visit(content, False, False, False)
    return dense


def _introduced_list(el: Any) -> bool:
    """A list that a paragraph of the content introduces ("Libraries compatible with this class:"
    then a list of linked names): the paragraph's continuation, not a menu, however many links. A
    list whose links lead to places on the same page ("#...") is a contents list, whatever precedes it."""
    if tag_of(el) not in _LISTS:
        return False
    targets = [a.get("href") or "" for a in el.iter("a")]
    if sum(t.startswith("#") for t in targets) * 2 >= len(targets):
        return False
    before = el.getprevious()
    if before is None or tag_of(before) != "p" or (before.tail or "").strip():
        return False
    return (before.text_content() or "").rstrip().endswith(":")


def _chars(s: str | None) -> int:
    return len(_SPACES_RE.sub("", s)) if s else 0


def _link_dense(tag: str, text: int, links: int, count: int) -> bool:
    """Nearly all link text; or mostly link text with only a few other characters per link; or, for
    a container (not a paragraph), several links among less text than a sentence of prose (a
    "previous / next" bar of labels and links)."""
    if not count or not text:
        return False
    share, other = links / text, text - links
    return (
        share >= _LINK_SHARE
        or (share >= _LINK_SHARE_SHORT and other < _CHARS_PER_LINK * count)
        or (count >= 2 and other < _PROSE_CHARS and tag in _CONTAINERS)
    )
