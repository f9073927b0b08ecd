"""Histories of id calls, checked against what the strategy promises (``ddbkeys.ids._promises``).

A :class:`History` records each call's start, end and ids; :func:`check_history` checks, as far
as the strategy's promise reaches: no id twice (unique), real-time order (increasing: if call A
ended before call B began, every id of A is below every id of B), and no id skipped (gapless).

The clock is :func:`time.monotonic_ns`: ``CLOCK_MONOTONIC`` on Linux, one clock for the whole
machine (since boot), so stamps taken in different processes on one machine compare, and it is
never stepped back as the wall clock (``time.time_ns``) may be by NTP. The start is read before
the call is made and the end after it returned, so "A ended before B began" in the stamps means
it in real time too: the check never accuses a strategy of an order the calls did not have.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ddbkeys.ids._promises import PROMISES, Promise, Scope

__all__ = ["History", "HistoryReport", "HistoryViolation", "Operation", "check_history"]


class HistoryViolation(AssertionError):
    """A recorded history breaks its strategy's promise (the message names the calls)."""


@dataclass(frozen=True)
class Operation:
    """One call that returned: when it began and ended (:func:`time.monotonic_ns`), the ids it
    got, and where: ``process`` (its pid), ``scope`` (the allocator object or the collection it
    used, for promises that reach no further) and ``number`` (its place in its history)."""

    start: int
    end: int
    ids: tuple[int, ...]
    process: int = 0
    scope: str = ""
    number: int = 0

    @property
    def name(self) -> str:
        """``call 3 of process 1234 (projectA)``: how a violation names it."""
        where = f" ({self.scope})" if self.scope else ""
        return f"call {self.number} of process {self.process}{where}"

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values (a worker process writes them; :meth:`from_dict` reads them)."""
        return {
            "start": self.start,
            "end": self.end,
            "ids": list(self.ids),
            "process": self.process,
            "scope": self.scope,
            "number": self.number,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Operation:
        return cls(
            int(data["start"]),
            int(data["end"]),
            tuple(int(i) for i in data["ids"]),
            int(data.get("process", 0)),
            str(data.get("scope", "")),
            int(data.get("number", 0)),
        )


class History:
    """The calls of one process, recorded by :meth:`call` from any number of threads::

        history = History()
        ids = history.call(lambda: counter.next())  # or a function giving several ids
        check_history("AtomicCounter", history.operations)

    A call that raises is not recorded (it returned no id to compare)."""

    def __init__(self, scope: str = "") -> None:
        self.scope = scope
        self.process = os.getpid()
        self._operations: list[Operation] = []
        self._lock = threading.Lock()

    @property
    def operations(self) -> list[Operation]:
        """The calls recorded so far, in the order they ended."""
        with self._lock:
            return list(self._operations)

    def call(self, function: Callable[[], Any], scope: str | None = None) -> Any:
        """``function()`` recorded: an int or an iterable of ints is its ids. Its result."""
        with self.recording(scope) as ids:
            result = function()
            ids.extend([int(result)] if isinstance(result, int) else [int(i) for i in result])
        return result

    @contextmanager
    def recording(self, scope: str | None = None) -> Iterator[list[int]]:
        """A block recorded as one call: put the ids it got in the list it gives."""
        ids: list[int] = []
        start = time.monotonic_ns()
        yield ids
        end = time.monotonic_ns()
        with self._lock:
            number = len(self._operations)
            where = self.scope if scope is None else scope
            self._operations.append(Operation(start, end, tuple(ids), self.process, where, number))


@dataclass(frozen=True)
class HistoryReport:
    """What :func:`check_history` checked: the calls, the ids, and the pairs of calls ordered in
    real time (A ended before B began, in one scope) whose ids it compared."""

    strategy: str
    operations: int
    ids: int
    ordered_pairs: int
    scopes: int
    checks: tuple[str, ...]

    def summary(self) -> str:
        """One line: ``GaplessSequence: 240 calls, 240 ids, 9,120 ordered pairs, ...``."""
        return (
            f"{self.strategy}: {self.operations:,} calls, {self.ids:,} ids, "
            f"{self.ordered_pairs:,} ordered pairs, {self.scopes} scope(s); "
            + ", ".join(self.checks)
        )


def _groups(operations: list[Operation], scope: Scope) -> dict[str, list[Operation]]:
    if scope is Scope.EVERYWHERE:
        return {"": operations}
    grouped: dict[str, list[Operation]] = defaultdict(list)
    for op in operations:
        grouped[op.scope].append(op)
    return dict(grouped)


def _check_unique(promise: Promise, group: list[Operation]) -> None:
    seen: dict[int, Operation] = {}
    for op in group:
        for i in op.ids:
            if i in seen:
                raise HistoryViolation(
                    f"{promise.strategy} promises ids unique {promise.unique.value}, but id {i} "
                    f"was returned by {seen[i].name} and by {op.name}"
                )
            seen[i] = op


def _check_increasing(promise: Promise, group: list[Operation]) -> int:
    """Real-time order in one scope; the number of ordered pairs compared."""
    calls = sorted((op for op in group if op.ids), key=lambda op: op.end)
    ends = [op.end for op in calls]

    # highest[k]: the call with the highest id among the first k + 1 to end
    def higher(a: Operation, b: Operation) -> Operation:
        return b if max(b.ids) > max(a.ids) else a

    highest: list[Operation] = list(accumulate(calls, higher))
    pairs = 0
    for later in calls:
        before = bisect_left(ends, later.start)  # the calls that ended before it began
        pairs += before
        if before and max(highest[before - 1].ids) >= min(later.ids):
            earlier = highest[before - 1]
            assert promise.increasing is not None
            raise HistoryViolation(
                f"{promise.strategy} promises ids increasing {promise.increasing.value}, but "
                f"{earlier.name} got id {max(earlier.ids)} and ended "
                f"{(later.start - earlier.end) / 1e6:.3f} ms before {later.name} began, which "
                f"got id {min(later.ids)}"
            )
    return pairs


def _check_gapless(promise: Promise, key: str, group: list[Operation]) -> None:
    ids = sorted(i for op in group for i in op.ids)
    if ids and ids != list(range(ids[0], ids[0] + len(ids))):
        taken = set(ids)
        missing = [i for i in range(ids[0], ids[-1]) if i not in taken]
        assert promise.gapless is not None
        where = f" (in {key})" if key else ""
        raise HistoryViolation(
            f"{promise.strategy} promises ids gapless {promise.gapless.value}, but{where} "
            f"{len(missing)} ids between {ids[0]} and {ids[-1]} were never returned, the first "
            f"{missing[:5]}"
        )


def check_history(
    strategy: str | type, operations: Iterable[Operation], *, complete: bool = True
) -> HistoryReport:
    """Check the calls of ``strategy`` (its class or class name, sync or :mod:`ddbkeys.aio`)
    against its promise. ``complete=False`` (calls that raised or never returned, whose ids are
    unknown) leaves out the gapless check. Raises :class:`HistoryViolation` naming the calls."""
    name = strategy if isinstance(strategy, str) else strategy.__name__
    promise = PROMISES[name]
    calls = list(operations)
    checks = [f"unique {promise.unique.value}"]
    for group in _groups(calls, promise.unique).values():
        _check_unique(promise, group)
    pairs = 0
    scopes = 1
    if promise.increasing is not None:
        checks.append(f"increasing {promise.increasing.value}")
        grouped = _groups(calls, promise.increasing)
        scopes = len(grouped)
        pairs = sum(_check_increasing(promise, group) for group in grouped.values())
    if promise.gapless is not None and complete:
        checks.append(f"gapless {promise.gapless.value}")
        for key, group in _groups(calls, promise.gapless).items():
            _check_gapless(promise, key, group)
    return HistoryReport(
        name, len(calls), sum(len(op.ids) for op in calls), pairs, scopes, tuple(checks)
    )
