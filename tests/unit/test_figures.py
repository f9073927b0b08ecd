"""How the estimate's figures read (found by a helper reading the estimate of a one-item table:
"~0 RCU against a scan's ~0", "~1 items of ~80 B (~0 KB)")."""

from __future__ import annotations

import pytest

from ddbkeys.partition_keys._tasks.figures import figure, plural, size, span


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.0, "0"), (0.5, "0.5"), (1.025, "1.02"), (12.5, "12.5"), (99.4, "99.4"), (1003.5, "1,004")],
)
def test_a_cost_of_half_a_unit_does_not_read_as_nothing(value: float, shown: str) -> None:
    assert figure(value) == shown


def test_a_range_reads_as_a_point_only_when_its_ends_read_alike() -> None:
    assert span(0.5, 0.5, 0.5) == "~0.5"
    assert span(0.5, 0.75, 1.0) == "0.5-1"
    assert span(122.4, 143.0, 152.6) == "122-153"
    assert span(None, None, None) == "?" and span(None, 3.0, None) == "~3"
    assert span(1799.6, 1800.0, 1800.4, whole=True) == "~1,800"
    assert span(0.4, 1.0, 2.6, whole=True) == "0-3"


def test_one_of_a_thing_is_not_plural() -> None:
    assert plural(1) == "1 item" and plural(0) == "0 items" and plural(4168) == "4,168 items"
    assert plural(1, "key") == "1 key" and plural(2, "request") == "2 requests"
    assert size(74) == "74 B" and size(25.8 * 1024) == "25.8 KB"
