"""The proxy's decisions, without a server: scripts first, then seeded draws, per operation."""

from __future__ import annotations

import json

import pytest

from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._proxy import Call, calls_in


def test_script_comes_first_then_draws() -> None:
    proxy = FaultProxy("http://127.0.0.1:1", Faults(script=[Fault.THROTTLE, Fault.ERROR_500]))
    assert proxy.decide("PutItem") is Fault.THROTTLE
    assert proxy.decide("PutItem") is Fault.ERROR_500
    assert proxy.decide("PutItem") is Fault.FORWARD
    assert proxy.counts == {"requests": 3, "throttle": 1, "error_500": 1, "forward": 1}


def test_draws_are_seeded_and_near_their_rates() -> None:
    faults = Faults(lose_response=0.1, throttle=0.2, error_500=0.05, seed=7)
    first = [FaultProxy("http://127.0.0.1:1", faults).decide("GetItem") for _ in range(1)]
    a, b = FaultProxy("http://127.0.0.1:1", faults), FaultProxy("http://127.0.0.1:1", faults)
    seq_a = [a.decide("GetItem") for _ in range(4000)]
    seq_b = [b.decide("GetItem") for _ in range(4000)]
    assert seq_a == seq_b
    assert first[0] is seq_a[0]
    assert 300 < a.counts["lose_response"] < 500
    assert 700 < a.counts["throttle"] < 900
    assert 130 < a.counts["error_500"] < 270
    assert sum(v for k, v in a.counts.items() if k != "requests") == 4000


def test_a_slow_answer_is_drawn_too() -> None:
    proxy = FaultProxy("http://127.0.0.1:1", Faults(delay_answer=1.0))
    assert proxy.decide("UpdateItem") is Fault.DELAY_ANSWER
    assert proxy.counts == {"requests": 1, "delay_answer": 1}


def test_operations_filter() -> None:
    proxy = FaultProxy(
        "http://127.0.0.1:1", Faults(throttle=1.0, operations=frozenset({"PutItem"}))
    )
    assert proxy.decide("GetItem") is Fault.FORWARD
    assert proxy.decide("PutItem") is Fault.THROTTLE
    assert proxy.counts_by_operation[("GetItem", "forward")] == 1


def test_bad_faults_are_refused() -> None:
    with pytest.raises(ValueError, match="add up to <= 1"):
        Faults(throttle=0.7, error_500=0.7)
    with pytest.raises(ValueError, match="add up to <= 1"):
        Faults(delay=0.5, delay_answer=0.6)
    with pytest.raises(ValueError, match="add up to <= 1"):
        Faults(delay_answer=-0.1)
    with pytest.raises(ValueError, match="throttle_code"):
        Faults(throttle_code="Slow")
    with pytest.raises(ValueError, match="http:// URL"):
        FaultProxy("https://dynamodb.us-east-1.amazonaws.com")


def test_script_can_wait_for_its_operations() -> None:
    faults = Faults(script=[Fault.LOSE_RESPONSE], script_operations=frozenset({"PutItem"}))
    proxy = FaultProxy("http://127.0.0.1:1", faults)
    assert proxy.decide("DescribeTable") is Fault.FORWARD
    assert proxy.decide("PutItem") is Fault.LOSE_RESPONSE
    assert proxy.decide("PutItem") is Fault.FORWARD


def test_calls_name_every_table_of_a_request() -> None:
    transact = {
        "TransactItems": [
            {"Update": {"TableName": "a", "Key": {}}},
            {"Put": {"TableName": "b", "Item": {}}},
            {"ConditionCheck": {"TableName": "a", "Key": {}}},
        ]
    }
    # As IAM authorizes a transaction: each action as the request it stands for.
    assert calls_in("TransactWriteItems", json.dumps(transact).encode()) == [
        Call("ConditionCheckItem", "a"),
        Call("PutItem", "b"),
        Call("UpdateItem", "a"),
    ]
    gets = {"TransactItems": [{"Get": {"TableName": "a", "Key": {}}}]}
    assert calls_in("TransactGetItems", json.dumps(gets).encode()) == [Call("GetItem", "a")]
    batch: dict[str, dict[str, list[object]]] = {"RequestItems": {"t2": [], "t1": []}}
    assert calls_in("BatchWriteItem", json.dumps(batch).encode()) == [
        Call("BatchWriteItem", "t1"),
        Call("BatchWriteItem", "t2"),
    ]
    scan = {"TableName": "t", "IndexName": "i"}
    assert calls_in("Scan", json.dumps(scan).encode()) == [Call("Scan", "t", "i")]
    assert calls_in("ListTables", b"{}") == [Call("ListTables", None)]
    assert calls_in("GetItem", b"not json") == [Call("GetItem", None)]
