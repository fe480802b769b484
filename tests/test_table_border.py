"""`prose.table_border`: the same lines as the reST border pattern it replaced, in linear time."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.reader.prose import table_border

# The old pattern: right, but exponential on a long rule followed by anything else.
_OLD = re.compile(r"^\s*(?:[=+-]{3,}[\s+]*){2,}$")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="=+- \tx.5", max_size=14))
def test_table_border_accepts_exactly_what_the_old_pattern_did(line: str) -> None:
    assert table_border(line) == bool(_OLD.match(line))


def test_table_border_knows_simple_and_grid_borders() -> None:
    assert table_border("====  ======")
    assert table_border("+----+----+")
    assert table_border("  =====   ===  ")
    assert not table_border("===")
    assert not table_border("-- not a border --")


def test_a_long_rule_followed_by_a_number_is_not_a_border() -> None:
    # a PDF's ASCII-art box beside a figure: the old pattern never finished on this line
    assert not table_border("+" + "-" * 60 + "+ -5718.97")
