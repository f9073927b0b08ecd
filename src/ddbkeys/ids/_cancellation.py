"""One reading of a cancelled transaction's ``CancellationReasons``, for every id strategy.

DynamoDB answers a cancelled TransactWriteItems with one reason per action, in order, each with a
``Code``: ``None`` (that action was fine), ``ConditionalCheckFailed`` (its condition did not hold;
with ``ReturnValuesOnConditionCheckFailure=ALL_OLD`` the reason carries the old ``Item``),
``TransactionConflict`` (another request was changing the item at the same moment),
``ThrottlingError`` / ``ProvisionedThroughputExceeded`` / ``RequestLimitExceeded`` (capacity),
``ItemCollectionSizeLimitExceeded`` and ``ValidationError`` (the request itself is wrong), or a
code this library does not know yet. :func:`read_cancellation` turns them into one
:class:`Cancellation` without any I/O; each strategy then says what a failed condition on each of
its actions means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Cancellation", "Verdict", "read_cancellation"]

#: Codes after which the same transaction may succeed once the other writer is done.
CONFLICT_CODES = frozenset({"TransactionConflict"})
#: Codes after which the same transaction may succeed once capacity is back.
THROTTLE_CODES = frozenset(
    {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
CONDITION_CODE = "ConditionalCheckFailed"
FINE_CODES = frozenset({"None", ""})


class Verdict(StrEnum):
    """What to do about a cancelled transaction, before the strategy reads failed conditions."""

    #: A request error (ValidationError, ItemCollectionSizeLimitExceeded, an unknown code):
    #: sending it again cannot help. Raise.
    INVALID = "invalid"
    #: At least one condition failed (and nothing was invalid): the strategy reads which.
    CONDITIONS = "conditions"
    #: Only conflicts with other requests: send again after a full-jitter wait.
    CONFLICT = "conflict"
    #: Throttled (and maybe conflicts): send again after an exponential wait.
    THROTTLED = "throttled"
    #: No reason given at all (should not happen): treat as a conflict.
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Cancellation:
    """A cancelled transaction, read. Indexes are positions in the transaction's actions."""

    codes: tuple[str, ...]
    verdict: Verdict
    failed_conditions: tuple[int, ...] = ()
    conflicts: tuple[int, ...] = ()
    throttled: tuple[int, ...] = ()
    invalid: tuple[tuple[int, str, str], ...] = ()  # (index, code, message)
    old_items: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)

    def failed(self, index: int) -> bool:
        """Whether the condition of action ``index`` failed."""
        return index in self.failed_conditions

    def old_item(self, index: int) -> Mapping[str, Any] | None:
        """The item as it was when action ``index``'s condition failed (ALL_OLD), if returned."""
        return self.old_items.get(index)

    def describe(self) -> str:
        """The codes, for messages: ``ConditionalCheckFailed, None``, or the invalid ones with
        the server's own words."""
        if self.invalid:
            return "; ".join(
                f"action {i + 1}: {code}" + (f" ({message})" if message else "")
                for i, code, message in self.invalid
            )
        return ", ".join(self.codes) or "no reason given"


def read_cancellation(reasons: Sequence[Mapping[str, Any]] | None) -> Cancellation:
    """Read ``CancellationReasons`` (a pure function: no I/O, no state).

    The verdict's order of precedence: a request error wins (retrying cannot help), then failed
    conditions (which the strategy must interpret: a lost race or an item that exists), then
    throttling, then conflicts.
    """
    codes: list[str] = []
    failed: list[int] = []
    conflicts: list[int] = []
    throttled: list[int] = []
    invalid: list[tuple[int, str, str]] = []
    old: dict[int, Mapping[str, Any]] = {}
    for index, reason in enumerate(reasons or ()):
        code = str(reason.get("Code") or "None")
        codes.append(code)
        if code in FINE_CODES:
            continue
        if code == CONDITION_CODE:
            failed.append(index)
            item = reason.get("Item")
            if isinstance(item, Mapping):
                old[index] = item
        elif code in CONFLICT_CODES:
            conflicts.append(index)
        elif code in THROTTLE_CODES:
            throttled.append(index)
        else:
            invalid.append((index, code, str(reason.get("Message") or "")))
    if invalid:
        verdict = Verdict.INVALID
    elif failed:
        verdict = Verdict.CONDITIONS
    elif throttled:
        verdict = Verdict.THROTTLED
    elif conflicts:
        verdict = Verdict.CONFLICT
    else:
        verdict = Verdict.UNKNOWN
    return Cancellation(
        codes=tuple(codes),
        verdict=verdict,
        failed_conditions=tuple(failed),
        conflicts=tuple(conflicts),
        throttled=tuple(throttled),
        invalid=tuple(invalid),
        old_items=old,
    )
