"""Precision first (issue 28 item 1): the offline reader gives a sentence as the answer only when it,
with its label and context, says every subject word of the question; a sentence that leaves one
unsaid is about another subject as often as not, and is shown on the refusal instead. Small inline
documents of domains unlike the fixtures: a ferry operator's help pages, a museum's visitor guide."""

from __future__ import annotations

from rag.reader.answer_types import asks_default
from rag.reader.offline import OfflineGenerator
from rag.reader.question import read_question
from rag.types import Block, Chunk


def block(n: int, text: str, *, title: str, section: str = "") -> Block:
    chunk = Chunk(chunk_id=f"d{n}#c01", doc_id=f"d{n}", title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.7, sent_text=text)


def answer(question: str, blocks: list[Block]) -> list[str]:
    return [d.text for d in OfflineGenerator().generate(question, blocks).drafts]


TERMINAL = block(
    1,
    "Free Wi-Fi is available in every terminal lounge, with no time limit. Lockers cost $4 a day.",
    title="At the terminal",
)
FARES = block(2, "A single adult fare on the ferries is $9. Children under five travel free.", title="Fares")
BOOKING = block(3, "Book ferries online or at the ticket desk.", title="Booking")


def test_a_sentence_about_another_subject_sharing_the_other_words_is_no_answer():
    # "ferries" is the subject; the sentence says the same thing about the terminal lounges
    assert answer("Is there free Wi-Fi on the ferries?", [TERMINAL, FARES, BOOKING]) == []


def test_the_same_sentence_answers_when_it_names_the_asked_subject():
    lounge = "Is there free Wi-Fi in the terminal lounge?"
    assert answer(lounge, [TERMINAL, FARES]) == [
        "Free Wi-Fi is available in every terminal lounge, with no time limit."
    ]


def test_a_heading_or_title_may_name_the_subject_for_the_sentence():
    hours = block(
        3,
        "It opens at 09:30 and closes at 17:00 every day except Monday.",
        title="Sculpture garden",
        section="Opening hours",
    )
    assert answer("When does the sculpture garden open?", [hours, FARES]) != []


def test_everyday_words_of_the_question_may_go_unsaid():
    # "get" and "need" ask about the subject without naming one
    ticket = block(4, "Season tickets cost $60 and include unlimited crossings.", title="Fares")
    ask = read_question("How much does a season ticket include for commuters?", [ticket], None)
    assert ask is not None and "includ" in ask.generic
    assert "commut" not in ask.generic


def test_likely_sentence_marks_the_sentence_sharing_the_rarest_question_words():
    from rag.reader.likely import likely_sentence

    text = "Lockers are by the gate. Wi-Fi on the ferries is free for an hour. Lockers cost $4."
    start, end = likely_sentence("Is Wi-Fi free on the ferries?", text) or (0, 0)
    assert text[start:end] == "Wi-Fi on the ferries is free for an hour."
    assert likely_sentence("Where is the car park?", text) is None


def test_an_offline_refusal_says_no_model_read_the_passages_and_marks_what_may_answer(tmp_path):
    from rag.answer.gates import NO_CITATIONS_MESSAGE
    from rag.answer.messages import OFFLINE_NO_CITATIONS_MESSAGE
    from rag.answer.pipeline import build_pipeline
    from rag.config import load_settings
    from rag.ingest.indexer import ingest_paths
    from rag.serialize import answer_json
    from rag.store.sqlite import SqliteStore

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "terminal.md").write_text(
        "# At the terminal\n\nFree Wi-Fi is available in every terminal lounge, with no time limit.\n"
        "Lockers cost $4 a day.\n"
    )
    (docs / "fares.md").write_text("# Fares\n\nA single adult fare on the ferries is $9.\n")
    (docs / "booking.md").write_text("# Booking\n\nBook ferries online or at the ticket desk.\n")
    db = str(tmp_path / "f.db")
    settings = load_settings(db=db, mock=True)
    store = SqliteStore(db)
    try:
        ingest_paths(store, [str(docs)], settings=settings)
        answer = build_pipeline(settings, store=store).answer("Is there free Wi-Fi on the ferries?")
    finally:
        store.close()
    assert answer.abstained and answer.reason == "no_citations"
    assert answer.message == OFFLINE_NO_CITATIONS_MESSAGE != NO_CITATIONS_MESSAGE
    assert "ANTHROPIC_API_KEY" in answer.message
    marked = [r.may_answer for r in answer.closest if r.may_answer is not None]
    assert any("Wi-Fi" in m.text for m in marked)
    shown = answer_json(answer)["closest"]
    assert any(c["may_answer"] and c["may_answer"]["start"] >= 0 for c in shown)


# A default question is answered by a sentence stating the default's value, not by one that only
# says "default" (a storage service's help pages).
PLAN = block(
    11,
    "Snapshots copy every volume to the vault. "
    "The default snapshot interval is chosen by the storage plan you buy.",
    title="Snapshots",
)
SCHEDULE = block(12, "By default, the snapshot interval is 6 hours.", title="Schedule")
VAULT = block(13, "Restores are free. The vault keeps copies in two regions.", title="Vault")


def test_a_default_mentioned_without_its_value_is_no_answer():
    assert answer("What is the default snapshot interval?", [PLAN, VAULT]) == []


def test_the_sentence_stating_the_default_value_answers_over_one_that_only_mentions_it():
    assert answer("What is the default snapshot interval?", [PLAN, SCHEDULE]) == [
        "By default, the snapshot interval is 6 hours."
    ]


def test_the_asked_identifier_written_back_near_default_is_no_value():
    named = block(
        14,
        "When ``vault_retention`` runs out, the vault marks the copy as ``retention`` by default.",
        title="Vault",
    )
    assert answer("What is the default value of vault_retention?", [named, VAULT]) == []


def test_a_value_set_against_the_default_is_not_the_default():
    contrast = block(
        15, "For instance, you may keep copies for 30 days instead of the default retention.", title="Vault"
    )
    assert answer("How long is the default retention of vault copies?", [contrast, VAULT]) == []


def test_the_kinds_of_value_that_state_a_default():
    from rag.reader.defaults import states_default_value

    stated = [
        ("What is the default port?", "Defaults to ``8125``."),
        ("Which codec is used by default?", "The codec is ``zstd`` by default."),
        ("Where does the log go by default?", "Default is /srv/app/log/app.log."),
        ("What level is used by default?", "The level is WARNING by default."),
        ("Is tracing on or off by default?", "Tracing is off by default."),
        ("Which mode does it start in by default?", "The default is lazy."),
        ("Which flag is passed by default?", "It passes --dry-run by default."),
        ("How many copies does it keep by default?", "It keeps three copies by default."),
    ]
    for question, sentence in stated:
        assert states_default_value(sentence, question), sentence
    unstated = [
        ("What is the default port?", "The default port depends on the transport you pick."),
        ("What is the default of max_depth?", "The default limit is set by the :confval:`max_depth` option."),
        ("Which codec is used by default?", "By default the codec is chosen at run time."),
        ("What is the default port?", "Ports are assigned by default when the service starts."),
        (
            "Which shell does it use by default?",
            "What the installer does by default is different on Windows and Linux.",
        ),
        # a release says when the default came, not what it is
        ("Which seed does it use if I don't set one?", "Since version 3.2, it generates a default seed."),
        ("Which seed does it use by default?", "As of v2.1.0 a default seed is drawn at start."),
    ]
    for question, sentence in unstated:
        assert not states_default_value(sentence, question), sentence
    # unless the question asks for a version
    assert states_default_value(
        "The client speaks version 2 by default.", "Which protocol version is the default?"
    )


def test_an_option_left_out_asks_for_the_default():
    assert asks_default("If I run the backup without -m, which mode do I get?")
    assert asks_default("What happens when I call it without the ``--force`` option?")
    assert not asks_default("Can I run the backup without a network connection?")


def test_a_lead_in_ending_in_a_colon_states_nothing_by_itself():
    lead = block(
        16,
        "The backup tool reports one of three statuses when a run ends:\n\n```\nok\nfailed\npartial\n```\n",
        title="Backup tool",
    )
    assert answer("What status does the backup tool report when a run ends?", [lead, VAULT]) == []


def test_a_why_question_mentioning_a_default_asks_for_a_reason_not_a_default():
    encryption = block(17, "Copies are not encrypted by default.", title="Vault encryption")
    ask = read_question("Why are copies not encrypted by default?", [encryption], None)
    assert ask is not None and ask.kind == "cause" and not ask.default


# "How can I ...?" asks for a means (a photo site's and a static-site tool's help pages).
PREVIEW = block(
    21,
    "The preview server watches the source folder. "
    "It rebuilds the site and refreshes the browser whenever you save a page.",
    title="Live preview",
)
RUN_WATCH = block(
    22,
    "Run ``make watch`` to rebuild the site and refresh the browser whenever you save a page.",
    title="Live preview",
)
REFRESH = "How can I get the site to refresh the browser whenever I save a page?"


def test_a_description_of_what_happens_does_not_tell_how_to_do_it_an_instruction_does():
    assert answer(REFRESH, [PREVIEW, VAULT]) == []
    assert answer(REFRESH, [RUN_WATCH, VAULT]) == [
        "Run ``make watch`` to rebuild the site and refresh the browser whenever you save a page."
    ]


def test_the_forms_of_a_means():
    from rag.reader.procedure import gives_procedure

    question = "How can I rotate the logs every night?"
    means = [
        "Add a ``rotate`` entry to the scheduler file.",
        "You can rotate them with the maintenance task.",
        "To rotate them nightly, set the interval to one day.",
        "Logs are rotated by scheduling the cleanup job.",
        "1. Open the settings page and pick a time.",
        "Pass --rotate when the service starts.",
    ]
    for sentence in means:
        assert gives_procedure(sentence, question), sentence
    described = [
        "Rotating the logs every night keeps the disk from filling up.",
        "The logs grow quickly when tracing is on.",
        "Generally the logs are small.",
        "It rotates the logs and compresses the old ones whenever you restart.",
    ]
    for sentence in described:
        assert not gives_procedure(sentence, question), sentence


ALBUMS = block(
    23,
    "Exporting the whole library is only for owners. Open the album, then choose Album menu > Export.",
    title="Exporting albums",
)
ONE_ALBUM = block(24, "Open the album, then choose Album menu > Export.", title="Exporting albums")


def test_only_the_instruction_answers_a_how_to_question():
    assert answer("How can I export one album instead of the whole library?", [ALBUMS, VAULT]) == [
        "Open the album, then choose Album menu > Export."
    ]


def test_the_alternative_the_asker_sets_aside_need_not_be_named():
    for question in (
        "How can I export one album instead of the whole library?",
        "How can I export one album rather than the whole library?",
    ):
        assert answer(question, [ONE_ALBUM, VAULT]) == ["Open the album, then choose Album menu > Export."]


# "What does X do?" asks for X's own description (a sync tool's option reference).
SYNC_NOTES = block(
    33,
    "To copy every volume again, use ``--full-copy`` instead. Add ``--full-copy`` long option.",
    title="vault-sync options",
)
FULL_COPY = "What does vault-sync's --full-copy option do?"


def test_a_sentence_naming_the_option_as_an_object_is_not_its_description():
    assert answer(FULL_COPY, [SYNC_NOTES, VAULT]) == []


def test_the_description_under_the_option_or_opening_with_it_answers():
    under_label = block(
        34,
        ".. option:: --full-copy\n\n   Ignore the saved index and copy every volume again.\n",
        title="vault-sync options",
    )
    opening = block(
        35,
        "``--full-copy`` ignores the saved index and copies every volume again.",
        title="vault-sync options",
    )
    assert answer(FULL_COPY, [SYNC_NOTES, under_label]) == [
        "Ignore the saved index and copy every volume again."
    ]
    assert answer(FULL_COPY, [SYNC_NOTES, opening]) == [
        "``--full-copy`` ignores the saved index and copies every volume again."
    ]


def test_what_a_definition_question_is_about():
    from rag.reader.definition import describes
    from rag.reader.prose import Prose

    question = "What does the snapshot-skipped warning mean?"
    assert describes(question, Prose(text="Snapshot-skipped means the volume was unreachable.", label=""))
    assert describes(question, Prose(text="The volume was unreachable.", label="snapshot-skipped"))
    assert describes(question, Prose(text="It means the volume was unreachable.", label=""))
    assert not describes(
        question, Prose(text="Experimental: support for skipped snapshots.", label="Changes")
    )
    assert describes("How do I skip a snapshot?", Prose(text="Snapshots are cheap.", label=""))


def test_a_figure_the_question_writes_must_be_written_by_the_answer():
    history = block(
        41,
        "The first vault client was released in 2019, and version 2 of the vault client in 2021.",
        title="Vault client history",
    )
    release = block(42, "Vault client 2.4.1 was released on 3 March 2024.", title="Vault client history")
    question = "On what date was vault client 2.4.1 released?"
    assert answer(question, [history, VAULT]) == []
    assert answer(question, [history, release]) == ["Vault client 2.4.1 was released on 3 March 2024."]


def test_a_default_named_for_another_thing_does_not_answer_a_default_question():
    # the entry of the engine setting also states the default typeface: not the engine's default
    engine = block(
        5,
        "The typesetting engine builds the printed guide. Since version 2.0, the default typeface is"
        " Garamond, which covers Latin and Greek.",
        title="Print options",
        section="print_engine",
    )
    assert answer("Which engine does the printed guide use if I don't choose one?", [engine, FARES]) == []
    stated = block(6, "The default engine is lualatex, which handles Unicode.", title="Print options")
    assert answer("Which engine does the printed guide use if I don't choose one?", [stated]) != []


def test_a_release_number_is_not_the_amount_asked_unless_a_version_is_asked():
    drivers = block(
        5,
        "The highest scanning resolution of the scanner depends on the ScanKit v4.2.1 driver.",
        title="Scanner drivers",
    )
    assert answer("What is the highest scanning resolution of the scanner?", [drivers, FARES]) == []
    asked = "Which version of the ScanKit driver does the highest scanning resolution depend on?"
    assert answer(asked, [drivers, FARES]) != []


def test_the_oldest_release_asks_for_a_version_not_a_release_of_the_subject_named():
    # the sentence says every word of the question and states no version of the asked tool
    oldest = block(
        7, "Building the guide needs the makedoc tool, which the tarball does not ship.", title="Guide"
    )
    assert answer("What is the oldest makedoc tool I can use for building the guide?", [oldest, FARES]) == []
    # "4.1.0" is a release of the asked guide, not of the tool
    own = block(8, "The guide 4.1.0 is built with the makedoc tool.", title="Guide")
    assert answer("What is the oldest makedoc tool that the guide 4.1 builds with?", [own, FARES]) == []
    named = block(10, "Makeguide 4.1.0-rc1 will not build with makedoc version 4.1.0.", title="Guide")
    assert answer("What is the oldest makedoc tool that Makeguide 4.1 builds with?", [named, FARES]) == []
    stated = block(9, "The guide 4.1 builds with the makedoc tool 2.3 or later.", title="Guide")
    assert answer("What is the oldest makedoc tool that the guide 4.1 builds with?", [stated, FARES]) != []


GATEWAY = block(
    5,
    "There are a few HTTP headers that control how the gateway routes a call. These correspond to\n"
    "command line flags for _Relay_. There is one exception to this: `X-Api-Version` which if\n"
    "present, should have the value `3`, otherwise the request is rejected with `HTTP 400`.",
    title="Relay as a gateway (relayd)",
    section="Protocol",
)


def test_a_header_name_of_capitalised_parts_names_its_entry_as_an_identifier_does():
    # "X-Api-Version" in the question names the header the sentence is the entry of
    asked = "What value must the X-Api-Version header carry in a relayd request?"
    assert answer(asked, [GATEWAY]) == [
        "There is one exception to this: `X-Api-Version` which if present, should have the value `3`,"
        " otherwise the request is rejected with `HTTP 400`."
    ]
    # ... and another header's entry does not answer for it
    assert answer("What value must the X-Client-Version header carry in a relayd request?", [GATEWAY]) == []


def test_a_heading_s_numbering_names_no_topic():
    # the footnote mark "(1)" is not the exit status 1 the question asks about
    footnote = block(
        7,
        "A coding error in GNU `relay` version 2.5.4 causes it to always use the `~` suffix, but this"
        " should be fixed in the next release.",
        title="Merging with relay",
        section="10 Merging with `relay` > 10.13 GNU `relay` and Traditional `relay` > Footnotes > (1)",
    )
    status = block(
        8,
        "The `relay` command exits with status 0 when every hunk applied. Trouble is status 2.",
        title="Merging with relay",
        section="Exit status",
    )
    assert answer("what does relay's exit code 1 mean", [footnote, status]) == []


def test_heading_numbering_is_left_out_but_one_letter_and_short_names_stay():
    from rag.reader.words import heading_terms

    assert heading_terms("Backups > Footnotes > (1)") == heading_terms("Backups > Footnotes")
    assert heading_terms("10.13 GNU relay > iv.") == heading_terms("GNU relay")
    for name in ("CLI", "R", "vi", "C"):
        assert heading_terms(f"Usage > {name}") > heading_terms("Usage")


LOCKER_OPTIONS = block(
    4,
    ".. confval:: locker_hours\n   :type: ``int``\n   :default: ``12``\n\n"
    "   How long a bag may stay in a station locker.\n\n"
    ".. confval:: locker_currency\n   :type: ``str``\n   :default: ``EUR``\n\n"
    "   The currency locker fees are charged in.",
    title="Station options",
    section="Lockers",
)


def test_an_entry_s_default_option_answers_for_that_entry():
    # the option lines under an entry directive state the entry's type and default
    assert answer("What is the default of locker_hours?", [LOCKER_OPTIONS]) == [":default: ``12``"]


def test_an_entry_s_default_option_is_no_answer_for_another_subject_sharing_a_word():
    # "locker" is shared, but locker_currency's default says nothing of the size of a locker
    assert answer("How big is a locker by default?", [LOCKER_OPTIONS]) == []
