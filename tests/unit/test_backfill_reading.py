"""A read-mode backfill's read of the keys is said while it goes (helper-76: on a large table
``index backfill`` and ``index follow --backfill`` said nothing for as long as the read took):
the follower's lines every ``PROGRESS`` seconds and the read's end, the CLI's status line and
lines, and the markers written "of" how many."""

from __future__ import annotations

import pytest

from ddbkeys._cli import index_backfill
from ddbkeys.partition_keys._index.backfill_wait import READING, TIP, Readiness
from ddbkeys.partition_keys._streams.follow_backfill import PROGRESS, _Progress
from ddbkeys.partition_keys._streams.follow_state import FollowReport


def reading(what: str = "the table", keys: int = 0, to_mark: int | None = None) -> Readiness:
    return Readiness("orders", READING, 60.0, reading=what, keys=keys, to_mark=to_mark)


def test_a_followers_long_read_is_said_every_progress_seconds_then_its_end() -> None:
    now = [0.0]
    lines: list[str] = []
    watch = _Progress(lambda: now[0], lines.append)
    report = FollowReport()
    watch.waited(reading(), report)
    now[0] = PROGRESS - 1
    watch.waited(reading(keys=4_000), report)
    assert lines == []  # (a short read says nothing)
    now[0] = PROGRESS + 1
    watch.waited(reading(keys=9_000), report)
    now[0] = PROGRESS + 2
    watch.waited(reading("the marker index", 0), report)
    watch.waited(reading(to_mark=8_990), report)
    now[0] += PROGRESS
    watch.report.written, watch.report.present = 4_000, 10
    watch(4_000)  # (as the backfill's progress)
    assert lines == [
        "backfill: reading the table: 9,000 keys so far (the markers follow)",
        "backfill: the keys are read: 8,990 marker(s) to write",
        "backfill: 4,010 collection(s) handled so far (4,000 of 8,990 marker(s) written, 10 "
        "already there)",
    ]
    assert report.backfill_state is None  # (reading is no state of the follower's report)


def test_a_followers_short_read_says_nothing_of_its_end() -> None:
    lines: list[str] = []
    watch = _Progress(lambda: 0.0, lines.append)
    watch.waited(reading(), FollowReport())
    watch.waited(reading(to_mark=3), FollowReport())
    assert lines == []


class Status:
    """A stand-in for the CLI's status line: what it shows."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def update(self, text: str) -> None:
        self.shown.append(text)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def test_the_cli_shows_the_read_on_a_terminal_and_the_markers_of_how_many() -> None:
    status = Status()
    reads = index_backfill._Reads(status, set())  # type: ignore[arg-type]
    reads(reading(keys=1_500))
    reads(reading(to_mark=1_200))
    reads.written(7)
    assert status.shown == [
        "reading the table: 1,500 keys so far (the markers follow)",
        "the keys are read: 1,200 marker(s) to write",
        "7 of 1,200 markers written",
    ]


def test_the_cli_says_a_long_read_in_a_line_every_read_lines_seconds_elsewhere(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    now = [100.0]
    monkeypatch.setattr("ddbkeys._cli.index_backfill.time.monotonic", lambda: now[0])
    reads = index_backfill._Reads(None, set())
    reads(reading())
    now[0] += index_backfill.READ_LINES
    reads(reading(keys=20_000))
    now[0] += 1
    reads(reading(keys=21_000))
    reads.written(3)  # (no status line: nothing)
    assert capsys.readouterr().err.splitlines() == [
        "backfill: reading the table: 20,000 keys so far (the markers follow)"
    ]


def test_the_tip_is_still_said_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    reads = index_backfill._Reads(None, set())
    reads(Readiness("orders", TIP, 60.0, left=42.0))
    assert "the stream is read in 42 s" in capsys.readouterr().err
