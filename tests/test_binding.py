"""Subject binding (issue 13 item 5): the offline generator answers only with a value of the asked
kind stated about the asked subject. Small inline documents of domains unlike the fixtures: a
camera manual's settings list, a bakery's equipment guide, a library's API changelog, a printer FAQ."""

from __future__ import annotations

from rag.reader.answer_types import asked_noun, asks_version, type_match
from rag.reader.binding import bound_values, clause_spans, code_names, named_things, value_subject
from rag.reader.offline import OfflineGenerator
from rag.reader.prose import prose
from rag.types import Block, Chunk


def block(n: int, text: str, *, title: str = "Manual", section: str = "", doc: str = "") -> Block:
    doc_id = doc or f"doc-{n:03d}"
    chunk = Chunk(chunk_id=f"{doc_id}#c{n:02d}", doc_id=doc_id, title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.6, sent_text=text)


def answer(question: str, blocks: list[Block]) -> list[str]:
    return [d.text for d in OfflineGenerator().generate(question, blocks).drafts]


# A camera manual's settings reference: each setting is a definition term with its description and
# a `Default:` field line; one description mentions the next setting and another setting's default.
BURST = (
    "``burst_mode``\n"
    "    Shoots a series while the shutter is held.\n"
    "    Pair it with ``shutter_lock`` otherwise -- which is the default, since the quiet setting\n"
    "    defaults to ``None`` -- and with ``iso_ceiling`` for how bright it may go.\n"
)
ISO = "``iso_ceiling``\n    The highest ISO sensitivity the camera picks on its own.\n\n    Default: 3200\n"


def test_neighbour_entry_naming_the_asked_setting_never_gives_its_default():
    blocks = [block(1, BURST, section="Exposure > burst_mode")]
    assert answer("What is the default for iso_ceiling?", blocks) == []


def test_default_line_of_the_asked_entry_answers():
    blocks = [
        block(1, BURST, section="Exposure > burst_mode"),
        block(2, ISO, section="Exposure > iso_ceiling"),
    ]
    assert answer("What is the default for iso_ceiling?", blocks) == ["Default: 3200"]


def test_a_value_belongs_to_the_subject_of_its_own_clause():
    text = "Set ``shutter_lock`` first; the quiet setting defaults to ``None``."
    at = text.index("defaults")
    # the clause naming nothing inherits the subject of the clause before it
    assert value_subject(text, at) == frozenset({"shutter_lock"})
    assert value_subject("``iso_ceiling`` defaults to 3200.", 15) == frozenset({"iso_ceiling"})
    # an entry's label is the subject of a line that names nothing
    assert value_subject("Default: 3200", 0, label="iso_ceiling") == frozenset({"iso_ceiling"})


def test_bound_values_accepts_only_a_value_about_an_asked_name():
    text = "Use ``flash_sync`` with it, and the ``red_eye`` option defaults to on."
    at = text.index("defaults")
    assert not bound_values(text, [(at, True)], lambda names: "flash_sync" in names)
    assert bound_values(text, [(at, True)], lambda names: "red_eye" in names)


def test_value_literals_are_not_names():
    assert code_names("defaults to ``None``, ``3200`` or ``'auto'``") == frozenset()
    assert code_names("set ``~lens.Mount.focus()`` and ``--iso-max``") == {"lens.mount.focus", "iso_max"}
    # a reST link is words in prose, not code
    assert code_names("see `the guide <https://example.org/guide>`_") == frozenset()
    assert named_things("the *aperture* argument") == {"aperture"}


def test_clauses_do_not_break_inside_code():
    text = "It calls ``clamp(0, iso)``; then stops, unless told otherwise"
    pieces = [text[a:b] for a, b in clause_spans(text)]
    assert pieces[0].startswith("It calls ``clamp(0, iso)``")
    assert len(pieces) == 3


# A library's changelog: another argument's new default is not the asked one's.
CHANGELOG = (
    "Changes\n-------\n\n"
    "- ``shelf.add``'s *tags* argument now defaults to a fresh empty ``list`` instead of sharing one "
    "list between items.\n"
)


def test_another_arguments_default_does_not_answer_a_paraphrased_default_question():
    question = "How do I give a shelf item an empty list as its default so items don't share the same list?"
    assert answer(question, [block(1, CHANGELOG, title="Shelf changelog")]) == []


def test_a_name_before_by_default_may_be_the_value_itself():
    text = (
        "Indexing\n--------\n\nThe camera keeps its photo index in a small database file "
        "(named ``lumen-index.db`` by default), so the card must be writable."
    )
    got = answer("What file name does the camera use by default for its photo index?", [block(1, text)])
    assert got and "lumen-index.db" in got[0]


def test_version_question_needs_a_version_not_any_figure():
    question = "Which firmware versions were affected by the unsafe sensor gain?"
    assert asks_version(question)
    assert type_match("The sensor sets an unsafe gain by default (gain 0).", "number", question) == 0.0
    assert type_match("Firmware 2.1, 2.2 and 2.3 are affected.", "number", question) == 1.0
    assert type_match("It needs Android 12 or later.", "number", "Which Android version does it need?") == 1.0
    assert not asks_version("What changed in version 5 of the manual?")


def test_a_reason_for_something_else_is_not_the_asked_reason():
    question = "Why is the camera called Aurora?"
    wrong = "Due to how the lens motor works, the shutter sound cannot be turned off."
    right = "The camera is called Aurora because its first sensor was tuned under northern skies."
    assert type_match(wrong, "cause", question) == 0.0
    assert type_match(right, "cause", question) == 1.0
    noun = "Dust on the sensor was identified as the cause."
    assert type_match(noun, "cause", "What caused the blurry photos?") == 1.0


def test_what_noun_question_needs_that_noun_or_a_value():
    assert asked_noun("What error does the printer show when the tray is empty?") == "error"
    assert asked_noun("What happens when the tray is empty?") == ""
    # the head of a longer noun phrase is the asked noun
    assert asked_noun("What random number seed does the printer use?") == "seed"
    assert asked_noun("Which paper tray size does the printer take?") == "size"
    printer = (
        "Allowed trays\n-------------\n\n"
        "The printer console will only be served if the request comes from a trusted tray."
    )
    others = [
        block(2, "Errors\n------\n\nAn error is logged when an untrusted job fails."),
        block(3, "Jobs\n----\n\nA failed job shows an error."),
        block(4, "Paper\n-----\n\nUse plain paper to avoid an error."),
    ]
    question = "What error does the printer console return for a request from an untrusted tray?"
    assert answer(question, [block(1, printer), *others]) == []


def test_a_question_heading_about_another_subject_does_not_bind_its_answer():
    faq = (
        "How can I increase the maximum number of stored photos?\n"
        "-------------------------------------------------------\n\n"
        "Running `sudo format` is ineffective—switch to the card menu, adjust the limit, then launch Lumen.\n"
    )
    bursts = "Bursts\n------\n\nEach worker of the burst engine takes shots in turn. Workers change often."
    blocks = [block(1, faq, title="FAQ"), block(2, bursts, title="Bursts")]
    assert answer("How can I change the number of workers while Lumen is running?", blocks) == []


def test_boilerplate_shared_by_pages_about_different_subjects_answers_neither():
    def notes(version: str, name: str) -> str:
        return (
            "Preface\n=======\n\n"
            "Releases in the 3.x line are codenamed after rivers. "
            f"This release has been codenamed {name}.\n"
        )

    blocks = [
        block(1, notes("3.1", "Danube"), title="What's new in Lumen 3.1", doc="lumen-3-1"),
        block(2, notes("3.2", "Volga"), title="What's new in Lumen 3.2", doc="lumen-3-2"),
    ]
    got = answer("What is the codename of Lumen 3.2?", blocks)
    assert all("after rivers" not in s for s in got)


def test_yes_no_question_needs_more_than_half_of_it_named():
    guide = (
        "Getting started\n---------------\n\n"
        "After you have finished this guide, it's a good idea to browse the rest of the lens manual."
    )
    blocks = [
        block(1, guide, title="First steps with Lumen"),
        block(2, "Root access\n-----------\n\nThe camera has no root.", title="Security"),
    ]
    assert answer("Is running the lumen camera as root a good idea?", blocks) == []


def test_trailing_condition_must_be_named_by_the_answer():
    fields = "Storage\n-------\n\n- Photo library: 200 GB per member\n- Member email: name@lumen.example\n"
    question = "What happens to my member email once my membership ends?"
    assert answer(question, [block(1, fields, title="Membership")]) == []
    named = fields + "\nMember email stays active for 30 days once a membership ends.\n"
    assert any("30 days" in s for s in answer(question, [block(1, named, title="Membership")]))


def test_yes_no_question_needs_its_rarest_term_named():
    orders = (
        "Orders\n------\n\n"
        "Custom cake orders cancelled late are charged **$10 per cake**, up to a maximum of $30 per order."
    )
    blocks = [
        block(1, orders, title="Bakery orders"),
        block(
            2,
            "Pickup\n------\n\nA cake picked up late can be cancelled and is charged nothing extra.",
            title="Pickup",
        ),
        block(3, "Weddings\n--------\n\nA planning fee applies to wedding tastings.", title="Weddings"),
    ]
    # a late charge for cakes is not the asked fee
    assert answer("Do you charge fees if I cancel a cake late?", blocks) == []


FLASH = (
    "Available options\n-----------------\n\n"
    "* ``FLASH_MODE``\n\n    Flash behaviour when the light is low. Default is AUTO.\n\n"
    "* ``FLASH_POWER``\n\n    Flash strength as a fraction of full power. Default is 1/2\n\n"
    "* ``FLASH_SYNC``\n"
)


def test_a_list_item_that_is_one_code_name_labels_its_description():
    got = {p.text: p.label for p in prose(FLASH)}
    assert got["Default is AUTO."] == "FLASH_MODE"
    # a short unpunctuated sentence continuing its paragraph is content, under its own entry
    assert got["Default is 1/2"] == "FLASH_POWER"
    assert got["``FLASH_SYNC``"] == "Available options"  # nothing described below it


def test_default_is_taken_from_the_asked_entry_of_a_reference_list():
    blocks = [block(1, FLASH, title="Flash", section="Camera settings > Available options")]
    assert answer("What flash mode does the camera use by default?", blocks) == ["Default is AUTO."]


def test_a_count_stated_as_the_number_of_things_counts_them():
    text = (
        "Buffer\n------\n\nThe camera keeps recent shots in a buffer.\n\n"
        "The maximum number of photos to keep in the buffer can be set with the ``BUFFER_SIZE`` "
        "variable, which defaults to 40."
    )
    got = answer("How many photos does the camera keep in the buffer by default?", [block(1, text)])
    assert got and "40" in got[0]


def test_the_verb_of_using_a_named_thing_is_not_topic():
    from rag.reader.question import _usage_verbs

    assert _usage_verbs("If I call flash() without giving a category, what ...?") == {"call"}
    assert _usage_verbs("How do I run ``make docs``?") == {"run"}
    assert _usage_verbs("Can I call my mother from the office?") == frozenset()


def test_a_qualified_name_is_asked_by_its_last_part():
    from rag.reader.binding import names_only_asked

    asked = frozenset({"default", "timeout"})
    assert names_only_asked(frozenset({"worker.timeout"}), asked)
    assert not names_only_asked(frozenset({"graceful_timeout"}), asked)


def test_a_type_noun_that_modifies_another_noun_asks_no_date():
    assert type_match("Opens at 9:00 am daily.", "date", "What time does the shop open?") == 1.0
    from rag.reader.answer_types import answer_type

    assert answer_type("What time does the shop open?") == "date"
    assert answer_type("Which time zone does the camera clock use?") == ""
