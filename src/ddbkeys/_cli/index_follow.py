"""``ddbkeys partition-keys index follow``: keep the marker index right from the table's stream
(:class:`ddbkeys.partition_keys.StreamFollower`), backfilling it once with ``--backfill``."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import click

from ddbkeys._cli.common import (
    Connection,
    FloatRange,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
)
from ddbkeys._cli.errors import cli_words
from ddbkeys._cli.follow_outage import OUTAGE_WAIT, Outage, say
from ddbkeys._cli.group import quiet_output
from ddbkeys._cli.index_common import held, margin_option, open_index, stream_off
from ddbkeys._cli.index_options import (
    index_name_option,
    marker_sort_key_option,
)
from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.partition_keys._index.state import state_table_name
from ddbkeys.partition_keys._proof.status import command_options
from ddbkeys.partition_keys._streams.follow_state import FollowReport
from ddbkeys.partition_keys._streams.follower import StreamFollower

__all__ = ["follow_command"]


@click.command("follow")
@table_option
@index_name_option
@click.option(
    "--marker-attribute",
    default=None,
    help="The attribute that keys the marker index. By default the index's own key; "
    "another one is an error.",
)
@marker_sort_key_option
@state_table_option
@click.option(
    "--from-start",
    is_flag=True,
    help="On a first start, begin at the stream's oldest record (24 h back at most).",
)
@click.option(
    "--until-caught-up",
    is_flag=True,
    help="Stop once every shard has been read to its end (for cron jobs and tests); with "
    "--backfill, read to its end once more after the backfill, following all along.",
)
@click.option(
    "--poll",
    type=FloatRange(min=0.05, max=60),
    default=1.0,
    show_default=True,
    help="Seconds between reads at the end of the stream.",
)
@click.option(
    "--backfill",
    is_flag=True,
    help="Also backfill the index, once the replay margin has passed since this follower's "
    "first position (and again only if a new stream needs it): from an empty index to a "
    "provable one in one command. Not again on a restart while a counting backfill exists.",
)
@click.option(
    "--outage-wait",
    type=FloatRange(min=0),
    metavar="SECONDS",
    default=OUTAGE_WAIT,
    show_default=True,
    help="Seconds to keep trying, once following has begun, while the endpoint does not "
    "answer (a network blip, DynamoDB Local restarted; one that hangs is noticed when a call "
    "gives up, after --timeout): it goes on from its checkpoint when "
    "the endpoint is back; after that long it exits 1 (run it under a restart policy). 0: "
    "exit at once.",
)
@margin_option
@connection_options
@output_option
def follow_command(
    table_name: str,
    index_name: str,
    marker_attribute: str | None,
    state_table: str | None,
    from_start: bool,
    until_caught_up: bool,
    poll: float,
    backfill: bool,
    replay_margin: float,
    outage_wait: float,
    connection: Connection,
    output: str,
) -> None:
    """Keep the markers right from the table's stream: a marker appears when a collection gets
    its first item and goes when its last item goes, whatever wrote them.

    Reads every shard (and the shards that split from them), reconciles each collection a
    record names with a consistent Query, and saves its position in --state-table after each
    batch: after a kill, the same command goes on from there. Ctrl-C, SIGTERM and SIGHUP
    stop it cleanly within about a second: exit status 0, or 1 with --backfill when its
    backfill was not done yet (the index is not ready: the same command goes on). A collection
    changing too fast for its marker to settle is recorded as pending (listings re-check it),
    not an error. Where the marker index is not there or not ACTIVE yet, it waits for it,
    saying so (Ctrl-C stops: exit status 0); with --until-caught-up, and where the index is
    not KEYS_ONLY on the marker attribute, it refuses, writing nothing.

    An endpoint that stops answering once following has begun is tried again, at most every
    30 s, for --outage-wait seconds (15 minutes by default): the follower goes on from its
    checkpoint when it answers; after that, exit status 1. Left running in production, run
    it under a restart policy all the same (systemd's Restart=on-failure, a container's).

    Listings prove the index from a backfill begun at least --replay-margin after this
    follower's first position: --backfill does that here (once the margin has passed), or
    run `index backfill` in another shell at any time (it waits for the margin itself).

    \b
    The setup, in the order `index --help` and `index create` give:
      ddbkeys partition-keys index create -t issues
      ddbkeys partition-keys index stream -t issues
      ddbkeys partition-keys index follow -t issues --backfill   # left running: to proven
    Apply what the stream holds, then stop (a cron job, a test):
      ddbkeys partition-keys index follow -t issues --until-caught-up
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    stop = threading.Event()
    stderr = _console()

    told: float | None = None  # when the stream was found off, once said
    noted = False  # whether it said that no backfill counts yet
    told_held: float | None = None  # when a shard's position stopped advancing, once said

    outage = Outage(outage_wait)
    # (the backfill named must record where this follower does, for the same margin: helper-76)
    own = command_options(index_name, state_table_name(state_table), replay_margin)

    def on_batch(report: FollowReport) -> None:
        nonlocal told, told_held, noted
        outage.answered()
        if report.backfill_needed and not backfill and not noted:
            noted = True  # (at its start: said once)
            say(
                "Note: no backfill under this stream lets a listing prove the index yet: run "
                f"`ddbkeys partition-keys index backfill -t {table_name}{own}` while this "
                "follower runs (it waits for the replay margin after the follower's first "
                "position), or follow with --backfill."
            )
        off = report.stream_off_since  # (said once each time, on a line of its own)
        news, told = off is not None and off != told, off
        stuck = report.held_since
        news_held, told_held = stuck is not None and stuck != told_held, stuck
        if stderr.is_terminal or news or news_held:
            stderr.print(
                f"{report.records} records, {report.marked} marked, {report.unmarked} unmarked"
                + (f", {report.pending} pending" if report.pending else "")
                + (f"; {stream_off(table_name)}" if news else "")
                + (f"; {held(table_name)}" if news_held else ""),
                end="\n" if news or news_held else "\r",
                soft_wrap=True,
            )

    def on_backfill(line: str) -> None:
        if outage.said(line):  # (its failures during an outage: once, helper-74 F5)
            stderr.print(("\n" if stderr.is_terminal else "") + cli_words(line), soft_wrap=True)

    follower = StreamFollower(
        index,
        state_table=state_table,
        poll=poll,
        on_batch=outage.on_batch if structured(output) else on_batch,
        backfill=backfill,
        replay_margin=replay_margin,
        on_backfill=on_backfill,
    )
    received: list[int] = []
    grace = _Grace()
    try:
        with _stopping(stop, grace, received):
            _await_index(index, table_name, stop, until_caught_up)
            if stop.is_set():  # (stopped while it waited for the index: nothing to follow)
                grace.done = True
                _abandoned(state_table, received, backfill, waited=True)
                return
            report = outage.run(follower, stop, until_caught_up, from_start)
            grace.done = True
    except _Abandoned:
        _abandoned(state_table, received, backfill)
        return
    _finish(report, table_name, output, backfill, state_table, received)


@contextlib.contextmanager
def _stopping(stop: threading.Event, grace: _Grace, received: list[int]) -> Iterator[None]:
    """While it lasts, SIGINT, SIGTERM and SIGHUP set ``stop`` (the first one's number kept in
    ``received``) and start ``grace``; the grace's own signal, once over, abandons the request
    under way (:class:`_Abandoned`). Only in the main thread (elsewhere, no handler)."""
    previous = {
        sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }

    def handler(number: int, _frame: object) -> None:
        if stop.is_set() and grace.over and not grace.done:  # (a request outlived the grace)
            raise _Abandoned
        if not received:
            received.append(number)
        stop.set()
        grace.start()

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in previous:
            signal.signal(sig, handler)
    try:
        yield
    finally:
        grace.cancel()
        if in_main:
            for sig, old in previous.items():
                signal.signal(sig, old)


#: Seconds a stop waits for the request under way before it abandons it (the follower stops
#: at its next step: a request that hangs would hold it there until its deadline).
GRACE = 1.0


class _Abandoned(BaseException):
    """Raised in the main thread by the stop's own signal, sent again once ``GRACE`` is over,
    where a request under way held the follower (a BaseException: no ``except Exception``
    of the request's code takes it for a failure to retry)."""


class _Grace:
    """After a stop, a signal of its own to the process once ``GRACE`` has passed, which
    interrupts a request under way (helper-86 F3: a hung GetRecords held a stopped follower
    until its 60 s deadline; at start-up, a silent endpoint, for good)."""

    def __init__(self) -> None:
        self.over = self.done = False
        self.timer: threading.Timer | None = None

    def start(self) -> None:
        if self.timer is None:
            self.timer = threading.Timer(GRACE, self._fire)
            self.timer.daemon = True
            self.timer.start()

    def _fire(self) -> None:
        self.over = True
        if not self.done:
            os.kill(os.getpid(), signal.SIGINT)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()


def _abandoned(
    state_table: str | None, received: list[int], backfill: bool, *, waited: bool = False
) -> None:
    """The stop's lines where a request under way was abandoned, or the follower stopped
    while it waited for the index (``waited``): exit 0, or 1 with ``--backfill`` (its
    backfill may not be done; its record says so once it looks dead)."""
    name = signal.Signals(received[0]).name if received else "a signal"
    click.echo(
        f"Stopped by {name} while it waited for the index: nothing was followed."
        if waited
        else f"Stopped by {name}, abandoning a request that had not answered within "
        f"{GRACE:g} s; the next start goes on from the checkpoint in table "
        f"{state_table_name(state_table)!r}.",
        err=True,
    )
    if backfill:
        click.echo(
            "The backfill may not be done: run the same command again (it goes on from the "
            "follower's checkpoint).",
            err=True,
        )
        raise click.exceptions.Exit(1)


def _finish(
    report: FollowReport,
    table_name: str,
    output: str,
    backfill: bool,
    state_table: str | None,
    received: list[int],
) -> None:
    """What the follower did, on stdout (text or JSON), and why it stopped; exit status 1
    where its backfill was not done."""
    if received:
        click.echo(
            f"Stopped by {signal.Signals(received[0]).name}; the next start goes on from the "
            f"checkpoint in table {state_table_name(state_table)!r}.",
            err=True,
        )
    fields = {
        "table": table_name,
        "records": report.records,
        "marked": report.marked,
        "unmarked": report.unmarked,
        "clashes": report.clashes,
        "caught_up": report.caught_up,
        "stream_off": report.stream_off_since is not None,
        "pending": report.pending,
        "held": report.held_since is not None,
        "put_back": report.put_back,
        "cut_short": report.cut_short,
    }
    if backfill:
        fields["backfills"] = report.backfills
        fields["backfill_counts"] = report.backfill.counts if report.backfill else None
    if structured(output):
        echo_json(fields)
    else:
        click.echo(
            f"{report.records} record(s) handled: {report.marked} marked, {report.unmarked} "
            f"unmarked, {report.clashes} clash(es)"
            + (f", {report.pending} recorded pending" if report.pending else "")
            + "; "
            + ("caught up" if report.caught_up else "stopped before catching up")
            + (
                f"; {report.cut_short} record(s) of a batch the stop cut short are read again on "
                "the next start (its markers counted above)"
                if report.cut_short
                else ""
            )
            + (f"; {stream_off(table_name)}" if report.stream_off_since is not None else "")
            + (f"; {held(table_name)}" if report.held_since is not None else "")
            + (
                f"; its record was found put back {report.put_back} time(s) (restored from an "
                "older copy?): it went on from the positions restored"
                if report.put_back
                else ""
            )
        )
    if backfill and report.backfill_state != "done":
        # Stopped (or failed) before its backfill was done: a script waiting on this command
        # must not take the index as ready.
        click.echo(
            "The backfill was not done: run the same command again (it goes on from the "
            "follower's checkpoint and waits only what is left of the margin).",
            err=True,
        )
        raise click.exceptions.Exit(1)


def _await_index(index: MarkerIndex, table: str, stop: threading.Event, once: bool) -> None:
    """Until the marker index is ACTIVE, or ``stop``: a follower started beside `index create`
    (everything at once) ended 1 within a second, its backfill's "tried again in 10 s" never
    tried (helper-70 F5). Said once each state. Not for a run meant to end (``once``:
    --until-caught-up), which keeps the error."""
    said: tuple[str | None] | None = None
    while not once and not stop.is_set():
        status = index.status(fresh=said is not None)
        if status == "ACTIVE":
            return
        if said != (status,):
            # A CREATING index is on its way: naming `index create` then invited a second one
            # (helper-100 F3). DELETING: a drop is at work, and a create after it waits it out.
            made = (
                "being created"
                if status == "CREATING"
                else f"`ddbkeys partition-keys index create -t {table}` makes it"
            )
            state = "not there yet" if status is None else status
            say(
                f"Waiting for index {index.name!r} of table {table!r} ({state}): {made}; "
                "following begins once it is ACTIVE (Ctrl-C stops)."
            )
            said = (status,)
        stop.wait(WAIT_FOR_INDEX)


#: Seconds between two looks at an index that is not ACTIVE yet.
WAIT_FOR_INDEX = 5.0


def _console() -> Any:
    """The console of the follower's lines on stderr. A reader of them that goes away (| head,
    a log shipper restarting) costs the lines, never the work: rich would raise SystemExit in
    the thread that printed (helper-67: the backfill thread ended so, and the follower ran
    on, never backfilling, saying nothing)."""
    from rich.console import Console  # noqa: PLC0415 (rich: only once the command runs)

    console = Console(stderr=True)
    console.on_broken_pipe = quiet_output  # type: ignore[method-assign]
    return console
