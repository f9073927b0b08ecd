"""The pure parts of benchmarks/partition_keys.py: the shapes it generates (what issue 35 lists),
its rounds and medians, the estimate adapter (ranges, or a point before the estimate gives
ranges) and the checks of the targets. No server: the benchmark itself runs against one."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from measure import PLAIN, Row, median_row, rounds, span  # noqa: E402
from shapes import shapes  # noqa: E402
from targets import (  # noqa: E402
    Actual,
    auto_lines,
    estimate_lines,
    markers_lines,
    pages_lines,
    saves_little,
)


def _row(method: str, rcu: float, seconds: float = 1.0, requests: int = 1) -> Row:
    return Row(method, requests, 10, rcu, seconds, True)


def test_the_issue_shapes_are_generated_as_listed() -> None:
    made = {name: make() for name, make in shapes(1.0).items() if name != "keys-220k"}
    assert [len(s.collections) for s in (made["uniform"], made["skewed"])] == [2000, 2005]
    assert {len(sizes) for _, sizes in made["uniform"].collections} == {50}
    assert sorted(len(sizes) for _, sizes in made["skewed"].collections)[-6:] == [1] + [4000] * 5
    tiny = made["tiny-binary"]
    assert len(tiny.keys) == 5000 and tiny.pk_type == "B"
    assert all(isinstance(k, bytes) and len(k) == 4 for k in tiny.keys)
    heavy = made["heavy-tailed"].collections
    counts = [len(sizes) for _, sizes in heavy]
    sizes = [size for _, found in heavy for size in found]
    assert len(heavy) == 1000 and min(counts) >= 1 and max(counts) <= 400
    assert min(sizes) >= 50 and max(sizes) <= 40_000 and max(counts) > 50
    assert 3000 < len(sizes) < 6000  # the issue's table held 4,168 items
    for kind in "snb":
        sample = made[f"sample-{kind}"]
        assert sample.loader and sample.sort_type == kind.upper()
        assert all(1 <= len(found) <= 10 for _, found in sample.collections)
        assert 4900 <= sample.items <= 5010 and 800 <= len(sample.collections) <= 1000


def test_shapes_are_seeded() -> None:
    first, second = shapes(1.0)["heavy-tailed"](), shapes(1.0)["heavy-tailed"]()
    assert first.collections == second.collections


def test_rounds_alternate_and_keep_each_figures_median() -> None:
    order: list[str] = []
    seconds = {"a": iter([3.0, 1.0, 2.0]), "b": iter([5.0, 4.0, 9.0])}

    def run(name: str) -> Row:
        order.append(name)
        return _row(name, 1.0, next(seconds[name]))

    kept = rounds(["a", "b"], run, 3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert (kept["a"].seconds, kept["b"].seconds) == (2.0, 5.0)
    stopped = median_row([_row("x", 1.0), Row("x", 9, 1, 2.0, 1.0, False, stopped=True)])
    assert stopped.stopped and not stopped.correct


@dataclass
class _Point:
    rcu: float


@dataclass
class _Ends:
    rcu: float
    rcu_low: float
    rcu_high: float


@dataclass
class _Range:
    low: float
    high: float


@dataclass
class _Nested:
    keys: _Range


def test_the_estimate_adapter_reads_ranges_or_a_point() -> None:
    assert span(_Point(4.0), "rcu") == (4.0, 4.0)
    assert span(_Ends(4.0, 3.0, 5.0), "rcu") == (3.0, 5.0)
    assert span(_Nested(_Range(10, 18)), "keys") == (10.0, 18.0)
    assert span(_Point(4.0), "keys") is None


def test_estimate_lines_check_inside_and_the_width() -> None:
    lines, missed = estimate_lines("s", [Actual("scan's RCU", _Ends(4, 3, 5), "rcu", 4.5)])
    assert "inside" in lines[0] and not missed
    _, missed = estimate_lines("s", [Actual("scan's RCU", _Ends(4, 1, 5), "rcu", 6)])
    assert len(missed) == 2  # outside, and 5 / 1 > 2
    _, missed = estimate_lines("s", [Actual("scan's RCU", _Point(4), "rcu", 4.4)])
    assert missed == ["s: scan's RCU 4.4 outside the estimate 4-4 (1.10x the point)"]


def test_auto_is_held_to_the_cheapest_and_the_fastest() -> None:
    others = {PLAIN: _row(PLAIN, 100, 1.0), "skip": _row("skip", 50, 10.0)}
    _, missed = auto_lines("s", _row("auto (skip)", 52, 1.9), others)
    assert not missed
    _, missed = auto_lines("s", _row("auto (scan)", 100, 1.0), others)
    assert missed and "2.00x skip's 50" in missed[0]
    _, missed = auto_lines("s", _row("auto (skip)", 50, 2.5), others)
    assert missed and "2.50x" in missed[0]


def test_an_index_dearer_than_the_table_was_must_have_been_warned_of() -> None:
    before = {PLAIN: _row(PLAIN, 12.5), "skip-pages": _row("skip-pages", 12.5)}
    index = _row("index", 52.5)
    now = {"index": index, "marked scan": _row("scan, markers kept", 65.0)}
    lines, missed = markers_lines("tiny", index, before, now, None)
    assert missed == [
        "tiny: the index lists for 52.5 RCU, more than the 12.5 a listing cost before the "
        "markers, and nothing warned before"
    ]
    assert "listing the table now costs 65 (scan, markers kept)" in lines[0]
    lines, missed = markers_lines("tiny", index, before, now, "Warning: ...")
    assert not missed and "warned before index create" in lines[0]
    cheap = _row("index", 9.0)
    lines, missed = markers_lines("b", cheap, before, {"index": cheap, **now}, None)
    assert not missed and lines[0].endswith("the index saves")


def test_skip_pages_requests_and_what_it_saves() -> None:
    plain = _row(PLAIN, 100, requests=3)
    assert not pages_lines("s", _row("skip-pages", 99, requests=16), plain)[1]
    assert not pages_lines("s", _row("skip-pages", 20, requests=900), plain)[1]  # saves 80%
    assert pages_lines("s", _row("skip-pages", 99, requests=17), plain)[1]
    assert saves_little(_row("skip-pages", 96), plain)
    assert not saves_little(_row("skip-pages", 94), plain)


def test_a_long_row_is_run_once() -> None:
    order: list[str] = []

    def run(name: str) -> Row:
        order.append(name)
        return _row(name, 1.0, 40.0 if name == "slow" else 1.0)

    kept = rounds(["fast", "slow"], run, 3, long=30.0)
    assert order == ["fast", "slow", "fast", "fast"]
    assert kept["slow"].seconds == 40.0
