"""What the command-line tests of ``ddbkeys ids`` share: ``ids(*args)`` runs the command
against the test endpoint, ``scan`` reads a table back in a stable order, ``seeded`` makes a
table holding a sequence, a counter and an item, ``fill`` and ``last_line`` read an error."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from ddbkeys._cli import cli
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Run = Callable[..., Result]
BASE64 = "which is not base64: DynamoDB JSON gives binary values (B, BS) in base64."


@pytest.fixture
def ids(ddb_endpoint_url: str) -> Run:
    """``ddbkeys ids ARGS --endpoint-url <the test endpoint>``, with ``input`` on stdin."""

    def run(*args: str, input: str | bytes | None = None) -> Result:
        return CliRunner().invoke(
            cli, ["ids", *args, "--endpoint-url", ddb_endpoint_url], input=input
        )

    return run


def scan(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    return ordered(client.scan(TableName=table, ConsistentRead=True)["Items"])


def ordered(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Items in the order :func:`scan` gives them."""
    return sorted(map(dict, items), key=lambda item: json.dumps(item, sort_keys=True, default=str))


def seeded(client: DynamoDBClient, factory: TableFactory, *keys: tuple[str, str]) -> str:
    """A table holding a gapless sequence at 5, an atomic counter at 7 and one item."""
    table = factory(*keys)
    extra = {"sk": {"N": "0"}} if len(keys) > 1 else {}
    for item in (
        {"pk": {"S": "sequence"}, "last_id": {"N": "5"}},
        {"pk": {"S": "counter"}, "last_id": {"N": "7"}},
        {"pk": {"S": "User#1"}, "id": {"N": "1"}},
    ):
        client.put_item(TableName=table, Item={**item, **extra})
    return table


def fill(message: str, table: str) -> str:
    return message.replace("{t!r}", repr(table)).replace("{t}", table)


def last_line(result: Result) -> str:
    lines = result.output.splitlines()
    return lines[-1] if lines else ""


# (arguments, standard input, exit code, the error line). {t} is the table.
