"""The standalone question of a follow-up (`rag.answer.followup`), offline, without the encoder."""

from __future__ import annotations

import pytest

from rag.answer.followup import follow_up_focus, lost_words, resolve, standalone_question, without_remark

LEAVE = "How many days of annual leave do full-time employees get?"
TRASH = "How long do deleted projects stay in the trash?"


@pytest.mark.parametrize(
    ("follow_up", "expected"),
    [
        # a bare phrase replaces the earlier phrase of its kind (a shared compound part)
        ("And part-time staff?", "How many days of annual leave do part-time staff get?"),
        # ... or, with nothing of its kind, the earlier question's subject
        ("What about contractors?", "How many days of annual leave do contractors get?"),
        ("And for remote workers?", "How many days of annual leave do remote workers get?"),
        # a qualifier with no word of letters is added, the earlier question kept whole
        ("And in 2027?", "How many days of annual leave do full-time employees get, in 2027?"),
        # a pronoun with its own predicate: the earlier phrases agreeing with it in number, not the
        # subject (who asked) while another phrase agrees
        ("Does it carry over?", "Does it carry over (annual leave)?"),
        # no content of its own: the earlier question's content, its frame dropped
        ("How long?", "How long (days annual leave full-time employees)?"),
        # a count whose noun is left out counts the earlier question's
        (
            "And how many do contractors get?",
            "And how many do contractors get (days annual leave full-time employees)?",
        ),
    ],
)
def test_resolve_carries_the_earlier_subject_into_an_elliptical_follow_up(
    follow_up: str, expected: str
) -> None:
    assert resolve(follow_up, LEAVE) == expected


def test_resolve_a_plural_pronoun_refers_to_the_plural_phrase() -> None:
    assert resolve("Who can restore them?", TRASH) == "Who can restore them (deleted projects stay)?"


@pytest.mark.parametrize(
    "follow_up",
    [
        "What is the capital of Australia?",
        "How do I reset my password?",
        "Is it possible to export my data?",  # a dummy "it" refers to nothing
        "How many days of annual leave do part-time staff get?",
        # a connective before a complete question only joins it on
        "And how do I cancel my subscription?",
        # a pronoun whose noun comes before it in the same question refers to nothing earlier
        "What happens to my files when they expire?",
        "How do I reset my password if I forget it?",
    ],
)
def test_resolve_leaves_a_self_contained_follow_up_alone(follow_up: str) -> None:
    assert resolve(follow_up, LEAVE) == follow_up


def test_standalone_question_resolves_each_earlier_turn_in_order() -> None:
    # the second turn became "... part-time staff get?", which the third replaces again
    earlier = [LEAVE, "And part-time staff?"]
    assert standalone_question("What about contractors?", earlier) == (
        "How many days of annual leave do contractors get?"
    )
    assert standalone_question("And part-time staff?", []) == "And part-time staff?"


def test_standalone_question_reads_only_the_earlier_questions() -> None:
    # the signature takes questions: an earlier answer cannot add a search term
    assert standalone_question("Does it carry over?", [LEAVE]) == "Does it carry over (annual leave)?"


@pytest.mark.parametrize(
    "follow_up",
    [
        # a clitic on the frame word ("what's") still opens a question frame
        "What's the refund policy for annual plans?",
        # a wh-word after a leading preposition, with a predicate of its own
        "In which country is the head office located?",
        # ... or after a leading clause ended by a comma
        "If my laptop breaks, who do I contact?",
    ],
)
def test_resolve_finds_a_question_frame_after_a_clitic_a_preposition_or_a_clause(follow_up: str) -> None:
    assert resolve(follow_up, LEAVE) == follow_up


def test_a_leading_preposition_frames_a_predicate_and_leaves_a_bare_phrase_elliptical() -> None:
    # framed, and its pronoun refers back: the earlier topic is added as for any framed follow-up
    assert resolve("In which office is it kept?", LEAVE) == "In which office is it kept (annual leave)?"
    # no auxiliary or copula after the wh-word: a bare phrase, never returned as self-contained
    assert resolve("Since which version?", LEAVE) != "Since which version?"


def test_a_pronoun_with_a_clitic_refers_back_unless_its_noun_comes_first() -> None:
    assert resolve("What happens if it's not used?", LEAVE) == "What happens if it's not used (annual leave)?"
    own = "How long do you keep backups before they're deleted?"
    assert resolve(own, LEAVE) == own


def test_a_demonstrative_before_a_noun_keeps_every_earlier_phrase() -> None:
    # "that limit" names its own kind: the earlier question's number does not pick among its phrases
    assert resolve("What's that limit based on?", LEAVE) == (
        "What's that limit based on (days annual leave full-time employees)?"
    )


@pytest.mark.parametrize(
    ("follow_up", "earlier", "expected"),
    [
        # do-support's subject ends before the main verb that a preposition follows
        (
            "And for tablets?",
            "What font size does the reader app open with when nothing is set?",
            "What font size does the tablets open with when nothing is set?",
        ),
        (
            "What about invoices?",
            "How long do receipts stay in the archive?",
            "How long do invoices stay in the archive?",
        ),
    ],
)
def test_a_bare_phrase_replaces_the_subject_not_the_verb_after_it(
    follow_up: str, earlier: str, expected: str
) -> None:
    assert resolve(follow_up, earlier) == expected


@pytest.mark.parametrize(
    "follow_up",
    [
        # "that" after a noun opens a relative clause, it refers to nothing earlier
        "Which plan includes the reports that don't expire?",
        # a contraction typed without its apostrophe carries the frame's verb
        "and the night bus, whats that cost",
    ],
)
def test_a_follow_up_framed_after_a_lead_in_or_with_a_relative_that_stands_alone(follow_up: str) -> None:
    assert resolve(follow_up, "How much is a day ticket for the tram?") == follow_up


@pytest.mark.parametrize(
    ("follow_up", "earlier", "expected"),
    [
        # overlapping spans: the longer phrase replaces, the shorter has nothing left of its own
        (
            "what about a follow-up visit thats not a first one?",
            "which forms does the clinic send when it books a first visit and in what order",
            "which forms does the clinic send when it books a follow-up visit and in what order",
        ),
        # a bare condition replaces the earlier condition
        (
            "and if the train is cancelled?",
            "what refund does the operator give when a train is late",
            "what refund does the operator give if the train is cancelled?",
        ),
        # a code-shaped token replaces the one earlier token of its shape
        ("and --verbose?", "what does the tool's --quiet flag do", "what does the tool's --verbose flag do"),
        ("and PATH?", "what is HOME set to in a login shell", "what is PATH set to in a login shell"),
        # a bare phrase stands in for the possessor whose attribute is asked
        (
            "what about the museum?",
            "what are the library's opening hours",
            "what are the museum's opening hours",
        ),
        # a pronoun keeps the earlier subject when it agrees with it
        ("is it free?", "what does the shuttle bus do at night", "is it free (shuttle bus night)?"),
    ],
)
def test_a_follow_up_replaces_the_earlier_phrase_of_its_kind(
    follow_up: str, earlier: str, expected: str
) -> None:
    assert resolve(follow_up, earlier) == expected


@pytest.mark.parametrize(
    ("follow_up", "earlier", "expected"),
    [
        # "that" ending its clause (a preposition follows it) stands for something said earlier
        (
            "whats the fee to cancel that in the app",
            "how much is the monthly tram pass?",
            "whats the fee to cancel that in the app (monthly tram pass)?",
        ),
        # "such" before a noun refers back to what the earlier turn described
        (
            "Which form should the people signing such a contract use?",
            "what contract do we sign with a new cleaning supplier?",
            "Which form should the people signing such a contract use (new cleaning supplier)?",
        ),
        # a relative clause after the pronoun's antecedent restricts it: its phrases are kept too
        (
            "can i move them all to one folder instead",
            "where do the photos that the camera couldn't upload end up",
            "can i move them all to one folder instead (photos camera upload end)?",
        ),
    ],
)
def test_a_reference_by_that_such_or_a_restricted_antecedent_is_resolved(
    follow_up: str, earlier: str, expected: str
) -> None:
    assert resolve(follow_up, earlier) == expected


@pytest.mark.parametrize(
    "follow_up",
    [
        # a relative "that" has a clause after it, a subject or a verb
        "Which plan includes the reports that managers export?",
        "What is the fee for tickets that don't expire?",
        # "such as" gives examples, "such a ... as" compares: neither refers back
        "Do the trams have discounts such as student fares?",
        "Is there such a thing as a free weekend ticket?",
    ],
)
def test_a_relative_that_or_such_as_refers_to_nothing_earlier(follow_up: str) -> None:
    assert resolve(follow_up, "how much is the monthly tram pass?") == follow_up


def test_a_plain_plural_antecedent_keeps_no_later_phrase() -> None:
    # no relative clause after "deleted projects": only the phrases agreeing with "them"
    assert resolve("Who can restore them?", TRASH) == "Who can restore them (deleted projects stay)?"
    # ... and do-support's subject after a relative clause stays out (who asks, not what is asked)
    earlier = "How many days of leave that I did not take do employees get?"
    assert resolve("does it carry over?", earlier) == "does it carry over (leave take)?"


@pytest.mark.parametrize(
    ("follow_up", "earlier", "lost"),
    [
        # the longer phrase replaced the earlier one, the shorter ("first") was left out of the search
        (
            "what about a follow-up visit thats not a first one?",
            "which forms does the clinic send when it books a first visit and in what order",
            ("first",),
        ),
        # every word of the follow-up is searched for: nothing lost (a possessive holds its noun)
        ("And part-time staff?", LEAVE, ()),
        ("what about the museum?", "what are the library's opening hours", ()),
        ("Does it carry over?", LEAVE, ()),
        # a self-contained follow-up is searched as it stands
        ("How do I reset my password?", LEAVE, ()),
    ],
)
def test_lost_words_are_the_follow_ups_own_words_its_search_left_out(
    follow_up: str, earlier: str, lost: tuple[str, ...]
) -> None:
    assert lost_words(follow_up, standalone_question(follow_up, [earlier])) == lost


@pytest.mark.parametrize(
    ("follow_up", "expected"),
    [
        # an acknowledgement before an elliptical follow-up is talk: the follow-up resolves as without it
        ("Thanks! And part-time staff?", "How many days of annual leave do part-time staff get?"),
        ("ok, does it carry over?", "does it carry over (annual leave)?"),
        ("great - what about contractors?", "How many days of annual leave do contractors get?"),
        # a remark announcing a new question is left out of a self-contained one
        ("Different question: how do I reset my password?", "how do I reset my password?"),
        ("unrelated, what is the capital of Australia?", "what is the capital of Australia?"),
        ("Another thing: what does the export button do?", "what does the export button do?"),
    ],
)
def test_an_opening_remark_is_left_out_of_the_search(follow_up: str, expected: str) -> None:
    assert resolve(follow_up, LEAVE) == expected


@pytest.mark.parametrize(
    "follow_up",
    [
        "In bash, what prompt does select show?",  # a phrase of the question, not a remark
        "Paris, what is it?",
        "No, I mean the part-time staff",  # no question frame after the remark: not left out
    ],
)
def test_a_lead_in_that_is_not_only_remark_words_is_kept(follow_up: str) -> None:
    assert without_remark(follow_up) == follow_up


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # a greeting or thanks is read off whatever follows it
        (
            "Hi! I deleted a task by mistake, how do I get it back?",
            "I deleted a task by mistake, how do I get it back?",
        ),
        ("Hello, good morning. Which plan includes SSO?", "Which plan includes SSO?"),
        # remarks one after another, each ended by its mark
        ("Ok, thanks. Another question: what is the refund window?", "what is the refund window?"),
        ("Hi, please tell me the refund window", "please tell me the refund window"),
    ],
)
def test_a_first_question_is_searched_without_its_opening_remarks(question: str, expected: str) -> None:
    assert standalone_question(question, []) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "How long do deleted projects stay in the trash? Thanks in advance.",
            "How long do deleted projects stay in the trash?",
        ),
        ("Hi! Which plan includes SSO? Many thanks, Bob.", "Which plan includes SSO?"),
        ("Where do I send thank you notes?", "Where do I send thank you notes?"),  # no mark before it
    ],
)
def test_thanks_after_the_question_are_left_out_of_the_search(question: str, expected: str) -> None:
    assert without_remark(question) == expected


def test_a_question_that_is_only_a_remark_is_left_as_typed() -> None:
    assert without_remark("Thanks!") == "Thanks!"
    assert without_remark("ok.") == "ok."


def test_an_opening_remark_is_not_a_word_the_answer_must_say() -> None:
    asked = "Different question: how do I reset my password?"
    assert follow_up_focus(asked, resolve(asked, LEAVE)) == ()
    thanked = "Thanks! And for part-time staff?"
    assert follow_up_focus(thanked, resolve(thanked, LEAVE)) == ("part-time", "staff")


def test_a_long_run_of_words_before_a_mark_is_read_in_bounded_time() -> None:
    # the remark pattern is bounded: a long line of words with no mark, or a mark far in, is no remark
    line = "ok " * 20000 + "!"
    assert without_remark(line) == line
