"""The read budget spreads reads to a rate, with an injected clock (no real sleeping)."""

from __future__ import annotations

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import ReadBudget, default_scan_segments, plain_key


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_budget_keeps_to_the_rate() -> None:
    clock = FakeClock()
    budget = ReadBudget(10.0, clock=clock, sleep=clock.sleep)
    for _ in range(50):  # 50 requests of 2 units at 10 units/s: about 10 s (the first 10 free)
        budget.acquire()
        budget.spend(2.0)
    assert 8.0 <= clock.now <= 10.0
    assert all(wait > 0 for wait in clock.slept)


def test_an_empty_budget_keeps_to_the_rate_from_its_start() -> None:
    """A task's budget starts empty and its listing waits off its debt before it ends: what
    it read is at most the rate times the seconds it ran, even for one page."""
    clock = FakeClock()
    budget = ReadBudget(25.0, full=False, settles=True, clock=clock, sleep=clock.sleep)
    budget.acquire()  # the first page goes at once ...
    assert clock.now == 0.0
    budget.spend(128.0)  # ... and reads a 1 MB page
    budget.acquire()  # what settling waits for
    assert clock.now == pytest.approx(128.0 / 25.0)
    full = ReadBudget(25.0, clock=clock, sleep=clock.sleep)
    full.spend(25.0)  # a full bucket: a second's units saved up
    assert full.wait_time() == 0.0 and budget.settles and not full.settles


def test_budget_refuses_nonsense() -> None:
    with pytest.raises(ConfigurationError, match="must be above 0"):
        ReadBudget(0)


def test_plain_keys() -> None:
    assert plain_key({"S": "a"}) == "a"
    assert plain_key({"N": "10"}) == 10 and isinstance(plain_key({"N": "10"}), int)
    assert str(plain_key({"N": "2.50"})) == "2.50"
    assert plain_key({"B": b"\x01"}) == b"\x01"


def test_default_scan_segments() -> None:
    mb = 1024 * 1024
    assert default_scan_segments(1, 500 * mb) == 1  # one reader: one segment, the article's order
    assert default_scan_segments(4, 0) == 4  # size unknown (a new table): one a reader
    assert default_scan_segments(4, 6 * mb) == 6  # at most one a whole MB...
    assert default_scan_segments(4, 21 * mb) == 16  # ...and 4 a reader
    assert default_scan_segments(3, mb // 2) == 3  # never fewer than the readers
    assert default_scan_segments(400_000, 10**15) == 1_000_000  # DynamoDB's limit
