"""A write that moved a counter holding what no counter may hold is taken back, and its error
says what the item holds now: as it was, or, when an earlier try got no answer, that it may
have moved once already (driven by hand: a lost answer on a chosen try)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ConnectionClosedError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._retry import Deadline
from ddbkeys.ids._base import CounterItem, CounterStateError
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._counter_writes import advance
from tests.support.hand import POLICY, Run, drive

PLAN = CounterCore("issues", "tickets")
ITEM = CounterItem("issues", {"pk": {"S": "tickets"}}, "last_id")


def retrying(attempt: Any, what: str, deadline: Deadline) -> Any:
    return attempts(
        attempt, what=what, table="issues", policy=POLICY, deadline=deadline, usage=Usage()
    )


def moved_from(value: str, **typed: str) -> dict[str, Any]:
    """The answer to a write that moved the counter from ``value``: what it changed, as it was
    (UPDATED_OLD), with the item's ddbkeys_type when ``typed`` gives it."""
    return {"Attributes": {"last_id": {"N": value}, **{k: {"S": v} for k, v in typed.items()}}}


@pytest.mark.parametrize(
    ("answers", "says", "put_back"),
    [
        # 5.5 moved to 6.5 and put back: as it was, with no ddbkeys_type (it had none)
        (
            [moved_from("5.5"), {}],
            "Its value is as it was (this write was taken back)",
            "ADD #v :dec REMOVE #x0",
        ),
        # ... and with the ddbkeys_type it had, whatever it held
        (
            [moved_from("5.5", ddbkeys_type="mine"), {}],
            "Its value is as it was (this write was taken back)",
            "ADD #v :dec SET #x0 = :x0",
        ),
        # the first try's answer lost (applied: 6.5), the second moved it to 7.5; put back to 6.5
        (
            [ConnectionClosedError(endpoint_url="http://x"), moved_from("6.5"), {}],
            "This write was taken back, but an earlier try of it got no answer and may have "
            "been applied: the counter may have held 5.5 before this call",
            "ADD #v :dec REMOVE #x0",
        ),
    ],
)
def test_the_error_says_what_the_take_back_left(
    answers: list[Any], says: str, put_back: str
) -> None:
    flow = advance(PLAN, ITEM, 1, Deadline(None), retrying, lambda: 0.0)
    run = Run()
    with pytest.raises(CounterStateError) as raised:
        drive(flow, answers, run=run)
    # every try sent, then the one take-back (by one increment, with a token)
    assert run.operations == ["update_item"] * (len(answers) - 1) + ["transact_write_items"]
    (undo,) = run.requests[-1].params["TransactItems"]
    assert undo["Update"]["ExpressionAttributeValues"][":dec"] == {"N": "-1"}
    assert undo["Update"]["UpdateExpression"] == put_back
    assert undo["Update"]["ExpressionAttributeNames"]["#x0"] == "ddbkeys_type"
    if "SET" in put_back:
        assert undo["Update"]["ExpressionAttributeValues"][":x0"] == {"S": "mine"}
    assert says in str(raised.value)
    assert str(raised.value).endswith(
        "fix the item, for example with `ddbkeys ids set VALUE -t issues --counter-key "
        '\'{"pk": {"S": "tickets"}}\' --force`.'
    )
