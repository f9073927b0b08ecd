"""Lambda's DynamoDB Streams events read and checked (``partition_keys._streams.lambda_events``):
events shaped as the Lambda Developer Guide shows them, plain and from a tumbling window, and every
way one can be malformed, each with its one-line message."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys._streams.lambda_events import (
    MalformedEventError,
    StreamEvent,
    answer,
    parse_event,
)

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2024-06-10T19:26:16.525"
OTHER = "arn:aws:dynamodb:us-east-1:123456789012:table/users/stream/2024-06-11T08:00:00.000"
TIME = "ApproximateCreationDateTime"
LOCAL = "arn:aws:dynamodb:ddblocal:000000000000:table/orders/stream/2026-11-02T10:15:31.123"


def record(
    sequence_number: str = "4421584500000000017450439091",
    pk: dict[str, str] | None = None,
    name: str = "INSERT",
    arn: str = ARN,
) -> dict[str, Any]:
    """A record as Lambda delivers it for a KEYS_ONLY stream."""
    return {
        "eventID": "c4ca4238a0b923820dcc509a6f75849b",
        "eventName": name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1717000000.0,
            "Keys": {"pk": pk or {"S": "alice"}, "sk": {"N": "1"}},
            "SequenceNumber": sequence_number,
            "SizeBytes": 26,
            "StreamViewType": "KEYS_ONLY",
        },
        "eventSourceARN": arn,
    }


def plain() -> dict[str, Any]:
    return {
        "Records": [
            record("111"),
            record("222", {"B": "AGE="}, "MODIFY"),  # binary: base64 in Lambda's JSON
            record("333", {"S": "bob"}, "REMOVE"),
        ]
    }


def windowed(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        **plain(),
        "window": {"start": "2020-07-30T17:00:00Z", "end": "2020-07-30T17:05:00Z"},
        "state": {"1": "state1"},
        "shardId": "shardId-00000001717000000000-a1b2c3d4",
        "eventSourceARN": ARN,
        "isFinalInvokeForWindow": False,
        "isWindowTerminatedEarly": False,
    }
    event.update(changes)
    return event


def test_a_plain_event_names_its_stream_and_no_shard() -> None:
    event = parse_event(plain())
    assert event == StreamEvent(
        records=plain()["Records"], event_source_arn=ARN, tables=("orders",)
    )
    assert (event.windowed, event.shard_id, event.state) == (False, None, {})
    assert event.answer(["222"]) == {"batchItemFailures": [{"itemIdentifier": "222"}]}
    assert event.answer([], {"ignored": 1}) == {"batchItemFailures": []}  # no window: no state


def test_an_event_from_a_tumbling_window_gives_its_shard_window_and_state() -> None:
    given = windowed()
    event = parse_event(given)
    assert event.records is given["Records"]  # as given
    assert event.windowed
    assert event.shard_id == "shardId-00000001717000000000-a1b2c3d4"
    assert event.state == {"1": "state1"}
    assert (event.window_start, event.window_end) == (
        "2020-07-30T17:00:00Z",
        "2020-07-30T17:05:00Z",
    )
    assert (event.is_final_invoke_for_window, event.is_window_terminated_early) == (False, False)
    assert (event.event_source_arn, event.tables) == (ARN, ("orders",))
    # A window's event must be answered with a state: its own unless another is given.
    assert event.answer([]) == {"batchItemFailures": [], "state": {"1": "state1"}}
    assert event.answer(["111"], {"shard": "222"}) == {
        "batchItemFailures": [{"itemIdentifier": "111"}],
        "state": {"shard": "222"},
    }


def test_a_windows_final_invocation_may_hold_no_records() -> None:
    event = parse_event(
        windowed(Records=[], state={}, isFinalInvokeForWindow=True, isWindowTerminatedEarly=True)
    )
    assert (event.records, event.tables, event.event_source_arn) == ([], ("orders",), ARN)
    assert (event.is_final_invoke_for_window, event.is_window_terminated_early) == (True, True)
    assert event.answer([]) == {"batchItemFailures": [], "state": {}}


def test_a_window_event_without_some_of_its_fields_is_still_a_window_event() -> None:
    event = parse_event({"Records": [record()], "state": None, "isFinalInvokeForWindow": False})
    assert (event.windowed, event.shard_id, event.state, event.window_start) == (
        True,
        None,
        {},
        None,
    )
    assert event.answer([]) == {"batchItemFailures": [], "state": {}}


def test_records_of_several_tables_and_dynamodb_locals_arns() -> None:
    event = parse_event({"Records": [record(arn=OTHER), record(arn=ARN), record(arn=OTHER)]})
    assert (event.event_source_arn, event.tables) == (None, ("users", "orders"))
    assert parse_event({"Records": [record(arn=LOCAL)]}).tables == ("orders",)
    assert parse_event({"Records": []}) == StreamEvent([], None, ())
    gov = "arn:aws-us-gov:dynamodb:us-gov-west-1:123456789012:table/a.b_c-1/stream/x"
    assert parse_event({"Records": [record(arn=gov)]}).tables == ("a.b_c-1",)


def test_answer_lists_each_failure_once_in_order() -> None:
    assert answer(["333", "111", "333"], None) == {
        "batchItemFailures": [{"itemIdentifier": "333"}, {"itemIdentifier": "111"}]
    }
    assert answer((s for s in ["1"]), {}) == {
        "batchItemFailures": [{"itemIdentifier": "1"}],
        "state": {},
    }
    with pytest.raises(ValueError, match="a failure is a record's SequenceNumber, not 111"):
        answer([111], None)  # type: ignore[list-item]
    json.dumps(answer(["1"], {"a": [1]}))  # what Lambda reads: JSON


# Events of other sources, as their Lambda docs show them.
SQS = {
    "Records": [
        {
            "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
            "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...",
            "body": "Test message.",
            "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:my-queue",
            "awsRegion": "us-east-2",
        }
    ]
}
KINESIS = {
    "Records": [
        {
            "kinesis": {
                "kinesisSchemaVersion": "1.0",
                "partitionKey": "1",
                "sequenceNumber": "49590338271490256608559692538361571095921575989136588898",
                "data": "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==",
                "approximateArrivalTimestamp": 1545084650.987,
            },
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": "shardId-000000000006:4959033827149025660855969253836157109592157598913658",
            "eventName": "aws:kinesis:record",
            "awsRegion": "us-east-2",
            "eventSourceARN": "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream",
        }
    ]
}
KINESIS_FINAL = {
    "Records": [],
    "window": {"start": "2020-12-09T07:04:00Z", "end": "2020-12-09T07:06:00Z"},
    "state": {"1": 282, "2": 715},
    "shardId": "shardId-000000000006",
    "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/lambda-stream",
    "isFinalInvokeForWindow": True,
    "isWindowTerminatedEarly": False,
}
S3 = {
    "Records": [
        {
            "eventVersion": "2.0",
            "eventSource": "aws:s3",
            "awsRegion": "us-east-1",
            "eventTime": "1970-01-01T00:00:00.000Z",
            "eventName": "ObjectCreated:Put",
            "s3": {"bucket": {"name": "my-bucket"}, "object": {"key": "test/key"}},
        }
    ]
}
SNS = {
    "Records": [
        {
            "EventVersion": "1.0",
            "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:sns-lambda:21be56ed",
            "EventSource": "aws:sns",
            "Sns": {"Message": "Hello from SNS!"},
        }
    ]
}


def broken(path: str, value: Any = KeyError) -> dict[str, Any]:
    """The plain event with the field at ``path`` (dots; a number is a record) replaced by
    ``value``, or removed."""
    event = plain()
    *parents, last = path.split(".")
    where: Any = event
    for part in parents:
        where = where[int(part)] if part.isdigit() else where[part]
    if value is KeyError:
        del where[int(last) if last.isdigit() else last]
    else:
        where[int(last) if last.isdigit() else last] = value
    return event


MALFORMED: list[tuple[object, str]] = [
    ([], "The event is a list, not a JSON object: not a DynamoDB Streams event."),
    ("{}", "The event is a str, not a JSON object: not a DynamoDB Streams event."),
    (None, "The event is null, not a JSON object: not a DynamoDB Streams event."),
    (
        {"detail-type": "Scheduled Event", "source": "aws.events"},
        "The event has no Records (its keys: detail-type, source): not a DynamoDB Streams event.",
    ),
    ({}, "The event has no Records (its keys: none): not a DynamoDB Streams event."),
    ({"Records": {"0": record()}}, "The event's Records is a dict, not a list."),
    (broken("Records.1", "record"), "Record 1 is a str, not a JSON object."),
    (broken("Records.1", None), "Record 1 is null, not a JSON object."),
    (broken("Records.2.eventSourceARN"), "Record 2 has no eventSourceARN."),
    (
        broken("Records.0.eventSourceARN", "arn:aws:dynamodb:us-east-1:123456789012:table/orders"),
        "Record 0's eventSourceARN 'arn:aws:dynamodb:us-east-1:123456789012:table/orders' is not "
        "a DynamoDB stream ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
    (
        broken("Records.0.eventSourceARN", 12),
        "Record 0's eventSourceARN 12 is not a DynamoDB stream ARN "
        "(arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
    (
        broken("Records.0.eventSourceARN", "stream-ARN"),  # the guide's placeholder
        "Record 0's eventSourceARN 'stream-ARN' is not a DynamoDB stream ARN "
        "(arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
    (broken("Records.1.dynamodb"), "Record 1 has no dynamodb object."),
    (broken("Records.1.dynamodb", []), "Record 1's dynamodb is a list, not an object."),
    (
        broken("Records.0.dynamodb.Keys"),
        "Record 0 has no dynamodb.Keys (the item's key attributes).",
    ),
    (
        broken("Records.0.dynamodb.Keys", {}),
        "Record 0's dynamodb.Keys is empty, not the item's key.",
    ),
    (
        broken("Records.0.dynamodb.Keys", "alice"),
        "Record 0's dynamodb.Keys is a str, not the item's key.",
    ),
    (
        broken("Records.2.dynamodb.Keys.pk", "bob"),
        "Record 2's dynamodb.Keys.pk is 'bob', not a typed key value "
        '({"S": ...}, {"N": ...} or {"B": ...}).',
    ),
    (
        broken("Records.2.dynamodb.Keys.pk", {"SS": ["a"]}),
        "Record 2's dynamodb.Keys.pk is {'SS': ['a']}, not a typed key value "
        '({"S": ...}, {"N": ...} or {"B": ...}).',
    ),
    (
        broken("Records.2.dynamodb.Keys.sk", {}),
        "Record 2's dynamodb.Keys.sk is {}, not a typed key value "
        '({"S": ...}, {"N": ...} or {"B": ...}).',
    ),
    (broken("Records.1.dynamodb.SequenceNumber"), "Record 1 has no dynamodb.SequenceNumber."),
    (
        broken("Records.1.dynamodb.SequenceNumber", 222),
        "Record 1's dynamodb.SequenceNumber is 222, not a string of digits.",
    ),
    (
        broken("Records.1.dynamodb.SequenceNumber", "shardId-1"),
        "Record 1's dynamodb.SequenceNumber is 'shardId-1', not a string of digits.",
    ),
    *(
        (
            windowed(Records=[{**record(), "dynamodb": {**record()["dynamodb"], TIME: value}}]),
            f"Record 0's dynamodb.{TIME} is {shown}, not a number of seconds since 1970.",
        )
        # (a string, a list or NaN raised a bare ValueError or TypeError, or was recorded)
        for value, shown in (
            ("1717000000", "'1717000000'"),
            ("2024-05-29T16:26:40Z", "'2024-05-29T16:26:40Z'"),
            ([1717000000], "[1717000000]"),
            (float("nan"), "nan"),
            (float("inf"), "inf"),
            (True, "True"),
            (-1.0, "-1.0"),
            ({"N": "1717000000"}, "{'N': '1717000000'}"),
        )
    ),
    (
        SQS,
        "Record 0 comes from 'aws:sqs' (its eventSource), not from a DynamoDB stream: is the "
        "function's trigger on the right source?",
    ),
    (
        KINESIS,
        "Record 0 comes from 'aws:kinesis' (its eventSource), not from a DynamoDB stream: is the "
        "function's trigger on the right source?",
    ),
    (
        KINESIS_FINAL,
        "The event's eventSourceARN 'arn:aws:kinesis:us-east-1:123456789012:stream/lambda-stream' "
        "is not a DynamoDB stream ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
    (
        S3,
        "Record 0 comes from 'aws:s3' (its eventSource), not from a DynamoDB stream: is the "
        "function's trigger on the right source?",
    ),
    (
        SNS,
        "Record 0 comes from 'aws:sns' (its eventSource), not from a DynamoDB stream: is the "
        "function's trigger on the right source?",
    ),
    (
        {"Records": [{**record(), "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:q"}]},
        "Record 0's eventSourceARN 'arn:aws:sqs:us-east-2:123456789012:q' is not a DynamoDB "
        "stream ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
    (
        windowed(shardId=7),
        "The event's shardId is 7, not a string (a tumbling window's field).",
    ),
    (
        windowed(state=[["1", "state1"]]),
        "The event's state is [['1', 'state1']], not an object (a tumbling window's field).",
    ),
    (
        windowed(state={1: "state1"}),
        "The event's state has a key that is not a string.",
    ),
    (
        windowed(window="2020-07-30T17:00:00Z/2020-07-30T17:05:00Z"),
        "The event's window is '2020-07-30T17:00:00Z/2020-07-30T17:05:00Z', not an object with "
        "start and end (a tumbling window's field).",
    ),
    (
        windowed(window={"start": 1596128400, "end": "2020-07-30T17:05:00Z"}),
        "The event's window.start is 1596128400, not an ISO 8601 string (a tumbling window's "
        "field).",
    ),
    (
        windowed(window={"start": "2020-07-30T17:00:00Z", "end": ["x"]}),
        "The event's window.end is ['x'], not an ISO 8601 string (a tumbling window's field).",
    ),
    (
        windowed(isFinalInvokeForWindow="true"),
        "The event's isFinalInvokeForWindow is 'true', not true or false (a tumbling window's "
        "field).",
    ),
    (
        windowed(isWindowTerminatedEarly=0),
        "The event's isWindowTerminatedEarly is 0, not true or false (a tumbling window's field).",
    ),
    (
        windowed(eventSourceARN=OTHER),
        f"Record 0's eventSourceARN {ARN!r} is not the event's ({OTHER!r}).",
    ),
    (
        windowed(eventSourceARN="arn:aws:dynamodb:us-east-1:123456789012:table/orders"),
        "The event's eventSourceARN 'arn:aws:dynamodb:us-east-1:123456789012:table/orders' is "
        "not a DynamoDB stream ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL).",
    ),
]


@pytest.mark.parametrize(("event", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_a_malformed_event_is_named_in_one_line(event: object, message: str) -> None:
    with pytest.raises(MalformedEventError) as raised:
        parse_event(event)
    assert str(raised.value) == message
    assert isinstance(raised.value, DdbKeysError)
    assert "\n" not in str(raised.value)


def test_any_damage_to_an_event_gives_a_stream_event_or_a_malformed_event_error() -> None:
    """Each field of a window's event, removed or replaced by a value of another kind, in many
    combinations: never a KeyError, TypeError or AttributeError."""
    values: list[Any] = [None, 0, 1.5, True, "", "x", [], [1], {}, {"S": "x"}, {"N": 1}]
    chooser = random.Random(21)
    outcomes = {"parsed": 0, "malformed": 0}
    for _ in range(3000):
        event = copy.deepcopy(windowed())
        for _ in range(chooser.randint(1, 3)):
            parent, key = chooser.choice(list(_places(event)))
            if chooser.random() < 0.3 and isinstance(parent, dict):
                del parent[key]
            else:
                parent[key] = copy.deepcopy(chooser.choice(values))
        try:
            parse_event(event)
        except MalformedEventError:
            outcomes["malformed"] += 1
        else:
            outcomes["parsed"] += 1
    assert outcomes["malformed"] > 1000 and outcomes["parsed"] > 100, outcomes


def _places(value: Any) -> Any:
    """(container, key) of every value inside ``value``."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, inner in list(items):
        yield value, key
        if isinstance(inner, (dict, list)):
            yield from _places(inner)
