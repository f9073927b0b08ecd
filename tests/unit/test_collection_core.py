"""The item-collection sequence's core, driven by hand without a server or a client: each case
lists the answers DynamoDB gives, in order, and asserts the requests the flow sends, the waits it
asks for and what it returns or raises."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Request
from ddbkeys._drivers.sync import refused
from ddbkeys._errors import DdbKeysError, KeySchemaError
from ddbkeys._retry import Deadline, RetriesExhaustedError, RetryPolicy
from ddbkeys._schema import KeyAttribute
from ddbkeys.ids._base import absent
from ddbkeys.ids._collection_core import Pending
from ddbkeys.ids._collection_keys import number_in, sort_key_of
from ddbkeys.ids._errors import CounterStateError, SequenceExhaustedError
from tests.support.hand import (
    OK,
    TABLE,
    Answer,
    Run,
    cancelled,
    commit,
    committing,
    core,
    counter,
    counter_update,
    described,
    drive,
    error,
    failed_condition,
    highest,
    keys,
    lost,
    our_own_write,
    pending,
    taken_by_another,
    tokens,
    written,
)

# --- a single put: every decision --------------------------------------------------------------

Q, P, T, G = "query", "put_item", "transact_write_items", "get_item"

SINGLE = [
    # (name, on_conflict, answers, numbers, operations, sort keys tried, waits, same token)
    ("number free", "next", [highest(0), OK], [1], [Q, P], [["1"]], 0),
    ("after the highest", "next", [highest(41), OK], [42], [Q, P], [["42"]], 0),
    (
        "taken by another: next, at once",
        "next",
        [highest(3), taken_by_another, OK],
        [5],
        [Q, P, P],
        [["4"], ["5"]],
        0,
    ),
    (
        "taken by another: requery after a wait",
        "requery",
        [highest(3), taken_by_another, highest(7), OK],
        [8],
        [Q, P, Q, P],
        [["4"], ["8"]],
        1,
    ),
    (
        "next: every third lost race in a row reads again",
        "next",
        [highest(0), taken_by_another, taken_by_another, taken_by_another, highest(10), OK],
        [11],
        [Q, P, P, P, Q, P],
        [["1"], ["2"], ["3"], ["11"]],
        1,
    ),
    (
        "our own write, its response lost, recognised by the token",
        "next",
        [highest(0), lost(), our_own_write],
        [1],
        [Q, P, P],
        [["1"], ["1"]],
        1,  # the exponential wait after the lost response
    ),
    (
        "our own write seen at once",
        "requery",
        [highest(9), our_own_write],
        [10],
        [Q, P],
        [["10"]],
        0,
    ),
]


@pytest.mark.parametrize(
    ("on_conflict", "answers", "numbers", "operations", "tried", "waits"),
    [case[1:] for case in SINGLE],
    ids=[case[0] for case in SINGLE],
)
def test_a_single_put(
    on_conflict: Any,
    answers: list[Answer],
    numbers: list[int],
    operations: list[str],
    tried: list[list[str]],
    waits: int,
) -> None:
    sequence = core(on_conflict=on_conflict)
    run = commit(sequence, answers)
    assert run.result == numbers
    assert run.operations == operations
    assert written(run) == tried
    assert len(run.pauses) == waits
    puts = [r for r in run.requests if r.operation == "put_item"]
    for put in puts:
        expected = absent(put.params["Item"], ["pk", "sk"])
        assert (
            put.params["ConditionExpression"],
            put.params["ExpressionAttributeNames"],
        ) == expected
        assert put.params["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
        assert put.params["Item"]["n"] == {"N": "0"} and put.params["Item"]["pk"] == {"S": "p"}
        assert (put.count_refused, put.bill_refused, put.billed) == (True, True, 1.0)
    # A retry of the same number keeps its token; a new number gets a new one.
    shown = list(zip((t[0] for t in tried), tokens(run), strict=True))
    for (sk_a, tok_a), (sk_b, tok_b) in itertools.pairwise(shown):
        assert (tok_a == tok_b) == (sk_a == sk_b)
    assert sequence.memory.get("{'pk': 'p'}") == numbers[-1]
    query = run.requests[0].params
    assert (query["ScanIndexForward"], query["Limit"], query["ConsistentRead"]) == (False, 1, True)


def test_the_remembered_highest_saves_the_query_and_a_lost_race_forgets_it() -> None:
    sequence = core()
    assert commit(sequence, [highest(4), OK]).result == [5]
    again = commit(sequence, [OK])  # no query: 5 is remembered
    assert (again.result, again.operations) == ([6], [P])
    raced = commit(sequence, [taken_by_another, OK])  # 7 taken behind our back: 8
    assert (raced.result, raced.operations) == ([8], [P, P])
    assert sequence.usage.snapshot()["conflicts"] == 1
    with pytest.raises(DdbKeysError) as raised:
        commit(sequence, [error("ValidationException")])
    assert raised.value.code == "ValidationException"
    assert sequence.memory.get("{'pk': 'p'}") is None  # an error: read afresh next time
    assert commit(sequence, [highest(8), OK]).operations == [Q, P]


def test_every_lost_race_costs_an_attempt_up_to_the_policy() -> None:
    sequence = core(retry=RetryPolicy(max_attempts=3, random=lambda: 0.0))
    with pytest.raises(RetriesExhaustedError, match="lost 3 races in a row to other writers"):
        commit(sequence, [highest(0), taken_by_another, taken_by_another, taken_by_another])


def test_a_batch_is_committed_within_the_call_with_least_time_left() -> None:
    sequence = core()
    early = Pending({"pk": {"S": "p"}}, "{'pk': 'p'}", Deadline(5))
    late = Pending({"pk": {"S": "p"}}, "{'pk': 'p'}", Deadline(50))
    run = drive(committing(sequence, [late, early]), [highest(0), OK], lock=sequence.lock)
    assert run.result == [1, 2]
    assert all(r.deadline is early.deadline for r in run.requests)


# --- a batch: one transaction, and what each cancellation means --------------------------------

BATCH = [
    # (name, on_conflict, answers, numbers, operations, sort keys tried, waits)
    ("applied", "next", [highest(0), OK], [1, 2, 3], [Q, T], [["1", "2", "3"]], 0),
    (
        "a number taken: next, past it",
        "next",
        [highest(0), cancelled("None", "ConditionalCheckFailed", "None"), OK],
        [3, 4, 5],
        [Q, T, T],
        [["1", "2", "3"], ["3", "4", "5"]],
        0,
    ),
    (
        "a number taken: requery",
        "requery",
        [highest(0), cancelled("None", "None", "ConditionalCheckFailed"), highest(6), OK],
        [7, 8, 9],
        [Q, T, Q, T],
        [["1", "2", "3"], ["7", "8", "9"]],
        1,
    ),
    (
        "a conflict: read again after a jittered wait",
        "next",
        [highest(0), cancelled("TransactionConflict", "None", "None"), highest(0), OK],
        [1, 2, 3],
        [Q, T, Q, T],
        [["1", "2", "3"], ["1", "2", "3"]],
        1,
    ),
    (
        "throttled: read again after an exponential wait",
        "next",
        [highest(0), cancelled("None", "ThrottlingError", "TransactionConflict"), highest(1), OK],
        [2, 3, 4],
        [Q, T, Q, T],
        [["1", "2", "3"], ["2", "3", "4"]],
        1,
    ),
    (
        "no reason given: like a conflict",
        "next",
        [highest(0), cancelled(), highest(0), OK],
        [1, 2, 3],
        [Q, T, Q, T],
        [["1", "2", "3"], ["1", "2", "3"]],
        1,
    ),
    (
        "a failed condition wins over a conflict",
        "next",
        [highest(0), cancelled("TransactionConflict", "ConditionalCheckFailed", "None"), OK],
        [3, 4, 5],
        [Q, T, T],
        [["1", "2", "3"], ["3", "4", "5"]],
        0,
    ),
]


@pytest.mark.parametrize(
    ("on_conflict", "answers", "numbers", "operations", "tried", "waits"),
    [case[1:] for case in BATCH],
    ids=[case[0] for case in BATCH],
)
def test_a_batch(
    on_conflict: Any,
    answers: list[Answer],
    numbers: list[int],
    operations: list[str],
    tried: list[list[str]],
    waits: int,
) -> None:
    sequence = core(on_conflict=on_conflict)
    run = commit(sequence, answers, count=3)
    assert run.result == numbers
    assert run.operations == operations
    assert written(run) == tried
    assert len(run.pauses) == waits
    sent = tokens(run)
    assert len(set(sent)) == len(sent)  # every try of new numbers, or after a re-read: a new one
    for request in run.requests:
        if request.operation == T:
            assert (request.items, request.billed, request.count_refused) == (3, 6.0, True)
            puts = [a["Put"] for a in request.params["TransactItems"]]
            for p in puts:
                assert (p["ConditionExpression"], p["ExpressionAttributeNames"]) == absent(
                    p["Item"], ["pk", "sk"]
                )


def test_a_throttled_batch_waits_exponentially_a_conflict_with_full_jitter() -> None:
    policy = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.1, random=lambda: 0.0)
    throttled = commit(
        core(retry=policy),
        [highest(0), cancelled("ProvisionedThroughputExceeded", "None"), highest(0), OK],
        count=2,
    )
    conflict = commit(
        core(retry=policy),
        [highest(0), cancelled("TransactionConflict", "None"), highest(0), OK],
        count=2,
    )
    assert throttled.pauses == [pytest.approx(0.005)]  # half the ceiling, plus no jitter
    assert conflict.pauses == []  # full jitter drew 0: no wait at all


@pytest.mark.parametrize(
    "reasons",
    [
        ("ValidationError", "None"),
        ("None", "ItemCollectionSizeLimitExceeded"),
        ("ConditionalCheckFailed", "ValidationError"),
        ("TransactionConflict", "SomethingNew"),
    ],
)
def test_a_batch_cancelled_as_invalid_is_not_tried_again(reasons: tuple[str, ...]) -> None:
    sequence = core()
    with pytest.raises(DdbKeysError, match="DynamoDB cancelled a transaction on table 'issues'"):
        commit(sequence, [highest(0), cancelled(*reasons)], count=2)
    assert sequence.memory.get("{'pk': 'p'}") is None


# --- never_reuse: the counter item ------------------------------------------------------------

COUNTED = [
    # (name, answers, numbers, operations, condition per transaction, :last, :new, waits)
    (
        "no counter yet: the highest item",
        [counter(None), highest(2), OK],
        [3],
        [G, Q, T],
        ["attribute_not_exists(#c)"],
        [None],
        ["3"],
        0,
    ),
    (
        "the counter, no query",
        [counter("5"), OK],
        [6],
        [G, T],
        ["#c = :last"],
        ["5"],
        ["6"],
        0,
    ),
    (
        "the counter moved: go on from it",
        [counter("5"), cancelled(("ConditionalCheckFailed", counter("9")["Item"]), "None"), OK],
        [10],
        [G, T, T],
        ["#c = :last", "#c = :last"],
        ["5", "9"],
        ["6", "10"],
        0,
    ),
    (
        "the counter held, an uncounted item above it: past it",
        [counter("5"), cancelled("None", "ConditionalCheckFailed"), OK],
        [7],
        [G, T, T],
        ["#c = :last", "#c = :last"],
        ["5", "5"],
        ["6", "7"],
        0,
    ),
    (
        "a conflict: read the counter again",
        [counter("5"), cancelled("TransactionConflict", "None"), counter("6"), OK],
        [7],
        [G, T, G, T],
        ["#c = :last", "#c = :last"],
        ["5", "6"],
        ["6", "7"],
        1,
    ),
    (
        "throttled: read the counter again",
        [counter("5"), cancelled("None", "ThrottlingError"), counter("5"), OK],
        [6],
        [G, T, G, T],
        ["#c = :last", "#c = :last"],
        ["5", "5"],
        ["6", "6"],
        1,
    ),
]


@pytest.mark.parametrize(
    ("answers", "numbers", "operations", "conditions", "last", "new", "waits"),
    [case[1:] for case in COUNTED],
    ids=[case[0] for case in COUNTED],
)
def test_never_reuse(
    answers: list[Answer],
    numbers: list[int],
    operations: list[str],
    conditions: list[str],
    last: list[str | None],
    new: list[str],
    waits: int,
) -> None:
    sequence = core(never_reuse=True)
    run = commit(sequence, answers)
    assert run.result == numbers
    assert run.operations == operations
    assert len(run.pauses) == waits
    updates = [counter_update(r) for r in run.requests if r.operation == T]
    assert [u["ConditionExpression"].split(" AND ")[0] for u in updates] == conditions
    if "#c = :last" in conditions:  # (not made the counter: an item typed otherwise)
        assert updates[conditions.index("#c = :last")]["ConditionExpression"].endswith(
            "(attribute_not_exists(#ddbkeys_type) OR #ddbkeys_type = :ddbkeys_type)"
        )
    assert [u["ExpressionAttributeValues"].get(":last", {}).get("N") for u in updates] == last
    assert [u["ExpressionAttributeValues"][":new"]["N"] for u in updates] == new
    assert all(u["Key"] == {"pk": {"S": "p"}, "sk": {"N": "0"}} for u in updates)
    transactions = [r for r in run.requests if r.operation == T]
    assert all(r.billed == 4.0 for r in transactions)  # 2 x (1 item + the counter)
    assert len({r.params["ClientRequestToken"] for r in transactions}) == len(transactions)
    assert written(run)[-1] == [str(numbers[-1])]


def test_an_item_of_yours_at_number_0_is_never_made_the_counter() -> None:
    """A helper's PynamoDB app kept a project's readme at sort key 0: `never_reuse` made it
    the counter (typed "counter", so the collection left the listings once its numbered items
    were gone). Refused at the read, and by the transaction's condition where the item came
    between (nothing written either way)."""
    yours = {"Item": {"pk": {"S": "p"}, "sk": {"N": "0"}, "title": {"S": "readme"}}}

    def refused(answers: list[Answer], message: str) -> Run:
        sequence, run = core(never_reuse=True), Run()
        with pytest.raises(CounterStateError, match=message):
            drive(committing(sequence, pending(sequence, {"n": 0})), answers, run=run)
        return run

    run = refused([yours], "is an item of yours, not a counter")
    assert [r.operation for r in run.requests] == [G]
    typed = {"pk": {"S": "p"}, "ddbkeys_type": {"S": "order"}}
    came = [counter(None), highest(0), cancelled(("ConditionalCheckFailed", typed), "None")]
    run = refused(came, "its ddbkeys_type is 'order', not 'counter'")
    assert [r.operation for r in run.requests] == [G, Q, T]  # (tried once: not again)
    update = counter_update(run.requests[-1])
    assert update["ConditionExpression"] == (
        "attribute_not_exists(#c) AND (attribute_not_exists(#k) OR #ddbkeys_type = :ddbkeys_type)"
    )
    assert update["ExpressionAttributeNames"]["#k"] == "pk"


def test_never_reuse_batches_hold_one_item_less_and_a_bad_counter_is_named() -> None:
    assert core(never_reuse=True).core.max_batch == 99 and core().core.max_batch == 100
    with pytest.raises(CounterStateError, match="holds last_number = 'x'"):
        commit(core(never_reuse=True), [counter("x", "S")])
    with pytest.raises(DdbKeysError, match="cancelled a transaction"):
        commit(core(never_reuse=True), [counter("1"), cancelled("None", "ValidationError")])


# --- sort keys: string keys, prefix, width, the largest number ----------------------------------


def test_string_sort_keys_read_and_write_only_prefixed_numbers() -> None:
    sequence = core(width=2, prefix="I#")
    run = commit(sequence, [highest(0, "S", "I#41"), OK], info=described("S"))
    assert run.result == [42] and written(run) == [["I#42"]]
    values = run.requests[0].params["ExpressionAttributeValues"]
    assert (values[":lo"], values[":hi"]) == ({"S": "I#00"}, {"S": "I#99"})
    assert "BETWEEN" in run.requests[0].params["KeyConditionExpression"]


@pytest.mark.parametrize(
    ("settings", "sort_type", "answers", "message"),
    [
        (
            {"width": 2, "prefix": "I#"},
            "S",
            [highest(0, "S", "I#99")],
            "Number 100 no longer fits the 2-digit sort key 'sk'",
        ),
        ({}, "N", [highest(10**38 - 1)], r"is at 9{38}: 1 more number\(s\) would pass 10\*\*38"),
        (
            {"never_reuse": True},
            "N",
            [counter(str(10**38 - 1))],
            r"is at 9{38}: 1 more number\(s\) would pass",
        ),
        ({"width": 1}, "S", [highest(0, "S", "8"), taken_by_another], "Number 10 no longer fits"),
    ],
)
def test_a_number_past_what_the_sort_key_holds_is_refused_and_nothing_written(
    settings: dict[str, Any], sort_type: str, answers: list[Answer], message: str
) -> None:
    sequence = core(**settings)
    run = Run()
    with pytest.raises(SequenceExhaustedError, match=message):
        batch = pending(sequence, info=described(sort_type))
        drive(committing(sequence, batch, described(sort_type)), answers, run=run)
    assert written(run)[-1:] != [["10"]]  # the number that does not fit was never sent
    assert all(r.operation in (Q, G) for r in run.requests[:1])


def test_sort_key_values_and_numbers() -> None:
    number, string = KeyAttribute("sk", "N"), KeyAttribute("sk", "S")
    assert sort_key_of(number, 7, width=3, prefix="X", table=TABLE) == {"N": "7"}
    assert sort_key_of(string, 7, width=3, prefix="X#", table=TABLE) == {"S": "X#007"}
    assert number_in({"S": "X#007"}, prefix="X#", table=TABLE) == 7
    assert number_in({"N": "12"}, prefix="X#", table=TABLE) == 12
    with pytest.raises(KeySchemaError, match="does not start with the prefix 'X#'"):
        number_in({"S": "PROFILE"}, prefix="X#", table=TABLE)
    for bad in ({"S": "X#1.5"}, {"S": "X#abc"}, {"N": "2.5"}):
        with pytest.raises(KeySchemaError, match="is not a whole number"):
            number_in(bad, prefix="X#", table=TABLE)


def test_a_collection_whose_highest_is_no_whole_number_is_named_with_the_fix() -> None:
    """`ids audit -k` showed 1, 2 and 2.5 OK; `ids put` then refused naming neither the
    collection nor what to do (a helper's finding)."""
    keys = (KeyAttribute("pk", "S"), KeyAttribute("sk", "N"))
    flow = core().core.query_highest(keys, {"S": "p"})
    next(flow)
    with pytest.raises(KeySchemaError) as raised:
        flow.send({"Items": [{"pk": {"S": "p"}, "sk": {"N": "2.5"}}]})
    assert "Sort key '2.5' in table" in str(raised.value)
    assert "highest of collection {'pk': 'p'}" in str(raised.value)
    assert "move or renumber that item" in str(raised.value)


def test_a_highest_string_key_not_written_as_the_sequence_writes_it_is_refused() -> None:
    """A helper numbered tickets '1' to '12' with PynamoDB, then put with ddbkeys: '9' was the
    highest by string order, so it wrote '0000000010' beside '10' (10 twice); with one '2'
    among '0000000001'..'0000000005' it tried '0000000003' 400 times, blaming other writers."""
    assert number_in({"S": "X#007"}, prefix="X#", table=TABLE, width=3) == 7
    for bad in ("X#07", "X#0007", "X#1.5", "X#\u0660\u0660\u0667"):  # (the last: Arabic-Indic)
        with pytest.raises(KeySchemaError, match="is not 'X#' and 3 digits, zero-padded"):
            number_in({"S": bad}, prefix="X#", table=TABLE, width=3)
    keys = (KeyAttribute("pk", "S"), KeyAttribute("sk", "S"))
    for found in ("9", "2", "00000000010"):
        flow = core().core.query_highest(keys, {"S": "p"})
        next(flow)
        with pytest.raises(KeySchemaError) as raised:
            flow.send({"Items": [{"pk": {"S": "p"}, "sk": {"S": found}}]})
        assert f"Sort key {found!r} of table {TABLE!r} is not 10 digits, zero-padded" in str(
            raised.value
        )
        assert "highest of collection {'pk': 'p'}" in str(raised.value)


def test_a_table_without_a_number_or_string_sort_key_is_refused() -> None:
    for info in (described(None), described("B")):
        with pytest.raises(KeySchemaError, match=r"needs a number \(N\) or string \(S\) sort key"):
            core().core.keys(info)


def test_prepare_refuses_what_the_sequence_sets_and_sends_nothing() -> None:
    sequence = core()
    for item in ({"sk": 1}, {"pk": "x"}, {"ddbkeys_token": "t"}):
        with pytest.raises(DdbKeysError, match="must not hold"):
            sequence.core.prepare(keys(), "p", item, False, Deadline(None))
    with pytest.raises(KeySchemaError, match="the partition key value gives a number"):
        sequence.core.prepare(keys(), 5, None, False, Deadline(None))


# --- current() ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("never_reuse", "answers", "expected", "operations"),
    [
        (False, [highest(0)], 0, [Q]),
        (False, [highest(12)], 12, [Q]),
        (True, [counter("7")], 7, [G]),
        (True, [counter(None), highest(3)], 3, [G, Q]),
        (True, [counter(None), highest(0)], 0, [G, Q]),
    ],
)
def test_current(
    never_reuse: bool, answers: list[Answer], expected: int, operations: list[str]
) -> None:
    sequence = core(never_reuse=never_reuse)
    run = drive(sequence.core.current(keys(), "p", Deadline(None), sequence.attempts), answers)
    assert (run.result, run.operations) == (expected, operations)


def test_a_refused_conditional_put_is_billed_a_cancelled_transaction_only_counted() -> None:
    usage = Usage()
    put = Request("put_item", {}, write=True, billed=2.0, count_refused=True, bill_refused=True)
    transaction = Request("transact_write_items", {}, write=True, billed=4.0, count_refused=True)
    refused(usage, put, failed_condition())
    refused(usage, transaction, cancelled("TransactionConflict"))
    snapshot = usage.snapshot()
    assert (snapshot["requests"], snapshot["billed_write_units"]) == (2, 2.0)


def test_no_lock_is_held_while_a_flow_waits() -> None:
    # drive() asserts the strategy's lock is free at every step; here a long mixed run.
    sequence = core()
    answers: list[Answer] = [highest(0), taken_by_another, lost(), our_own_write]
    run = commit(sequence, answers)
    assert run.result == [2]
