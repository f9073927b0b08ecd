"""The one reading of CancellationReasons, for every combination of codes, without a server."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.ids import ItemExistsError, Verdict, read_cancellation
from ddbkeys.ids._base import Contention, CounterItem, Throttled
from ddbkeys.ids._gapless_core import Commit, GaplessCore
from ddbkeys.ids._gapless_state import CounterState

CODES = [
    "None",
    "ConditionalCheckFailed",
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
    "ValidationError",
    "ItemCollectionSizeLimitExceeded",
    "SomethingNew",
]
INVALID = {"ValidationError", "ItemCollectionSizeLimitExceeded", "SomethingNew"}
THROTTLE = {"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}


def expected_verdict(codes: tuple[str, ...]) -> Verdict:
    """The documented precedence: invalid, then conditions, then throttling, then conflicts."""
    if any(c in INVALID for c in codes):
        return Verdict.INVALID
    if "ConditionalCheckFailed" in codes:
        return Verdict.CONDITIONS
    if any(c in THROTTLE for c in codes):
        return Verdict.THROTTLED
    if "TransactionConflict" in codes:
        return Verdict.CONFLICT
    return Verdict.UNKNOWN


@pytest.mark.parametrize("codes", list(itertools.product(CODES, repeat=3)))
def test_every_combination_of_three_actions(codes: tuple[str, ...]) -> None:
    reasons: list[dict[str, Any]] = []
    for n, code in enumerate(codes):
        reason: dict[str, Any] = {"Code": code, "Message": f"m{n}" if code != "None" else None}
        if code == "ConditionalCheckFailed":
            reason["Item"] = {"pk": {"S": f"old{n}"}}
        reasons.append(reason)
    reading = read_cancellation(reasons)
    assert reading.codes == codes
    assert reading.verdict is expected_verdict(codes)
    assert reading.failed_conditions == tuple(
        n for n, c in enumerate(codes) if c == "ConditionalCheckFailed"
    )
    assert reading.conflicts == tuple(n for n, c in enumerate(codes) if c == "TransactionConflict")
    assert reading.throttled == tuple(n for n, c in enumerate(codes) if c in THROTTLE)
    assert [i for i, _, _ in reading.invalid] == [n for n, c in enumerate(codes) if c in INVALID]
    for n, code in enumerate(codes):
        assert reading.failed(n) == (code == "ConditionalCheckFailed")
        old = reading.old_item(n)
        assert old == ({"pk": {"S": f"old{n}"}} if code == "ConditionalCheckFailed" else None)


def test_missing_and_odd_reasons() -> None:
    assert read_cancellation(None).verdict is Verdict.UNKNOWN
    assert read_cancellation([]).describe() == "no reason given"
    # A reason without a code is "None" (fine); a condition without an old item has none.
    reading = read_cancellation([{}, {"Code": "ConditionalCheckFailed"}])
    assert reading.codes == ("None", "ConditionalCheckFailed")
    assert reading.verdict is Verdict.CONDITIONS and reading.old_item(1) is None


def test_describe_names_the_invalid_actions_with_the_servers_words() -> None:
    reading = read_cancellation(
        [
            {"Code": "None"},
            {"Code": "ValidationError", "Message": "Item size has exceeded the maximum"},
        ]
    )
    assert reading.describe() == "action 2: ValidationError (Item size has exceeded the maximum)"
    assert read_cancellation([{"Code": "TransactionConflict"}]).describe() == "TransactionConflict"


# --- what the gapless sequence makes of each combination --------------------------------------

GAPLESS_CODES = ["None", "ConditionalCheckFailed", "TransactionConflict", "ThrottlingError"]
#: Table ``users`` (key ``pk``, a string) and where the sequence's counter lives in it.
INFO = TableInfo("users", KeyAttribute("pk", "S"), None, (), {}, 0, 0)
WHERE = CounterItem("users", {"pk": {"S": "sequence"}}, "last_id")


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("id_in_key", [False, True])
@pytest.mark.parametrize("codes", list(itertools.product(GAPLESS_CODES, repeat=3)))
def test_gapless_reads_every_combination(
    codes: tuple[str, str, str], id_in_key: bool, atomic: bool
) -> None:
    """Action 0 is the counter (its old image holds 7), actions 1 and 2 the items. A failed
    item condition is an existing item only when the id is not the key, or when the counter
    held (an id's key taken by an item the sequence did not write); with the id as the key and
    the counter moved, it is the racing writer's item: a lost race, retried."""
    core = GaplessCore("users", id_attribute="pk" if id_in_key else "id")
    state = CounterState()  # (what it learns is all it knows)
    reasons: list[dict[str, Any]] = [{"Code": c} for c in codes]
    if codes[0] == "ConditionalCheckFailed":
        reasons[0]["Item"] = {"pk": {"S": "sequence"}, "last_id": {"N": "7"}}
    for n in (1, 2):
        if codes[n] == "ConditionalCheckFailed":
            reasons[n]["Item"] = {"pk": {"S": f"k{n}"}}
    items: Any = [{"pk": {"S": "k1"}}, {"pk": {"S": "k2"}}] if not id_in_key else [{}, {}]
    commit = Commit(items, INFO, WHERE, atomic=atomic, last=3, token="t")
    counter_moved = codes[0] == "ConditionalCheckFailed"
    items_failed = [n - 1 for n in (1, 2) if codes[n] == "ConditionalCheckFailed"]
    exists = (
        items_failed if not id_in_key else ([0, 1] if items_failed and not counter_moved else [])
    )
    outcome: Any
    try:
        core.cancelled(commit, read_cancellation(reasons), state)
        outcome = "return"
    except Contention as lost:
        outcome = ("contention", lost.immediate, lost.wait is not None)
    except Throttled:
        outcome = "throttled"
    except ItemExistsError:
        outcome = "exists"
    assert (
        commit.token is None and commit.last is None
    )  # a cancelled transaction is never sent again
    if exists and atomic:
        assert outcome == "exists"
        return
    assert [isinstance(r, ItemExistsError) for r in commit.results] == [i in exists for i in (0, 1)]
    assert commit.live == [i for i in (0, 1) if i not in exists]
    if counter_moved:
        assert state.last == 7
        # Not at once (every loser learnt 7): a wait of its own, then the counter read afresh.
        assert outcome == ("contention", False, True) and commit.reread
    elif (items_failed and id_in_key) or exists:
        assert outcome == "return"
        assert state.last == 3  # the counter held
    elif "ThrottlingError" in codes:
        assert outcome == "throttled"
    else:
        assert outcome == ("contention", False, False)
    for error in commit.results:
        if isinstance(error, ItemExistsError):
            assert "already exists in table 'users'" in str(error)
