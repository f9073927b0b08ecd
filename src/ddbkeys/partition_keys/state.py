"""The evidence that a marker index is complete: a record of the backfill and of the maintainer
that keeps the markers right from the table's stream, and the rule that reads it.

The records live in a small table of their own (``ddbkeys-state`` by default, one item per
marker index, keyed ``"<table>/<index>"``), not in your table: anything kept there would be an
item that your own scans and queries return. ``index backfill`` and the maintainers create the
table when it is missing (on-demand billing; a few writes a minute while a follower runs).

The rule (:func:`vouch`), pure: the index is complete when

1. a backfill has finished, and it began after the maintainer began covering the stream (so
   every change is covered by one or the other);
2. the maintainer follows the table's stream as it is now (not one turned off since);
3. the maintainer has shown it is alive and caught up within ``max_lag`` seconds: the follower
   when it last reached the end of every open shard, the Lambda handler when it last handled
   a batch (on a quiet table that goes stale: ddbkeys cannot tell a quiet table from a trigger
   that stopped, so ``auto`` then reads the table instead, and says why).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.core.attempts import attempts
from ddbkeys.core.steps import (
    Flow,
    Pause,
    Request,
    create_table,
    describe_table,
    get_item,
    update_item,
)
from ddbkeys.drivers.sync import SyncDriver
from ddbkeys.errors import DdbKeysError, error_code
from ddbkeys.retry import Deadline, RetryPolicy
from ddbkeys.schema import described

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DescribeTableOutputTypeDef,
        GetItemOutputTypeDef,
        UpdateItemInputTypeDef,
    )

__all__ = [
    "DEFAULT_MAX_LAG",
    "STATE_TABLE",
    "IndexState",
    "StateCore",
    "StateStore",
    "update_request",
    "vouch",
]

T = TypeVar("T")

STATE_TABLE = "ddbkeys-state"
#: Seconds since the maintainer last showed it was caught up, beyond which ``auto`` does not
#: trust the index.
DEFAULT_MAX_LAG = 120.0


@dataclass
class IndexState:
    """What is known about one marker index (times in seconds since the epoch)."""

    table: str
    index: str
    backfill_started: float | None = None
    backfill_finished: float | None = None
    maintainer: str | None = None  # "follow" or "lambda"
    stream_arn: str | None = None
    maintained_since: float | None = None
    caught_up_at: float | None = None
    shards: dict[str, str] = field(default_factory=dict)  # shard id -> last sequence handled
    finished_shards: list[str] = field(default_factory=list)

    @classmethod
    def from_item(cls, table: str, index: str, item: dict[str, Any]) -> IndexState:
        def number(name: str) -> float | None:
            value = item.get(name, {}).get("N")
            return float(value) if value is not None else None

        def text(name: str) -> str | None:
            value = item.get(name, {}).get("S")
            return str(value) if value is not None else None

        shards = item.get("shards", {}).get("M", {})
        return cls(
            table=table,
            index=index,
            backfill_started=number("backfill_started"),
            backfill_finished=number("backfill_finished"),
            maintainer=text("maintainer"),
            stream_arn=text("stream_arn"),
            maintained_since=number("maintained_since"),
            caught_up_at=number("caught_up_at"),
            shards={k: str(v.get("S", "")) for k, v in shards.items()},
            finished_shards=list(item.get("finished_shards", {}).get("SS", [])),
        )


def _ago(now: float, then: float) -> str:
    seconds = max(0.0, now - then)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def vouch(
    state: IndexState | None, stream_arn: str | None, now: float, max_lag: float = DEFAULT_MAX_LAG
) -> tuple[bool, str]:
    """Whether the index can be trusted to hold every collection now, and why (or why not).
    Pure: ``state`` from :class:`StateStore`, ``stream_arn`` the table's stream now."""
    if state is None or state.backfill_finished is None:
        began = state is not None and state.backfill_started is not None
        return False, (
            "its backfill has not finished"
            if began
            else "there is no record of a backfill (run `ddbkeys partition-keys index backfill` "
            "while `index follow` or the Lambda handler keeps the markers)"
        )
    if state.maintainer is None or state.maintained_since is None:
        return False, (
            "no maintainer keeps the markers from the table's stream, so collections created "
            "or emptied since the backfill are not reflected (run `ddbkeys partition-keys index "
            "follow`, or deploy the Lambda handler)"
        )
    if stream_arn is None or state.stream_arn != stream_arn:
        return False, (
            "the table's stream is off"
            if stream_arn is None
            else "the maintainer followed another stream than the table's stream now"
        )
    assert state.backfill_started is not None
    if state.backfill_started < state.maintained_since:
        return False, (
            "the backfill began before the maintainer began following the stream: run "
            "`ddbkeys partition-keys index backfill` again"
        )
    if state.caught_up_at is None or now - state.caught_up_at > max_lag:
        seen = "never" if state.caught_up_at is None else _ago(now, state.caught_up_at)
        who = "the follower" if state.maintainer == "follow" else "the Lambda handler"
        quiet = (
            " (on a quiet table the handler is not called: ddbkeys cannot tell that from a "
            "trigger that stopped)"
            if state.maintainer == "lambda"
            else ""
        )
        return False, (f"{who} was last seen caught up {seen}, more than {max_lag:g} s ago{quiet}")
    return True, (
        f"backfilled {_ago(now, state.backfill_finished)}, and the "
        f"{'follower' if state.maintainer == 'follow' else 'Lambda handler'} was caught up "
        f"{_ago(now, state.caught_up_at)}"
    )


class StateCore:
    """Reads and writes the records of marker indexes in the state table ``name``, driver
    aside: flows (see :mod:`ddbkeys.core`), run by :class:`StateStore` (sync), by
    ``ddbkeys.aio.index.StateStore``, or inside a marker index's own flows. Nothing is sent by
    the constructor. ``deadline`` bounds each call (None: no limit)."""

    def __init__(
        self,
        client: Any,
        name: str = STATE_TABLE,
        *,
        deadline: float | None = 60.0,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.client = client
        self.name = name
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

    def _ensure(self) -> Flow[None]:
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

    def _load(self, table: str, index: str) -> Flow[IndexState | None]:
        """The record of ``table``'s index ``index``; None when there is none (or no state
        table at all)."""
        request = get_item(
            {"TableName": self.name, "Key": self.key(table, index), "ConsistentRead": True},
            counted=False,
        )
        try:
            answer: GetItemOutputTypeDef = yield from self._send(
                request, "reading the index's record"
            )
        except DdbKeysError as exc:
            if _code(exc) == "ResourceNotFoundException":
                return None
            raise
        item = answer.get("Item")
        return IndexState.from_item(table, index, dict(item)) if item else None

    def _update(
        self, table: str, index: str, values: dict[str, Any], remove: tuple[str, ...] = ()
    ) -> Flow[None]:
        """Set ``values`` (plain: float, str, dict of str, list of str) on the record."""
        request = update_item(
            update_request(self.name, self.key(table, index), values, remove),
            counted=False,
        )
        yield from self._send(request, "writing the index's record")


class StateStore(StateCore):
    """Reads and writes the records of marker indexes in the state table ``name`` (sync)."""

    def _run(self, flow: Flow[T]) -> T:
        return SyncDriver(self.client, self.usage).run(flow)

    def ensure(self) -> None:
        """Create the state table if it is missing, and wait until it is ACTIVE."""
        self._run(self._ensure())

    def load(self, table: str, index: str) -> IndexState | None:
        """The record of ``table``'s index ``index``; None when there is none (or no state
        table at all)."""
        return self._run(self._load(table, index))

    def update(
        self, table: str, index: str, values: dict[str, Any], remove: tuple[str, ...] = ()
    ) -> None:
        """Set ``values`` (plain: float, str, dict of str, list of str) on the record."""
        self._run(self._update(table, index, values, remove))


def update_request(
    name: str, key: dict[str, Any], values: dict[str, Any], remove: tuple[str, ...] = ()
) -> UpdateItemInputTypeDef:
    """The UpdateItem that sets ``values`` and removes ``remove`` on the record ``key``."""
    names: dict[str, str] = {}
    typed: dict[str, Any] = {}
    sets: list[str] = []
    for n, (attribute, value) in enumerate(sorted(values.items())):
        names[f"#a{n}"] = attribute
        typed[f":v{n}"] = _typed(value)
        sets.append(f"#a{n} = :v{n}")
    expression = "SET " + ", ".join(sets) if sets else ""
    if remove:
        for n, attribute in enumerate(remove):
            names[f"#r{n}"] = attribute
        expression += " REMOVE " + ", ".join(f"#r{n}" for n in range(len(remove)))
    request: UpdateItemInputTypeDef = {
        "TableName": name,
        "Key": key,
        "UpdateExpression": expression.strip(),
        "ExpressionAttributeNames": names,
    }
    if typed:
        request["ExpressionAttributeValues"] = typed
    return request


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


def _typed(value: Any) -> dict[str, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"N": repr(float(value))}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": {str(k): {"S": str(v)} for k, v in value.items()}}
    if isinstance(value, (list, tuple, set)):
        return {"SS": sorted(str(v) for v in value)} if value else {"NULL": True}
    raise TypeError(f"cannot store {value!r} in the state table")
