"""Where the evidence that a marker index is complete lives: one item per marker index in a small
table of its own (``ddbkeys-state`` by default, keyed ``"<table>/<index>"``), not in your table,
where anything kept would be an item your own scans and queries return. Every command, the
library and the Lambda handler take its name from one place (:func:`state_table_name`: the
argument, else ``DDBKEYS_STATE_TABLE``, else ``ddbkeys-state``). ``index backfill`` and the
maintainers create it when it is missing (on-demand billing).

The record holds what :mod:`ddbkeys.partition_keys._proof.evidence` needs to prove the index at
answer time: per stream shard, the maintainer's marks (``shard <id>``: up to which record everything
was applied, and when), the last backfill (``backfill``; and, while it has not finished, the one
it replaced, ``kept_backfill``: see :func:`~ddbkeys.partition_keys._proof.precheck.basis`), the
collections a maintainer could not mark (``clashes``), and those whose reconciliation did not
settle (``pending``, see :mod:`ddbkeys.partition_keys._index.pending`). No heartbeat that a
listing trusts: a listing reads the stream from the marks itself (the backfill's ``alive`` time
only keeps a second backfill from reading the table while one is at work: see
:mod:`ddbkeys.partition_keys._index.backfill_claim`).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.reads import Settable, Through
from ddbkeys._core.steps import (
    Flow,
    Pause,
    Request,
    create_table,
    describe_table,
    get_item,
    update_item,
)
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import DdbKeysError, error_code
from ddbkeys._names import STATE_TABLE, STATE_TABLE_ENV, state_table_name
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys._schema import described
from ddbkeys.partition_keys._index.state_update import counted_request, update_request
from ddbkeys.partition_keys._proof.evidence import SHARD_PREFIX, Backfill, Evidence, ShardMark
from ddbkeys.partition_keys._streams.lambda_trigger import (
    LAMBDA_PREFIX,
    PARALLELIZED,
    Parallelized,
    TriggerCheck,
    record_text,
    record_time,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DescribeTableOutputTypeDef,
        GetItemOutputTypeDef,
    )

__all__ = [
    "KEPT",
    "MOST_NAMED",
    "SAVES",
    "STATE_TABLE",
    "STATE_TABLE_ENV",
    "StateCore",
    "StateStore",
    "StoreBase",
    "evidence_from_item",
    "key_json",
    "key_of_json",
    "markers_key",
    "markers_of_key",
    "state_table_name",
    "update_request",
]

T = TypeVar("T")

#: The record's count of the marks followers saved: one more with each save, and a save goes
#: only where the count is not below the last one its follower saw. Restored from an older
#: copy, the record holds fewer: the follower's next save finds so, writes nothing, and the
#: follower goes on from the marks the record holds (its clashes and pending met again).
SAVES = "saves"

#: The record's attribute that holds the finished backfill a backfill at work replaced (JSON).
KEPT = "kept_backfill"

#: The most attributes one UpdateItem of the record sets or removes: its UpdateExpression may
#: hold 4 KB (the service's limit), and each costs up to 14 characters there ("#a99 = :v99, ").
MOST_NAMED = 100


def key_json(key: dict[str, Any]) -> str:
    """A typed key as the record keeps it (JSON; binary values in base64)."""
    kind, raw = next(iter(key.items()))
    if isinstance(raw, (bytes, bytearray)):
        raw = base64.b64encode(bytes(raw)).decode()
    return json.dumps({kind: raw}, separators=(",", ":"))


def key_of_json(text: str) -> dict[str, Any]:
    """The typed key :func:`key_json` gave ``text`` for."""
    kind, raw = next(iter(json.loads(text).items()))
    return {kind: base64.b64decode(raw) if kind == "B" else raw}


def markers_key(attribute: str, sort_key: dict[str, Any]) -> str:
    """How markers were recognised (their attribute and sort key), as a backfill records it:
    a listing proves the index only with the same."""
    return json.dumps([attribute, key_json(sort_key)], separators=(",", ":"))


def markers_of_key(text: str) -> tuple[str, dict[str, Any]]:
    """The marker attribute and (typed) sort key :func:`markers_key` wrote ``text`` for."""
    attribute, sort_key = json.loads(text)
    return str(attribute), key_of_json(sort_key)


def _positions(
    item: dict[str, Any],
) -> tuple[dict[str, ShardMark], dict[str, TriggerCheck], str | None]:
    """The record's shard positions and Lambda trigger checks, and what is not one ddbkeys
    wrote (None: all are)."""
    corrupt: str | None = None
    shards: dict[str, ShardMark] = {}
    triggers: dict[str, TriggerCheck] = {}
    for name, value in item.items():
        if name.startswith(SHARD_PREFIX) and "S" in value:
            mark = ShardMark.from_json(name[len(SHARD_PREFIX) :], str(value["S"]))
            if mark is not None:
                shards[mark.shard] = mark
            else:
                corrupt = f"its attribute {name!r} is not a position ddbkeys wrote"
        elif name.startswith(LAMBDA_PREFIX) and "S" in value:
            check = TriggerCheck.from_json(str(value["S"]))
            if check is not None:
                triggers[name[len(LAMBDA_PREFIX) :]] = check
            else:
                corrupt = f"its attribute {name!r} is not a check ddbkeys wrote"
    return shards, triggers, corrupt


def _backfill(raw: str) -> Backfill:
    """The record's backfill (JSON); ValueError, TypeError or KeyError when it is not one
    ddbkeys wrote."""
    data = json.loads(raw)
    return Backfill(
        started=float(record_time(data["started"])),  # type: ignore[arg-type]
        stream=data.get("stream"),
        maintained_since=record_time(data.get("maintained_since")),
        finished=record_time(data.get("finished")),
        clashes=tuple(str(c) for c in data.get("clashes", [])),
        markers=record_text(data.get("markers")),
        margin=record_time(data.get("margin")),
        uncounted=record_text(data.get("uncounted")),
        alive=record_time(data.get("alive")),
        owner=record_text(data.get("owner")),
        handled=int(data["handled"]) if data.get("handled") is not None else None,
        stopped=record_time(data.get("stopped")),
        mode=record_text(data.get("mode")),
        tip_at=record_time(data.get("tip_at")),
    )


def evidence_from_item(table: str, index: str, item: dict[str, Any]) -> Evidence:
    """The record ``item`` (as GetItem returns it) read as evidence; what it does not hold (or
    holds in another form, as records of older versions of ddbkeys do) is left out."""
    shards, triggers, corrupt = _positions(item)
    parallelized = None
    if PARALLELIZED in item:
        parallelized = Parallelized.from_json(str(item[PARALLELIZED].get("S")))
        if parallelized is None:
            corrupt = f"its attribute {PARALLELIZED!r} is not one ddbkeys wrote"
    backfill = kept = None
    raw = item.get("backfill", {}).get("S")
    if raw is not None:
        try:
            backfill = _backfill(raw)
        except (ValueError, TypeError, KeyError, AttributeError):
            corrupt = "its backfill record is not one ddbkeys wrote (edited by hand?)"
    raw = item.get(KEPT, {}).get("S")
    if raw is not None:
        try:
            kept = _backfill(raw)
        except (ValueError, TypeError, KeyError, AttributeError):
            corrupt = "its kept backfill record is not one ddbkeys wrote (edited by hand?)"
    clashes = item.get("clashes")
    if clashes is not None and "SS" not in clashes:
        corrupt = "its clashes are not a string set (edited by hand?)"
    pending = item.get("pending")
    if pending is not None and "SS" not in pending:
        corrupt = "its pending collections are not a string set (edited by hand?)"
    unnamed = item.get("unnamed_batches", {}).get("N")
    saves = item.get(SAVES, {}).get("N")
    return Evidence(
        table=table,
        index=index,
        shards=shards,
        backfill=backfill,
        clashes=tuple(sorted(item.get("clashes", {}).get("SS", []))),
        unnamed_batches=float(unnamed) if unnamed is not None else None,
        corrupt=corrupt,
        triggers=triggers,
        parallelized=parallelized,
        maintainer=item.get("maintainer", {}).get("S"),
        pending=tuple(sorted(item.get("pending", {}).get("SS", []))),
        kept=kept,
        saves=int(Decimal(saves)) if saves is not None else None,
    )


class StateCore:
    """The records of marker indexes in the state table ``name`` (None: see
    :func:`state_table_name`), apart from any client: flows (see :mod:`ddbkeys._core`) that a
    :class:`StateStore` (sync), ``ddbkeys.aio._index.StateStore`` or a marker index's own flows
    run. Built from its settings alone; ``deadline`` bounds each call (None: no limit)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        deadline: float | None = 60.0,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.name = state_table_name(name)
        self.clock = clock
        self.deadline = deadline
        self.retry = retry or RetryPolicy()
        #: Retries only: the state table's requests are not the listing's or the index's cost.
        self.usage = Usage()

    @staticmethod
    def key(table: str, index: str) -> dict[str, Any]:
        return {"id": {"S": f"{table}/{index}"}}

    def _send(self, request: Request, what: str, deadline: Deadline | None = None) -> Flow[Any]:
        """``request`` (not counted) through the retry layer; its answer."""
        return attempts(
            lambda _: _one(request),
            what=what,
            table=self.name,
            policy=self.retry,
            deadline=deadline or Deadline(self.deadline, clock=self.retry.clock),
            usage=self.usage,
        )

    def ensure(self) -> Flow[None]:
        """Create the state table if it is missing, and wait until it is ACTIVE."""
        deadline = Deadline(self.deadline, clock=self.retry.clock)
        try:
            yield from self._send(
                describe_table({"TableName": self.name}), "reading the state table", deadline
            )
            return
        except DdbKeysError as exc:
            if _code(exc) != "ResourceNotFoundException":
                raise
        yield from attempts(
            lambda _: _create(self.name),
            what="creating the state table",
            table=self.name,
            policy=self.retry,
            deadline=deadline,
            usage=self.usage,
        )
        pause = 0.1
        ends = Deadline(120.0, clock=self.retry.clock)
        while True:
            answer: DescribeTableOutputTypeDef = yield from self._send(
                describe_table({"TableName": self.name}), "reading the state table"
            )
            if described(answer, self.name).get("TableStatus") == "ACTIVE":
                return
            if not ends.allows(pause):
                raise DdbKeysError(
                    f"The state table {self.name!r} is not ACTIVE after 120 s.", table=self.name
                )
            yield Pause(pause, self.retry.sleep)
            pause = min(pause * 1.5, 5.0)

    def load(self, table: str, index: str) -> Flow[Evidence | None]:
        """The record of ``table``'s index ``index`` (None: none, or no state table)."""
        return (yield from self.lookup(table, index))[1]

    def lookup(self, table: str, index: str) -> Flow[tuple[bool, Evidence | None]]:
        """Whether the state table exists, and :meth:`load`'s record (a listing names a state
        table that is not there, a mistyped --state-table, rather than ask for a backfill)."""
        try:
            item = yield from self._get(table, index)
        except DdbKeysError as exc:
            if _code(exc) == "ResourceNotFoundException":
                return False, None
            raise
        return True, (evidence_from_item(table, index, item) if item else None)

    def record(self, table: str, index: str) -> Flow[dict[str, Any] | None]:
        """The record of ``table``'s index ``index`` as GetItem returns it (None: none), for
        a reader that must not take a missing state table for an empty one: that is an error
        naming it (nothing is created)."""
        try:
            return (yield from self._get(table, index))
        except DdbKeysError as exc:
            if _code(exc) != "ResourceNotFoundException":
                raise
            raise DdbKeysError(
                f"There is no state table {self.name!r}, so nothing proves marker index "
                f"{index!r} of table {table!r}: `index follow`, the Lambda handler and `index "
                "backfill` create it (or give its name with --state-table, "
                "$DDBKEYS_STATE_TABLE).",
                table=self.name,
            ) from exc

    def _get(self, table: str, index: str) -> Flow[dict[str, Any] | None]:
        """The record, read consistently (None: none); errors as the driver translates them."""
        request = get_item(
            {"TableName": self.name, "Key": self.key(table, index), "ConsistentRead": True},
            counted=False,
        )
        try:
            answer: GetItemOutputTypeDef = yield from self._send(
                request, "reading the index's record"
            )
        except DdbKeysError as exc:
            if _code(exc) != "ValidationException":
                raise
            raise DdbKeysError(
                f"Table {self.name!r} is not a ddbkeys state table (its key is not 'id', a "
                f"string): give the state table's name with --state-table ({exc})",
                table=self.name,
            ) from exc
        item = answer.get("Item")
        return dict(item) if item else None

    def update(
        self, table: str, index: str, values: dict[str, Any], remove: tuple[str, ...] = ()
    ) -> Flow[None]:
        """Set ``values`` (plain: float, str, dict of str, list of str) on the record, and
        take ``remove`` off it: in one UpdateItem, or one per ``MOST_NAMED`` of them (the
        marks of every shard of a large stream, at a follower's first start)."""
        sets, gone = sorted(values.items()), sorted(remove)
        total = len(sets) + len(gone)
        for at in range(0, max(total, 1), MOST_NAMED):
            part = dict(sets[at : at + MOST_NAMED])
            off = tuple(gone[max(0, at - len(sets)) : max(0, at + MOST_NAMED - len(sets))])
            request = update_item(
                update_request(self.name, self.key(table, index), part, off), counted=False
            )
            yield from self._send(request, "writing the index's record")

    def save_marks(
        self, table: str, index: str, values: dict[str, str], seen: int | None
    ) -> Flow[int | None]:
        """Set the marks ``values`` and count the save (:data:`SAVES`), per ``MOST_NAMED``, where
        the count is at least ``seen``: the count after, or None (lower: put back, not written)."""
        items = sorted(values.items())
        for at in range(0, max(len(items), 1), MOST_NAMED):
            part = dict(items[at : at + MOST_NAMED])
            params = counted_request(self.name, self.key(table, index), part, SAVES, seen)
            try:
                answer = yield from self._send(
                    update_item(params, counted=False), "writing the index's record"
                )
            except DdbKeysError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
                return None
            seen = int(Decimal(answer["Attributes"][SAVES]["N"]))
        return seen

    def clashes(self, table: str, index: str, keys: list[str], *, add: bool) -> Flow[None]:
        """Add ``keys`` (:func:`key_json`) to the record's clashes, or take them out: an ADD or
        DELETE of those elements alone, so that two writers never undo each other."""
        if not keys:
            return
        request = update_item(
            {
                "TableName": self.name,
                "Key": self.key(table, index),
                "UpdateExpression": f"{'ADD' if add else 'DELETE'} #c :c",
                "ExpressionAttributeNames": {"#c": "clashes"},
                "ExpressionAttributeValues": {":c": {"SS": sorted(set(keys))}},
            },
            counted=False,
        )
        yield from self._send(request, "writing the index's record")


class StoreBase:
    """What both forms of ``StateStore`` share: a :class:`StateCore` (``core``) and the client
    its flows are sent with (``client``); its settings read through."""

    def __init__(
        self,
        client: Any,
        name: str | None = None,
        *,
        deadline: float | None = 60.0,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.client = client
        self.core = StateCore(name, deadline=deadline, clock=clock, retry=retry)

    name: Through[str] = Through("core")
    clock: Settable[Callable[[], float]] = Settable("core")
    deadline: Through[float | None] = Through("core")
    retry: Through[RetryPolicy] = Through("core")
    usage: Through[Usage] = Through("core")


class StateStore(StoreBase):
    """Reads and writes the records of marker indexes in the state table ``name`` (sync): its
    :class:`StateCore`, run on the sync driver with ``client``. Nothing is sent by the
    constructor."""

    def _run(self, flow: Flow[T]) -> T:
        return SyncDriver(self.client, self.usage).run(flow)

    def ensure(self) -> None:
        """Create the state table if it is missing, and wait until it is ACTIVE."""
        self._run(self.core.ensure())

    def load(self, table: str, index_name: str) -> Evidence | None:
        """The record of ``table``'s index ``index_name``; None when there is none (or no state
        table at all)."""
        return self._run(self.core.load(table, index_name))

    def update(
        self, table: str, index_name: str, values: dict[str, Any], remove: tuple[str, ...] = ()
    ) -> None:
        """Set ``values`` (plain: float, str, dict of str, list of str) on the record."""
        self._run(self.core.update(table, index_name, values, remove))


def _one(request: Request) -> Flow[Any]:
    answer = yield request
    return answer


def _create(name: str) -> Flow[None]:
    try:
        yield create_table(
            {
                "TableName": name,
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            }
        )
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":  # made by another process meanwhile
            raise


def _code(exc: BaseException) -> str | None:
    return error_code(getattr(exc, "cause", None) or exc)
