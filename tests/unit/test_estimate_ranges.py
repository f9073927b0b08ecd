"""The estimate's range math (pure): a count or a sum read from whole segments drawn at random
scales up to a range that holds the table's total, exact when every segment was read; checked
by simulating the hash's spread of collections over segments."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddbkeys.partition_keys._tasks.methods import size_range
from ddbkeys.partition_keys._tasks.ranges import Range, count_range, sum_range, total_range


def drawn_total(
    values: list[float], segments: int, drawn: int, seed: int
) -> tuple[float, float, int]:
    """Collections (their values) spread over ``segments`` at random, ``drawn`` of them read:
    the sampled sum, its squares and the collections seen."""
    rng = random.Random(seed)
    where = [rng.randrange(segments) for _ in values]
    chosen = set(rng.sample(range(segments), drawn))
    seen = [v for v, s in zip(values, where, strict=True) if s in chosen]
    return sum(seen), sum(v * v for v in seen), len(seen)


def test_every_segment_read_is_exact() -> None:
    assert count_range(123, 10, 10) == Range.exact(123)
    assert sum_range(5.5, 9.0, 7, 7) == Range.exact(5.5)


def test_a_range_never_goes_below_what_was_seen_and_holds_its_value() -> None:
    found = count_range(50, 10, 100)
    assert found.low >= 50 and found.low <= found.value == 500 <= found.high
    assert found.spread < 2
    assert sum_range(10.0, 100.0, 1, 100).low >= 10.0
    with pytest.raises(ValueError):
        count_range(1, 0, 10)
    with pytest.raises(ValueError):
        Range(2, 1, 3)


@settings(max_examples=60, deadline=None)
@given(
    keys=st.integers(400, 5000),
    segments=st.integers(50, 600),
    seed=st.integers(0, 10**6),
)
def test_the_key_count_range_narrows_with_what_the_sample_saw(
    keys: int, segments: int, seed: int
) -> None:
    """With about 200 collections seen, the range spans at most 2x (high over low)."""
    drawn = max(1, min(segments, round(200 * segments / keys)))
    _, _, seen = drawn_total([1.0] * keys, segments, drawn, seed)
    found = count_range(seen, drawn, segments)
    assert found.spread <= 2.0


@pytest.mark.parametrize("shape", ["uniform", "skewed", "heavy"])
def test_ranges_hold_the_truth_about_99_times_in_100(shape: str) -> None:
    """Over 300 draws of 10% of 200 segments, the count's range and the sum's hold the
    table's totals at least 95% of the time (about 99% is meant); a sum with a Pareto tail
    (alpha 1.2) at least 85%, one with five outsized collections among 2,000 at least 90%: the
    normal spread is approximate there, the blind spot the estimate's basis names."""
    rng = random.Random(3)
    if shape == "uniform":
        values = [1.0] * 2000
    elif shape == "skewed":
        values = [0.02] * 2000 + [0.6] * 5
    else:
        values = [min(40.0, rng.paretovariate(1.2) * 0.05) for _ in range(1000)]
    held_count = held_sum = 0
    for seed in range(300):
        total, squares, seen = drawn_total(values, 200, 20, seed)
        held_count += (
            count_range(seen, 20, 200).low <= len(values) <= count_range(seen, 20, 200).high
        )
        found = sum_range(total, squares, 20, 200)
        held_sum += found.low <= sum(values) <= found.high
    assert held_count >= 0.95 * 300
    assert held_sum >= {"uniform": 0.95, "skewed": 0.9, "heavy": 0.85}[shape] * 300


def test_a_scan_of_a_page_rounds_up_once() -> None:
    """Three items read whole: one page of 0.5 RCU, and not up to 1.025 (half a unit a page
    on top of the slack: a range of 2.05x around an exact answer); a page's rounding is
    counted once, on the slack's bytes."""
    assert size_range(300, 1, exact=True) == Range(0.5, 0.5, 0.5)
    assert size_range(4090, 1, exact=True).high == 1.0
    assert size_range(4 * 4096, 3).high == pytest.approx(0.5 * 5 + 1.0)


def test_a_sum_alike_in_every_collection_is_as_uncertain_as_the_key_count() -> None:
    """2.5 read units a collection, 28 collections seen in 4 segments of 195: the sum's range
    is the key count's times 2.5 (its score interval, skewed high where few were seen), not
    the normal spread's (up to 713 RCU, where such a table of 300 keys read 750); and over 300
    draws of heavy-tailed values, it holds the truth at least as often as that spread."""
    keys = count_range(28, 4, 195)
    found = total_range(28 * 2.5, 28 * 2.5**2, 28, 4, 195)
    assert found.low == pytest.approx(2.5 * keys.low)
    assert found.high == pytest.approx(2.5 * keys.high)
    assert found.high > sum_range(28 * 2.5, 28 * 2.5**2, 4, 195).high
    rng = random.Random(3)
    values = [min(40.0, rng.paretovariate(1.2) * 0.05) for _ in range(1000)]
    held_total = held_sum = 0
    for seed in range(300):
        total, squares, seen = drawn_total(values, 195, 4, seed)
        found, normal = total_range(total, squares, seen, 4, 195), sum_range(total, squares, 4, 195)
        held_total += found.low <= sum(values) <= found.high
        held_sum += normal.low <= sum(values) <= normal.high
    assert held_total >= held_sum


@pytest.mark.parametrize(("low", "high"), [(1.0, 1.0), (0.5, 1.5), (0.2, 1.8)])
def test_the_key_count_widens_to_segments_that_are_not_even(low: float, high: float) -> None:
    """Segments that take unequal shares of the keys (hash ranges of unequal width: each
    weighed ``low`` to ``high``) spread a count over whole segments wider than a binomial: 40
    of 75 segments, 2,005 keys, 400 draws. Given the segments' squares, the range holds the
    truth at least 97% of the time whatever the unevenness (the binomial alone: 86% at
    0.5-1.5, 67% at 0.2-1.8); never narrower than the binomial, and on even segments the
    binomial's but where their counts happen to vary as uneven ones do (about 1 in 100)."""
    held = plain = same = 0
    for seed in range(400):
        rng = random.Random(seed)
        weights = [rng.uniform(low, high) for _ in range(75)]
        counts = [0] * 75
        for segment in rng.choices(range(75), weights=weights, k=2005):
            counts[segment] += 1
        chosen = [counts[s] for s in rng.sample(range(75), 40)]
        seen, squares = sum(chosen), sum(c * c for c in chosen)
        found = count_range(seen, 40, 75, squares=squares)
        binomial = count_range(seen, 40, 75)
        assert found.low <= binomial.low <= binomial.high <= found.high
        held += found.low <= 2005 <= found.high
        plain += binomial.low <= 2005 <= binomial.high
        same += found == binomial
    assert held >= 0.97 * 400
    if low < 0.5:
        assert plain < 0.8 * 400  # (the case it widens for)
    if low == high:
        assert same >= 0.97 * 400
