import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.language.numbers import find_numbers
from rag.support.figures import missing_figures

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def _words(n: int, hyphen: bool = True) -> str:
    """An independent English rendering of 0 <= n < 1,000,000."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (("-" if hyphen else " ") + _ONES[ones] if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + (f" and {_words(rest, hyphen)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    joiner = " and " if 0 < rest < 100 else " "
    return f"{_words(thousands, hyphen)} thousand" + (joiner + _words(rest, hyphen) if rest else "")


def _spellings(n: int) -> list[str]:
    out = [str(n), f"{n:,}", _words(n), _words(n, hyphen=False)]
    if n % 12 == 0 and 0 < n <= 144:
        out.append("a dozen" if n == 12 else f"{_ONES[n // 12]} dozen")
    if n in (100, 1000):
        out.append("a hundred" if n == 100 else "a thousand")
    return out


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ninety failed attempts", 90),
        ("twenty-five days", 25),
        ("twenty five days", 25),
        ("three hundred users", 300),
        ("three hundred and forty-two", 342),
        ("two thousand five hundred", 2500),
        ("two and a half hours", 2.5),
        ("2 and a half hours", 2.5),
        ("a dozen seats", 12),
        ("half a dozen seats", 6),
        ("two-thirds of seats", 2 / 3),
        ("three quarters of seats", 0.75),
        ("1.5 million rows", 1.5e6),
        ("one and a half million rows", 1.5e6),
        ("2½ hours", 2.5),
    ],
)
def test_find_numbers_reads_compound_scaled_and_fractional_words(text: str, value: float) -> None:
    (number,) = find_numbers(text)
    assert number.value == pytest.approx(value)
    assert not number.ordinal


@pytest.mark.parametrize(
    ("text", "value"), [("the third attempt", 3), ("the 21st day", 21), ("twenty-first", 21)]
)
def test_find_numbers_reads_ordinals(text: str, value: float) -> None:
    (number,) = find_numbers(text)
    assert (number.value, number.ordinal) == (value, True)


@pytest.mark.parametrize(
    "text", ["someone", "wait a second", "hundreds of users", "dozens of them", "once an hour"]
)
def test_find_numbers_ignores_vague_amounts_and_words_inside_words(text: str) -> None:
    assert find_numbers(text) == []


def test_missing_figures_withholds_a_number_word_that_changes_the_value() -> None:
    evidence = ["After 10 failed sign-in attempts, the account is locked for 15 minutes."]
    assert missing_figures(
        "After ninety failed sign-in attempts, the account is locked for 15 minutes.", evidence
    ) == ["ninety"]
    assert (
        missing_figures("After ten failed sign-in attempts, the account is locked for 15 minutes.", evidence)
        == []
    )


@pytest.mark.parametrize(
    ("sentence", "evidence", "missing"),
    [
        ("Projects stay for thirty days.", "Deleted projects stay in the trash for 30 days.", []),
        ("Projects stay for a month.", "Deleted projects stay in the trash for 30 days.", []),
        ("Projects stay for 31 days.", "Deleted projects stay in the trash for 30 days.", ["31"]),
        ("It is locked for half an hour.", "It is locked for 30 minutes.", []),
        ("It is locked for two and a half hours.", "It is locked for 150 minutes.", []),
        ("It is locked for two hours.", "It is locked for 150 minutes.", ["two"]),
        ("The fee is twelve dollars.", "The fee is $12 per seat.", []),
        ("The fee is $9.99.", "The fee is $10.", ["9.99"]),
        ("A quarter of seats are free.", "25% of seats are free.", []),
        ("A third of seats are free.", "25% of seats are free.", ["A third"]),
        ("Weeks 50% over capacity are red.", "Weeks over capacity by more than half are red.", []),
        ("Weeks 40% over capacity are red.", "Weeks over capacity by more than half are red.", ["40"]),
        ("Twenty-five percent of seats are free.", "25% of seats are free.", []),
        ("The third reminder is final.", "The 3rd reminder is final.", []),
        ("The fourth reminder is final.", "The 3rd reminder is final.", ["fourth"]),
        ("First, open Settings.", "Open Settings.", []),
        ("One of the admins approves it.", "An admin approves it.", []),
        ("Export takes 15 minutes.", "After 15 attempts the export takes 30 minutes.", ["15"]),
        ("Released on March 18, 2026.", "Updated 2026-03-18.", []),
        (
            "Lumio emails the owner a month before expiry.",
            "Lumio emails the owner a week before expiry.",
            ["a month"],
        ),
        ("Lumio emails the owner a week before expiry.", "Lumio emails the owner 7 days before expiry.", []),
        ("Reports are sent once a week.", "Reports are sent every Monday.", []),
        ("For a rotation, first add the new key.", "Add the new key, then remove the old one.", []),
    ],
)
def test_missing_figures_compares_quantities_in_any_spelling(
    sentence: str, evidence: str, missing: list[str]
) -> None:
    assert missing_figures(sentence, [evidence]) == missing


_UNITS = ["days", "minutes", "failed attempts", "percent", "MB"]


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(st.integers(2, 999), st.integers(1000, 999_999)),
    unit=st.sampled_from(_UNITS),
    data=st.data(),
)
def test_missing_figures_accepts_every_spelling_of_the_value_and_rejects_another_value(
    value: int, unit: str, data: st.DataObject
) -> None:
    spellings = _spellings(value)
    evidence_form = data.draw(st.sampled_from(spellings))
    sentence_form = data.draw(st.sampled_from(spellings))
    evidence = f"The limit is {evidence_form} {unit} for each workspace."
    assert missing_figures(f"Each workspace gets {sentence_form} {unit}.", [evidence]) == []
    other = data.draw(st.integers(2, 999_999).filter(lambda v: v != value))
    other_form = data.draw(st.sampled_from(_spellings(other)))
    assert missing_figures(f"Each workspace gets {other_form} {unit}.", [evidence]) == [other_form]


@settings(max_examples=100, deadline=None)
@given(whole=st.integers(1, 9), data=st.data())
def test_missing_figures_reads_halves_in_every_spelling(whole: int, data: st.DataObject) -> None:
    minutes = whole * 60 + 30
    forms = [
        f"{whole}.5 hours",
        f"{_words(whole)} and a half hours",
        f"{whole} and a half hours",
        f"{minutes} minutes",
    ]
    evidence = f"Exports finish within {data.draw(st.sampled_from(forms))}."
    assert missing_figures(f"An export takes up to {data.draw(st.sampled_from(forms))}.", [evidence]) == []
    assert missing_figures(f"An export takes up to {whole + 1} hours.", [evidence]) != []


# (percent, the share in words): every spelling of one share must pass, another share must fail
_SHARES = [
    (50, ["half", "one half"]),
    (25, ["a quarter", "one quarter"]),
    (75, ["three quarters", "three-quarters"]),
    (20, ["a fifth", "one fifth"]),
    (60, ["three fifths", "three-fifths"]),
    (33, ["a third", "one third"]),
    (67, ["two thirds", "two-thirds"]),
    (10, ["a tenth", "one tenth"]),
]


@settings(max_examples=100, deadline=None)
@given(share=st.sampled_from(_SHARES), other=st.sampled_from(_SHARES), data=st.data())
def test_missing_figures_reads_a_share_as_a_percentage_or_in_words(
    share: tuple[int, list[str]], other: tuple[int, list[str]], data: st.DataObject
) -> None:
    percent, words = share
    forms = [f"{percent}%", f"{percent} percent", *words]
    evidence = f"Refunds are paid for {data.draw(st.sampled_from(forms))} of the unused seats."
    sentence_form = data.draw(st.sampled_from(forms))
    assert missing_figures(f"You get back {sentence_form} of the unused seats.", [evidence]) == []
    if other[0] != percent:
        other_form = data.draw(st.sampled_from([f"{other[0]}%", *other[1]]))
        assert missing_figures(f"You get back {other_form} of the unused seats.", [evidence]) != []
