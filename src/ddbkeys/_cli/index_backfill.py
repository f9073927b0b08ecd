"""``ddbkeys partition-keys index backfill``: mark every collection once, as the proof's rule
says (see :meth:`ddbkeys.partition_keys.MarkerIndex.backfill`)."""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ddbkeys._cli.backfill_lines import Reads, spinner_off
from ddbkeys._cli.common import (
    Connection,
    FloatRange,
    StatusLine,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
)
from ddbkeys._cli.group import rich_console
from ddbkeys._cli.index_common import clash_error, margin_option, open_index
from ddbkeys._cli.index_options import (
    index_options,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys import (
    BackfillReport,
    IndexBackfillWarning,
    MarkerIndex,
    plain_key,
)
from ddbkeys.partition_keys._index.backfill import MODES
from ddbkeys.partition_keys._index.backfill_wait import (
    NO_MAINTAINER,
    OTHER_RUNNING,
    READING,
    TIP,
    WAITING,
    Readiness,
    began,
    running_backfill,
    unmaintained,
)
from ddbkeys.partition_keys._index.markers import emptied_meanwhile
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._listing.text import json_key
from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = ["backfill_command", "show_marked"]


@click.command("backfill")
@table_option
@index_options
@state_table_option
@margin_option
@click.option(
    "--no-wait",
    is_flag=True,
    help="Begin at once even when the maintainer's first position is younger than the "
    "replay margin (the backfill will not count: no listing can prove the index from it); "
    "when another backfill is at work, exit 1 at once (nothing written) instead of waiting "
    "for it.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Run even when another backfill is at work under the table's stream (a second read "
    "of the table: that one stops at its next write of the index's record).",
)
@click.option(
    "--wait-for-maintainer",
    type=FloatRange(min=0),
    is_flag=False,
    flag_value=math.inf,
    default=None,
    metavar="[SECONDS]",
    help="When no maintainer has recorded a position yet (a Lambda trigger just added), wait "
    "for one, at most SECONDS (no limit when not given), then for the margin.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="auto",
    show_default=True,
    help="reconcile: a consistent Query a collection; read: one read of the table and its "
    "index, then the stream over the backfill's window (a replay margin after its last write); "
    "auto: read where the table has a stream and 1,000 items or more.",
)
@click.option(
    "--from-export",
    metavar="URI",
    help="Read the table's export to S3 instead of the table (s3://BUCKET/PREFIX/AWSDynamoDB/"
    "EXPORT_ID/ or a copy on disk): markers written and orphans removed with no read of the "
    "table, then the stream since the export's time reconciled. It counts when the stream "
    "holds every change since the export (its records are kept 24 h).",
)
@connection_options
@output_option
def backfill_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    replay_margin: float,
    no_wait: bool,
    force: bool,
    wait_for_maintainer: float | None,
    mode: str,
    from_export: str | None,
    connection: Connection,
    output: str,
) -> None:
    """Reconcile every collection of the table with its marker: mark those without one,
    remove the markers of those that hold nothing else (--mode: a consistent Query a
    collection, or one read of the table and its index then the stream over the backfill's
    window; see docs/partition-keys/index.md).

    Collections whose item at the marker's sort key is data are not marked: they are named,
    and the exit code is 1. Nothing is written unless the marker index is there (KEYS_ONLY,
    keyed on --marker-attribute, ACTIVE).

    The backfill is recorded in --state-table as the snapshot listings prove the index from.
    It counts when it begins at least --replay-margin after a maintainer (`index follow` or
    the Lambda handler) recorded its first position in the table's stream: when that was
    less than the margin ago, it waits out the rest first (a countdown on stderr). With no
    maintainer yet it says so on stderr and writes the markers all the same (they serve
    --trust-index), or waits for one with --wait-for-maintainer.

    One backfill at a time: while another one (`index follow --backfill`, another `index
    backfill`) is at work under the table's stream, this one reads nothing: it says on stderr
    when that one began and who runs it, waits for it to end, and exits 0 if listings can
    prove the index from it (it runs itself if not, or if that one dies: silent for 30 s).
    --no-wait exits 1 at once instead; --force runs all the same. Ctrl-C, SIGTERM or SIGHUP
    stop it: its record says so, and the same command run again begins at once.

    \b
    Examples:
      ddbkeys partition-keys index backfill -t issues
      ddbkeys partition-keys index backfill -t issues --output json
      ddbkeys partition-keys index backfill -t T --wait-for-maintainer 600   # a new trigger
      ddbkeys partition-keys index backfill -t T --from-export s3://B/P/AWSDynamoDB/ID/
    `index follow -t T --backfill` does the follower's part and this one in one command.
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    stderr = rich_console(stderr=True)
    status = StatusLine(stderr, "backfilling...") if stderr.is_terminal else None
    said: set[str] = set()
    working = [False]  # whether it has begun (not waiting: for the margin, another, a maintainer)

    def on_wait(where: Readiness) -> None:
        working[0] = not (
            where.state == OTHER_RUNNING
            or (where.state == WAITING and not no_wait)
            or (where.state == NO_MAINTAINER and wait_for_maintainer is not None)
        )
        if where.state == OTHER_RUNNING and where.other is not None:
            reads.waiting_for(where.other, table_name)
        elif where.counts:
            if WAITING in said and stderr.is_terminal:
                stderr.print(" " * (stderr.width - 1), end="\r", soft_wrap=True)  # (its line)
        elif where.state == WAITING and not no_wait:
            after = "records lost" if where.after_gap else "the maintainer's first position"
            if stderr.is_terminal:  # a countdown, on one short line
                stderr.print(
                    f"backfill in {math.ceil(where.left)} s (the replay margin after {after}; "
                    "Ctrl-C stops)"[: stderr.width - 1].ljust(stderr.width - 1),
                    end="\r",
                    soft_wrap=True,
                )
            elif WAITING not in said:
                click.echo(
                    f"waiting {math.ceil(where.left)} s for the replay margin ({replay_margin:g} "
                    f"s after {after}) before the backfill; --no-wait begins now, and the "
                    "backfill will not count",
                    err=True,
                )
            said.add(WAITING)
        elif where.state in (READING, TIP):
            reads(where)
        elif where.state == NO_MAINTAINER and wait_for_maintainer is not None:
            if NO_MAINTAINER not in said:
                click.echo(
                    "waiting for a maintainer (`index follow` or the Lambda handler) to record a "
                    f"position in the stream of table {table_name!r}...",
                    err=True,
                )
            said.add(NO_MAINTAINER)
        elif "note" not in said:
            click.echo(f"Note: {where.advice()}.", err=True)
            said.add("note")

    reads = Reads(status, said)

    def progress(written: int) -> None:
        working[0] = True
        reads.written(written)

    limit = wait_for_maintainer
    _said_forced(index, state_table, force)  # (helper-81 F4: the one it stops said so)
    try:
        with (
            stopping_signals(
                table_name,
                lambda: spinner_off(status, said),
                lambda: working[0],
                lambda: _kept(index, state_table),
            ),
            warnings.catch_warnings(),
        ):
            # (the notes below say it, and what to do, in the command's words)
            warnings.simplefilter("ignore", IndexBackfillWarning)
            report = index.backfill(
                progress=progress,
                state_table=state_table,
                replay_margin=replay_margin,
                wait=not no_wait,
                wait_for_maintainer=limit is not None,
                timeout=None if limit is None or math.isinf(limit) else limit,
                on_wait=on_wait,
                mode=mode,
                force=force,
                from_export=from_export,
            )
    finally:
        spinner_off(status, said)
    if report.uncounted is not None:
        stderr.print(f"The backfill does not count: {report.uncounted}.", markup=False)
    elif report.counts and report.joined is None:
        _said_unmaintained(index, state_table, report.written + report.removed)
    declined = _declined(index, state_table, replay_margin) if report.counts else None
    if declined is not None:
        click.echo(
            f"Note: listings of table {table_name!r} still decline the index: {declined}", err=True
        )
    show_marked(report, index, output, usage=True, declined=declined)


def _declined(index: MarkerIndex, state_table: str | None, margin: float) -> str | None:
    """Why listings cannot prove the index from a backfill that counts, for a reason of its
    record besides the backfill (a Lambda handler that could not read its trigger; clashes),
    as ``index status`` says it, with its fix (None: they can, or will with nothing done, or
    the check failed): DescribeTable, the record and the stream's description (helper-89 F6:
    "listings can prove the index from it", and they declined it)."""
    with contextlib.suppress(DdbKeysError):
        status = index.proof_status(state_table=state_table, replay_margin=margin)
        if not status.provable and status.provable_in is None and status.reason:
            return status.reason + (f". Fix: {status.fix}" if status.fix else "")
    return None


def _said_forced(index: MarkerIndex, state_table: str | None, force: bool) -> None:
    """With --force, a line where another backfill is at work: this one takes its record (one
    GetItem of the index's record)."""
    if not force:
        return
    record = _record(index, state_table)
    other = record.backfill if record is not None else None
    if other is not None and running_backfill(record, other.stream, time.time()):
        click.echo(
            f"--force: this backfill takes the record of table {index.table!r}'s index from "
            f"the one at work ({began(other)}), which stops at its next write of it.",
            err=True,
        )


def _kept(index: MarkerIndex, state_table: str | None) -> str | None:
    """When the finished backfill a stopped one replaced finished, as a message says it (None:
    none, or its record cannot be read): one GetItem of the index's record."""
    record = _record(index, state_table)
    kept = record.kept if record is not None else None
    if kept is None or kept.finished is None:
        return None
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(kept.finished))
    return f"finished {at}; `index status` says so"


def _record(index: MarkerIndex, state_table: str | None) -> Evidence | None:
    """The index's record, for a note (one GetItem; None: none, or it cannot be read)."""
    with contextlib.suppress(DdbKeysError):
        return StateStore(index.client, state_table, deadline=10.0).load(index.table, index.name)
    return None


def _said_unmaintained(index: MarkerIndex, state_table: str | None, wrote: int) -> None:
    """A note on stderr where no maintainer applied the backfill's writes (see
    ``backfill_wait.unmaintained``): one GetItem of the index's record."""
    if wrote <= 0:
        return
    with contextlib.suppress(DdbKeysError):  # (the backfill is done: a note only)
        record = StateStore(index.client, state_table, deadline=10.0).load(index.table, index.name)
        note = unmaintained(record, wrote)
        if note is not None:
            click.echo(f"Note: {note}.", err=True)


@contextmanager
def stopping_signals(
    table: str,
    before: Callable[[], None],
    begun: Callable[[], bool],
    kept: Callable[[], str | None] = lambda: None,
) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP stop the backfill inside: each reaches it as a
    KeyboardInterrupt, which the driver throws into its flow, so that its record says it
    stopped (within ``backfill_claim.FAREWELL`` seconds) and the next backfill begins at once;
    then one line on stderr (``before`` is called first; ``begun``: whether the backfill had
    begun, or was still waiting, writing nothing; ``kept``: when the finished backfill it
    replaced, which listings go on proving the index from, finished, if there is one), exit 128
    + the signal's number. A second Ctrl-C stops at once."""
    received: list[int] = []

    def handler(number: int, _frame: object) -> None:
        received.append(number)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # (a second one: at once)
        raise KeyboardInterrupt

    numbers = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    in_main = threading.current_thread() is threading.main_thread()
    previous = {n: signal.signal(n, handler) for n in numbers} if in_main else {}
    try:
        yield
    except KeyboardInterrupt:
        before()
        number = received[0] if received else signal.SIGINT
        verb = (
            "Interrupted"
            if number == signal.SIGINT
            else f"Stopped by {signal.Signals(number).name}"
        )
        if not begun():
            click.echo(
                f"{verb} before the backfill of table {table!r} began: nothing was written.",
                err=True,
            )
            raise click.exceptions.Exit(128 + number) from None
        finished = kept()  # (helper-81 F3: "cannot prove" read as "the index is unprovable")
        proves = (
            "so listings cannot prove the index from it"
            if finished is None
            else f"and listings go on proving the index from the backfill it replaced ({finished})"
        )
        click.echo(
            f"{verb}: the backfill of table {table!r} did not finish, {proves} (its markers "
            "written so far stay); its record says it stopped, so "
            f"`ddbkeys partition-keys index backfill -t {table}` run again begins at once.",
            err=True,
        )
        raise click.exceptions.Exit(128 + number) from None
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def show_marked(
    report: BackfillReport,
    index: MarkerIndex,
    output: str,
    *,
    usage: bool = False,
    declined: str | None = None,
) -> None:
    """What mark or backfill did; the error (exit 1) for collections that cannot be marked.
    ``declined``: why listings decline the index all the same, where the backfill counts
    (stderr said it)."""
    joined = report.joined
    proves = "still decline the index (see the note)" if declined else "can prove the index from it"
    if joined is not None and not structured(output):
        click.echo(f"another backfill ({began(joined)}) did the work: listings {proves}")
        return
    if structured(output):
        fields: dict[str, Any] = {
            "table": index.table,
            "written": report.written,
            "already": report.present,
            "clashes": [json_key(plain_key(k)) for k in report.clashes],
        }
        if usage:
            fields["usage"] = index.usage.snapshot()
            fields["removed"] = report.removed
            fields["emptied"] = report.emptied
            fields["counts"] = report.counts
            fields["declined"] = declined
            fields["advice"] = report.advice
            fields["mode"] = report.mode if joined is None else None  # (this one read nothing)
            fields["rechecked"] = report.rechecked
            fields["uncounted"] = report.uncounted
            fields["joined"] = (
                None
                if joined is None
                else {
                    "started": joined.started,
                    "owner": joined.owner,
                    "finished": joined.finished,
                    "mode": joined.mode,
                }
            )
        echo_json(fields)
    else:
        removed = f", {report.removed} removed" if report.removed else ""
        removed += emptied_meanwhile(report)
        # (a backfill says whether it counts, as the follower's does; helper-68: only the
        # JSON's `counts` told; where it does not, stderr has said why)
        counts = f"; listings {proves}" if usage and report.counts else ""
        click.echo(
            f"{report.written} marker(s) written, {report.present} already there{removed}{counts}"
        )
    if report.clashes:
        raise clash_error(index.table, report.clashes, index)
