"""``ddbkeys ids put`` and ``ddbkeys ids audit``: write items with ids, find gaps and
duplicates (the counter commands are in :mod:`ddbkeys._cli.ids`)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._cli.common import (
    Connection,
    F,
    IntRange,
    connection_options,
    echo_json,
    echo_whole,
    output_option,
    parse_key,
    structured,
    table_option,
    warnings_said,
)
from ddbkeys._cli.errors import error_text
from ddbkeys._cli.group import CUT_NOTE, stdout_closed
from ddbkeys._cli.ids_began import said_began
from ddbkeys._cli.items import (
    counter_key_of,
    given,
    ids_said,
    item_format_option,
    parse_items,
    read_item_text,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import describe
from ddbkeys.ids import (
    AuditReport,
    CollectionSequence,
    GaplessSequence,
    NewCounterAttributeWarning,
    audit_attribute,
    audit_collection,
)
from ddbkeys.ids._gapless import MAX_BATCH

__all__ = ["audit_command", "put_command"]


def sort_key_options(func: F) -> F:
    """--width and --prefix: how string keys hold ids (a collection's sort keys, a gapless id
    that is the key)."""
    func = click.option(
        "--prefix", default="", help="Ids in string keys: the text before the digits."
    )(func)
    return click.option(
        "--width",
        type=IntRange(1, 38),
        default=10,
        show_default=True,
        help="Ids in string keys: digits, padded with zeros (so key order is id order).",
    )(func)


@click.command("put")
@table_option
@click.option(
    "--strategy",
    "-s",
    type=click.Choice(["gapless", "collection"]),
    required=True,
    help="gapless: counter and item in one transaction; collection: the number is "
    "the item's sort key, per partition key.",
)
@click.option(
    "--item",
    "item_text",
    metavar="JSON",
    help="The item, as plain JSON or DynamoDB JSON; an array writes several (gapless: 1 to "
    f"{MAX_BATCH}, in one transaction). Default: read from --item-file, else standard input.",
)
@click.option(
    "--item-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the item JSON from this file (UTF-8).",
)
@item_format_option
@click.option(
    "--partition-key",
    "-k",
    metavar="VALUE",
    help="collection: the item collection (base64 for a binary key).",
)
@click.option(
    "--never-reuse",
    is_flag=True,
    help="collection: keep the highest number in a counter item of the collection too, so a "
    "deleted highest number is never given again (4 write units a put instead of 1).",
)
@click.option(
    "--sequence",
    default="sequence",
    show_default=True,
    metavar="NAME",
    help="gapless: the counter item's partition key value.",
)
@click.option(
    "--counter-key",
    metavar="JSON",
    help="gapless: the counter item's whole key (plain or DynamoDB JSON), instead of "
    "--sequence: for tables with a sort key or a number or binary partition key.",
)
@click.option(
    "--counter-table",
    metavar="TABLE",
    help="gapless: keep the counter item in this table (one transaction spans both), so it "
    "is no row among the items. Default: the items' table.",
)
@click.option(
    "--id-attribute",
    default="id",
    show_default=True,
    help="gapless: the attribute that receives the id (may be the partition key).",
)
@sort_key_options
@click.option(
    "--allow-global-tables",
    is_flag=True,
    help="Go on although the table has replicas in other regions.",
)
@connection_options
@output_option
def put_command(
    table_name: str,
    strategy: str,
    item_text: str | None,
    item_file: Path | None,
    item_format: str,
    partition_key: str | None,
    never_reuse: bool,
    sequence: str,
    counter_key: str | None,
    counter_table: str | None,
    id_attribute: str,
    width: int,
    prefix: str,
    allow_global_tables: bool,
    connection: Connection,
    output: str,
) -> None:
    """Write an item with the next id of a gapless sequence or an item collection; print the id.

    Items are checked before anything is written. An array given to --strategy collection is
    written item by item: if one fails, the ids written are printed, then the error names the
    item (its position in the array).

    \b
    ddbkeys ids put -t users -s gapless --item '{"pk": "User#Spock", "name": "Spock"}'
    ddbkeys ids put -t users -s gapless --item '{"pk": {"S": "User#Uhura"}, "tags": {"SS": ["a"]}}'
    ddbkeys ids put -t orders -s gapless --id-attribute pk --prefix order# --width 6 --item '{}'
    ddbkeys ids put -t orders -s gapless --counter-key '{"pk": "ctr"}' --item '{"pk": "o1"}'
    ddbkeys ids put -t issues -s collection -k projectA --item '{"priority": "low"}'
    ddbkeys ids put -t issues -s collection -k projectB --never-reuse --item '{}'
    echo '[{"pk": "a"}, {"pk": "b"}]' | ddbkeys ids put -t users -s gapless
    """
    _check_strategy_options(strategy)
    if strategy == "collection" and partition_key is None:
        raise click.UsageError("--strategy collection needs --partition-key.")
    key = counter_key_of(counter_key, counter_table or table_name, instead_of="sequence")
    text, source = read_item_text(item_text, item_file)
    most = MAX_BATCH if strategy == "gapless" else None
    items = parse_items(text, source, item_format, table=table_name, most=most)
    client = connection.client()
    if strategy == "gapless":
        gapless = GaplessSequence(
            client,
            table_name,
            sequence,
            counter_key=key,
            counter_table=counter_table,
            id_attribute=id_attribute,
            width=width,
            prefix=prefix,
            allow_global_tables=allow_global_tables,
            group_commit=False,
            deadline=connection.timeout,
        )
        with warnings_said(NewCounterAttributeWarning):
            if len(items) == 1:
                ids = [gapless.put(items[0], typed=True)]
            else:
                ids = gapless.put_many(items, typed=True)
        if ids and ids[0] == 1:  # (it began with this call)
            said_began(gapless, sequence if key is None else str(counter_key), items)
        _show_ids(table_name, ids, output)
        return
    collection = CollectionSequence(
        client,
        table_name,
        width=width,
        prefix=prefix,
        never_reuse=never_reuse,
        allow_global_tables=allow_global_tables,
        group_commit=False,
        deadline=connection.timeout,
    )
    pk_type = collection.table_info().partition_key.type
    pk_value = parse_key(str(partition_key), pk_type, table_name)
    if len(items) > 1:
        for n, item in enumerate(items, 1):
            try:
                collection.check(pk_value, item, typed=True)
            except DdbKeysError as exc:
                message = f"Item {n} of {len(items)}: {error_text(exc)} Nothing was written."
                _show_ids(table_name, [], output, error=message)
                raise click.ClickException(message) from exc
    written: list[int] = []
    for n, item in enumerate(items, 1):
        try:
            written.append(collection.put(pk_value, item, typed=True))
        except (DdbKeysError, BotoCoreError, ClientError) as exc:
            if len(items) == 1:
                raise
            message = _partial_failure(n, len(items), error_text(exc))
            _show_ids(table_name, written, output, error=message)
            raise click.ClickException(message) from exc
    _show_ids(table_name, written, output)


GAPLESS_ONLY = ("sequence", "counter_key", "counter_table", "id_attribute")
COLLECTION_ONLY = ("partition_key", "never_reuse")


def _check_strategy_options(strategy: str) -> None:
    """An option of the other strategy, given, is an error rather than silently ignored."""
    for name in COLLECTION_ONLY if strategy == "gapless" else GAPLESS_ONLY:
        if given(name):
            option = "--" + name.replace("_", "-")
            other = "collection" if strategy == "gapless" else "gapless"
            raise click.UsageError(f"{option} applies to --strategy {other}, not {strategy}.")


def _partial_failure(n: int, total: int, reason: str) -> str:
    if n == 1:
        done = "nothing was written"
    else:
        done = "item 1 was written" if n == 2 else f"items 1 to {n - 1} were written"
        # (the error's "nothing was written" is of item n's request: here it read as if of
        # the whole put, beside "item 1 was written", helper-77 F5)
        reason = reason.replace("; nothing was written (", " (")
    if n < total:
        done += (
            f"; item {total} was not tried"
            if n + 1 == total
            else (f"; items {n + 1} to {total} were not tried")
        )
    return f"Item {n} of {total} was not written ({done}): {reason}"


def _show_ids(table: str, ids: list[int], output: str, *, error: str | None = None) -> None:
    """The ids written, on standard output; on standard error where it is closed, or where
    its reader goes away before reading them (each item holds its id: nothing is lost, but
    the caller is told which)."""
    if ids:
        each = "with its item" if len(ids) == 1 else "each with its item"
        note = f"{ids_said(ids)} written to table {table!r}, {each}"
        if stdout_closed():
            click.echo(f"{note}; standard output is closed.", err=True)
            return
        click.get_current_context().meta[CUT_NOTE] = (
            f"{note}; the output was cut before all of it was read."
        )
    if structured(output):
        echo_json({"table": table, "ids": ids} | ({"error": error} if error else {}))
    elif ids:
        echo_whole("\n".join(str(i) for i in ids))


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
    "ids below --start or values that are not ids.",
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
    problems.

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
    if structured(output):
        echo_json(report.as_dict())
    else:
        _show_audit(report, table_name, start if partition_key is None else 1)
    if not (report.count or report.not_numbers or report.below_start):  # (a typo, often)
        where = f"collection {partition_key!r} of table" if partition_key is not None else "table"
        held = "numbered item" if partition_key is not None else f"item holds {attribute!r}"
        # (helper-87: on a table of collection sequences, whose ids are sort keys)
        other = "" if partition_key is not None else "; a collection's sequence: -k PARTITION"
        click.echo(
            f"Warning: no {held} in {where} {table_name!r}: is the name right{other}? (nothing "
            "to audit; --strict fails on problems found, not on this)",
            err=True,
        )
    if strict and not report.ok:
        raise click.exceptions.Exit(1)


def _listed(texts: list[str], shown: int = 20) -> str:
    """The first ``shown`` of ``texts``, and how many more there are."""
    more = f" (+{len(texts) - shown} more)" if len(texts) > shown else ""
    return ", ".join(texts[:shown]) + more


def _show_audit(report: AuditReport, table_name: str, start: int) -> None:
    """An audit's report as text, one finding a line, and OK or PROBLEMS FOUND."""
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
    click.echo("OK" if report.ok else "PROBLEMS FOUND")
