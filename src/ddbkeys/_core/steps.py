"""The steps a flow yields to its driver, and the typed request constructors."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        CreateTableInputTypeDef,
        DeleteItemInputTypeDef,
        DescribeTableInputTypeDef,
        GetItemInputTypeDef,
        PutItemInputTypeDef,
        QueryInputTypeDef,
        ScanInputTypeDef,
        TransactWriteItemsInputTypeDef,
        UpdateItemInputTypeDef,
        UpdateTableInputTypeDef,
    )

    from ddbkeys._core.stopping import StopFlag
    from ddbkeys._retry import Deadline

__all__ = [
    "Emit",
    "Flow",
    "Pause",
    "Request",
    "Step",
    "create_table",
    "delete_item",
    "describe_stream",
    "describe_table",
    "get_item",
    "get_records",
    "get_shard_iterator",
    "put_item",
    "query",
    "scan",
    "transact_write_items",
    "update_item",
    "update_table",
]

T = TypeVar("T")


@dataclass(slots=True)
class Request:
    """One request to send: the boto3 client method (``"update_item"``) and its parameters.

    ``deadline`` bounds it (the retry layer stamps the deadline of its attempts on the request,
    which a flow builds for one sending: a request is never yielded twice). The driver
    counts an answered request in its :class:`~ddbkeys.Usage` as ``write``, with
    ``items`` and ``billed`` units (see :meth:`~ddbkeys.Usage.add`), unless
    ``counted`` is False; ``count_refused`` counts a request DynamoDB refused (an error
    answer, such as a cancelled transaction) too.
    """

    operation: str
    params: Mapping[str, Any]
    deadline: Deadline | None = None
    write: bool = False
    items: int = 0
    billed: float = 0.0
    counted: bool = True
    count_refused: bool = False
    #: Counted by the number of items the answer says were read (Scan, Query): ScannedCount.
    count_scanned: bool = False
    #: With ``count_refused``: a refusal is billed ``billed`` units too (a conditional PutItem
    #: whose condition failed is charged like a write).
    bill_refused: bool = False


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds``. ``sleep`` is the retry policy's (injectable; the sync driver calls it,
    the asyncio driver sleeps on the event loop unless it is not ``time.sleep``). With ``stop``,
    the wait looks at that flag at least every 0.1 s and ends the flow when it is set."""

    seconds: float
    sleep: Callable[[float], None] = time.sleep
    stop: StopFlag | None = None


@dataclass(frozen=True, slots=True)
class Emit(Generic[T]):
    """A value a streaming flow (a listing) hands to its consumer; the flow goes on after it."""

    value: T


Step = Request | Pause | Emit[Any]
#: A flow: yields steps, is sent what each gave, returns its result.
Flow = Generator[Step, Any, T]


# --- typed requests (the mypy_boto3 TypedDicts) --------------------------------------------


def update_item(params: UpdateItemInputTypeDef, **counting: Any) -> Request:
    return Request("update_item", params, write=True, **counting)


def put_item(params: PutItemInputTypeDef, **counting: Any) -> Request:
    return Request("put_item", params, write=True, **counting)


def delete_item(params: DeleteItemInputTypeDef, **counting: Any) -> Request:
    return Request("delete_item", params, write=True, **counting)


def get_item(params: GetItemInputTypeDef, **counting: Any) -> Request:
    return Request("get_item", params, **counting)


def query(params: QueryInputTypeDef, **counting: Any) -> Request:
    return Request("query", params, **counting)


def scan(params: ScanInputTypeDef, **counting: Any) -> Request:
    return Request("scan", params, count_scanned=True, **counting)


def transact_write_items(params: TransactWriteItemsInputTypeDef, **counting: Any) -> Request:
    return Request("transact_write_items", params, write=True, **counting)


def describe_table(params: DescribeTableInputTypeDef) -> Request:
    return Request("describe_table", params, counted=False)


def update_table(params: UpdateTableInputTypeDef) -> Request:
    return Request("update_table", params, counted=False)


def create_table(params: CreateTableInputTypeDef) -> Request:
    return Request("create_table", params, counted=False)


# DynamoDB Streams (no type stubs installed; sent by a client that answers them, see
# ddbkeys.partition_keys._streams.follow)


def describe_stream(params: Mapping[str, Any]) -> Request:
    return Request("describe_stream", params, counted=False)


def get_shard_iterator(params: Mapping[str, Any]) -> Request:
    return Request("get_shard_iterator", params, counted=False)


def get_records(params: Mapping[str, Any]) -> Request:
    return Request("get_records", params, counted=False)
