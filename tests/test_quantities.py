import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.quantities import Quantity, find_quantities, same_value


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
        "We have 3 people.",
        "Lumio v2.3 shipped.",
        "In the 1990s.",
        "Wait 5 s.",
        "ten b",
        "two hundred MB",
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
