from hypothesis import given
from hypothesis import strategies as st

from rag.language.text import estimate_tokens, fingerprint, sentence_spans, split_sentences, terms, tokens


def test_split_sentences_keeps_abbreviations_versions_money_and_decimals_whole() -> None:
    text = (
        "Use e.g. the admin panel. It costs $0.67 per GB. Version v2.3 is out! "
        "The U.S. office closed. Pi is 3.14."
    )
    assert split_sentences(text) == [
        "Use e.g. the admin panel.",
        "It costs $0.67 per GB.",
        "Version v2.3 is out!",
        "The U.S. office closed.",
        "Pi is 3.14.",
    ]


def test_split_sentences_attaches_trailing_citation_markers_to_the_sentence_before() -> None:
    assert split_sentences("Uploads are capped at 50 MB.[1][3] Retention is 30 days. [2] Done") == [
        "Uploads are capped at 50 MB.[1][3]",
        "Retention is 30 days. [2]",
        "Done",
    ]


def test_split_sentences_breaks_at_headings_list_items_and_blank_lines() -> None:
    assert split_sentences("# Limits\nText here\n- one\n- two.\n\nNext para") == [
        "# Limits",
        "Text here",
        "- one",
        "- two.",
        "Next para",
    ]


def test_terms_stems_and_drops_stop_words() -> None:
    assert terms("The uploads are limited to 50 MB") == ["upload", "limit", "50", "mb"]


def test_fingerprint_ignores_case_spacing_and_punctuation() -> None:
    assert fingerprint("Hello,  World!") == fingerprint("hello world")
    assert fingerprint("hello world") != fingerprint("hello there")


def test_estimate_tokens_is_monotonic_and_zero_for_empty() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10


@given(st.text())
def test_sentence_spans_are_ordered_disjoint_and_in_bounds(text: str) -> None:
    last = 0
    for start, end in sentence_spans(text):
        assert last <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()
        last = end


def test_split_sentences_makes_each_table_row_its_own_sentence() -> None:
    text = "Fees:\n\n| Item | Price |\n|---|---|\n| Kayak rental | $30 per hour |\n\nPay at the desk."
    assert split_sentences(text) == [
        "Fees:",
        "| Item | Price |",
        "|---|---|",
        "| Kayak rental | $30 per hour |",
        "Pay at the desk.",
    ]


def test_stem_maps_annual_to_year_like_monthly_to_month() -> None:
    assert terms("annual fee") == terms("yearly fee") == ["year", "fee"]
    assert terms("monthly fee") == ["month", "fee"]


def test_is_hypothetical_tells_proposals_and_modals_from_statements() -> None:
    from rag.language.text import is_hypothetical, is_proposal

    assert is_proposal("The board discussed a proposal to raise the fee to $50.")
    assert is_hypothetical("The fee could rise to $50 next year.")
    assert not is_proposal("The fee could rise to $50 next year.")
    assert not is_hypothetical("The fee is $40 per year.")


def _code(text: str) -> list[str]:
    from rag.language.text import code_spans

    return [text[s:e] for s, e in code_spans(text)]


def test_code_spans_finds_fences_literal_blocks_directives_doctests_shell_and_templates() -> None:
    text = (
        "Install it:\n\n```bash\npip install orbit\n```\n\n"
        "Set it in settings::\n\n    TIMEOUT = 30\n    DEBUG = False\n\nBack to prose.\n\n"
        ".. code-block:: python\n\n    import orbit\n\n"
        ">>> orbit.version()\n'3.1'\n\n"
        "$ orbit serve --port 8000\nListening.\n\n"
        "Dear {{ user.name }},\n\nThanks for writing."
    )
    assert _code(text) == [
        "```bash\npip install orbit\n```",
        "TIMEOUT = 30\n    DEBUG = False",
        ".. code-block:: python\n\n    import orbit\n\n>>> orbit.version()\n'3.1'\n\n"
        "$ orbit serve --port 8000\nListening.\n\nDear {{ user.name }},",
    ]


def test_code_spans_leaves_prose_headings_money_and_admonitions_alone() -> None:
    text = (
        "# Fees\n\nThe fee is $ 5 per month.\n\n$5 is the minimum.\n\n.. note::\n\n   Fees change yearly.\n\n"
        "- a list item\n\nUse ``make`` to build."
    )
    assert _code(text) == []


def test_tokens_give_identifier_parts_and_whole_forms() -> None:
    assert tokens("SESSION_COOKIE_SAMESITE") == ["session", "cookie", "samesite", "sessioncookiesamesite"]
    assert tokens("session_cookie_samesite")[-1] == tokens("SessionCookieSamesite")[0]
    assert tokens("app.config.from_object(obj)") == [
        "app",
        "config",
        "from",
        "object",
        "appconfigfromobject",
        "configfromobject",
        "fromobject",
        "obj",
    ]
    assert tokens("use --max-connections") == ["use", "max", "connections", "maxconnections"]
    assert tokens("getHTTPResponse") == ["gethttpresponse", "get", "http", "response"]


def test_tokens_of_prose_are_unchanged_by_identifier_handling() -> None:
    text = "Use e.g. the well-known U.S. office, v2.3 costs $0.67. Don't stop. The JSON API is OK."
    assert tokens(text) == [
        "use", "e", "g", "the", "well", "known", "u", "s", "office", "v2", "3", "costs", "0", "67",
        "don't", "stop", "the", "json", "api", "is", "ok",
    ]  # fmt: skip


def test_prose_sentence_spans_leave_out_sentences_that_are_or_hold_code() -> None:
    from rag.language.text import prose_sentence_spans

    text = (
        "The default is 300 seconds.\n\nFor example::\n\n    CACHE_SECONDS = 60\n\n"
        "Check it:\n>>> cache.ttl\n60\n\nShorter lifetimes cost more work."
    )
    assert [text[s:e] for s, e in prose_sentence_spans(text)] == [
        "The default is 300 seconds.",
        "For example::",
        "Check it:",
        "Shorter lifetimes cost more work.",
    ]


def test_split_sentences_keeps_an_ordinal_date_whole_in_any_language_that_writes_n_dot() -> None:
    # German, Danish, Norwegian and Czech dates, the month capitalised or not: the full stop after the
    # day number ends no sentence; the one after the date does
    assert split_sentences("Die Frist endet am 31. März. Danach gilt der neue Tarif.") == [
        "Die Frist endet am 31. März.",
        "Danach gilt der neue Tarif.",
    ]
    assert split_sentences("Sie kam am 3. Mai 2025 an. Am 4. Juni ging sie.") == [
        "Sie kam am 3. Mai 2025 an.",
        "Am 4. Juni ging sie.",
    ]
    assert split_sentences("Tilbuddet gælder til 1. maj 2026. Derefter stiger prisen.") == [
        "Tilbuddet gælder til 1. maj 2026.",
        "Derefter stiger prisen.",
    ]
    assert split_sentences("Fristen er 15. Desember. Søknader etter det avvises.") == [
        "Fristen er 15. Desember.",
        "Søknader etter det avvises.",
    ]
    assert split_sentences("Termín je do 15. března 2026. Potom platí nové podmínky.") == [
        "Termín je do 15. března 2026.",
        "Potom platí nové podmínky.",
    ]


def test_split_sentences_still_ends_a_sentence_at_a_number_before_a_capitalised_word() -> None:
    assert split_sentences("The limit is 10. After that, requests fail.") == [
        "The limit is 10.",
        "After that, requests fail.",
    ]
    assert split_sentences("Retries stop after 5. Then the delivery is dropped.") == [
        "Retries stop after 5.",
        "Then the delivery is dropped.",
    ]
