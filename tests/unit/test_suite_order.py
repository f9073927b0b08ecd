"""The suite's own order (tests/conftest.py's ``long_first``): each long test starts first
in a worker's share, longest first to the least loaded, and nothing is lost or repeated."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.conftest import LONG_TESTS, long_first


def items(names: list[str]) -> list[Any]:
    return [SimpleNamespace(nodeid=name) for name in names]


def shares(ordered: list[Any], workers: int) -> list[list[str]]:
    """What worksteal hands each worker at the start (xdist's scheduler.worksteal)."""
    out, left = [], list(ordered)
    for worker in range(workers):
        share = len(left) // (workers - worker)
        out.append([item.nodeid for item in left[:share]])
        left = left[share:]
    return out


def test_each_worker_begins_with_its_long_tests_and_the_rest_keep_their_order() -> None:
    long = sorted(LONG_TESTS, key=lambda name: -LONG_TESTS[name])
    plain = [f"tests/unit/test_x.py::test_{n}" for n in range(200)]
    collected = items(plain[:50] + long[::-1] + plain[50:])
    ordered = long_first(collected, 4)
    assert sorted(i.nodeid for i in ordered) == sorted(i.nodeid for i in collected)
    assert [i.nodeid for i in ordered if i.nodeid not in LONG_TESTS] == plain
    dealt = shares(ordered, 4)
    starts = [[name for name in share if name in LONG_TESTS] for share in dealt]
    for share, its_long in zip(dealt, starts, strict=True):
        assert share[: len(its_long)] == its_long  # they come first
    firsts = sorted((LONG_TESTS[share[0]] for share in dealt), reverse=True)
    assert firsts == [LONG_TESTS[name] for name in long[:4]]  # the four longest, one each
    loads = [sum(LONG_TESTS[name] for name in its_long) for its_long in starts]
    assert max(loads) - min(loads) <= LONG_TESTS[long[0]]


def test_one_worker_or_none_long_leaves_the_order_as_collected() -> None:
    plain = items([f"t::{n}" for n in range(10)])
    assert long_first(plain, 4) == plain
    assert long_first(plain, 0) == plain
