"""The progress line of a listing and of one task (``run-task``) on a terminal: helper-82 F1,
run-task said nothing until it ended; a task's listing counts the other tasks' segments done,
so its line must not say "1/2 segments done (50%)" as it begins."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddbkeys import Usage
from ddbkeys._cli.listing_estimate import ProgressLine


class Console:
    is_terminal = True


class Status:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def update(self, text: str) -> None:
        self.shown.append(text)


@dataclass
class Method:
    size: int

    def scanned_bytes(self) -> int:
        return self.size


@dataclass
class TaskListing:
    """What the progress line reads of a listing: here a task's, segment 0 of 4."""

    method_name: str
    method: Method
    usage: Usage = field(default_factory=Usage)
    keys_found: int = 0
    readers: int = 1
    method_note: str | None = None
    replay: Any = None
    scan_segments: int = 4
    segments_done: int = 3  # (the other tasks' segments, as its token has them)


def shown(listing: TaskListing, task_of: int) -> str:
    progress = ProgressLine(Console())  # type: ignore[arg-type]
    status = Status()
    progress.status = status  # type: ignore[assignment]
    progress.watch(listing, task_of=task_of)  # type: ignore[arg-type]
    listing.usage.merge({"requests": 1, "items": 100, "read_units": 64.0})
    listing.keys_found = 100
    progress(listing)  # type: ignore[arg-type]
    return status.shown[-1]


def test_a_scan_task_says_its_figures_not_a_share_it_cannot_know() -> None:
    """helper-83 F5: a task's share of the table taken as a quarter said ~100% with a quarter
    of its segment left (segments differ in size)."""
    listing = TaskListing("scan", Method(4 * 1024 * 1024))
    line = shown(listing, task_of=4)
    assert line == "100 keys (scan): 1 request, 100 items read, 64 RCU", line


def test_a_skip_task_says_no_share_of_segments_not_its_own() -> None:
    listing = TaskListing("skip-pages", Method(4 * 1024 * 1024))
    line = shown(listing, task_of=4)
    assert line == "100 keys (skip-pages): 1 request, 100 items read, 64 RCU", line


def test_usage_merges_another_usage_or_its_snapshot() -> None:
    """helper-82 F3: ``total.merge(listing.usage)`` failed with a bare AttributeError."""
    one, total = Usage(), Usage()
    one.merge({"requests": 2, "items": 5, "read_units": 1.5})
    total.merge(one)
    total.merge(one.snapshot())
    assert (total.requests, total.items, total.read_units) == (4, 10, 3.0)
