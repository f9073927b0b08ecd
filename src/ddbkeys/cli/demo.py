"""``ddbkeys demo``: the main job, on an embedded DynamoDB Local unless told otherwise."""

from __future__ import annotations

import time
import uuid

import click

from ddbkeys.cli.common import Connection, connection_options, echo_json, output_option


@click.command("demo")
@connection_options
@output_option
def demo_command(connection: Connection, output: str) -> None:
    """Show ddbkeys working, with no AWS account needed.

    By default it starts an embedded DynamoDB Local, creates a table, writes and reads an item,
    deletes the table and stops the server. With --endpoint-url it runs against that endpoint
    instead (it creates and deletes its own table there).
    """
    if connection.endpoint_url is None:
        connection.local = True
    began = time.monotonic()
    client = connection.client()
    table = f"ddbkeys-demo-{uuid.uuid4().hex[:8]}"
    steps: list[dict[str, object]] = []

    def step(name: str, started: float) -> None:
        steps.append({"step": name, "ms": round((time.monotonic() - started) * 1000, 1)})
        if output == "text":
            click.echo(f"  {name:<40} {steps[-1]['ms']:>8} ms", err=True)

    step("start the client (and server)", began)
    t = time.monotonic()
    client.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1})
    step(f"create table {table}", t)
    try:
        t = time.monotonic()
        client.put_item(TableName=table, Item={"pk": {"S": "hello"}, "n": {"N": "1"}})
        step("put an item", t)
        t = time.monotonic()
        item = client.get_item(TableName=table, Key={"pk": {"S": "hello"}}, ConsistentRead=True)
        step("get it back", t)
        if item.get("Item", {}).get("n") != {"N": "1"}:
            raise click.ClickException(f"read back {item.get('Item')!r}, not what was written")
    finally:
        t = time.monotonic()
        client.delete_table(TableName=table)
        step("delete the table", t)
    total = round(time.monotonic() - began, 2)
    if output == "json":
        echo_json({"ok": True, "steps": steps, "seconds": total})
    else:
        click.echo(f"Round trip on DynamoDB OK in {total} s.")
