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
from ddbkeys.partition_keys._listing.text import json_key, show_key

__all__ = ["Unapplied", "repair_command", "verify_command"]


def _keys(keys: list[Any]) -> str:
    shown = ", ".join(cut(show_key(plain_key(k))) for k in keys[:20])
    return f"{len(keys)}" + (f": {shown}" if shown else "") + (", ..." if len(keys) > 20 else "")


def _report(
    report: VerifyReport,
    output: str,
    table_name: str,
    repaired: bool,
    unapplied: Unapplied | None = None,
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
        click.echo(_verdict(report, table_name, unapplied))
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
class Unapplied:
    """Stream records past the index's maintainer's positions (``records``), the newest of
    which it saved ``age`` seconds ago (None: not said)."""

    records: int
    age: float | None

    @classmethod
    def of(cls, index: MarkerIndex, state_table: str | None, margin: float) -> Unapplied | None:
        """From ``index status``'s reading (None: none past them, or it cannot be read: no
        stream, no maintainer, a failure)."""
        try:
            status = index.proof_status(state_table=state_table, replay_margin=margin)
        except (DdbKeysError, ClientError, BotoCoreError):
            return None
        if not status.records:
            return None
        ages = [shard.age for shard in status.shards if shard.named and shard.age is not None]
        return cls(status.records, min(ages) if ages else None)


def _verdict(report: VerifyReport, table_name: str, unapplied: Unapplied | None) -> str:
    """verify's last line: OK, or what to do (where the stream holds records the maintainer
    has not applied, starting it first: a stopped follower leaves what it has not applied
    missing or orphaned, a helper found verify sending them to repair alone)."""
    if report.healthy:
        return "OK"
    if report.settled and not report.clashes:
        return (
            "NOT HEALTHY, with writes in flight: what is left may be settling too; run "
            "`index verify` again, or `index repair`"
        )
    if not report.missing and not report.orphans:  # (clashes only: repair cannot help)
        return (
            "NOT HEALTHY: move the data at the marker's key, or give the markers another "
            "sort key (--marker-sort-key) from `index create` on"
        )
    if unapplied is not None:
        saved = f", saved {_span(unapplied.age)} ago" if unapplied.age is not None else ""
        return (
            f"NOT HEALTHY: the stream holds {unapplied.records:,} record(s) past the "
            f"maintainer's positions{saved}; if none runs, start it (`ddbkeys partition-keys "
            f"index follow -t {table_name}`) and it applies them; `index repair` fixes the "
            "markers now"
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
    unapplied = None
    if (report.missing or report.orphans) and from_export is None:
        unapplied = Unapplied.of(index, state_table, replay_margin)
    _report(report, output, table_name, repaired=False, unapplied=unapplied)
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
