"""``ddbkeys partition-keys index``: create, fill, check and mend the marker index."""

from __future__ import annotations

import math
import signal
import threading
from typing import Any

import click
from rich.console import Console

from ddbkeys.cli.common import (
    Connection,
    StatusLine,
    connection_options,
    echo_json,
    index_name_option,
    index_options,
    json_key,
    output_option,
    parse_key,
    replay_margin_option,
    show_key,
    state_table_option,
    structured,
    table_option,
)
from ddbkeys.cli.index_status import status_command
from ddbkeys.partition_keys import (
    BackfillReport,
    MarkerIndex,
    VerifyReport,
    plain_key,
)
from ddbkeys.partition_keys.backfill import MODES
from ddbkeys.partition_keys.backfill_wait import (
    NO_MAINTAINER,
    OTHER_RUNNING,
    WAITING,
    Readiness,
    began,
)
from ddbkeys.partition_keys.evidence import Backfill
from ddbkeys.partition_keys.follow import FollowReport, StreamFollower, enable_stream
from ddbkeys.partition_keys.state import state_table_name

__all__ = ["index_group"]


#: The index commands in the order of the work, as --help and docs/cli.md list them.
WORK_ORDER = (
    "create",
    "stream",
    "follow",
    "backfill",
    "status",
    "mark",
    "unmark",
    "verify",
    "repair",
)


class InOrder(click.Group):
    """A group that lists its commands in the order of the work, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        known = [name for name in WORK_ORDER if name in self.commands]
        return known + sorted(set(self.commands) - set(known))


def stream_off(table: str) -> str:
    """What ``follow`` says of a table whose stream it found off (it waits for a new one)."""
    turn_on = f"ddbkeys partition-keys index stream -t {table}"
    return f"the table's stream is off: waiting for it to be turned on (`{turn_on}`)"


def held(table: str) -> str:
    """What ``follow`` says when a shard's position stops advancing (the pending set full)."""
    return (
        f"the pending set of {table}'s index is full (collections whose markers did not settle "
        "because they change fast): the position in a shard stops advancing until they settle; "
        "markers are still kept, and listings read the stream from the held position"
    )


@click.group("index", cls=InOrder)
def index_group() -> None:
    """The sparse marker index: one marker item per item collection, in a KEYS_ONLY GSI.

    \b
    Set it up once, then keep it right from the table's stream:
      ddbkeys partition-keys index create   -t T   # add the GSI and wait for it
      ddbkeys partition-keys index stream   -t T   # turn the stream on (KEYS_ONLY)
      ddbkeys partition-keys index follow   -t T --backfill   # keep it right; fill it once
    `--backfill` marks the collections already there once the replay margin has passed since
    the follower's first position, so that listings can prove the index. With the Lambda
    handler instead: `index backfill -t T --wait-for-maintainer` (it waits for the same).
      ddbkeys partition-keys index status   -t T   # can a listing prove it? if not, why
    \b
    Check it, fix it, or keep it yourself (no stream):
      ddbkeys partition-keys index verify   -t T   # compare the index with the table
      ddbkeys partition-keys index repair   -t T   # mark what is missing, drop orphans
      ddbkeys partition-keys index mark     -t T KEY...   # mark new collections
      ddbkeys partition-keys index unmark   -t T KEY...   # before deleting a collection
    Then `ddbkeys partition-keys -t T` lists the keys from the index once it can prove it
    complete (the follower's positions and the stream since), and says why when it cannot.
    """


def open_index(
    connection: Connection, table_name: str, index_name: str, marker_attribute: str | None
) -> MarkerIndex:
    return MarkerIndex(
        connection.client(),
        table_name,
        index_name=index_name,
        marker_attribute=marker_attribute,
        deadline=connection.timeout,
    )


def parse_keys(index: MarkerIndex, keys: tuple[str, ...], table_name: str) -> list[Any]:
    """KEYS as given on the command line, in the table's partition key type."""
    key_type = index.table_info().partition_key.type
    return [parse_key(k, key_type, table_name, "KEYS") for k in keys]


def clash_error(table_name: str, clashes: list[Any], index: MarkerIndex) -> click.ClickException:
    """The error (exit 1) for collections that cannot be marked."""
    shown = ", ".join(show_key(plain_key(k)) for k in clashes[:20])
    more = f" and {len(clashes) - 20} more" if len(clashes) > 20 else ""
    return click.ClickException(
        f"{len(clashes)} collection(s) of table {table_name!r} cannot be marked: {shown}{more}. "
        "Each holds a data item at the marker's sort key (its "
        f"{index.attribute!r} is not its own partition key), left as it is; give the markers "
        "another sort key value (marker_sort_key= in Python)."
    )


@index_group.command("create")
@table_option
@index_options
@click.option("--no-wait", is_flag=True, help="Return without waiting for the index to be ACTIVE.")
@connection_options
@output_option
def create_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    no_wait: bool,
    connection: Connection,
    output: str,
) -> None:
    """Add the KEYS_ONLY marker index to the table (nothing happens if it is there).

    \b
    Example:
      ddbkeys partition-keys index create -t issues
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    index.create(wait=not no_wait)
    status = index.status()
    if structured(output):
        echo_json({"table": table_name, "index": index_name, "status": status})
    else:
        click.echo(f"Index {index_name} of table {table_name}: {status}")


@index_group.command("mark")
@click.argument("keys", nargs=-1, required=True)
@table_option
@index_options
@connection_options
@output_option
def mark_command(
    keys: tuple[str, ...],
    table_name: str,
    index_name: str,
    marker_attribute: str,
    connection: Connection,
    output: str,
) -> None:
    """Put the marker into the collections KEYS (base64 for binary keys). Idempotent.

    A collection whose item at the marker's sort key is data (its marker attribute is not its
    own partition key) is not marked: it is named, and the exit code is 1. Nothing is written
    unless the marker index is there (KEYS_ONLY, keyed on --marker-attribute, ACTIVE).

    \b
    Example:
      ddbkeys partition-keys index mark -t issues projectA projectB
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    report = index.mark_many(parse_keys(index, keys, table_name))
    show_marked(report, index, output)


@index_group.command("unmark")
@click.argument("keys", nargs=-1, required=True)
@table_option
@index_options
@connection_options
@output_option
def unmark_command(
    keys: tuple[str, ...],
    table_name: str,
    index_name: str,
    marker_attribute: str,
    connection: Connection,
    output: str,
) -> None:
    """Remove the marker of the collections KEYS (an item at the marker's key that is not a
    marker is never removed). An error when the table has no marker index.

    \b
    Example:
      ddbkeys partition-keys index unmark -t issues projectB   # before deleting projectB
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    removed = sum(index.unmark(key) for key in parse_keys(index, keys, table_name))
    if structured(output):
        echo_json({"table": table_name, "removed": removed, "absent": len(keys) - removed})
    else:
        click.echo(f"{removed} marker(s) removed, {len(keys) - removed} not there")


margin_option = replay_margin_option(
    "The replay margin of the listings that will prove the index: the backfill begins at "
    "least this long after the maintainer's first position (waiting if needed)."
)


@index_group.command("backfill")
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
    type=click.FloatRange(min=0),
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
    --no-wait exits 1 at once instead; --force runs all the same.

    \b
    Examples:
      ddbkeys partition-keys index backfill -t issues
      ddbkeys partition-keys index backfill -t issues --output json
      ddbkeys partition-keys index backfill -t T --wait-for-maintainer 600   # a new trigger
    `index follow -t T --backfill` does the follower's part and this one in one command.
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    stderr = Console(stderr=True)
    status = StatusLine(stderr, "backfilling...") if stderr.is_terminal else None
    said: set[str] = set()

    def on_wait(where: Readiness) -> None:
        if where.state == OTHER_RUNNING and where.other is not None:
            other_at_work(where.other)
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

    def other_at_work(other: Backfill) -> None:
        if OTHER_RUNNING not in said:
            click.echo(
                f"another backfill of table {table_name!r} is at work ({began(other)}): "
                "waiting for it to end (--force runs this one all the same)",
                err=True,
            )
            said.add(OTHER_RUNNING)
        if status is not None:
            if "spinner" not in said:
                status.start()
                said.add("spinner")
            status.update(f"the other backfill: {other.handled or 0} collections handled")

    def progress(written: int) -> None:
        if status is not None:
            if "spinner" not in said:
                status.start()
                said.add("spinner")
            status.update(f"{written} markers written")

    limit = wait_for_maintainer
    try:
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
        )
    finally:
        if status is not None and "spinner" in said:
            status.stop()
    if report.uncounted is not None:
        stderr.print(f"The backfill does not count: {report.uncounted}.", markup=False)
    show_marked(report, index, output, usage=True)


def show_marked(
    report: BackfillReport, index: MarkerIndex, output: str, *, usage: bool = False
) -> None:
    """What mark or backfill did; the error (exit 1) for collections that cannot be marked."""
    joined = report.joined
    if joined is not None and not structured(output):
        click.echo(
            f"another backfill ({began(joined)}) did the work: listings can prove the index from it"
        )
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
            fields["counts"] = report.counts
            fields["advice"] = report.advice
            fields["mode"] = report.mode
            fields["rechecked"] = report.rechecked
            fields["uncounted"] = report.uncounted
            fields["joined"] = (
                None
                if joined is None
                else {"started": joined.started, "owner": joined.owner, "finished": joined.finished}
            )
        echo_json(fields)
    else:
        removed = f", {report.removed} removed" if report.removed else ""
        click.echo(f"{report.written} marker(s) written, {report.present} already there{removed}")
    if report.clashes:
        raise clash_error(index.table, report.clashes, index)


def _keys(keys: list[Any]) -> str:
    shown = ", ".join(show_key(plain_key(k)) for k in keys[:20])
    return f"{len(keys)}" + (f": {shown}" if shown else "") + (", ..." if len(keys) > 20 else "")


def _report(report: VerifyReport, output: str, table_name: str, repaired: bool) -> None:
    if structured(output):
        fields: dict[str, Any] = {
            "table": table_name,
            "index": report.index,
            "collections": report.collections,
            "markers": report.markers,
            "missing": [json_key(plain_key(k)) for k in report.missing],
            "orphans": [json_key(plain_key(k)) for k in report.orphans],
            "clashes": [json_key(plain_key(k)) for k in report.clashes],
            "healthy": report.healthy,
        }
        if repaired:
            fields["fixed_missing"] = [json_key(plain_key(k)) for k in report.fixed_missing]
            fields["fixed_orphans"] = [json_key(plain_key(k)) for k in report.fixed_orphans]
            fields["unfixed"] = [json_key(plain_key(k)) for k in report.unfixed]
            fields["repaired"] = report.repaired
        echo_json(fields)
        return
    click.echo(f"{report.collections} collections, {report.markers} markers")
    click.echo(f"missing markers: {_keys(report.missing)}")
    click.echo(f"orphaned markers: {_keys(report.orphans)}")
    click.echo(
        f"collections that cannot be marked (data at the marker's key): {_keys(report.clashes)}"
    )
    if not repaired:
        click.echo("OK" if report.healthy else "NOT HEALTHY (run `index repair`)")
        return
    click.echo(f"markers written: {_keys(report.fixed_missing)}")
    click.echo(f"orphaned markers removed: {_keys(report.fixed_orphans)}")
    if report.healthy:
        click.echo("OK")
    elif report.repaired:
        click.echo("REPAIRED")
    else:
        click.echo(f"NOT REPAIRED: {_keys(report.unfixed)} left as they are")


@index_group.command("verify")
@table_option
@index_options
@connection_options
@output_option
def verify_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    connection: Connection,
    output: str,
) -> None:
    """Compare the marker index with the table: missing and orphaned markers, and collections
    that cannot be marked. Exit code 1 when the index is not healthy.

    \b
    Example:
      ddbkeys partition-keys index verify -t issues || ddbkeys partition-keys index repair -t issues
    """
    report = open_index(connection, table_name, index_name, marker_attribute).verify()
    _report(report, output, table_name, repaired=False)
    if not report.healthy:
        raise click.exceptions.Exit(1)


@index_group.command("repair")
@table_option
@index_options
@click.option("--keep-orphans", is_flag=True, help="Do not remove orphaned markers.")
@state_table_option
@connection_options
@output_option
def repair_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    keep_orphans: bool,
    state_table: str | None,
    connection: Connection,
    output: str,
) -> None:
    """Mark the collections verify finds unmarked, and remove orphaned markers. Says what it
    did and what it could not fix; exit code 1 when something is left. Clashes a maintainer
    recorded in --state-table that a consistent read of their collection no longer finds
    are cleared.

    \b
    Example:
      ddbkeys partition-keys index repair -t issues --output json
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    report = index.repair(remove_orphans=not keep_orphans, state_table=state_table)
    _report(report, output, table_name, repaired=True)
    if not report.repaired:
        raise click.exceptions.Exit(1)


STREAM_COST = (
    "Turning a stream on is free, and so are the reads of a Lambda trigger; other readers (such "
    "as `index follow`) pay per GetRecords request (streams read request units, on the "
    "DynamoDB pricing page). Each record the maintainer handles costs about one read unit (a "
    "consistent Query of at most two items), plus a write when a marker must change."
)


@index_group.command("stream")
@table_option
@connection_options
@output_option
def stream_command(table_name: str, connection: Connection, output: str) -> None:
    """Turn the table's stream on (KEYS_ONLY), if it is off, for `index follow` or the Lambda
    handler to keep the markers right. A stream already on is left as it is.

    \b
    Example:
      ddbkeys partition-keys index stream -t issues
    """
    arn, changed = enable_stream(connection.client(), table_name)
    if structured(output):
        echo_json({"table": table_name, "stream": arn, "changed": changed})
        return
    click.echo(f"Stream of {table_name}: {arn}" + (" (turned on)" if changed else " (already on)"))
    click.echo(STREAM_COST, err=True)


@index_group.command("follow")
@table_option
@index_name_option
@click.option(
    "--marker-attribute",
    default=None,
    help="The attribute that keys the marker index. By default the index's own key; "
    "another one is an error.",
)
@state_table_option
@click.option(
    "--from-start",
    is_flag=True,
    help="On a first start, begin at the stream's oldest record (24 h back at most).",
)
@click.option(
    "--until-caught-up",
    is_flag=True,
    help="Stop once every shard has been read to its end (for cron jobs and tests).",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0.05, max=60),
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
    connection: Connection,
    output: str,
) -> None:
    """Keep the markers right from the table's stream: a marker appears when a collection gets
    its first item and goes when its last item goes, whatever wrote them.

    Reads every shard (and the shards that split from them), reconciles each collection a
    record names with a consistent Query, and saves its position in --state-table after each
    batch: after a kill, the same command goes on from there. Ctrl-C, SIGTERM and SIGHUP
    stop it cleanly. A collection changing too fast for its marker to settle is recorded as
    pending (listings re-check it), not an error. It refuses, writing nothing, unless the
    marker index is there (KEYS_ONLY, ACTIVE).

    Listings prove the index from a backfill begun at least --replay-margin after this
    follower's first position: --backfill does that here (once the margin has passed), or
    run `index backfill` in another shell at any time (it waits for the margin itself).

    \b
    ddbkeys partition-keys index stream -t issues
    ddbkeys partition-keys index create -t issues
    ddbkeys partition-keys index follow -t issues --until-caught-up
    ddbkeys partition-keys index follow -t T --backfill   # left running: from empty to proven
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    stop = threading.Event()
    stderr = Console(stderr=True)

    told: float | None = None  # when the stream was found off, once said
    noted = False  # whether it said that no backfill counts yet
    told_held: float | None = None  # when a shard's position stopped advancing, once said

    def on_batch(report: FollowReport) -> None:
        nonlocal told, told_held, noted
        if report.backfill_needed and not backfill and not noted:
            noted = True  # (at its start: said once)
            click.echo(
                "Note: no backfill under this stream lets a listing prove the index yet: run "
                f"`ddbkeys partition-keys index backfill -t {table_name}` while this follower "
                "runs (it waits for the replay margin after the follower's first position), or "
                "follow with --backfill.",
                err=True,
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
        stderr.print(("\n" if stderr.is_terminal else "") + line, soft_wrap=True)

    follower = StreamFollower(
        index,
        state_table=state_table,
        poll=poll,
        on_batch=None if structured(output) else on_batch,
        backfill=backfill,
        replay_margin=replay_margin,
        on_backfill=on_backfill,
    )
    stopping = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in stopping}
    received: list[int] = []

    def handler(number: int, _frame: object) -> None:
        received.append(number)
        stop.set()

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in previous:
            signal.signal(sig, handler)
    try:
        report = follower.run(stop, until_caught_up=until_caught_up, from_start=from_start)
    finally:
        if in_main:
            for sig, old in previous.items():
                signal.signal(sig, old)
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
            + (f"; {stream_off(table_name)}" if report.stream_off_since is not None else "")
            + (f"; {held(table_name)}" if report.held_since is not None else "")
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


index_group.add_command(status_command)
