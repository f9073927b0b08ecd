"""The atomic counter's decisions, apart from any client: a value built from its settings alone
(:class:`CounterCore`). What a write asks for, what an answer or a refusal means, and the flows
of the public calls (each takes the strategy's :class:`~ddbkeys.ids._link.Link`, through which it
sends and reads the table's description); :class:`~ddbkeys.ids._counter.AtomicCounter` (sync or
asyncio) is this core, a link, a driver and, with ``group_commit``, a group."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any, cast

from ddbkeys._core.attempts import Contention, Throttled
from ddbkeys._core.steps import Flow
from ddbkeys._entity import ENTITY_ATTRIBUTE
from ddbkeys._errors import DdbKeysError
from ddbkeys.ids._base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    Attempts,
    CounterItem,
    CounterStateError,
    SequenceExhaustedError,
    cancelled_error,
    transact,
)
from ddbkeys.ids._cancellation import Verdict
from ddbkeys.ids._counter_item import COUNTER_ONLY, counter_names
from ddbkeys.ids._values import MAX_ID, counter_label, counter_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
    )

    from ddbkeys._retry import Deadline

__all__ = ["VALID", "CounterCore"]

#: The condition of a write that keeps a counter from passing its limit or moving when it holds
#: no valid number (with ``:number``, ``:zero`` and ``:limit``, the value before less the
#: increment).
VALID = "attribute_not_exists(#v) OR (attribute_type(#v, :number) AND #v BETWEEN :zero AND :limit)"


@dataclass(frozen=True)
class CounterCore:
    """The counter ``name`` of ``table``: ids from ``start``, ``step`` apart, up to
    ``maximum`` (None: 10**38 - 1), the last one given out held in ``counter_attribute``;
    ``idempotent``: a lost response retried never skips an id. The counter item is
    ``{key_attribute: name}`` (the partition key, read from the table when None), or
    ``counter_key`` given whole."""

    table: str
    name: str
    counter_attribute: str = "last_id"
    start: int = 1
    step: int = 1
    maximum: int | None = None
    idempotent: bool = False  # writes stamped with a writer slot (ddbkeys.ids._exact)
    key_attribute: str | None = None
    counter_key: Mapping[str, Any] | None = None

    @property
    def label(self) -> str:
        """How messages name it (see ``_values.counter_label``)."""
        return counter_label(self.name, self.counter_key)

    @property
    def limit(self) -> int:
        """The greatest id it may give out."""
        return MAX_ID if self.maximum is None else self.maximum

    def request(self, counter: CounterItem, count: int) -> UpdateItemInputTypeDef:
        """The UpdateItem that moves the counter on by ``count`` ids (a
        :class:`SequenceExhaustedError` when they would pass the limit from the start)."""
        increment = count * self.step
        if self.start - self.step + increment > self.limit:
            raise self.exhausted(None, count)
        values: dict[str, AttributeValueTypeDef] = {":inc": {"N": str(increment)}, **TYPE_VALUES}
        if self.start == self.step:
            # Starting at the step itself: a plain ADD (a missing counter counts as 0).
            update = f"ADD #v :inc SET {TYPE_SET}"
        else:
            update = f"SET #v = if_not_exists(#v, :base) + :inc, {TYPE_SET}"
            values[":base"] = {"N": str(self.start - self.step)}
        # A condition keeps the counter from passing its limit and from moving when it holds
        # no valid number (a string, a map, a negative number, one past 10**38 - 1): such a
        # write is refused, and the item is left as it was, ddbkeys_type too. Only a fraction
        # (5.5) gets past it (no condition tells one from a whole number): the answer holds
        # the item as it was (ALL_OLD), so that it is put back exactly (and another counter
        # on the item shows: a misspelt attribute is warned of, see warn_if_new).
        # No ReturnConsumedCapacity: the counter item is far below 1 KB, so it is 1 unit.
        values[":number"] = {"S": "N"}
        values[":zero"] = {"N": "0"}
        values[":limit"] = {"N": str(self.limit - increment)}
        return {
            "TableName": self.table,
            "Key": counter.key,
            "UpdateExpression": update,
            # (and an item of yours is not made a counter: COUNTER_ONLY)
            "ConditionExpression": f"{COUNTER_ONLY} AND ({VALID})",
            "ExpressionAttributeNames": counter_names(counter),
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_OLD",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def exhausted(self, at: int | None, count: int) -> SequenceExhaustedError:
        """The error for ``count`` more ids past the limit, the counter ``at`` (None: not read,
        where they would pass it even from the first id)."""
        limit = "10**38 - 1" if self.maximum is None else str(self.maximum)
        if at is None:
            return SequenceExhaustedError(
                f"Counter {self.label} of table {self.table!r}: {count} id(s) at once would "
                f"pass its maximum {limit} even from its first id, {self.start} (nothing was "
                "written).",
                table=self.table,
            )
        return SequenceExhaustedError(
            f"Counter {self.label} of table {self.table!r} is at {at}: {count} more id(s) "
            f"would pass its maximum {limit}.",
            table=self.table,
        )

    def check(self, counter: CounterItem, value: Mapping[str, Any] | None) -> int | None:
        """The number a raw counter value holds (None: missing); CounterStateError for what no
        counter may hold."""
        return counter_value(
            value, table=self.table, key=counter.key, attribute=self.counter_attribute
        )

    def held(self, counter: CounterItem, value: Mapping[str, Any] | None) -> int:
        """The number a raw counter value stands for: the value before ``start`` when it is
        missing; CounterStateError for what no counter may hold."""
        number = self.check(counter, value)
        return self.start - self.step if number is None else number

    @staticmethod
    def before(raw: Mapping[str, Any], increment: int) -> dict[str, str]:
        """What a counter held before a write moved it by ``increment`` to ``raw``."""
        with localcontext() as exact:
            exact.prec = 200
            return {"N": str(Decimal(str(raw.get("N"))) - increment)}

    @staticmethod
    def after(raw: Mapping[str, Any], increment: int) -> dict[str, str]:
        """What a write that moved a counter holding ``raw`` by ``increment`` left in it."""
        return CounterCore.before(raw, -increment)

    def state_before(
        self,
        counter: CounterItem,
        raw: Mapping[str, Any],
        increment: int,
        retried: bool,
        *,
        typed: bool = True,
    ) -> DdbKeysError:
        """The error for a write that moved the counter to ``raw`` from what no counter may
        hold (a fraction, a negative number), or past the largest number, once the write is
        taken back; ``retried``: an earlier try of it may have been applied too; ``typed``:
        the take-back left the item's ddbkeys_type set, whatever it held before."""
        before = self.before(raw, increment)
        then = "Its value is as it was (this write was taken back)"
        if typed:
            then = f"Its value is as it was (this write was taken back; it set {ENTITY_ATTRIBUTE})"
        if retried:
            then = (
                "This write was taken back, but an earlier try of it got no answer and may have "
                f"been applied: the counter may have held {self.before(before, increment)['N']} "
                "before this call"
            )
        try:
            at = counter_value(
                before,
                table=self.table,
                key=counter.key,
                attribute=self.counter_attribute,
                then=then,
            )
        except CounterStateError as exc:
            return exc
        return self.exhausted(at, increment // self.step)

    def undo(
        self,
        counter: CounterItem,
        increment: int,
        deadline: Deadline,
        attempts: Attempts,
        remove: Sequence[str] = (),
        *,
        restore: Mapping[str, Mapping[str, Any] | None] | None = None,
    ) -> Flow[None]:
        """Take ``increment`` back off the counter, once (:meth:`once`). ``restore``: the other
        attributes the write changed, each put back as it was before it (removed when it held
        nothing), ddbkeys_type among them, so that the item is as it was; None: not known, so
        ddbkeys_type is set and the attributes ``remove`` (the idempotent write's slot) are
        removed."""
        values: dict[str, AttributeValueTypeDef] = {":dec": {"N": str(-increment)}}
        names: dict[str, str] = {}
        sets, removes = [], []
        if restore is None:
            sets.append(TYPE_SET)
            restore = dict.fromkeys(remove)
        for n, (name, value) in enumerate(restore.items()):
            names[f"#x{n}"] = name
            if value is None:
                removes.append(f"#x{n}")
            else:
                sets.append(f"#x{n} = :x{n}")
                values[f":x{n}"] = cast("AttributeValueTypeDef", dict(value))
        update = "ADD #v :dec"
        update += " SET " + ", ".join(sets) if sets else ""
        update += " REMOVE " + ", ".join(removes) if removes else ""
        what = f"putting counter {self.label} back"
        yield from self.once(counter, update, values, deadline, attempts, what, names=names)

    def once(
        self,
        counter: CounterItem,
        update: str,
        values: dict[str, AttributeValueTypeDef],
        deadline: Deadline,
        attempts: Attempts,
        what: str,
        *,
        names: Mapping[str, str] = {},
        condition: str | None = None,
    ) -> Flow[bool]:
        """One update of the counter item (``#v`` its attribute), applied at most once: a
        transaction with a token (2 write units), so that a first try arriving late, after a
        retry was applied, is not applied again. False when ``condition`` failed."""
        action: TransactWriteItemTypeDef = {
            "Update": {
                "TableName": self.table,
                "Key": counter.key,
                "UpdateExpression": update,
                # (the item's type only where the update names it: an undo that puts it back
                # as it was names it otherwise, and DynamoDB refuses a name left unused)
                "ExpressionAttributeNames": {
                    "#v": self.counter_attribute,
                    **(TYPE_NAMES if "#ddbkeys_type" in update else {}),
                    **names,
                },
                "ExpressionAttributeValues": {
                    **values,
                    **(TYPE_VALUES if ":ddbkeys_type" in update else {}),
                },
            }
        }
        if condition is not None:
            action["Update"]["ConditionExpression"] = condition
            action["Update"]["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        token = str(uuid.uuid4())

        def attempt(_: int) -> Flow[bool]:
            cancellation = yield from transact([action], token, items=0, billed=2.0)
            if cancellation is None:
                return True
            if cancellation.verdict is Verdict.INVALID:
                raise cancelled_error(self, cancellation)
            if condition is not None and cancellation.failed(0):
                return False
            if cancellation.verdict is Verdict.THROTTLED:
                raise Throttled(cancellation.describe())
            raise Contention()

        applied: bool = yield from attempts(attempt, what, deadline)
        return applied
