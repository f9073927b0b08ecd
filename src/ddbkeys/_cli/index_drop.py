"""``ddbkeys partition-keys index drop``: take the marker index away, and its markers with it."""

from __future__ import annotations

import sys
import time

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
from ddbkeys._errors import ConfigurationError
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
@click.option(
    "--force",
    is_flag=True,
    help="Drop where the index's record names a maintainer: once it is stopped (one still "
    "running marks each collection again as the drop removes its marker).",
)
@connection_options
@output_option
def drop_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    yes: bool,
    force: bool,
    connection: Connection,
    output: str,
) -> None:
    """Take the marker index away, and its markers with it: the GSI is deleted, then one
    consistent Scan of the table (the whole table, once) finds the markers, each deleted while
    it still is one (an item of yours is never removed). Only a marker index is dropped
    (KEYS_ONLY, keyed on --marker-attribute, its markers as its record knows them). The
    table's stream is left as it is; listings then read the table.

    Stop the maintainers first (`index follow`, the Lambda trigger): each marker removed is a
    record of the stream, and a maintainer still running marks that collection again. Where
    the index's record names one, it refuses until given --force (no record tells one at work
    from one stopped); `index drop` run again removes what is left.

    \b
    Example:
      ddbkeys partition-keys index drop -t customers --yes   # its maintainers stopped first
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    there = index.status(fresh=True)
    info = index.table_info()
    if there is not None:  # (helper-94 F6, F7: any GSI of that name, or one keyed otherwise)
        check_index(info, index_name, marker_attribute, active=False)
    saved = markers_as_recorded(index, state_table)  # (helper-94 F2: markers known otherwise)
    _maintainer_said(saved, table_name, force)
    what = f"index {index_name} of table {table_name}" if there else f"the markers of {table_name}"
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError(
                f"`index drop` deletes {what} and every marker in the table: add --yes to go "
                "on (nothing was changed)."
            )
        click.confirm(f"Delete {what} and every marker in the table?", abort=True, err=True)
    with waiting(f"removing the markers of {table_name}...") as line:

        def told(removed: int) -> None:
            if line is not None:
                line.update(f"removing the markers of {table_name}: {removed:,} so far")

        removed = index.drop(told)
    if structured(output):
        echo_json(
            {
                "table": table_name,
                "index": index_name,
                "deleted": there is not None,
                "removed": removed,
                "usage": index.usage.snapshot(),
            }
        )
        return
    where = f"Index {index_name} of table {table_name}"
    gone = f"{where} deleted" if there else f"{where}: not there"
    click.echo(f"{gone}; {removed:,} marker(s) removed.")


def _maintainer_said(saved: Evidence | None, table_name: str, force: bool) -> None:
    """Where the index's record names a maintainer: refused (nothing changed) unless ``force``,
    whenever it last saved its position (helper-94 F4: a follower left running put back 220 of
    227 markers within 5 s, as each marker removed is a stream record; helper-95 F7, F8: a
    follower on a quiet stream saves once an hour, a Lambda handler only with a batch, so no
    age tells one at work from one stopped). With ``force``, a note; before anything is asked
    or changed (helper-94 F8)."""
    if saved is None or saved.maintainer is None:
        return
    times = [when for mark in saved.shards.values() for _, when in mark.marks]
    said = saved.maintainer
    if times:
        said += f", which saved its position {_span(time.time() - max(times))} ago"
    stop = "stop it (`index follow`: Ctrl-C; the Lambda handler: disable its trigger)"
    if not force:
        raise ConfigurationError(
            f"The marker index of table {table_name!r} is kept by a maintainer ({said}): "
            f"{stop}, then run `index drop` with --force; one still running marks each "
            "collection again as the drop removes its marker. Nothing was changed.",
            table=table_name,
        )
    click.echo(
        f"Note: the index's record names a maintainer ({said}): if it still runs, it marks "
        "collections again; then stop it and run `index drop` again.",
        err=True,
    )
