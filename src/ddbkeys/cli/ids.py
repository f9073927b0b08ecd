"""``ddbkeys ids``: mint ids, read and set counters, write items with ids, audit."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from ddbkeys.cli.common import (
    Connection,
    F,
    connection_options,
    echo_json,
    output_option,
    parse_key,
    table_option,
)
from ddbkeys.ids import (
    AtomicCounter,
    CollectionSequence,
    GaplessSequence,
    audit_attribute,
    audit_collection,
)
from ddbkeys.schema import describe, from_attributes, is_dynamodb_json


def counter_options(func: F) -> F:
    """The options that name a counter item."""
    for option in reversed(
        [
            click.option(
                "--counter",
                "-c",
                default="counter",
                show_default=True,
                metavar="NAME",
                help="Which counter: its item key is the table's partition key set to NAME.",
            ),
            click.option(
                "--attribute",
                default="last_id",
                show_default=True,
                metavar="ATTR",
                help="The counter item's attribute that holds the last id given out.",
            ),
        ]
    ):
        func = option(func)
    return func


def sort_key_options(func: F) -> F:
    """--width and --prefix: how a collection's string sort keys hold their numbers."""
    func = click.option(
        "--prefix", default="", help="Collections with string sort keys: text before the digits."
    )(func)
    return click.option(
        "--width",
        type=click.IntRange(1, 38),
        default=10,
        show_default=True,
        help="Collections with string sort keys: digits, padded with zeros.",
    )(func)


@click.group("ids")
def ids_group() -> None:
    """Ever-increasing numeric ids: counters, sequences, audits.

    \b
    Which to use:
      next     atomic counter: unique, increasing, may leave gaps; 1 write per call
      put      --strategy gapless: the item and the counter in one transaction, no gaps
               --strategy collection: numbers per item collection, in the sort key, no gaps
      audit    find gaps and duplicates in what a table holds

    \b
    Examples:
      ddbkeys ids next -t orders --counter order
      ddbkeys ids next -t orders --counter order --count 100
      ddbkeys ids put -t users --strategy gapless --item '{"pk": "User#Kirk"}'
      ddbkeys ids put -t issues --strategy collection --partition-key projectA --item '{}'
      ddbkeys ids audit -t users --attribute id
    """


@ids_group.command("next")
@table_option
@counter_options
@click.option(
    "--count",
    "-n",
    type=click.IntRange(1, 1_000_000),
    default=1,
    show_default=True,
    help="How many consecutive ids to take, with one write.",
)
@click.option(
    "--start",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="The first id of a new counter.",
)
@click.option(
    "--step", type=click.IntRange(1), default=1, show_default=True, help="The distance between ids."
)
@click.option("--maximum", type=click.IntRange(1), help="Refuse to go past this id.")
@connection_options
@output_option
def next_command(
    table_name: str,
    counter: str,
    attribute: str,
    count: int,
    start: int,
    step: int,
    maximum: int | None,
    connection: Connection,
    output: str,
) -> None:
    """Take the next id (or --count ids) from an atomic counter; print one per line.

    The counter item is created on first use. One UpdateItem whatever --count is.
    """
    strategy = AtomicCounter(
        connection.client(),
        table_name,
        counter,
        attribute=attribute,
        start=start,
        step=step,
        maximum=maximum,
    )
    ids = list(strategy.reserve(count))
    if output == "json":
        echo_json({"table": table_name, "counter": counter, "ids": ids})
    else:
        click.echo("\n".join(str(i) for i in ids))


@ids_group.command("current")
@table_option
@counter_options
@connection_options
@output_option
def current_command(
    table_name: str, counter: str, attribute: str, connection: Connection, output: str
) -> None:
    """Print the last id a counter gave out (0 if none). For a gapless sequence, pass its name:
    --counter sequence (the default name of `ids put --strategy gapless`)."""
    value = AtomicCounter(connection.client(), table_name, counter, attribute=attribute).current()
    if output == "json":
        echo_json({"table": table_name, "counter": counter, "current": value or 0})
    else:
        click.echo(str(value or 0))


@ids_group.command("set")
@click.argument("value", type=click.IntRange(0))
@table_option
@counter_options
@click.option("--force", is_flag=True, help="Allow moving the counter backwards (ids repeat!).")
@connection_options
@output_option
def set_command(
    value: int,
    table_name: str,
    counter: str,
    attribute: str,
    force: bool,
    connection: Connection,
    output: str,
) -> None:
    """Make VALUE the last id given out, so the next id is VALUE + 1.

    Refuses to move the counter backwards unless --force: the check is a condition on the
    write itself, so a concurrent writer cannot slip in between.
    """
    AtomicCounter(connection.client(), table_name, counter, attribute=attribute).set(
        value, force=force
    )
    if output == "json":
        echo_json({"table": table_name, "counter": counter, "current": value})
    else:
        click.echo(str(value))


def parse_item_json(text: str, source: str) -> Any:
    """Plain JSON or DynamoDB JSON, numbers kept exact."""
    try:
        value = json.loads(text, parse_float=Decimal, parse_int=int)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=source) from exc
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(i, dict) for i in items):
        raise click.BadParameter("must be a JSON object, or an array of objects", param_hint=source)
    return [from_attributes(i) if is_dynamodb_json(i) else i for i in items]


@ids_group.command("put")
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
    help="The item, as plain JSON or DynamoDB JSON; an array writes several. "
    "Default: read from --item-file, else standard input.",
)
@click.option(
    "--item-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the item JSON from this file.",
)
@click.option(
    "--partition-key",
    "-k",
    metavar="VALUE",
    help="collection: the item collection (base64 for a binary key).",
)
@click.option(
    "--sequence",
    default="sequence",
    show_default=True,
    metavar="NAME",
    help="gapless: the counter item's partition key value.",
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
    partition_key: str | None,
    sequence: str,
    id_attribute: str,
    width: int,
    prefix: str,
    allow_global_tables: bool,
    connection: Connection,
    output: str,
) -> None:
    """Write an item with the next id of a gapless sequence or an item collection; print the id.

    \b
    ddbkeys ids put -t users -s gapless --item '{"pk": "User#Spock", "name": "Spock"}'
    ddbkeys ids put -t issues -s collection -k projectA --item '{"priority": "low"}'
    echo '[{"pk": "a"}, {"pk": "b"}]' | ddbkeys ids put -t users -s gapless
    """
    if item_text is not None and item_file is not None:
        raise click.UsageError("Give the item with --item or --item-file, not both.")
    if item_text is not None:
        items = parse_item_json(item_text, "--item")
    elif item_file is not None:
        items = parse_item_json(item_file.read_text(), "--item-file")
    else:
        items = parse_item_json(sys.stdin.read(), "standard input")
    if strategy == "collection" and partition_key is None:
        raise click.UsageError("--strategy collection needs --partition-key.")
    client = connection.client()
    if strategy == "gapless":
        gapless = GaplessSequence(
            client,
            table_name,
            sequence,
            id_attribute=id_attribute,
            allow_global_tables=allow_global_tables,
            group_commit=False,
        )
        ids = [gapless.put(items[0])] if len(items) == 1 else gapless.put_many(items)
    else:
        collection = CollectionSequence(
            client,
            table_name,
            width=width,
            prefix=prefix,
            allow_global_tables=allow_global_tables,
            group_commit=False,
        )
        pk_type = describe(client, table_name).partition_key.type
        key = parse_key(str(partition_key), pk_type, table_name)
        ids = [collection.put(key, item) for item in items]
    if output == "json":
        echo_json({"table": table_name, "ids": ids})
    else:
        click.echo("\n".join(str(i) for i in ids))


@ids_group.command("audit")
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
    "--start",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="The first id the sequence should hold.",
)
@click.option("--strict", is_flag=True, help="Exit with code 1 when gaps or duplicates are found.")
@connection_options
@output_option
def audit_command(
    table_name: str,
    attribute: str,
    partition_key: str | None,
    width: int,
    prefix: str,
    start: int,
    strict: bool,
    connection: Connection,
    output: str,
) -> None:
    """Report the gaps and duplicates among a table's ids.

    Scans the table for --attribute (a full scan: 0.5 read units per 4 KB), or queries one
    item collection's sort keys with --partition-key.
    """
    client = connection.client()
    if partition_key is not None:
        pk_type = describe(client, table_name).partition_key.type
        key = parse_key(partition_key, pk_type, table_name)
        report = audit_collection(client, table_name, key, width=width, prefix=prefix)
    else:
        report = audit_attribute(client, table_name, attribute, start=start)
    if output == "json":
        echo_json(report.as_dict())
    else:
        shown = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in report.gaps[:20])
        more = f" (+{len(report.gaps) - 20} more)" if len(report.gaps) > 20 else ""
        click.echo(
            f"{report.source} of table {table_name}: {report.count} ids, "
            f"from {report.first} to {report.last}"
        )
        click.echo(f"gaps: {report.missing} missing" + (f": {shown}{more}" if shown else ""))
        dupes = ", ".join(f"{k} x{v}" for k, v in sorted(report.duplicates.items())[:20])
        click.echo(f"duplicates: {len(report.duplicates)}" + (f": {dupes}" if dupes else ""))
        if report.not_numbers:
            click.echo(f"not whole numbers: {report.not_numbers}")
        click.echo("OK" if report.ok else "PROBLEMS FOUND")
    if strict and not report.ok:
        raise click.exceptions.Exit(1)
