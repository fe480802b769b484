from __future__ import annotations

from rag.reader.prose import classify, closing_label, entry_name, field_name, prose


def texts(text: str, section: str = "") -> list[str]:
    return [p.text for p in prose(text, section)]


def test_prose_skips_fenced_code_and_shell_sessions() -> None:
    text = (
        "Send HUP to the master process for a graceful reload.\n\n"
        "```bash\nkill -HUP masterpid\n```\n\n"
        "$ gunicorn --workers 3 app:app\n\nThe master then restarts its workers."
    )
    assert texts(text) == [
        "Send HUP to the master process for a graceful reload.",
        "The master then restarts its workers.",
    ]


def test_a_program_prompt_line_is_code_and_ends_the_sentence_before_it() -> None:
    # a manual laid out as a PDF: the command at a program's own prompt sits between two sentences,
    # with no blank line and no end punctuation to part them; a blockquote ("> ...") stays prose
    text = (
        "To run the analysis without heating, use:\n"
        "MrBayes > mcmc ngen=10000 nchains=1\n"
        "By default, two runs start from different random trees.\n"
        "sqlite> .tables\n"
        "The tables are listed."
    )
    assert texts(text) == [
        "To run the analysis without heating, use:",
        "By default, two runs start from different random trees.",
        "The tables are listed.",
    ]
    assert classify(["> Quoted advice stays prose."]) == ["prose"]


def test_prose_skips_doctests_and_their_output() -> None:
    text = (
        "Create a certificate first.\n\n"
        ">>> make_cert('/tmp/key', host='localhost')\n('/tmp/key.crt', '/tmp/key.key')\n\n"
        "The pair is written next to the key."
    )
    assert texts(text) == ["Create a certificate first.", "The pair is written next to the key."]


def test_prose_skips_template_lines() -> None:
    text = "Dear {{ user.name }},\n{% if late %}Your book is late.{% endif %}\n\nLoans last three weeks."
    assert texts(text) == ["Loans last three weeks."]


def test_prose_skips_rest_literal_block_after_double_colon() -> None:
    text = (
        "Start the development server with a small script that runs the application::\n\n"
        "    from app import make_app\n    run(make_app(), port=8080)\n\n"
        "The reloader watches every imported module."
    )
    out = texts(text)
    assert "The reloader watches every imported module." in out
    assert not any("make_app" in s for s in out)


def test_prose_skips_code_directive_content_but_keeps_note_content() -> None:
    text = (
        ".. code-block:: python\n\n    app.trusted_hosts = ['example.org']\n\n"
        ".. note::\n\n    The console is protected by a PIN.\n\n"
        ".. image:: shot.png\n   :alt: a screenshot of the console\n"
    )
    assert texts(text) == ["The console is protected by a PIN."]


def test_rest_title_is_the_label_of_the_sentences_below_it() -> None:
    text = "Allowed Hosts\n-------------\n\nRequests from other hosts get a 400 error.\n"
    [sentence] = prose(text, section="Debugging")
    assert sentence.text == "Requests from other hosts get a 400 error."
    assert sentence.label == "Allowed Hosts"


def test_section_leaf_is_the_label_when_the_heading_is_outside_the_chunk() -> None:
    [first, second] = prose(
        "**Default:** `100`\n\nLimits the number of header fields.", "Security > `limit_fields`"
    )
    assert first.label == second.label == "limit_fields"
    assert first.field == "Default"
    assert "Limits the number of header fields." in first.entry


def test_definition_term_labels_its_definition() -> None:
    text = "retry_limit\n    How many times a failed upload is tried again before it is dropped.\n"
    [sentence] = prose(text)
    assert sentence.label == "retry_limit"


def test_classify_marks_markdown_admonition_header_as_markup() -> None:
    assert classify(['!!! info "Added in 19.2"', "    Workers restart on change."]) == ["markup", "prose"]


def test_field_name_reads_short_label_colon_value_lines_only() -> None:
    assert field_name("**Default:** `30`") == "Default"
    assert field_name("Command line: --timeout INT") == "Command line"
    assert field_name("Workers silent for more than this many seconds are killed: see below") == ""


def test_content_tab_title_labels_its_indented_text() -> None:
    text = '=== "Gevent"\n\n    Handles thousands of concurrent connections.\n'
    [sentence] = prose(text, section="Worker types")
    assert sentence.label == "Gevent"


ENTRIES = (
    "Widget settings\n===============\n\n"
    ".. py:data:: WIDGET_LIMIT\n\n"
    "    The most widgets one board may hold.\n\n"
    "    Default: ``40``\n\n"
    ".. envvar:: WIDGET_HOME\n\n"
    "    Where widgets are stored. Changing it moves nothing.\n\n"
    "    Default: ``~/.widgets``\n\n"
    "Widgets are synced every night.\n"
)


def test_entry_directive_names_label_the_description_below_them() -> None:
    labelled = [(p.label, p.field, p.text) for p in prose(ENTRIES)]
    assert labelled == [
        ("WIDGET_LIMIT", "", "The most widgets one board may hold."),
        ("WIDGET_LIMIT", "Default", "Default: ``40``"),
        ("WIDGET_HOME", "", "Where widgets are stored."),
        ("WIDGET_HOME", "", "Changing it moves nothing."),
        ("WIDGET_HOME", "Default", "Default: ``~/.widgets``"),
        ("Widget settings", "", "Widgets are synced every night."),  # the entry closed: the heading again
    ]


def test_entry_name_reads_domain_and_generic_entry_directives_only() -> None:
    assert entry_name(".. py:data:: WIDGET_LIMIT") == "WIDGET_LIMIT"
    assert entry_name(".. option:: --max-widgets <n>") == "--max-widgets <n>"
    assert entry_name(".. std:setting:: widget_home") == "widget_home"
    assert entry_name(".. note::") == ""
    assert entry_name(".. code-block:: python") == ""
    assert entry_name("Plain text with py:data:: inside") == ""


def test_closing_label_is_the_entry_open_at_the_end_of_a_cut_chunk() -> None:
    first = "Widget settings\n===============\n\n.. py:data:: WIDGET_LIMIT\n\n    The most widgets"
    assert closing_label(first) == "WIDGET_LIMIT"
    assert closing_label("Just a sentence.", "Guide > Setup") == "Setup"
    second = (
        "one board may hold.\n\n    Default: ``40``\n\n.. py:data:: WIDGET_HOME\n\n    Where widgets live."
    )
    assert [(p.label, p.text) for p in prose(second, "Widget settings", lead="WIDGET_LIMIT")][-2:] == [
        ("WIDGET_LIMIT", "Default: ``40``"),
        ("WIDGET_HOME", "Where widgets live."),
    ]


def test_a_directive_marker_cut_from_its_dots_is_still_a_directive() -> None:
    text = "versionchanged:: 2.0\n    Widgets no longer sync hourly.\n\nBoards hold widgets."
    assert [(p.label, p.text) for p in prose(text, "Guide > Sync")] == [
        ("Sync", "Widgets no longer sync hourly."),
        ("Sync", "Boards hold widgets."),
    ]


def test_a_chunk_cut_mid_paragraph_is_not_read_as_a_definition_term() -> None:
    # the chunker stripped the first line's indentation: a long line, not a short term
    text = (
        "Browsers only send the widget cookie over HTTPS when the cookie is\n"
        '    marked "secure". The board must be served over HTTPS.\n'
    )
    assert [(p.label, p.text) for p in prose(text)] == [
        ("", 'Browsers only send the widget cookie over HTTPS when the cookie is marked "secure".'),
        ("", "The board must be served over HTTPS."),
    ]
    # a short unpunctuated line above an indented one is still a term
    assert [p.label for p in prose("``--widgets``\n    How many widgets to start.\n")] == ["--widgets"]


def test_sentences_of_one_paragraph_share_a_unit_and_list_items_do_not() -> None:
    text = (
        "Boards hold widgets. They sync nightly.\n\n"
        "- Widgets can be moved.\n- Boards can be renamed. It is free.\n"
    )
    units = [(p.unit, p.text) for p in prose(text)]
    assert units[0][0] == units[1][0]
    assert len({u for u, _ in units[1:4]}) == 3
    assert units[3][0] == units[4][0]


def test_field_list_fields_and_an_entry_s_options_are_field_lines_other_directive_options_markup() -> None:
    # an entry's options (":type: int" under ".. py:data::") state the entry's own facts; an image's
    # ":alt:" is markup
    text = (
        ".. py:data:: WIDGET_LIMIT\n"
        "    :type: int\n\n"
        "    The most widgets one board may hold.\n\n"
        "    :Default: ``40``\n"
        "    :param size: the size of one widget.\n\n"
        ".. image:: board.png\n"
        "   :alt: a board full of widgets\n"
    )
    read = [(p.label, p.field, p.text) for p in prose(text)]
    assert read == [
        ("WIDGET_LIMIT", "type", ":type: int"),
        ("WIDGET_LIMIT", "", "The most widgets one board may hold."),
        ("WIDGET_LIMIT", "Default", ":Default: ``40``"),
        ("WIDGET_LIMIT", "param size", ":param size: the size of one widget."),
    ]
    units = [p.unit for p in prose(text)]
    assert len(set(units)) == 4


def test_a_defaults_to_sentence_answers_a_default_question_under_its_entry() -> None:
    from rag.reader.offline import OfflineGenerator
    from rag.types import Block, Chunk

    text = (
        ".. py:data:: WIDGET_SIZE\n\n"
        "    Warn if widgets are larger than this many bytes. Defaults to\n"
        "    ``4093``. Set to ``0`` to disable the warning.\n\n"
        ".. py:data:: WIDGET_COUNT\n\n"
        "    How many widgets a board shows. Defaults to ``12``.\n"
    )
    chunk = Chunk(chunk_id="w#c01", doc_id="w", title="Widgets", section="Settings", text=text)
    blocks = [Block(n=1, chunk=chunk, score=0.5, sent_text=text)]
    out = OfflineGenerator().generate("What's the default for WIDGET_SIZE?", blocks)
    assert [d.text for d in out.drafts] == ["Defaults to ``4093``."]


def test_a_short_cut_line_ending_in_a_function_word_is_not_a_definition_term() -> None:
    # the chunker cut an entry's description mid-sentence: "Defaults to" is not a term
    text = "Defaults to\n    ``4093``. Larger widgets are ignored.\n"
    assert [(p.label, p.text) for p in prose(text, "Settings > MAX_WIDGET_SIZE")] == [
        ("MAX_WIDGET_SIZE", "Defaults to ``4093``."),
        ("MAX_WIDGET_SIZE", "Larger widgets are ignored."),
    ]


def test_a_rest_simple_table_is_read_row_by_row_with_its_header() -> None:
    text = (
        "Widget kinds:\n\n"
        "=========  ==================\n"
        "Kind       Meaning\n"
        "=========  ==================\n"
        "``small``  fits in one hand,\n"
        "           weighs under a gram\n"
        "``large``  needs two people\n"
        "=========  ==================\n"
    )
    assert [p.text for p in prose(text)] == [
        "``small``: Meaning fits in one hand, weighs under a gram.",
        "``large``: Meaning needs two people.",
    ]


def test_a_simple_table_cut_above_by_the_chunker_keeps_its_aligned_rows_only() -> None:
    text = (
        "the first kind, cut mid-row\n"
        "``large``  needs two people\n"
        "``huge``   needs a crane\n"
        "=========  ==================\n"
    )
    assert [p.text for p in prose(text)] == ["``large``: needs two people.", "``huge``: needs a crane."]


def test_a_table_row_with_a_full_stop_inside_a_cell_stays_one_row_under_its_header() -> None:
    text = (
        "| Name | Default | Description |\n| --- | --- | --- |\n"
        "| `small_size` | `5` | Widgets kept. Never more. |\n"
        "| `large_size` | `10` | Widgets beyond small_size. |\n"
    )
    assert [p.text for p in prose(text)] == [
        "`small_size`: Default `5`; Description Widgets kept. Never more.",
        "`large_size`: Default `10`; Description Widgets beyond small_size.",
    ]


def test_python_block_openers_are_code_even_when_a_chunk_cut_their_literal_block() -> None:
    # the "::" introducing this block stayed in the chunk before
    text = (
        "import widgets\n\n    with widgets.bar(items) as bar:\n        for item in bar:\n"
        "            handle(item)\n\nWidgets then draw a bar.\nFor each item in the list: it ticks.\n"
    )
    assert [p.text for p in prose(text)] == [
        "Widgets then draw a bar.",
        "For each item in the list: it ticks.",
    ]


def test_a_rest_list_table_is_read_row_by_row_with_its_header() -> None:
    text = (
        "Intro.\n\n.. list-table:: Widget settings\n   :header-rows: 1\n   :widths: 20 10\n\n"
        "   * - Name\n     - Default\n   * - ``small_size``\n     - ``5``, the widgets\n       kept\n"
        "   * - ``large_size``\n     - ``10``\n\nAfter the table."
    )
    assert [p.text for p in prose(text)] == [
        "Intro.",
        "``small_size``: Default ``5``, the widgets kept.",
        "``large_size``: Default ``10``.",
        "After the table.",
    ]
