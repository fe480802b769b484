import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.language.quantities import Quantity, find_quantities, same_value


def _one(text: str) -> Quantity:
    (quantity,) = find_quantities(text)
    return quantity


@pytest.mark.parametrize(
    ("text", "value", "unit", "dimension", "written"),
    [
        ("Uploads stop at 250 MB per file.", 250 * 1024**2, "B", "bytes", "250 MB"),
        ("a 2GB disk", 2 * 1024**3, "B", "bytes", "2GB"),
        ("1.5 TiB free", 1.5 * 1024**4, "B", "bytes", "1.5 TiB"),
        ("up to 10 kilobytes", 10 * 1024, "B", "bytes", "10 kilobytes"),
        ("kept for 30 days", 30 * 86400, "s", "duration", "30 days"),
        ("a 90-day trial", 90 * 86400, "s", "duration", "90-day"),
        ("every 2 weeks", 14 * 86400, "s", "duration", "2 weeks"),
        ("after 15 minutes", 900, "s", "duration", "15 minutes"),
        ("within 45s", 45, "s", "duration", "45s"),
        ("for thirty days", 30 * 86400, "s", "duration", "thirty days"),
        ("100 requests per minute", 100, "/min", "rate_per_minute", "100 requests per minute"),
        ("100 req/min", 100, "/min", "rate_per_minute", "100 req/min"),
        ("6,000 per hour", 100, "/min", "rate_per_minute", "6,000 per hour"),
        ("10 calls per second", 600, "/min", "rate_per_minute", "10 calls per second"),
        ("uptime of 99.9%", 99.9, "%", "percent", "99.9%"),
        ("15 percent off", 15, "%", "percent", "15 percent"),
        ("costs $12 per user", 12, "USD", "money_usd", "$12"),
        ("costs USD 12", 12, "USD", "money_usd", "USD 12"),
        ("costs 12 dollars", 12, "USD", "money_usd", "12 dollars"),
        ("raised $1.5 million", 1.5e6, "USD", "money_usd", "$1.5 million"),
        ("costs US$1,200.50", 1200.5, "USD", "money_usd", "US$1,200.50"),
        ("costs €5", 5, "EUR", "money_eur", "€5"),
        ("two hundred MB", 200 * 1024**2, "B", "bytes", "two hundred MB"),
        ("for two and a half hours", 9000, "s", "duration", "two and a half hours"),
        ("half an hour later", 1800, "s", "duration", "half an hour"),
        ("twenty-five percent", 25, "%", "percent", "twenty-five percent"),
        ("one and a half million dollars", 1.5e6, "USD", "money_usd", "one and a half million dollars"),
    ],
)
def test_find_quantities_normalises_units(
    text: str, value: float, unit: str, dimension: str, written: str
) -> None:
    quantity = _one(text)
    assert quantity.value == pytest.approx(value)
    assert (quantity.unit, quantity.dimension, quantity.text) == (unit, dimension, written)
    assert text[quantity.start : quantity.end] == written


@pytest.mark.parametrize(
    "text",
    [
        "We have 3.5 people.",
        "Lumio v2.3 shipped.",
        "In the 1990s.",
        "Wait 5 s.",
        "ten b",
        "page 12",
    ],
)
def test_find_quantities_ignores_bare_numbers_versions_and_ambiguous_units(text: str) -> None:
    assert find_quantities(text) == []


def test_find_quantities_finds_several_in_order() -> None:
    found = find_quantities("Files up to 100 MB are kept for 30 days at 99% durability.")
    assert [q.dimension for q in found] == ["bytes", "duration", "percent"]


def test_same_value_gigabyte_equals_1024_megabytes() -> None:
    assert same_value(_one("1 GB"), _one("1024 MB"))


def test_same_value_tolerates_decimal_and_binary_prefix_mixing() -> None:
    assert same_value(_one("1 GB"), _one("1000 MB"))


def test_same_value_twelve_months_equal_a_year_but_not_eleven() -> None:
    assert same_value(_one("12 months"), _one("1 year"))
    assert same_value(_one("12 months"), _one("365 days"))
    assert not same_value(_one("11 months"), _one("1 year"))


def test_same_value_rate_per_hour_equals_rate_per_minute() -> None:
    assert same_value(_one("6,000 per hour"), _one("100 requests per minute"))


def test_same_value_different_values_or_dimensions_differ() -> None:
    assert not same_value(_one("250 MB"), _one("100 MB"))
    assert not same_value(_one("30 days"), _one("90 days"))
    assert not same_value(_one("30%"), _one("$30"))


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_find_quantities_never_raises_and_offsets_reproduce_text(text: str) -> None:
    for quantity in find_quantities(text):
        assert text[quantity.start : quantity.end] == quantity.text
        assert quantity.value >= 0


@pytest.mark.parametrize(
    ("text", "value", "dimension", "written"),
    [
        ("Each pickup takes up to 4 items, no more.", 4, "count:item", "4 items"),
        ("You may put out six items.", 6, "count:item", "six items"),
        ("Members get two free guest passes each year.", 2, "count:pass", "two free guest passes"),
        ("The town had 3,559 people at the census.", 3559, "count:peopl", "3,559 people"),
    ],
)
def test_find_quantities_count_with_noun_is_keyed_by_the_stemmed_noun(
    text: str, value: float, dimension: str, written: str
) -> None:
    quantity = _one(text)
    assert (quantity.value, quantity.dimension, quantity.text) == (value, dimension, written)


def test_same_value_count_written_in_words_equals_digits_but_not_other_nouns() -> None:
    assert same_value(_one("up to four items"), _one("up to 4 items"))
    assert not same_value(_one("up to 4 items"), _one("up to 6 items"))
    assert not same_value(_one("up to 4 items"), _one("up to 4 bags"))


@pytest.mark.parametrize(
    "text",
    [
        "See page 12 for details.",
        "It runs on the new Android 10 devices.",
        "Put the bin out by 6:00 am sharp.",
        "In 2010 residents voted.",
        "Only 3 of them passed.",
        "Version 3 adds dark mode.",
    ],
)
def test_find_quantities_labels_times_years_and_stop_words_are_not_counts(text: str) -> None:
    assert find_quantities(text) == []


def test_find_quantities_counts_false_leaves_counts_out() -> None:
    assert find_quantities("up to 4 items", counts=False) == []


@pytest.mark.parametrize(
    ("text", "per_year", "dimension", "written"),
    [
        ("A locker costs $96 per year.", 96, "money_usd_per_year", "$96 per year"),
        ("It costs $72 a year.", 72, "money_usd_per_year", "$72 a year"),
        ("Only $8/month.", 96, "money_usd_per_year", "$8/month"),
        ("Storage is €2 per day.", 730, "money_eur_per_year", "€2 per day"),
        ("It is 10 dollars per month.", 120, "money_usd_per_year", "10 dollars per month"),
    ],
)
def test_find_quantities_money_per_period_normalises_to_a_year(
    text: str, per_year: float, dimension: str, written: str
) -> None:
    quantity = _one(text)
    assert quantity.value == pytest.approx(per_year)
    assert (quantity.dimension, quantity.text) == (dimension, written)


def test_same_value_monthly_price_equals_twelve_times_yearly_but_not_a_one_off_price() -> None:
    assert same_value(_one("$8 per month"), _one("$96 per year"))
    assert not same_value(_one("$8 per month"), _one("$90 per year"))
    assert not same_value(_one("$96 per year"), _one("$96"))


def test_find_quantities_money_per_other_thing_stays_money() -> None:
    assert _one("costs $12 per user").dimension == "money_usd"


def test_find_quantities_years_only_when_asked_for() -> None:
    text = "The bridge opened on July 15, 1932, after work began in 1929."
    assert find_quantities(text) == []
    found = find_quantities(text, years=True)
    assert [(q.dimension, q.value) for q in found] == [("year", 1932), ("year", 1929)]


def test_same_value_years_must_be_identical() -> None:
    (a,) = find_quantities("built in 1856", years=True)
    (b,) = find_quantities("built in 1857", years=True)
    assert not same_value(a, b)


def test_find_quantities_decades_and_ranges_are_not_years() -> None:
    assert find_quantities("in the 1990s", years=True) == []
    assert [q.text for q in find_quantities("lived 1786–1838", years=True)] == ["1786"]
