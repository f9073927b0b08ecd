"""``ddbkeys ids put``: write items with ids (the counter commands are in
:mod:`ddbkeys._cli.ids`, the audit in :mod:`ddbkeys._cli.ids_audit`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click
from boto3.dynamodb.types import TypeSerializer
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
    Item,
    counter_key_of,
    given,
    ids_said,
    item_format_option,
    parse_items,
    read_item_text,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys.ids import (
    CollectionSequence,
    GaplessSequence,
    NewCounterAttributeWarning,
)
from ddbkeys.ids._gapless import MAX_BATCH

__all__ = ["put_command", "sort_key_options"]


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
        except KeyboardInterrupt:  # (helper-89 F9: the ids written were said nowhere)
            if len(items) == 1:
                raise
            source = "ITEMS.json" if item_file is None else shlex.quote(str(item_file))
            where = (table_name, shlex.quote(str(partition_key)), source)
            message = _interrupted(client, collection, pk_value, written, items, n, where)
            _show_ids(table_name, written, output, error=message)
            click.echo(message, err=True)
            raise click.exceptions.Exit(130) from None
    _show_ids(table_name, written, output)


def _interrupted(
    client: Any,
    collection: CollectionSequence,
    key: object,
    written: list[int],
    items: list[Item],
    n: int,
    where: tuple[str, str, str],
) -> str:
    """What an array's put stopped by Ctrl-C at item ``n`` wrote (``written``, to which item
    ``n``'s id is added where it was written: its request was sent), and how to go on: a rerun
    of the whole array would write those items again, under new numbers (helper-89 F9)."""
    table, partition, source = where
    landed = _landed(client, collection, key, written, items[n - 1])
    if landed is not None:
        written.append(landed)
    done = len(written)
    total = len(items)
    wrote = _written(done)
    if landed is None:
        wrote += f"; item {n} was not when looked at (its request, sent, may yet be applied)"
    rest = "" if done >= total else f"; items {done + 1} to {total} were not tried"
    how = f"`jq '.[{done}:]' {source} | ddbkeys ids put -t {table} -s collection -k {partition}`"
    return (
        f"Interrupted at item {n} of {total} ({wrote}{rest}; the ids written are printed): "
        f"go on with the rest, not the whole array again, e.g. {how}."
    )


def _landed(
    client: Any, collection: CollectionSequence, key: object, written: list[int], item: Item
) -> int | None:
    """The number the item in flight was written at, where the collection's highest number
    (one Query) is the next after ``written`` (any, where none was) and holds that item's
    attributes (one consistent GetItem); None where it is not, or the look fails."""
    try:
        highest = collection.current(key)  # type: ignore[arg-type]
        if highest <= 0 or (written and highest != written[-1] + 1):
            return None
        pk, sk = collection.keys()
        at = {pk.name: TypeSerializer().serialize(key), sk.name: collection.sort_key_value(highest)}
        stored = client.get_item(TableName=collection.table, Key=at, ConsistentRead=True).get(
            "Item", {}
        )
    except (DdbKeysError, BotoCoreError, ClientError, KeyboardInterrupt):
        return None
    return highest if all(stored.get(k) == v for k, v in item.items()) else None


GAPLESS_ONLY = ("sequence", "counter_key", "counter_table", "id_attribute")
COLLECTION_ONLY = ("partition_key", "never_reuse")


def _check_strategy_options(strategy: str) -> None:
    """An option of the other strategy, given, is an error rather than silently ignored."""
    for name in COLLECTION_ONLY if strategy == "gapless" else GAPLESS_ONLY:
        if given(name):
            option = "--" + name.replace("_", "-")
            other = "collection" if strategy == "gapless" else "gapless"
            raise click.UsageError(f"{option} applies to --strategy {other}, not {strategy}.")


def _written(done: int) -> str:
    """The first ``done`` items of an array's put, as written."""
    if not done:
        return "nothing was written"
    return "item 1 was written" if done == 1 else f"items 1 to {done} were written"


def _partial_failure(n: int, total: int, reason: str) -> str:
    done = _written(n - 1)
    if n > 1:
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
