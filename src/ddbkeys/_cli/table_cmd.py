"""``ddbkeys table create``: a table fit for a strategy, in one command (see
:mod:`ddbkeys._table_setup`)."""

from __future__ import annotations

import click

from ddbkeys._cli.common import (
    Connection,
    connection_options,
    echo_json,
    json_text,
    output_option,
    structured,
    table_option,
)
from ddbkeys._errors import ConfigurationError
from ddbkeys._table_setup import STRATEGY_KEYS, create_table_for, key_spec, table_request

__all__ = ["table_group"]


@click.group("table")
def table_group() -> None:
    """Tables for ddbkeys: one command makes a table fit for a strategy.

    \b
    Examples:
      ddbkeys table create -t orders --for counter
      ddbkeys table create -t issues --for collection
    """


def _key(value: str | None, option: str) -> tuple[str, str] | None:
    if value is None:
        return None
    try:
        return key_spec(value, option)
    except ConfigurationError as exc:
        raise click.BadParameter(exc.message.split(": ", 1)[1], param_hint=option) from exc


@table_group.command("create")
@table_option
@click.option(
    "--for",
    "strategy",
    type=click.Choice(sorted(STRATEGY_KEYS)),
    help="The key schema that strategy's docs use: counter, blocks and gapless pk:S; "
    "collection pk:S and sk:N.",
)
@click.option("--partition-key", metavar="NAME:TYPE", help="Instead of --for: e.g. pk:S.")
@click.option("--sort-key", metavar="NAME:TYPE", help="With --partition-key: e.g. sk:N.")
@click.option(
    "--stream",
    is_flag=True,
    help="Turn the table's stream on (KEYS_ONLY): the marker index's follower and Lambda "
    "handler read it.",
)
@click.option("--dry-run", is_flag=True, help="Print the CreateTable request; send nothing.")
@connection_options
@output_option
def create_command(
    table_name: str,
    strategy: str | None,
    partition_key: str | None,
    sort_key: str | None,
    stream: bool,
    dry_run: bool,
    connection: Connection,
    output: str,
) -> None:
    """Create a table on demand (no capacity to plan) with the key schema a strategy's docs
    use, or the one given, and wait until it is ACTIVE. A table there already with that key
    schema is left as it is; with another, it is an error naming both.

    \b
    Examples:
      ddbkeys table create -t orders --for counter
      ddbkeys table create -t issues --for collection --dry-run
      ddbkeys table create -t customers --partition-key pk:S --sort-key sk:S --stream
    """
    if sort_key is not None and partition_key is None:
        raise click.UsageError("--sort-key goes with --partition-key.")
    if (strategy is None) == (partition_key is None):
        raise click.UsageError("Give --for STRATEGY, or --partition-key NAME:TYPE (not both).")
    pk, sk = _key(partition_key, "--partition-key"), _key(sort_key, "--sort-key")
    if strategy is not None:
        pk, sk = STRATEGY_KEYS[strategy]
    assert pk is not None
    if dry_run:  # (the request is JSON, as `aws dynamodb create-table --cli-input-json` takes)
        request = table_request(table_name, partition_key=pk, sort_key=sk, stream=stream)
        echo_json(request) if structured(output) else click.echo(json_text(request))
        return
    done = create_table_for(
        connection.client(),
        table_name,
        partition_key=pk,
        sort_key=sk,
        stream=stream,
        deadline=connection.timeout,
    )
    if structured(output):
        echo_json(done.as_dict())
        return
    keys = f"{pk[0]}:{pk[1]}" + (f", {sk[0]}:{sk[1]}" if sk else "")
    if done.created:
        click.echo(f"Created table {table_name} ({keys}), on demand: ACTIVE.")
    else:
        click.echo(f"Table {table_name} ({keys}) was there already: left as it is.")
    if stream and not done.description.get("LatestStreamArn"):
        click.echo(
            f"Note: its stream is off; `ddbkeys partition-keys index stream -t {table_name}` "
            "turns it on.",
            err=True,
        )
