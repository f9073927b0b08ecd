"""What ``index backfill`` says while it works (:mod:`ddbkeys._cli.index_backfill`): on a
terminal, a status line; elsewhere, a line every ``READ_LINES`` seconds of a long read or wait."""

from __future__ import annotations

import math
import time

import click

from ddbkeys._cli.common import StatusLine
from ddbkeys.partition_keys._index.backfill_wait import (
    OTHER_RUNNING,
    TIP,
    Readiness,
    began,
    dead_in,
)
from ddbkeys.partition_keys._proof.evidence import Backfill

__all__ = ["READ_LINES", "Reads", "spin", "spinner_off", "tip_said"]

#: How often (seconds), where stderr is not a terminal, a line says how a long read of the
#: table's keys goes (on a terminal the status line says it at once).
READ_LINES = 30.0


class Reads:
    """What the backfill says as it goes: the read mode's read of the keys (``READING``) on the
    status line (a terminal), else in a line every ``READ_LINES`` seconds; the markers written,
    of how many once known (``to_mark``); the wait for the stream's tip (``TIP``); the other
    backfill it waits for, the same way, and once that one is out of the way, that this one
    runs."""

    def __init__(self, status: StatusLine | None, said: set[str]) -> None:
        self.status, self.said = status, said
        self.line_at = time.monotonic()
        self.to_mark: int | None = None

    def written(self, count: int) -> None:
        self.begins()
        total = f" of {self.to_mark:,}" if self.to_mark is not None else ""
        spin(self.status, self.said, f"{count:,}{total} markers written")

    def waiting_for(self, other: Backfill, table: str) -> None:
        """Another backfill at work, which this one waits for: a line the first time, then
        :meth:`other`."""
        if OTHER_RUNNING not in self.said:
            click.echo(
                f"another backfill of table {table!r} is at work ({began(other)}): "
                f"waiting for it to end (it was {dead_in(other, time.time())} at most; "
                "--force runs this one all the same)",
                err=True,
            )
            self.said.add(OTHER_RUNNING)
        self.other(other)

    def other(self, other: Backfill) -> None:
        """Another backfill at work, which this one waits for (helper-81 F1, F2: said off a
        terminal only once, and "0 collections handled" all through its read of the table)."""
        alive = other.alive if other.alive is not None else other.started
        reading = "; it reads the table before it writes" if not other.handled else ""
        self.line(
            f"the other backfill: {other.handled or 0:,} collection(s) handled so far (alive "
            f"{max(0.0, time.time() - alive):.0f} s ago{reading})"
        )

    def line(self, text: str) -> None:
        """``text`` on the status line (a terminal), else in a line every ``READ_LINES`` s."""
        spin(self.status, self.said, text)
        if self.status is None and time.monotonic() - self.line_at >= READ_LINES:
            self.line_at = time.monotonic()
            click.echo(f"backfill: {text}", err=True)

    def begins(self) -> None:
        """Once, where this one waited for another: that it runs now (helper-81 F4)."""
        if OTHER_RUNNING in self.said and "took over" not in self.said:
            self.said.add("took over")
            spinner_off(self.status, self.said)  # (a line above the status line, not in it)
            click.echo(
                "backfill: the other backfill is no longer at work (it ended without counting, "
                "or was silent for 30 s, taken for dead): this one runs now",
                err=True,
            )

    def __call__(self, where: Readiness) -> None:
        self.begins()
        if where.state == TIP:
            tip_said(self.status, self.said, where)
            return
        if where.to_mark is not None:
            self.to_mark = where.to_mark
        self.line(where.advice())


def tip_said(status: StatusLine | None, said: set[str], where: Readiness) -> None:
    """The read mode's wait for the stream's tip, said: on the status line (a terminal), else
    once."""
    spin(status, said, f"markers written; reading the stream in {math.ceil(where.left)} s")
    if status is None and TIP not in said:
        advice = where.advice()
        click.echo(f"{advice[0].upper()}{advice[1:]}...", err=True)
    said.add(TIP)


def spin(status: StatusLine | None, said: set[str], text: str) -> None:
    """The status line (on a terminal) says ``text``: started the first time."""
    if status is not None:
        if "spinner" not in said:
            status.start()
            said.add("spinner")
        status.update(text)


def spinner_off(status: StatusLine | None, said: set[str]) -> None:
    if status is not None and "spinner" in said:
        status.stop()
        said.discard("spinner")
