"""A read-mode backfill's read of the keys is said while it goes (helper-76: on a large table
``index backfill`` and ``index follow --backfill`` said nothing for as long as the read took):
the follower's lines every ``PROGRESS`` seconds and the read's end, the CLI's status line and
lines, and the markers written "of" how many."""

from __future__ import annotations

import signal
import time

import click
import pytest

from ddbkeys._cli import backfill_lines, index_backfill
from ddbkeys.partition_keys._index.backfill_wait import OTHER_RUNNING, READING, TIP, Readiness
from ddbkeys.partition_keys._proof.evidence import Backfill
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
    reads = backfill_lines.Reads(status, set())  # type: ignore[arg-type]
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
    monkeypatch.setattr("ddbkeys._cli.backfill_lines.time.monotonic", lambda: now[0])
    reads = backfill_lines.Reads(None, set())
    reads(reading())
    now[0] += backfill_lines.READ_LINES
    reads(reading(keys=20_000))
    now[0] += 1
    reads(reading(keys=21_000))
    reads.written(3)  # (no status line: nothing)
    assert capsys.readouterr().err.splitlines() == [
        "backfill: reading the table: 20,000 keys so far (the markers follow)"
    ]


def test_the_tip_is_still_said_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    reads = backfill_lines.Reads(None, set())
    reads(Readiness("orders", TIP, 60.0, left=42.0))
    assert "the stream is read in 42 s" in capsys.readouterr().err


def other_at_work(handled: int | None, alive_ago: float) -> Backfill:
    now = time.time()
    return Backfill(
        started=now - 100,
        stream="s",
        maintained_since=None,
        alive=now - alive_ago,
        owner="vm:1",
        handled=handled,
    )


def test_a_backfill_waiting_for_another_says_how_it_goes_also_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """helper-81 F1, F2: off a terminal, a backfill waiting for another said one line, then
    nothing for 88 s; on one it showed "0 collections handled" all through the other's read of
    the table. Now a line every READ_LINES seconds, with the other's last sign of life, and
    that it reads the table before it writes; once it runs itself, a line says so (F4)."""
    now = [100.0]
    monkeypatch.setattr("ddbkeys._cli.backfill_lines.time.monotonic", lambda: now[0])
    said = {OTHER_RUNNING}
    reads = backfill_lines.Reads(None, said)
    reads.other(other_at_work(None, 3.0))
    now[0] += backfill_lines.READ_LINES
    reads.other(other_at_work(None, 4.0))
    now[0] += backfill_lines.READ_LINES
    reads.other(other_at_work(1_250, 2.0))
    reads(reading(keys=10))  # (the other was taken for dead: this one reads)
    reads.written(1)
    assert capsys.readouterr().err.splitlines() == [
        "backfill: the other backfill: 0 collection(s) handled so far (alive 4 s ago; it reads "
        "the table before it writes)",
        "backfill: the other backfill: 1,250 collection(s) handled so far (alive 2 s ago)",
        "backfill: the other backfill is no longer at work (it ended without counting, or was "
        "silent for 30 s, taken for dead): this one runs now",
    ]
    status = Status()
    backfill_lines.Reads(status, set()).other(other_at_work(0, 1.0))  # type: ignore[arg-type]
    assert status.shown == [
        "the other backfill: 0 collection(s) handled so far (alive 1 s ago; it reads the table "
        "before it writes)"
    ]


@pytest.mark.parametrize("kept", [None, "finished 2026-12-07 04:49:39 UTC; `index status` says so"])
def test_a_stopped_backfill_says_whether_listings_still_prove_the_index(
    kept: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """helper-81 F3: Ctrl-C of a backfill run again said "listings cannot prove the index from
    it" where they went on proving it from the backfill it replaced (`index status`: "Provable:
    yes"). Now it says which."""
    signals = index_backfill.stopping_signals("orders", lambda: None, lambda: True, lambda: kept)
    with pytest.raises(click.exceptions.Exit) as stopped, signals:
        raise KeyboardInterrupt
    assert stopped.value.exit_code == 128 + signal.SIGINT
    err = capsys.readouterr().err
    if kept is None:
        assert "did not finish, so listings cannot prove the index from it" in err
    else:
        assert (
            "did not finish, and listings go on proving the index from the backfill it replaced "
            "(finished 2026-12-07 04:49:39 UTC; `index status` says so)"
        ) in err
