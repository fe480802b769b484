"""HTML pages: only the main content becomes text (page furniture never a chunk or a title), code
blocks stay whole as fenced code, tables row by row under their headers, and the page's own title."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.errors import IngestError
from rag.ingest.chunking import chunk_document, find_headings
from rag.ingest.formats import read_document
from rag.ingest.html import page_title_without_site, parse_html
from rag.reader.prose import prose

PROSE = "<p>The reading room opens at nine and closes at six on weekdays, all year round.</p>"
SIDEBAR = (
    '<div class="sidebar"><h3>Contents</h3><ul><li><a href="a.html">Opening hours</a></li>'
    '<li><a href="b.html">Membership</a></li><li><a href="c.html">Loans</a></li></ul></div>'
)


def text(body: str) -> str:
    return parse_html(body, "page.html").text


def title(body: str) -> str:
    return parse_html(body, "page.html").title


# --- the main content -------------------------------------------------------------------------


def test_html_main_element_is_the_content_and_the_rest_of_the_page_is_left_out() -> None:
    page = f"<body><div>Site banner text that repeats</div>{SIDEBAR}<main><h1>Hours</h1>{PROSE}</main></body>"
    assert text(page) == (
        "# Hours\n\nThe reading room opens at nine and closes at six on weekdays, all year round.\n"
    )


def test_html_role_main_and_a_sole_article_are_the_content() -> None:
    assert "banner" not in text(f"<div>banner</div><div role='main'>{PROSE}</div>")
    assert "banner" not in text(f"<div>banner</div><article>{PROSE}</article>")
    # two articles: neither is the page's content alone
    two = text(f"<div>banner</div><article>{PROSE}</article><article><p>Second.</p></article>")
    assert "banner" in two and "Second." in two


def test_html_main_without_real_content_falls_back_to_the_body() -> None:
    body = " ".join(["The archive holds letters from the founding families."] * 20)
    page = f"<main><p>Loading</p></main><div><p>{body}</p></div>"
    assert "founding families" in text(page)


@pytest.mark.parametrize(
    "furniture",
    [
        "<nav><p>Skip to the archive catalogue and the visitor guide.</p></nav>",
        "<aside><p>Related reading about the history of the town and its library.</p></aside>",
        "<header><p>The City Library, serving readers since 1901 in every district.</p></header>",
        "<footer><p>Copyright the City Library, all rights reserved, 2026 edition.</p></footer>",
        "<div role='navigation'><p>Skip to the archive catalogue and the guide.</p></div>",
        "<div role='banner'><p>The City Library, serving readers since 1901.</p></div>",
        "<div role='contentinfo'><p>Copyright the City Library, all rights reserved.</p></div>",
        "<div role='complementary'><p>Related reading about the history of the town.</p></div>",
        "<div role='search'><p>Search the catalogue of the whole city library.</p></div>",
        "<search><p>Search the catalogue of the whole city library.</p></search>",
        "<form><label>Search the catalogue of the whole city library</label><input name=q></form>",
        "<div hidden><p>An old notice kept in the page but never shown to readers.</p></div>",
        "<div aria-hidden='true'><p>An old notice kept in the page but never shown.</p></div>",
        "<div style='display: none'><p>An old notice kept in the page but never shown.</p></div>",
        "<script>var notice = 'An old notice kept in the page';</script>",
    ],
)
def test_html_page_furniture_never_becomes_text(furniture: str) -> None:
    page = f"<body>{furniture}<h1>Hours</h1>{PROSE}{furniture}</body>"
    assert text(page) == (
        "# Hours\n\nThe reading room opens at nine and closes at six on weekdays, all year round.\n"
    )


def test_html_an_articles_own_header_with_its_heading_is_kept_and_its_footer_is_not() -> None:
    page = (
        "<header><p>Site name</p></header><article><header><h1>Loan rules</h1></header>"
        f"{PROSE}<footer><p>Posted in Rules by the desk team</p></footer></article>"
    )
    out = text(page)
    assert out.startswith("# Loan rules\n") and "Site name" not in out and "Posted" not in out


def test_html_an_aside_whose_role_says_it_is_a_note_is_content() -> None:
    page = f"<main>{PROSE}<aside role='note'><p>Closed on public holidays.</p></aside></main>"
    assert "Closed on public holidays." in text(page)


def test_html_permalink_marks_are_left_out_of_headings_text_and_title() -> None:
    page = (
        "<h1>Opening hours<a class='headerlink' href='#opening-hours'>¶</a></h1>"
        "<p>Open daily.<a href='#p1'>§</a> See note <a href='#fn1'>[1]</a>.</p>"
        "<h2>Holidays <a href='#holidays'>#</a></h2><p>Closed.</p>"
    )
    assert text(page) == "# Opening hours\n\nOpen daily. See note [1].\n\n## Holidays\n\nClosed.\n"
    assert title(page) == "Opening hours"


def test_html_link_dense_blocks_are_left_out_and_prose_with_links_is_kept() -> None:
    page = (
        '<div class="toc"><a href="#">Table of contents</a><div><a href="#a">1. Hours</a></div>'
        '<div><a href="#b">2. Loans</a></div></div>'
        '<div><a href="/">Home</a> » <a href="/guide">Guide</a> » <a href="/guide/hours">Hours</a></div>'
        "<h1>Hours</h1>"
        '<p>Members may borrow <a href="loans.html">up to ten books</a> at once and renew them online.</p>'
        '<div class="related"><p>Previous topic</p><p><a href="a.html">Membership</a></p>'
        '<p>Next topic</p><p><a href="c.html">Loans</a></p></div>'
        '<div><a href="https://example.org/edit/hours.html">Edit this page</a></div>'
    )
    assert text(page) == ("# Hours\n\nMembers may borrow up to ten books at once and renew them online.\n")


def test_html_an_anchor_left_open_is_not_a_link_and_the_text_after_it_is_kept() -> None:
    # older hand-written pages open a named anchor before each section and never close it
    page = (
        "<h1>Keepalives</h1>"
        '<p><a name="Idle">The idle timer closes a session after ten minutes without a command.</p>'
        "<h2>Probes</h2>"
        '<p><a name="Probe">A probe is sent every sixty seconds, and '
        '<a href="faq.html">the FAQ</a> explains why.</p>'
        "<p>Three unanswered probes end the session.</p>"
    )
    kept = text(page)
    assert "sent every sixty seconds" in kept
    assert "Three unanswered probes end the session." in kept
    assert "ten minutes without a command" in kept


def test_html_a_list_of_links_a_paragraph_introduces_is_content_and_a_contents_list_is_not() -> None:
    page = (
        "<h1>Caches</h1>"
        "<p>Only two back ends are supported:</p>"
        '<ul><li><a href="https://example.org/memo">memo</a></li>'
        '<li><a href="https://example.org/disk">disk</a></li></ul>'
        "<p>This page covers the following topics:</p>"
        '<ul><li><a href="#setup">Setting up a cache</a></li>'
        '<li><a href="#limits">Cache limits</a></li></ul>'
        '<h2 id="setup">Setting up a cache</h2>'
        "<p>Name the back end in the configuration file, then restart.</p>"
    )
    kept = text(page)
    assert "- memo\n- disk" in kept
    assert "Cache limits" not in kept  # the page's own contents list, links to places on the page


def test_html_a_short_list_whose_items_are_not_links_is_content() -> None:
    # an API page's parameter list: each item a name, a linked type and a few words (two links among
    # fewer characters than a sentence, which a "previous / next" bar also has)
    page = (
        "<h1>clearImmediate(immediate)</h1>"
        '<ul><li><code>immediate</code> <a href="t.html#imm">&lt;Immediate&gt;</a> An object as '
        'returned by <a href="#set">setImmediate()</a>.</li></ul>'
        "<p>Cancels an object created by setImmediate() before its callback runs.</p>"
        '<ul><li><a href="a.html">Timers</a></li><li><a href="b.html">Events</a></li></ul>'
    )
    kept = text(page)
    assert "An object as returned by setImmediate()." in kept
    assert "Events" not in kept  # a list whose items are links is still a menu


def test_html_a_section_holding_a_contents_list_keeps_its_paragraphs() -> None:
    links = "".join(f'<li><a href="p{n}.html">Chapter {n} of the guide</a></li>' for n in range(30))
    page = (
        "<main><section><h1>Guide</h1><p>This guide covers every service the library offers to its"
        f" members.</p><div class='toctree'><ul>{links}</ul></div></section></main>"
    )
    assert text(page) == "# Guide\n\nThis guide covers every service the library offers to its members.\n"


def test_html_empty_list_items_are_left_out_and_an_items_paragraph_stays_on_its_bullet() -> None:
    page = (
        "<ul><li></li><li><a href='#x'>¶</a></li><li><p>Bring a card.</p><p>Or an ID.</p></li>"
        "<li><ul><li>Nested item</li></ul></li></ul><ol start='3'><li>Third step</li></ol>"
    )
    assert text(page) == "- Bring a card.\nOr an ID.\n- Nested item\n\n3. Third step\n"


# --- code --------------------------------------------------------------------------------------


def test_html_pre_is_fenced_code_kept_whole_and_its_comment_never_a_heading() -> None:
    page = (
        "<h1>Setup</h1><p>Run this:</p><pre># install the tools\npip install  widgets\n\n"
        "    indented line</pre><h2>Next</h2><p>Then start it.</p>"
    )
    out = text(page)
    assert "```\n# install the tools\npip install  widgets\n\n    indented line\n```" in out
    assert [h.text for h in find_headings(out)] == ["Setup", "Next"]
    doc = read_document(page.encode(), Path("/r/setup.html"), root=Path("/r"))
    chunks = chunk_document(doc.document, layout=doc.layout)
    assert {c.section for c in chunks} == {"", "Next"}
    assert "# install the tools" in chunks[0].text


def test_html_a_fence_inside_code_gets_a_longer_fence_and_inline_code_is_backticked() -> None:
    out = text("<pre>```\nquoted fence\n```</pre><p>Call <code>open()</code> or <code>a`b</code>.</p>")
    assert out == "````\n```\nquoted fence\n```\n````\n\nCall `open()` or ``a`b``.\n"


# --- tables ------------------------------------------------------------------------------------

LAPTOPS = (
    "<table><caption>Laptops by role</caption><tr><th>Role</th><th>Laptop</th><th>Memory</th></tr>"
    "<tr><td>Engineer</td><td>ThinkPad X1</td><td>32 GB</td></tr>"
    "<tr><td>Designer</td><td>MacBook Pro</td><td>36 GB</td></tr></table>"
)


def test_html_table_rows_are_stated_with_their_column_headers() -> None:
    assert text(LAPTOPS) == (
        "Laptops by role\n\n- Role: Engineer; Laptop: ThinkPad X1; Memory: 32 GB\n"
        "- Role: Designer; Laptop: MacBook Pro; Memory: 36 GB\n"
    )


def test_html_table_header_from_thead_with_spans_and_group_rows() -> None:
    page = (
        "<table><thead><tr><th rowspan=2>Type</th><th colspan=2>Size</th></tr>"
        "<tr><th>Min</th><th>Max</th></tr></thead><tbody>"
        "<tr><td colspan=3>Integers</td></tr>"
        "<tr><td>smallint</td><td>2 bytes</td><td></td></tr>"
        "<tr><td rowspan=2>serial</td><td>4 bytes</td><td>8 bytes</td></tr>"
        "<tr><td>1 byte</td><td>2 bytes</td></tr></tbody></table>"
    )
    assert text(page) == (
        "Integers\n- Type: smallint; Size Min: 2 bytes\n"
        "- Type: serial; Size Min: 4 bytes; Size Max: 8 bytes\n"
        "- Type: serial; Size Min: 1 byte; Size Max: 2 bytes\n"
    )


def test_html_table_without_a_header_row_keeps_markdown_rows() -> None:
    page = "<table><tr><th>Max size</th><td>1 GB</td></tr><tr><th>Max rows</th><td>none</td></tr></table>"
    assert text(page) == "| Max size | 1 GB |\n| Max rows | none |\n"


def test_html_a_table_that_lays_out_the_page_is_read_cell_by_cell() -> None:
    page = "<table><tr><td><h2>Hours</h2><p>Open at nine.</p></td><td><pre>x = 1</pre></td></tr></table>"
    assert text(page) == "## Hours\n\nOpen at nine.\n\n```\nx = 1\n```\n"


def test_html_a_table_cell_that_names_a_linked_object_is_kept() -> None:
    page = (
        "<table><thead><tr><th>Name</th><th>Meaning</th></tr></thead><tbody>"
        "<tr><td><p><a href='api.html#open'><code>open()</code></a></p></td><td>Opens a file.</td></tr>"
        "</tbody></table>"
    )
    assert text(page) == "- Name: `open()`; Meaning: Opens a file.\n"


def test_reader_states_a_table_row_as_one_statement_even_with_a_full_stop_in_a_cell() -> None:
    page = (
        "<table><tr><th>Name</th><th>Default</th><th>Description</th></tr>"
        "<tr><td>small_size</td><td>5</td><td>Widgets kept. Never more.</td></tr></table>"
    )
    assert [p.text for p in prose(text(page))] == [
        "Name: small_size; Default: 5; Description: Widgets kept. Never more."
    ]


# --- the title ---------------------------------------------------------------------------------


def test_html_title_is_the_contents_own_heading_not_the_site_title() -> None:
    page = (
        "<title>tempfile — Generate temporary files — Widget 3.1 documentation</title>"
        "<div role='navigation'><h1>Widget docs</h1></div>"
        "<main><h1>tempfile — Generate temporary files<a href='#t'>¶</a></h1><p>x</p></main>"
    )
    assert title(page) == "tempfile — Generate temporary files"


@pytest.mark.parametrize(
    ("page_title", "expected"),
    [
        ("Session Basics — Widget 1.4 Documentation", "Session Basics"),
        ("Opening hours | City Library", "Opening hours"),
        ("Opening hours - City Library", "Opening hours - City Library"),
        ("Plain title", "Plain title"),
    ],
)
def test_html_title_without_a_heading_is_the_title_element_without_the_site(
    page_title: str, expected: str
) -> None:
    assert title(f"<title>{page_title}</title><h1>1. Overview</h1><p>x</p><h1>2. Use</h1>") == expected


def test_page_title_without_site_cuts_where_a_heading_confirms_it() -> None:
    assert page_title_without_site("Opening hours - City Library", ["Opening hours"]) == "Opening hours"
    assert page_title_without_site("City Library | Opening hours", ["Opening hours"]) == "Opening hours"


def test_html_a_sole_h1_numbered_as_a_section_is_not_the_title() -> None:
    assert title("<title>CREATE INDEX</title><h1>1. Syntax</h1><p>x</p>") == "CREATE INDEX"
    assert title("<h1>1. Syntax</h1><p>x</p>") == "1. Syntax"
    assert title("<title>Reports</title><h1>2023 Annual report</h1><p>x</p>") == "2023 Annual report"


# --- broken pages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("<html><body><div", "HTML has no text (truncated markup)"),
        ("<!-- only a comment -->", "HTML has no text"),
        ("<nav><a href='a.html'>Home</a></nav>", "HTML has no text"),
        ("   ", "HTML has no text"),
    ],
)
def test_html_without_content_raises_with_its_reason(body: str, reason: str) -> None:
    with pytest.raises(IngestError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_html(body, "page.html")


def test_html_a_truncated_tag_is_never_text_and_an_xml_declaration_is_read() -> None:
    assert text("<p>Open at nine.</p><di") == "Open at nine.\n"
    assert text("<?xml version='1.0' encoding='utf-8'?><html><body><p>Open.</p></body></html>") == "Open.\n"


def test_html_deeply_nested_markup_is_read_without_error() -> None:
    assert text("<div>" * 240 + "deep" + "</div>" * 240 + "<p>top</p>") == "deep\n\ntop\n"
    assert text("<ul><li><p>" * 80 + "x") == "- x\n"


def test_html_a_menu_inside_a_list_item_is_still_link_dense() -> None:
    # an unclosed <li> holds the rest of the page: its menus are measured all the same
    menu = "".join(f"<li><a href='#f{n}'>widget_function_{n}</a></li>" for n in range(12))
    page = f"<ul><li><p>{PROSE[3:-4]}</p><div><ul>{menu}</ul></div><p>After the list.</p>"
    assert "widget_function" not in text(page) and "After the list." in text(page)
