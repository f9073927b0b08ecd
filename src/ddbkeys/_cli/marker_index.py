"""``ddbkeys partition-keys index``: create, fill, check and mend the marker index."""

from __future__ import annotations

import shlex
from dataclasses import asdict
from typing import Any

import click

from ddbkeys._cli.common import (
    SAMPLING,
    Connection,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
    waiting,
)
from ddbkeys._cli.index_backfill import backfill_command, show_marked
from ddbkeys._cli.index_common import markers_as_recorded, open_index, parse_keys
from ddbkeys._cli.index_drop import drop_command
from ddbkeys._cli.index_follow import follow_command
from ddbkeys._cli.index_options import given_text, index_options
from ddbkeys._cli.index_status import status_command
from ddbkeys._cli.index_verify import Upkeep, repair_command, verify_command
from ddbkeys.partition_keys import (
    ListingEstimate,
    estimate_listing,
)
from ddbkeys.partition_keys._index.markers import DEFAULT_INDEX, check_index, index_status
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.partition_keys._listing.recognise import marker_sort_key

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
    "drop",
)


class InOrder(click.Group):
    """A group that lists its commands in the order of the work, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        known = [name for name in WORK_ORDER if name in self.commands]
        return known + sorted(set(self.commands) - set(known))


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
      ddbkeys partition-keys index drop     -t T   # take the index and its markers away
    Then `ddbkeys partition-keys -t T` lists the keys from the index once it can prove it
    complete (the follower's positions and the stream since), and says why when it cannot.
    """


@index_group.command("create")
@table_option
@index_options
@click.option("--no-wait", is_flag=True, help="Return without waiting for the index to be ACTIVE.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Say what the markers would add and what a listing from the index would cost; "
    "create nothing.",
)
@connection_options
@output_option
def create_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    no_wait: bool,
    dry_run: bool,
    connection: Connection,
    output: str,
) -> None:
    """Add the KEYS_ONLY marker index to the table (if it is there, it says so).

    First it says what the markers would add (an item a collection: how many, their bytes,
    what a scan then reads), what a listing from the index would cost against today's scan,
    and what the backfill that writes the markers costs once (write and read units), with a
    warning when the index would cost more than the scan it replaces: from the
    estimate's sample of the table (about 32 read units, or 5% of a scan's on a large table,
    up to 128; a table of a MB or less read whole). Run again where the index is there, it
    creates nothing and says so, with what the markers not written yet would add.

    \b
    Example:
      ddbkeys partition-keys index create -t issues --dry-run
      ddbkeys partition-keys index create -t issues
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    info = index.table_info()
    there = index_status(info, index_name)
    if there is not None:  # (refused as create refuses it, --dry-run too)
        check_index(info, index_name, marker_attribute, active=False)
    marker_sort_key(info)  # (a table without a sort key: the error create gives)
    if info.sort_key and info.sort_key.type == "B" and given_text() is None:
        click.echo(BINARY_NOTE.format(table=table_name), err=True)
    with waiting(SAMPLING.format(table=table_name)):
        found = estimate_listing(
            connection.client(),
            table_name,
            index_name=index_name,
            marker_attribute=marker_attribute,
            deadline=connection.timeout,
        )
    added = found.markers
    fields: dict[str, Any] = {"table": table_name, "index": index_name}
    fields["markers"] = None if added is None else asdict(added)
    # (also where every marker is written and `markers` is None: helper-69 found the JSON
    # silent where the text warned)
    fields["warning"] = found.warning
    if not structured(output):
        if added is not None:  # the answer of --dry-run; else a note before the result
            summary = f"Index {index_name} of table {table_name}: {added.summary()}."
            click.echo(summary, err=not dry_run)
        elif dry_run:
            click.echo(f"Index {index_name} of table {table_name}: {_nothing_added(found)}.")
        if dry_run and there is not None and added is not None:
            click.echo(f"Index {index_name} of table {table_name}: {there} (there already).")
        if found.warning:
            click.echo(f"{found.warning}.", err=True)
    if dry_run:
        if structured(output):
            echo_json({**fields, "status": there, "dry_run": True})
        return
    created = index.create(wait=not no_wait)
    status = index.status()
    if structured(output):
        echo_json({**fields, "status": status, "created": created})
        return
    already = "" if created else " (there already: nothing created)"
    click.echo(f"Index {index_name} of table {table_name}: {status}{already}")
    streamed = index.table_info().stream_arn is not None
    drop = _drop_command(table_name, index_name, connection) if found.warning else None
    # (with the stream on, a maintainer may keep it already: then `index status` is next)
    upkeep = Upkeep.of(index, None) if streamed else None
    kept = upkeep is not None and upkeep.maintainer is not None
    click.echo(_next_step(table_name, streamed, drop, kept), err=True)


def _drop_command(table_name: str, index_name: str, connection: Connection) -> str:
    """``index drop``'s command that takes the index away, on the endpoint, region and profile
    this command was given (pasted as printed, it must not go to another account's table of
    the same name). It needed the AWS CLI, which left the markers (helper-89 C1)."""
    words = ["ddbkeys", "partition-keys", "index", "drop", "-t", table_name]
    if index_name != DEFAULT_INDEX:
        words += ["--index-name", index_name]
    for flag, value in (
        ("--endpoint-url", connection.endpoint_url),
        ("--region", connection.region),
        ("--profile", connection.profile),
    ):
        if value is not None:
            words += [flag, value]
    return shlex.join([*words, "--yes"])


def _next_step(table_name: str, streamed: bool, drop: str | None, kept: bool = False) -> str:
    """The line after ``index create``: the next step of the setup (the stream first, where it
    is off; then a maintainer, unless one keeps the index already: ``kept``, when ``index
    status`` says whether a listing can prove it); where the warning said the index costs
    more than the scan it replaces, how to take it away first (``drop``)."""
    follow = f"`index follow -t {table_name} --backfill` (or the Lambda handler)"
    if kept:
        steps = (
            f"`ddbkeys partition-keys index status -t {table_name}` says whether a listing can "
            "prove it, and what to do if not"
        )
    elif streamed:
        steps = f"`ddbkeys partition-keys {follow.removeprefix('`')}"
    else:
        steps = f"`ddbkeys partition-keys index stream -t {table_name}`, then {follow}"
    if drop is None:
        return f"Next: {steps}."
    return (
        "Next: as warned, listings from this index would cost more than a scan; take it away "
        f"with `{drop}`, or go on anyway: {steps}."
    )


#: The note of ``index create`` on a binary sort key whose markers take the default value.
BINARY_NOTE = (
    "Note: markers take the sort key 0x00 (one zero byte) of each collection of {table}; a "
    "collection holding an item of yours there cannot be marked, and listings then do not use "
    "the index. If your sort keys may be 0x00, give --marker-sort-key (base64) to this and "
    "every later index command and listing."
)


def _nothing_added(found: ListingEstimate) -> str:
    """Why the estimate says nothing of what markers would add (``found.markers`` is None)."""
    if found.method("index").available:
        return "it is there already: no marker would be added"
    if found.keys is None:
        return "what markers would add cannot be told: " + "; ".join(found.notes[:1])
    return "the table holds no collection yet: markers would add none now, one a collection later"


@index_group.command("mark")
@click.argument("keys", nargs=-1, required=True)
@table_option
@index_options
@state_table_option
@connection_options
@output_option
def mark_command(
    keys: tuple[str, ...],
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    connection: Connection,
    output: str,
) -> None:
    """Put the marker into the collections KEYS (base64 for binary keys). Idempotent.

    A collection whose item at the marker's sort key is data (its marker attribute is not its
    own partition key) is not marked: it is named, and the exit code is 1. Nothing is written
    unless the marker index is there (KEYS_ONLY, keyed on --marker-attribute, ACTIVE), nor
    where the index's record (--state-table) says its markers take another --marker-sort-key
    or --marker-attribute than given here.

    \b
    Example:
      ddbkeys partition-keys index mark -t issues projectA projectB
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    markers_as_recorded(index, state_table)
    report = index.mark_many(parse_keys(index, keys, table_name))
    show_marked(report, index, output)


@index_group.command("unmark")
@click.argument("keys", nargs=-1, required=True)
@table_option
@index_options
@state_table_option
@connection_options
@output_option
def unmark_command(
    keys: tuple[str, ...],
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    connection: Connection,
    output: str,
) -> None:
    """Remove the marker of the collections KEYS (an item at the marker's key that is not a
    marker is never removed). An error when the table has no marker index, or when the
    index's record (--state-table) says its markers take another --marker-sort-key or
    --marker-attribute than given here.

    \b
    Example:
      ddbkeys partition-keys index unmark -t issues projectB   # before deleting projectB
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    markers_as_recorded(index, state_table)
    removed = sum(index.unmark(key) for key in parse_keys(index, keys, table_name))
    if structured(output):
        echo_json({"table": table_name, "removed": removed, "absent": len(keys) - removed})
    else:
        click.echo(f"{removed} marker(s) removed, {len(keys) - removed} not there")


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
    arn, changed = enable_stream(connection.client(), table_name, deadline=connection.timeout)
    if structured(output):
        echo_json({"table": table_name, "stream": arn, "changed": changed})
        return
    click.echo(f"Stream of {table_name}: {arn}" + (" (turned on)" if changed else " (already on)"))
    click.echo(STREAM_COST, err=True)
    click.echo(  # (helper-81 F6: `index create` says the next step; this said none)
        f"Next: `ddbkeys partition-keys index follow -t {table_name} --backfill` (or the Lambda "
        f"handler) keeps the markers right and backfills them (`index create -t {table_name}` "
        "first, if the table has no marker index yet).",
        err=True,
    )


index_group.add_command(follow_command)
index_group.add_command(backfill_command)
index_group.add_command(status_command)
index_group.add_command(verify_command)
index_group.add_command(repair_command)
index_group.add_command(drop_command)
