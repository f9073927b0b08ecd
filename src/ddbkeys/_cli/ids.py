"""``ddbkeys ids``: mint ids, read and set counters (and, from :mod:`ddbkeys._cli.ids_items`
and :mod:`ddbkeys._cli.ids_audit`, write items with ids and audit)."""

from __future__ import annotations

from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._cli.common import (
    Connection,
    F,
    IntRange,
    NumberArgument,
    connection_options,
    echo_json,
    echo_whole,
    output_option,
    structured,
    table_option,
    warnings_said,
)
from ddbkeys._cli.group import CUT_NOTE, stdout_closed
from ddbkeys._cli.ids_audit import audit_command
from ddbkeys._cli.ids_items import put_command
from ddbkeys._cli.items import counter_fields, counter_key_of, ids_said
from ddbkeys._errors import DdbKeysError
from ddbkeys.ids import AtomicCounter, NewCounterAttributeWarning
from ddbkeys.ids._values import MAX_ID, counter_label

COUNTER_KEY_HELP = (
    "The counter item's whole key, as plain or DynamoDB JSON: for tables with a sort key or a "
    "number or binary partition key (instead of --counter)."
)


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
            click.option("--counter-key", metavar="JSON", help=COUNTER_KEY_HELP),
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
    type=IntRange(1, 1_000_000),
    default=1,
    show_default=True,
    help="How many consecutive ids to take, with one write.",
)
@click.option(
    "--start",
    type=IntRange(0),
    default=1,
    show_default=True,
    help="The first id of a new counter.",
)
@click.option(
    "--step", type=IntRange(1), default=1, show_default=True, help="The distance between ids."
)
@click.option("--maximum", type=IntRange(1), help="Refuse to go past this id.")
@click.option(
    "--idempotent",
    is_flag=True,
    help="Stamp the write with a writer slot, so a retry after a lost response never skips "
    "ids (still one UpdateItem; the counter item holds each recent writer's slot).",
)
@connection_options
@output_option
def next_command(
    table_name: str,
    counter: str,
    counter_key: str | None,
    attribute: str,
    count: int,
    start: int,
    step: int,
    maximum: int | None,
    idempotent: bool,
    connection: Connection,
    output: str,
) -> None:
    """Take the next id (or --count ids) from an atomic counter; print one per line.

    The counter item is created on first use, with a note on stderr (a misspelt --counter
    begins a new counter at 1 too). One UpdateItem whatever --count is (with --idempotent
    too: sent again with the same request number when its answer is lost).

    \b
    ddbkeys ids next -t orders --counter order --count 3
    ddbkeys ids next -t orders --counter order --idempotent
    ddbkeys ids next -t issues --counter-key '{"pk": "counters", "sk": 0}'
    """
    if stdout_closed():  # (`>&-`: ids taken and printed nowhere)
        raise click.ClickException(
            "Standard output is closed, so the ids would be printed nowhere: none taken."
        )
    key = counter_key_of(counter_key, table_name, instead_of="counter")
    strategy = AtomicCounter(
        connection.client(),
        table_name,
        counter,
        counter_key=key,
        counter_attribute=attribute,
        start=start,
        step=step,
        maximum=maximum,
        deadline=connection.timeout,
        idempotent=idempotent,
    )
    with warnings_said(NewCounterAttributeWarning) as said:  # (a misspelt --attribute, say)
        ids = list(strategy.reserve(count))
    which = f"counter {counter!r}" if key is None else f"the counter at {counter_key}"
    click.get_current_context().meta[CUT_NOTE] = (
        f"{ids_said(ids)} taken from {which} of table {table_name!r}; the output was cut before "
        "all of it was read."
    )
    if structured(output):
        echo_json({"table": table_name, **counter_fields(counter, key), "ids": ids})
    else:
        echo_whole("\n".join(str(i) for i in ids))
    if ids and ids[0] == start and not said:  # (a misspelt --counter begins a new one)
        # (the first id: a new counter, or one set back to before it: helper-91 F4)
        named = "--counter" if key is None else "--counter-key"
        click.echo(
            f"Note: counter {counter_label(counter, key)} of table {table_name!r} gave out its "
            f"first id, {start}, with this call (a new counter, or one set to "
            f"{start - step}): if it had given out ids before, is {named} right?",
            err=True,
        )


@ids_group.command("current")
@table_option
@counter_options
@connection_options
@output_option
def current_command(
    table_name: str,
    counter: str,
    counter_key: str | None,
    attribute: str,
    connection: Connection,
    output: str,
) -> None:
    """Print the last id a counter gave out (0 if none).

    -t names the table the counter item lives in. For a gapless sequence, pass its name,
    --counter sequence (the default of `ids put --strategy gapless`), or, for a counter kept
    in another table (`ids put --counter-table`), that table as -t and its key as --counter-key.
    A counter holding anything but a whole number is reported, not read as 0. One that is not
    there (no item, or no --attribute on it) prints 0 with a note on stderr: a misspelt name
    reads 0 too.

    \b
    ddbkeys ids current -t orders --counter order
    ddbkeys ids current -t users --counter sequence --output json
    """
    key = counter_key_of(counter_key, table_name, instead_of="counter")
    client = connection.client()
    counted = AtomicCounter(
        client,
        table_name,
        counter,
        counter_key=key,
        counter_attribute=attribute,
        deadline=connection.timeout,
    )
    value = counted.current()
    if structured(output):
        echo_json({"table": table_name, **counter_fields(counter, key), "current": value})
    else:
        click.echo(str(value))
    if value == 0:  # (a misspelt counter reads 0 too: said where its item is not there)
        named = "--counter" if key is None else "--counter-key"
        _said_if_not_there(client, counted, counter_label(counter, key), table_name, named)


def _said_if_not_there(
    client: Any, counted: AtomicCounter, label: str, table: str, named: str
) -> None:
    """A note where the counter ``current`` read 0 from has no item, or its item no counter
    attribute: one more consistent GetItem (1 read unit), only then; nothing if it fails."""
    try:
        where = counted.counter_item()
        item = client.get_item(TableName=where.table, Key=where.key, ConsistentRead=True)
    except (DdbKeysError, ClientError, BotoCoreError):
        return
    if "Item" not in item:
        gapless = " (`ids put -s gapless` keeps its sequence as --counter sequence)"
        click.echo(
            f"Note: table {table!r} holds no counter {label} (none has given out an id yet): "
            f"is {named} right?" + (gapless if label == "'counter'" else ""),
            err=True,
        )
    elif where.attribute not in item["Item"]:
        click.echo(
            f"Note: counter {label} of table {table!r} holds no {where.attribute!r} (no id given "
            "out from it yet): is --attribute right?",
            err=True,
        )


@ids_group.command("set", cls=NumberArgument)
@click.argument("value", type=IntRange(0, MAX_ID))  # (past it: a usage error, 2)
@table_option
@counter_options
@click.option("--force", is_flag=True, help="Allow moving the counter backwards (ids repeat!).")
@connection_options
@output_option
def set_command(
    value: int,
    table_name: str,
    counter: str,
    counter_key: str | None,
    attribute: str,
    force: bool,
    connection: Connection,
    output: str,
) -> None:
    """Make VALUE the last id given out, so the next id is VALUE + 1 (+ --step, if given).

    Refuses to move the counter backwards unless --force: the check is a condition on the
    write itself, so a concurrent writer cannot slip in between. The counter of a gapless
    sequence is set the same way (--counter sequence, or --counter-key and its table as -t).

    \b
    ddbkeys ids set 1000 -t orders --counter invoice
    """
    key = counter_key_of(counter_key, table_name, instead_of="counter")
    client = connection.client()
    AtomicCounter(
        client,
        table_name,
        counter,
        counter_key=key,
        counter_attribute=attribute,
        deadline=connection.timeout,
    ).set(value, force=force)
    if structured(output):
        echo_json({"table": table_name, **counter_fields(counter, key), "current": value})
    else:
        click.echo(str(value))


ids_group.add_command(put_command)
ids_group.add_command(audit_command)
