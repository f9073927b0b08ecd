"""``ddbkeys ids audit``: find gaps and duplicates among a table's ids, or a collection's."""

from __future__ import annotations

from decimal import Decimal

import click

from ddbkeys._cli.common import (
    Connection,
    IntRange,
    connection_options,
    echo_json,
    output_option,
    parse_key,
    structured,
    table_option,
)
from ddbkeys._cli.ids_began import holds_yours
from ddbkeys._cli.ids_items import sort_key_options
from ddbkeys._schema import describe
from ddbkeys.ids import AuditReport, audit_attribute, audit_collection

__all__ = ["audit_command"]


@click.command("audit")
@table_option
@click.option(
    "--attribute", default="id", show_default=True, help="Scan the table for this id attribute."
)
@click.option(
    "--partition-key",
    "-k",
    metavar="VALUE",
    help="Audit this item collection's sort keys instead of scanning.",
)
@sort_key_options
@click.option(
    "--marker-sort-key",
    metavar="VALUE",
    help="With --partition-key: the sort key of the collection's marker item, where its marker "
    "index was made with another than the default (a number for a number sort key, base64 for "
    "a binary one); the marker is not counted as an id.",
)
@click.option(
    "--start",
    type=IntRange(0),
    default=1,
    show_default=True,
    help="The first id the sequence should hold.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit with code 1 when the audit finds problems: gaps, duplicates, and (--attribute) "
    "ids below --start or values that are not ids; or, with --attribute, items read and none "
    "holding it (a misspelt name). An empty table passes.",
)
@connection_options
@output_option
def audit_command(
    table_name: str,
    attribute: str,
    partition_key: str | None,
    marker_sort_key: str | None,
    width: int,
    prefix: str,
    start: int,
    strict: bool,
    connection: Connection,
    output: str,
) -> None:
    """Report the gaps and duplicates among a table's ids.

    Scans the table for --attribute (a full scan: 0.5 read units per 4 KB), or queries one
    item collection's sort keys with --partition-key. Every value of --attribute should be an
    id: one below --start, or not a number (a string id is --prefix and --width digits), is a
    problem. A collection's other items (not numbered, or numbered below 1) are counted, not
    problems. ddbkeys' own items (the id strategies' counters, the marker index's markers) are
    left out.

    \b
    Examples:
      ddbkeys ids audit -t orders --attribute order_id --strict
      ddbkeys ids audit -t issues -k projectA
    """
    if marker_sort_key is not None and partition_key is None:
        raise click.UsageError(
            "--marker-sort-key is the marker of the collection --partition-key names: give both."
        )
    client = connection.client()
    if partition_key is not None:
        info = describe(client, table_name)
        key = parse_key(partition_key, info.partition_key.type, table_name)
        marker: str | Decimal | bytes | None = marker_sort_key
        if marker_sort_key is not None and info.sort_key is not None:
            sort_type = info.sort_key.type
            marker = parse_key(marker_sort_key, sort_type, table_name, "--marker-sort-key", "sort")
        report = audit_collection(
            client,
            table_name,
            key,
            width=width,
            prefix=prefix,
            deadline=connection.timeout,
            marker_sort_key=marker,
        )
    else:
        report = audit_attribute(
            client,
            table_name,
            attribute,
            start=start,
            prefix=prefix,
            width=width,
            deadline=connection.timeout,
        )
    _reported(report, client, (table_name, attribute, partition_key), start, strict, output)


def _reported(
    report: AuditReport,
    client: object,
    where: tuple[str, str, str | None],
    start: int,
    strict: bool,
    output: str,
) -> None:
    """The audit's report (JSON or text), the warning where nothing was audited, and the exit
    code --strict gives."""
    table_name, attribute, partition_key = where
    nothing = not (report.count or report.not_numbers or report.below_start)
    # (items read, none holding --attribute: a typo, often; a collection's items that are not
    # numbered are its other items, which a collection before its first number holds)
    read = int(report.usage.get("items", 0))
    if nothing and read and partition_key is None:  # (not where all are ddbkeys' own)
        read = read if holds_yours(client, table_name) else 0
    typo = nothing and bool(read) and partition_key is None
    if structured(output):  # (its "ok" as --strict judges: helper-91 F1, true beside exit 1)
        echo_json(report.as_dict() | {"nothing_audited": nothing, "ok": report.ok and not typo})
    else:
        _show_audit(report, table_name, start if partition_key is None else 1, nothing)
    if nothing:
        _said_nothing(table_name, attribute, partition_key, read)
    if strict and (not report.ok or typo):
        raise click.exceptions.Exit(1)


def _said_nothing(table: str, attribute: str, partition_key: str | None, read: int) -> None:
    """The warning of an audit that found nothing to audit among the ``read`` items: a
    misspelt name, where there were items (--strict fails on an attribute's: helper-89 F5, a
    CI job's `--attribute idd` said OK and passed for good), or an empty table or
    collection."""
    where = f"collection {partition_key!r} of table" if partition_key is not None else "table"
    if not read:
        click.echo(
            f"Warning: {where} {table!r} holds no items of yours: nothing to audit.", err=True
        )
        return
    held = "numbered item" if partition_key is not None else f"item holds {attribute!r}"
    # (helper-87: on a table of collection sequences, whose ids are sort keys)
    other = "" if partition_key is not None else "; a collection's sequence: -k PARTITION"
    strict = "--strict fails on it" if partition_key is None else "--strict does not fail on it"
    click.echo(
        f"Warning: no {held} among the {read:,} item(s) of {where} {table!r}: is the name "
        f"right{other}? (nothing audited; {strict})",
        err=True,
    )


def _listed(texts: list[str], shown: int = 20) -> str:
    """The first ``shown`` of ``texts``, and how many more there are."""
    more = f" (+{len(texts) - shown} more)" if len(texts) > shown else ""
    return ", ".join(texts[:shown]) + more


def _show_audit(report: AuditReport, table_name: str, start: int, nothing: bool) -> None:
    """An audit's report as text, one finding a line, and OK, PROBLEMS FOUND or (``nothing``:
    no value of the attribute, or no numbered item) NOTHING AUDITED."""
    gaps = _listed([f"{a}-{b}" if a != b else str(a) for a, b in report.gaps])
    span = f", from {report.first} to {report.last}" if report.count else ""
    click.echo(f"{report.source} of table {table_name}: {report.count} ids{span}")
    click.echo(f"gaps: {report.missing} missing" + (f": {gaps}" if gaps else ""))
    dupes = _listed([f"{k} x{v}" for k, v in sorted(report.duplicates.items())])
    click.echo(f"duplicates: {len(report.duplicates)}" + (f": {dupes}" if dupes else ""))
    if report.below_start:
        below = _listed([str(n) for n in report.below_start])
        click.echo(f"below {start}: {len(report.below_start)}: {below}")
    if report.not_numbers:
        # (no id and nothing refused: in a string key, where ids take another form)
        bare = not report.count and report.blocking_sort_key is None
        hint = " (ids in a string key: give their --prefix and --width)" if bare else ""
        click.echo(f"not whole numbers: {report.not_numbers}{hint}")
    if report.blocking_sort_key is not None:
        click.echo(
            f"highest sort key: {report.blocking_sort_key} holds no number the sequence "
            "writes, so `ids put` cannot go on from it: move or renumber that item"
        )
    click.echo("PROBLEMS FOUND" if not report.ok else "NOTHING AUDITED" if nothing else "OK")
