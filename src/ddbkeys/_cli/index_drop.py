"""``ddbkeys partition-keys index drop``: take the marker index away, and its markers with it."""

from __future__ import annotations

import sys
import time
import warnings

import click

from ddbkeys._cli.common import (
    Connection,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
    waiting,
)
from ddbkeys._cli.index_common import markers_as_recorded, open_index
from ddbkeys._cli.index_options import index_options
from ddbkeys._cli.index_status import _span
from ddbkeys.partition_keys._index.drop import IndexDropWarning
from ddbkeys.partition_keys._index.markers import check_index
from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = ["drop_command"]


@click.command("drop")
@table_option
@index_options
@state_table_option
@click.option(
    "--yes", is_flag=True, help="Do not ask first (for scripts: off a terminal it is needed)."
)
@connection_options
@output_option
def drop_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    yes: bool,
    connection: Connection,
    output: str,
) -> None:
    """Take the marker index away, and its markers with it: the GSI is deleted, then one
    consistent Scan of the table (the whole table, once) finds the markers, each deleted while
    it still is one (an item of yours is never removed). Only a marker index is dropped
    (KEYS_ONLY, keyed on --marker-attribute, its markers as its record knows them). The
    table's stream is left as it is; listings then read the table.

    A maintainer still running (`index follow`, the Lambda handler, a backfill) stops by
    itself: it looks at the index again before it writes a marker once its last look is 10 s
    old, and ends with an error where the index is gone. The drop waits those 10 s (and 1
    more) before it removes markers. Disable the Lambda trigger: its batches fail while the
    index is gone.

    \b
    Example:
      ddbkeys partition-keys index drop -t customers --yes
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    there = index.status(fresh=True)
    info = index.table_info()
    if there is not None:  # (helper-94 F6, F7: any GSI of that name, or one keyed otherwise)
        check_index(info, index_name, marker_attribute, active=False)
    saved = markers_as_recorded(index, state_table)  # (helper-94 F2: markers known otherwise)
    _maintainer_said(saved)
    what = f"index {index_name} of table {table_name}" if there else f"the markers of {table_name}"
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError(
                f"`index drop` deletes {what} and every marker in the table: add --yes to go "
                "on (nothing was changed)."
            )
        click.confirm(f"Delete {what} and every marker in the table?", abort=True, err=True)
    pause = f" (in {index.core.recheck + 1:.0f} s: maintainers see the index gone)"
    with waiting(f"removing the markers of {table_name}{pause}...") as line:

        def told(removed: int) -> None:
            if line is not None:
                line.update(f"removing the markers of {table_name}: {removed:,} so far")

        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", IndexDropWarning)
            removed = index.drop(told)
    left = [str(w.message) for w in said if issubclass(w.category, IndexDropWarning)]
    for note in left:  # (helper-95 F2: another index's markers, left unsaid)
        click.echo(f"Warning: {note}", err=True)
    if structured(output):
        echo_json(
            {
                "table": table_name,
                "index": index_name,
                "deleted": there is not None,
                "removed": removed,
                "warnings": left,
                "usage": index.usage.snapshot(),
            }
        )
        return
    where = f"Index {index_name} of table {table_name}"
    gone = f"{where} deleted" if there else f"{where}: not there"
    click.echo(f"{gone}; {removed:,} marker(s) removed.")


def _maintainer_said(saved: Evidence | None) -> None:
    """Where the index's record names a maintainer, a note before anything is asked or changed
    (helper-94 F8): one still running stops by itself once the index is gone (at its next
    change: see ``MarkerCore.checked_info``), with an error; a Lambda trigger goes on failing
    its batches until it is disabled. (It refused before, until --force, at any age of the
    maintainer's last save, helper-95 F7: a natural drop after `follow --backfill` needed
    --force, and a follower left running marked again what the drop removed.)"""
    if saved is None or saved.maintainer is None:
        return
    times = [when for mark in saved.shards.values() for _, when in mark.marks]
    said = saved.maintainer
    if times:
        said += f", which saved its position {_span(time.time() - max(times))} ago"
    click.echo(
        f"Note: the index's record names a maintainer ({said}): one still running stops with "
        "an error once the index is gone; disable a Lambda trigger (its batches fail then).",
        err=True,
    )
