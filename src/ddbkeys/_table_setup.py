"""Tables fit for a strategy, in one call: ``ddbkeys table create -t T --for counter``.

:func:`table_request` is the CreateTable request, built from settings alone (what
``--dry-run`` prints); :func:`create_table` sends it and waits until the table is ACTIVE. A
table that is there already with the same key schema is left as it is (the call says so); with
another key schema it is an error naming both, since nothing would fit.

The key schemas are those the strategies' docs use:

=============  ==============================  ================================
``--for``      key schema                      why
=============  ==============================  ================================
``counter``    ``pk`` (S)                      one counter item per name
``blocks``     ``pk`` (S)                      the counter the blocks come from
``gapless``    ``pk`` (S)                      the counter item beside the items
``collection`` ``pk`` (S), ``sk`` (N)          numbers in the sort key
=============  ==============================  ================================

On demand by default (no capacity to plan); ``stream=True`` turns the table's stream on
(KEYS_ONLY), which the marker index's follower and Lambda handler read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, create_table, describe_table
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError, DdbKeysError, KeySchemaError, error_code
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import check_table_name, described
from ddbkeys._translate import maybe_own, unanswered

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import CreateTableInputTypeDef

__all__ = ["KEY_TYPES", "STRATEGY_KEYS", "Created", "create_table_for", "table_request"]

#: DynamoDB's key attribute types: string, number, binary.
KEY_TYPES = ("S", "N", "B")

#: The key schema (partition key, sort key or None) each strategy's docs use.
STRATEGY_KEYS: dict[str, tuple[tuple[str, str], tuple[str, str] | None]] = {
    "counter": (("pk", "S"), None),
    "blocks": (("pk", "S"), None),
    "gapless": (("pk", "S"), None),
    "collection": (("pk", "S"), ("sk", "N")),
}


def key_spec(text: str, option: str = "--partition-key") -> tuple[str, str]:
    """``NAME:TYPE`` (``pk:S``; the type S, N or B) as a pair."""
    name, _, kind = text.partition(":")
    kind = kind.upper()
    if not name or kind not in KEY_TYPES:
        raise ConfigurationError(
            f"{option} {text!r}: give NAME:TYPE, the type one of S (string), N (number) or B "
            "(binary), e.g. pk:S."
        )
    return name, kind


def table_request(
    table: str,
    *,
    partition_key: tuple[str, str] = ("pk", "S"),
    sort_key: tuple[str, str] | None = None,
    stream: bool = False,
) -> CreateTableInputTypeDef:
    """The CreateTable request: on demand, the given key schema, the stream when asked for."""
    check_table_name(table)
    if sort_key is not None and sort_key[0] == partition_key[0]:
        raise ConfigurationError(
            f"Table {table!r}: the sort key cannot have the partition key's name "
            f"({partition_key[0]!r})."
        )
    keys: list[tuple[tuple[str, str], Literal["HASH", "RANGE"]]] = [(partition_key, "HASH")]
    if sort_key is not None:
        keys.append((sort_key, "RANGE"))
    request: CreateTableInputTypeDef = {
        "TableName": table,
        "KeySchema": [{"AttributeName": name, "KeyType": role} for (name, _), role in keys],
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": kind}  # type: ignore[typeddict-item]
            for (name, kind), _ in keys
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if stream:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    return request


@dataclass(frozen=True)
class Created:
    """What :func:`create_table_for` did: ``created`` False when the table was there already
    (with the same key schema); ``description`` the table's, once ACTIVE."""

    table: str
    created: bool
    description: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        table = self.description
        return {
            "table": self.table,
            "created": self.created,
            "status": table.get("TableStatus"),
            "key_schema": {k["KeyType"]: k["AttributeName"] for k in table.get("KeySchema", [])},
            "stream": table.get("LatestStreamArn"),
        }


def _schema(description: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    kinds = {d["AttributeName"]: d["AttributeType"] for d in description["AttributeDefinitions"]}
    return sorted(
        (k["KeyType"], k["AttributeName"], kinds.get(k["AttributeName"], "?"))
        for k in description["KeySchema"]
    )


def _shown(schema: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{name}:{kind}" for _, name, kind in schema)


def create_flow(
    request: CreateTableInputTypeDef,
    *,
    policy: RetryPolicy,
    deadline: Deadline,
    usage: Usage,
    wait: float = 600.0,
) -> Flow[Created]:
    """Create the table (or find it there with the same key schema) and wait until ACTIVE."""
    table = request["TableName"]

    def once(request_step: Any, what: str) -> Any:
        # (``what`` names the request: the message adds "on table 'T'" itself)
        return attempts(
            lambda _: _sent(request_step),
            what=what,
            table=table,
            policy=policy,
            deadline=deadline,
            usage=usage,
        )

    lost: list[bool] = []  # (a try whose answer never came: it may have made the table)

    def create(_: int) -> Flow[bool]:
        try:
            yield create_table(request)
        except ClientError as exc:
            if error_code(exc) != "ResourceInUseException":
                raise
            return maybe_own(exc, lost)  # (there already: this call's, else another's)
        except BotoCoreError as exc:
            lost.append(unanswered(exc))
            raise
        return True

    created = yield from attempts(
        create, what="CreateTable", table=table, policy=policy, deadline=deadline, usage=usage
    )
    pause, ends = 0.2, Deadline(wait, clock=policy.clock)
    while True:
        answer = yield from once(describe_table({"TableName": table}), "DescribeTable")
        description = described(answer, table)
        if not created and _schema(description) != _schema(dict(request)):
            raise KeySchemaError(
                f"Table {table!r} exists with the key ({_shown(_schema(description))}), not "
                f"({_shown(_schema(dict(request)))}): pick another name, or use it as it is.",
                table=table,
            )
        if description.get("TableStatus") == "ACTIVE":
            return Created(table, created, description)
        if not ends.allows(pause):
            raise DdbKeysError(f"Table {table!r} is not ACTIVE after {wait:g} s.", table=table)
        yield Pause(pause, policy.sleep)
        pause = min(pause * 1.5, 5.0)


def _sent(step: Any) -> Flow[Any]:
    answer = yield step
    return answer


def create_table_for(
    client: object,
    table: str,
    strategy: str | None = None,
    *,
    partition_key: tuple[str, str] | None = None,
    sort_key: tuple[str, str] | None = None,
    stream: bool = False,
    deadline: float = DEFAULT_DEADLINE,
) -> Created:
    """Create ``table`` with the key schema ``strategy``'s docs use (see
    :data:`STRATEGY_KEYS`), or the one given, on demand, and wait until it is ACTIVE. A table
    there already with that key schema is left as it is."""
    if strategy is not None and strategy not in STRATEGY_KEYS:
        raise ConfigurationError(
            f"No strategy {strategy!r}: one of {', '.join(sorted(STRATEGY_KEYS))}."
        )
    default_pk, default_sk = STRATEGY_KEYS[strategy] if strategy else (("pk", "S"), None)
    request = table_request(
        table,
        partition_key=partition_key or default_pk,
        sort_key=sort_key if sort_key is not None or partition_key else default_sk,
        stream=stream,
    )
    usage = Usage()
    sender, _ = as_client(client)
    flow = create_flow(request, policy=RetryPolicy(), deadline=Deadline(deadline), usage=usage)
    return SyncDriver(sender, usage).run(flow)
