"""A question typed in lower case names what the passages it reads name (`reader.words`)."""

from __future__ import annotations

from rag.reader.words import names_typed_in_lower_case


def test_a_heading_that_is_the_word_capitalised_makes_it_a_name() -> None:
    named = names_typed_in_lower_case(
        "what does the team plan cost per user?", ["Every plan is billed per seat."], ["Pricing", "Team"]
    )
    assert named == {"team"}


def test_two_words_the_passages_always_write_with_a_capital_make_the_first_a_name() -> None:
    texts = ["Upgrade to the Team plan for guests. Your team can invite five people."]
    assert names_typed_in_lower_case("how many guests does the team plan allow?", texts, []) == {"team"}
    # written once in lower case together: not a name
    texts.append("the team plan is our cheapest")
    assert names_typed_in_lower_case("how many guests does the team plan allow?", texts, []) == frozenset()


def test_a_word_the_question_capitalises_or_a_month_is_left_to_proper_names() -> None:
    assert (
        names_typed_in_lower_case("What does the Team plan cost?", ["the Team plan"], ["Team"]) == frozenset()
    )
    assert names_typed_in_lower_case("what happened in may?", [], ["May"]) == frozenset()


def test_a_capital_that_only_starts_sentences_makes_no_name() -> None:
    texts = ["Backups run nightly. Backups run again at noon."]
    assert names_typed_in_lower_case("when do backups run?", texts, []) == frozenset()
