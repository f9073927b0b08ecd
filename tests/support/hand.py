"""Flows driven by hand, without a server (for the unit tests of the pure cores): each request
gets the next scripted answer (an answer, an exception to throw, or a callable of the request
giving either); and the answers and the collection sequence's helpers those tests share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError, ReadTimeoutError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, Request
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo, table_info
from ddbkeys.ids._collection_core import CollectionCore, Keys, Pending
from ddbkeys.ids._remembered import Remembered

TABLE = "issues"
Answer = Any  # an answer, an exception to throw, or a callable of the request giving either


def described(sort_type: str | None = "N") -> Any:
    definitions = [{"AttributeName": "pk", "AttributeType": "S"}]
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    if sort_type is not None:
        definitions.append({"AttributeName": "sk", "AttributeType": sort_type})
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
    return table_info({"AttributeDefinitions": definitions, "KeySchema": schema}, TABLE)


#: A global table (replicas in two other regions), which DynamoDB Local cannot make.
GLOBAL = TableInfo(
    "users-global", KeyAttribute("pk", "S"), None, ("eu-west-1", "us-west-2"), {}, 0, 0
)


def description(info: TableInfo) -> dict[str, Any]:
    """DynamoDB's answer to DescribeTable of the table ``info`` describes (its keys and
    replicas)."""
    keys = [(info.partition_key, "HASH"), *([(info.sort_key, "RANGE")] if info.sort_key else [])]
    return {
        "Table": {
            "TableName": info.name,
            "KeySchema": [{"AttributeName": k.name, "KeyType": role} for k, role in keys],
            "AttributeDefinitions": [
                {"AttributeName": k.name, "AttributeType": k.type} for k, _ in keys
            ],
            "Replicas": [{"RegionName": region} for region in info.replica_regions],
        }
    }


@dataclass
class Run:
    """What a flow did: its result, its requests and the waits it asked for."""

    result: Any = None
    requests: list[Request] = field(default_factory=list)
    pauses: list[float] = field(default_factory=list)

    @property
    def operations(self) -> list[str]:
        return [r.operation for r in self.requests]


def drive(
    flow: Flow[Any],
    answers: Iterable[Answer],
    *,
    info: Any = None,
    lock: Any = None,
    run: Run | None = None,
) -> Run:
    """Run ``flow`` by hand: each request gets the next answer; with ``info``, a DescribeTable
    gets that description, and is not among the requests. ``lock`` (the
    strategy's) must be free at every step the flow yields."""
    run = run if run is not None else Run()
    queue = list(answers)
    try:
        step = next(flow)
        while True:
            assert lock is None or not lock.locked(), "a lock held across a yield"
            if (
                isinstance(step, Request)
                and info is not None
                and step.operation == "describe_table"
            ):
                step = flow.send(description(info))
            elif isinstance(step, Pause):
                run.pauses.append(step.seconds)
                step = flow.send(None)
            else:
                assert isinstance(step, Request)
                run.requests.append(step)
                assert queue, f"no answer left for {step.operation}"
                answer = queue.pop(0)
                if callable(answer):
                    answer = answer(step)
                step = (
                    flow.throw(answer) if isinstance(answer, BaseException) else flow.send(answer)
                )
    except StopIteration as done:
        run.result = done.value
    assert not queue, f"answers left over: {queue}"
    return run


def client() -> Any:
    return boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


POLICY = RetryPolicy(max_attempts=10, base_delay=0.01, max_delay=0.1, random=lambda: 1.0)


@dataclass
class Collection:
    """A collection sequence without a client: its core, the highest numbers it remembers
    (``memory``, and its ``lock``, which no flow may hold across a step), and the retry layer
    its requests go through (``policy``), counted in ``usage``."""

    core: CollectionCore
    policy: RetryPolicy
    lock: Any = field(default_factory=threading.Lock)
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self.memory = Remembered(self.core.remembered, lock=self.lock)

    def attempts(
        self, attempt: Callable[[int], Flow[Any]], what: str, deadline: Deadline
    ) -> Flow[Any]:
        return attempts(
            attempt, what=what, table=TABLE, policy=self.policy, deadline=deadline, usage=self.usage
        )


def core(*, retry: RetryPolicy = POLICY, **settings: Any) -> Collection:
    return Collection(CollectionCore(TABLE, **settings), retry)


def keys(info: Any = None) -> Keys:
    """The keys of table ``issues`` as ``info`` describes it (by default pk S, sk N)."""
    return CollectionCore(TABLE).keys(info if info is not None else described())


def pending(sequence: Collection, *items: dict[str, Any], info: Any = None) -> list[Pending]:
    return [
        sequence.core.prepare(keys(info), "p", item, False, Deadline(None))
        for item in (items or ({},))
    ]


def committing(sequence: Collection, batch: list[Pending], info: Any = None) -> Flow[list[int]]:
    """The flow of the commit of ``batch``."""
    return sequence.core.commit(batch, keys(info), sequence.memory, sequence.attempts)


def commit(sequence: Collection, answers: list[Answer], count: int = 1, info: Any = None) -> Run:
    batch = pending(sequence, *({"n": i} for i in range(count)), info=info)
    return drive(committing(sequence, batch, info), answers, lock=sequence.lock)


# --- answers ---------------------------------------------------------------------------------


def highest(number: int, kind: str = "N", text: str | None = None) -> dict[str, Any]:
    if not number and text is None:
        return {"Items": [], "Count": 0, "ScannedCount": 0}
    return {"Items": [{"sk": {kind: text if text is not None else str(number)}}]}


OK: dict[str, Any] = {}


def failed_condition(item: dict[str, Any] | None = None) -> ClientError:
    response: Any = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}
    if item is not None:
        response["Item"] = item
    return ClientError(response, "PutItem")


def taken_by_another(request: Request) -> ClientError:
    """The put's item is there, written by another writer (DynamoDB returns it whole)."""
    key = {k: request.params["Item"][k] for k in ("pk", "sk") if k in request.params["Item"]}
    return failed_condition({**key, "ddbkeys_token": {"S": "another writer's"}})


def our_own_write(request: Request) -> ClientError:
    item = request.params["Item"]
    return failed_condition({"pk": item["pk"], "ddbkeys_token": item["ddbkeys_token"]})


def lost() -> ReadTimeoutError:
    return ReadTimeoutError(endpoint_url="http://127.0.0.1:9")


def cancelled(*reasons: str | tuple[str, dict[str, Any]]) -> ClientError:
    read: list[dict[str, Any]] = []
    for reason in reasons:
        code, item = reason if isinstance(reason, tuple) else (reason, None)
        entry: dict[str, Any] = {"Code": code, "Message": f"{code} here"}
        if item is not None:
            entry["Item"] = item
        read.append(entry)
    response: Any = {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
        "CancellationReasons": read,
    }
    return ClientError(response, "TransactWriteItems")


def counter(value: str | None, kind: str = "N") -> dict[str, Any]:
    return {} if value is None else {"Item": {"last_number": {kind: value}}}


def error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} here"}}, "PutItem")


# --- what the requests held -----------------------------------------------------------------


def written(run: Run) -> list[list[str]]:
    """The sort keys each write tried, in order."""
    out: list[list[str]] = []
    for r in run.requests:
        if r.operation == "put_item":
            out.append([_shown(r.params["Item"]["sk"])])
        elif r.operation == "transact_write_items":
            out.append(
                [_shown(a["Put"]["Item"]["sk"]) for a in r.params["TransactItems"] if "Put" in a]
            )
    return out


def _shown(value: dict[str, str]) -> str:
    return next(iter(value.values()))


def tokens(run: Run) -> list[str]:
    found = []
    for r in run.requests:
        if r.operation == "put_item":
            found.append(r.params["Item"]["ddbkeys_token"]["S"])
        elif r.operation == "transact_write_items":
            found.append(r.params["ClientRequestToken"])
    return found


def counter_update(request: Request) -> dict[str, Any]:
    update: dict[str, Any] = request.params["TransactItems"][0]["Update"]
    return update
