"""``ddbkeys partition-keys index verify`` and ``repair``: the marker index against the table,
and what to do where they differ (``MarkerIndex.verify()``, ``repair()``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._cli.common import (
    Connection,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
)
from ddbkeys._cli.index_common import margin_option, open_index
from ddbkeys._cli.index_options import index_options
from ddbkeys._cli.index_status import _span
from ddbkeys._errors import DdbKeysError
from ddbkeys._key_json import cut
from ddbkeys.partition_keys import MarkerIndex, VerifyReport, plain_key
from ddbkeys.partition_keys._index.state import state_table_name
from ddbkeys.partition_keys._listing.text import json_key, show_key

__all__ = ["Upkeep", "repair_command", "verify_command"]


def _keys(keys: list[Any]) -> str:
    shown = ", ".join(cut(show_key(plain_key(k))) for k in keys[:20])
    return f"{len(keys)}" + (f": {shown}" if shown else "") + (", ..." if len(keys) > 20 else "")


def _report(
    report: VerifyReport,
    output: str,
    table_name: str,
    repaired: bool,
    upkeep: Upkeep | None = None,
) -> None:
    if structured(output):
        fields: dict[str, Any] = {
            "table": table_name,
            "index": report.index,
            "collections": report.collections,
            "markers": report.markers,
            "missing": [json_key(plain_key(k)) for k in report.missing],
            "orphans": [json_key(plain_key(k)) for k in report.orphans],
            "clashes": [json_key(plain_key(k)) for k in report.clashes],
            "settled": [json_key(plain_key(k)) for k in report.settled],
            "healthy": report.healthy,
        }
        if report.as_of is not None:
            fields["as_of"] = report.as_of
            fields["not_compared"] = [json_key(plain_key(k)) for k in report.not_compared]
        if repaired:
            fields["fixed_missing"] = [json_key(plain_key(k)) for k in report.fixed_missing]
            fields["fixed_orphans"] = [json_key(plain_key(k)) for k in report.fixed_orphans]
            fields["unfixed"] = [json_key(plain_key(k)) for k in report.unfixed]
            fields["repaired"] = report.repaired
        if upkeep is not None:  # (verify, where it found markers missing or orphaned)
            fields["upkeep"] = upkeep.to_json()
        echo_json(fields)
        return
    click.echo(f"{report.collections} collections, {report.markers} markers")
    if report.as_of is not None:
        click.echo(f"from the export, {report.as_of}")
    click.echo(f"missing markers: {_keys(report.missing)}")
    click.echo(f"orphaned markers: {_keys(report.orphans)}")
    click.echo(
        f"collections that cannot be marked (data at the marker's key): {_keys(report.clashes)}"
    )
    if report.settled:
        click.echo(f"settled while verifying (writes in flight): {_keys(report.settled)}")
    if not repaired:
        click.echo(_verdict(report, table_name, upkeep))
        return
    click.echo(f"markers written: {_keys(report.fixed_missing)}")
    click.echo(f"orphaned markers removed: {_keys(report.fixed_orphans)}")
    if report.healthy:
        click.echo("OK")
    elif report.repaired:
        click.echo("REPAIRED")
    else:
        click.echo(f"NOT REPAIRED: {_keys(report.unfixed)} left as they are")


@dataclass(frozen=True)
class Upkeep:
    """Who keeps the index from the table's stream, as ``index status`` reads it: whether the
    stream is on, the maintainer that recorded positions in it (None: none), the records past
    its positions (``records``: not applied yet; the replay margin left out) and how long ago
    it saved the newest (``age``; None: not said)."""

    stream: bool
    maintainer: str | None
    records: int
    age: float | None

    @classmethod
    def of(cls, index: MarkerIndex, state_table: str | None) -> Upkeep | None:
        """None: it cannot be read (a failure). No state table: no maintainer ever ran."""
        try:
            status = index.proof_status(state_table=state_table, replay_margin=0)
        except DdbKeysError as error:
            if error.table != state_table_name(state_table):
                return None
            try:  # (no state table: no maintainer, whether the stream is on or not)
                return cls(index.table_info().stream_arn is not None, None, 0, None)
            except (DdbKeysError, ClientError, BotoCoreError):
                return None
        except (ClientError, BotoCoreError):
            return None
        ages = [shard.age for shard in status.shards if shard.named and shard.age is not None]
        return cls(
            status.stream is not None,
            status.maintainer,
            status.unapplied or 0,  # (records from before a follower began are history)
            min(ages) if ages else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "maintainer": self.maintainer,
            "unapplied_records": self.records,
            "saved_seconds_ago": None if self.age is None else round(self.age, 1),
        }

    def advice(self, table_name: str) -> str | None:
        """What to do first where the stream holds records no maintainer applied, is on with
        no maintainer, or is off (helper-89 C9: "run `index repair`" alone, where a repair
        fixes one moment and the markers drift again with the next writes)."""
        follow = f"`ddbkeys partition-keys index follow -t {table_name}"
        if not self.stream:
            return (
                "NOT HEALTHY: `index repair` fixes the markers once; the table's stream is off, "
                "so nothing keeps them right as the table is written: turn it on (`ddbkeys "
                f"partition-keys index stream -t {table_name}`) and start {follow} --backfill` "
                "(or the Lambda handler)"
            )
        if self.stream and self.maintainer is None:
            return (
                "NOT HEALTHY: the table's stream is on, but no maintainer follows it: start one "
                f"({follow} --backfill`), which marks what is missing and keeps the markers "
                "right; `index repair` fixes them once"
            )
        if not self.records:
            return None
        saved = f" (it saved its position {_span(self.age)} ago)" if self.age is not None else ""
        return (
            f"NOT HEALTHY: {self.records:,} stream record(s) not applied by the maintainer yet"
            f"{saved}: if it has stopped, start it ({follow}`); if it runs, run `index "
            "verify` again once it has caught up; `index repair` fixes the markers now"
        )


def _verdict(report: VerifyReport, table_name: str, upkeep: Upkeep | None) -> str:
    """verify's last line: OK, or what to do: where the stream holds records its maintainer
    has not applied, or no maintainer follows it, starting one first (a helper's stopped
    follower left what it had not applied missing or orphaned, and verify sent it to repair
    alone)."""
    if report.healthy:
        return "OK"
    if not report.missing and not report.orphans:  # (clashes only: repair cannot help)
        return (
            "NOT HEALTHY: move the data at the marker's key, or give the markers another "
            "sort key (--marker-sort-key) from `index create` on"
        )
    advice = upkeep.advice(table_name) if upkeep is not None else None
    if advice is not None:
        return advice
    if report.settled and not report.clashes:
        return (
            "NOT HEALTHY, with writes in flight: what is left may be settling too; run "
            "`index verify` again, or `index repair`"
        )
    return "NOT HEALTHY (run `index repair`)"


@click.command("verify")
@table_option
@index_options
@margin_option
@click.option(
    "--from-export",
    metavar="URI",
    help="Compare the markers with the data as the table's export holds them (s3://BUCKET/"
    "PREFIX/AWSDynamoDB/EXPORT_ID/ or a copy on disk), reading neither the table nor the index; "
    "the collections the table's stream names since the export are left out, and named.",
)
@state_table_option
@connection_options
@output_option
def verify_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    replay_margin: float,
    from_export: str | None,
    state_table: str | None,
    connection: Connection,
    output: str,
) -> None:
    """Compare the marker index with the table: missing and orphaned markers, and collections
    that cannot be marked. Exit code 1 when the index is not healthy.

    \b
    Example:
      ddbkeys partition-keys index verify -t issues || ddbkeys partition-keys index repair -t issues
      ddbkeys partition-keys index verify -t T --from-export s3://B/P/AWSDynamoDB/ID/
    """
    index = open_index(connection, table_name, index_name, marker_attribute)
    report = index.verify(
        from_export=from_export, replay_margin=replay_margin, state_table=state_table
    )
    upkeep = None
    if (report.missing or report.orphans) and from_export is None:
        upkeep = Upkeep.of(index, state_table)
    _report(report, output, table_name, repaired=False, upkeep=upkeep)
    if not report.healthy:
        raise click.exceptions.Exit(1)


@click.command("repair")
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
