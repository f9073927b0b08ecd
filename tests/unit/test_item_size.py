"""A number's stored size, read as text where it is a plain decimal and through ``Decimal``
otherwise, is the same however the number is written (DynamoDB stores the value: the
integration test ``test_item_size`` checks the sizes against DynamoDB Local's)."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ddbkeys._capacity import item_size, number_size

#: What DynamoDB stores: up to 38 significant digits, magnitudes from 1E-130 to below 1E+126.
STORED = st.builds(
    lambda digits, power, negative: Decimal(f"{'-' * negative}{digits}E{power}"),
    st.integers(0, 10**38 - 1),
    st.integers(-130, 88),
    st.booleans(),
)


@given(STORED)
def test_a_number_is_as_large_written_plainly_or_with_an_exponent(number: Decimal) -> None:
    plain, scientific = format(number, "f"), format(number, "E")
    assert "E" not in plain and "E" in scientific
    assert number_size(plain) == number_size(scientific) == number_size(str(number))


def test_known_sizes() -> None:
    sizes = {"0": 1, "-0": 1, "0.000": 1, "100": 2, "1E+10": 2, "1.5": 3, "-1.5": 4, "12": 2}
    sizes |= {"123": 3, "0.001": 2, "1050": 3, "5.": 2, ".5": 2, "007": 2, "١٢": 2}
    assert {text: number_size(text) for text in sizes} == sizes
    # Not a number (DynamoDB refuses it; the size is a guess from its digits).
    assert number_size("12abc") == number_size("-") + 1 == 2


def test_an_item_counts_names_and_values() -> None:
    item = {"pk": {"S": "é"}, "n": {"N": "100"}, "l": {"L": [{"N": "1"}, {"BOOL": True}]}}
    assert item_size(item) == (2 + 2) + (1 + 2) + (1 + 3 + (2 + 1) + (1 + 1))
