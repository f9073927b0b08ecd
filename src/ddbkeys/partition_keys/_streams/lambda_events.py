"""AWS Lambda's DynamoDB Streams events, read and checked, and the answer a handler gives.
Pure: no I/O, no boto3, no clock.

The shape, from the AWS Lambda Developer Guide ("Using AWS Lambda with Amazon DynamoDB",
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html, and "Implementing stateful DynamoDB
stream processing in Lambda", https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html,
whose example ``DynamodbTimeWindowEvent`` this follows)::

    {
      "Records": [
        {"eventID": "1", "eventName": "INSERT", "eventVersion": "1.0",
         "eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "eventSourceARN": ARN,
         "dynamodb": {"Keys": {"pk": {"S": "alice"}, "sk": {"N": "1"}},
                      "SequenceNumber": "111", "SizeBytes": 26, "StreamViewType": "KEYS_ONLY",
                      "ApproximateCreationDateTime": 1717000000.0}}
      ],
      "window": {"start": "2020-07-30T17:00:00Z", "end": "2020-07-30T17:05:00Z"},
      "state": {"1": "state1"},
      "shardId": "shard123456789",
      "eventSourceARN": ARN,
      "isFinalInvokeForWindow": false,
      "isWindowTerminatedEarly": false
    }

where ARN is the stream's, such as
``arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2024-06-10T19:26:16.525``.
The keys after ``Records`` come only when the event source mapping has a tumbling window
(``TumblingWindowInSeconds`` above 0). What the guide says that matters here:

- a plain event does not say which shard its records came from: ``shardId`` is only in an
  event from a tumbling window;
- with a tumbling window the function's answer must hold ``state``, or Lambda counts the
  invocation as failed (the answer's shape is ``TimeWindowEventResponse``:
  ``{"state": {...}, "batchItemFailures": [...]}``);
- at the end of a window ``isFinalInvokeForWindow`` is true; the state is then dropped, and the
  next window starts with ``{}``;
- the state is at most 1 MB per shard: past that Lambda ends the window early
  (``isWindowTerminatedEarly``);
- a window does not outlive its shard: when the shard ends the window closes, and the child
  shards start windows of their own;
- records in Lambda's JSON carry binary values base64-encoded and times as numbers.

An empty ``Records`` list is accepted: a window's final invocation can come with none.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ddbkeys._errors import DdbKeysError

__all__ = ["MalformedEventError", "StreamEvent", "answer", "parse_event", "typed_key"]

#: arn:PARTITION:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL (DynamoDB's table names).
_STREAM_ARN = re.compile(
    r"arn:[a-z-]+:dynamodb:[^:/]*:[^:/]*:table/([A-Za-z0-9_.-]{3,255})/stream/.+"
)
_KEY_TYPES = frozenset({"S", "N", "B"})
#: The tumbling-window keys of an event (their presence makes the event one from a window).
_WINDOW_KEYS = ("shardId", "window", "state", "isFinalInvokeForWindow", "isWindowTerminatedEarly")


class MalformedEventError(DdbKeysError):
    """The event is not a DynamoDB Streams event as Lambda sends it: the message names what is
    wrong and where (the record's index, the field), on one line."""


@dataclass(frozen=True)
class StreamEvent:
    """One Lambda event from a DynamoDB stream, checked.

    ``records`` are the event's records as given (each has an ``eventSourceARN`` that is a
    DynamoDB stream ARN, a ``dynamodb.Keys`` of typed key values and a
    ``dynamodb.SequenceNumber``). ``event_source_arn`` is the stream's ARN: the event's own, or
    else the one its records share (None when they name several, or there are none), and
    ``tables`` the tables its records' ARNs name, in order of first appearance (with the event's
    own ARN's first when there is one).

    ``windowed`` is whether the event came from a tumbling window; only then are the other
    fields given: ``shard_id`` (the shard all the records came from), ``state`` (the window's
    state so far, ``{}`` when there is none), ``window_start`` and ``window_end`` (ISO 8601, as
    Lambda sends them), ``is_final_invoke_for_window`` and ``is_window_terminated_early``.
    """

    records: list[dict[str, Any]]
    event_source_arn: str | None
    tables: tuple[str, ...]
    windowed: bool = False
    shard_id: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    window_start: str | None = None
    window_end: str | None = None
    is_final_invoke_for_window: bool = False
    is_window_terminated_early: bool = False

    def answer(
        self, failures: Iterable[str], state: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The handler's answer to this event: :func:`answer` with ``state`` (this event's own
        when None) if the event came from a tumbling window, and without it if not."""
        if not self.windowed:
            return answer(failures, None)
        return answer(failures, self.state if state is None else state)


def answer(failures: Iterable[str], state: Mapping[str, Any] | None) -> dict[str, Any]:
    """The handler's answer: ``{"batchItemFailures": [{"itemIdentifier": SEQ}, ...]}`` (each
    sequence number once, in the order given), and ``"state": {...}`` when ``state`` is not
    None: an event from a tumbling window must be answered with its state, or Lambda counts the
    invocation as failed. Lambda sends the batch again from the failure with the lowest
    sequence number (the mapping needs ``FunctionResponseTypes: [ReportBatchItemFailures]``)."""
    seen: dict[str, None] = {}
    for sequence_number in failures:
        if not isinstance(sequence_number, str) or not sequence_number:
            raise ValueError(
                f"a failure is a record's SequenceNumber, not {_shown(sequence_number)}"
            )
        seen.setdefault(sequence_number)
    document: dict[str, Any] = {"batchItemFailures": [{"itemIdentifier": s} for s in seen]}
    if state is not None:
        document["state"] = dict(state)
    return document


def parse_event(event: object) -> StreamEvent:
    """``event`` checked and read: a :class:`StreamEvent`, or :class:`MalformedEventError`
    naming what is wrong and where (never a KeyError or TypeError). It catches an event from
    SQS, SNS, Kinesis or S3 sent to the handler by mistake, and every field the handler reads
    that is missing or of the wrong type."""
    if not isinstance(event, Mapping):
        raise MalformedEventError(
            f"The event is {_kind(event)}, not a JSON object: not a DynamoDB Streams event."
        )
    records = event.get("Records")
    if records is None:
        raise MalformedEventError(
            f"The event has no Records (its keys: {_keys(event)}): not a DynamoDB Streams event."
        )
    if not isinstance(records, list):
        raise MalformedEventError(f"The event's Records is {_kind(records)}, not a list.")
    windowed = any(event.get(key) is not None for key in _WINDOW_KEYS)
    own_arn = event.get("eventSourceARN")
    tables: dict[str, None] = {}
    if own_arn is not None:
        tables.setdefault(_stream_table(own_arn, "The event's eventSourceARN"))
    arns: dict[str, None] = {}
    for number, record in enumerate(records):
        arn = _check_record(number, record)
        if own_arn is not None and arn != own_arn:
            raise MalformedEventError(
                f"Record {number}'s eventSourceARN {arn!r} is not the event's ({own_arn!r})."
            )
        arns.setdefault(arn)
        tables.setdefault(_stream_table(arn, f"Record {number}'s eventSourceARN"))
    shared = next(iter(arns)) if len(arns) == 1 else None
    window = _optional(event, "window", Mapping, "an object with start and end") or {}
    state = _optional(event, "state", Mapping, "an object") or {}
    if not all(isinstance(k, str) for k in state):
        raise MalformedEventError("The event's state has a key that is not a string.")
    return StreamEvent(
        records=records,
        event_source_arn=own_arn if own_arn is not None else shared,
        tables=tuple(tables),
        windowed=windowed,
        shard_id=_optional(event, "shardId", str, "a string"),
        state=dict(state),
        window_start=_optional(window, "start", str, "an ISO 8601 string", "window."),
        window_end=_optional(window, "end", str, "an ISO 8601 string", "window."),
        is_final_invoke_for_window=bool(
            _optional(event, "isFinalInvokeForWindow", bool, "true or false")
        ),
        is_window_terminated_early=bool(
            _optional(event, "isWindowTerminatedEarly", bool, "true or false")
        ),
    )


def _check_record(number: int, record: object) -> str:
    """The record's eventSourceARN, once the record is checked."""
    where = f"Record {number}"
    if not isinstance(record, Mapping):
        raise MalformedEventError(f"{where} is {_kind(record)}, not a JSON object.")
    source = record.get("eventSource", record.get("EventSource"))
    if source is not None and source != "aws:dynamodb":
        raise MalformedEventError(
            f"{where} comes from {_shown(source)} (its eventSource), not from a DynamoDB stream: "
            "is the function's trigger on the right source?"
        )
    arn = record.get("eventSourceARN")
    if arn is None:
        raise MalformedEventError(f"{where} has no eventSourceARN.")
    _stream_table(arn, f"{where}'s eventSourceARN")
    dynamodb = record.get("dynamodb")
    if dynamodb is None:
        raise MalformedEventError(f"{where} has no dynamodb object.")
    if not isinstance(dynamodb, Mapping):
        raise MalformedEventError(f"{where}'s dynamodb is {_kind(dynamodb)}, not an object.")
    keys = dynamodb.get("Keys")
    if keys is None:
        raise MalformedEventError(f"{where} has no dynamodb.Keys (the item's key attributes).")
    if not isinstance(keys, Mapping) or not keys:
        shown = "empty" if isinstance(keys, Mapping) else _kind(keys)
        raise MalformedEventError(f"{where}'s dynamodb.Keys is {shown}, not the item's key.")
    for name, value in keys.items():
        if not (isinstance(value, Mapping) and len(value) == 1 and set(value) <= _KEY_TYPES):
            raise MalformedEventError(
                f"{where}'s dynamodb.Keys.{name} is {_shown(value)}, not a typed key value "
                '({"S": ...}, {"N": ...} or {"B": ...}).'
            )
    sequence_number = dynamodb.get("SequenceNumber")
    if sequence_number is None:
        raise MalformedEventError(f"{where} has no dynamodb.SequenceNumber.")
    if not (isinstance(sequence_number, str) and sequence_number.isdigit()):
        raise MalformedEventError(
            f"{where}'s dynamodb.SequenceNumber is {_shown(sequence_number)}, not a string of "
            "digits."
        )
    created = dynamodb.get("ApproximateCreationDateTime")
    if created is not None and not _seconds(created):
        raise MalformedEventError(
            f"{where}'s dynamodb.ApproximateCreationDateTime is {_shown(created)}, not a number "
            "of seconds since 1970."
        )
    return str(arn)


def _seconds(value: object) -> bool:
    """Whether ``value`` is a time as Lambda writes it (seconds since 1970, finite, 0 or more;
    a datetime as boto3 reads one is taken too): a string, a list, a boolean or NaN is not."""
    if hasattr(value, "timestamp"):
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0


def _stream_table(arn: object, what: str) -> str:
    """The table a DynamoDB stream ARN names."""
    match = _STREAM_ARN.fullmatch(arn) if isinstance(arn, str) else None
    if match is None:
        raise MalformedEventError(
            f"{what} {_shown(arn)} is not a DynamoDB stream ARN "
            "(arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL)."
        )
    return match[1]


def _optional(
    where: Mapping[str, Any], key: str, kind: type | tuple[type, ...], wanted: str, path: str = ""
) -> Any:
    """``where[key]``, None when it is absent or null, else of ``kind``."""
    value = where.get(key)
    if value is not None and not isinstance(value, kind):
        raise MalformedEventError(
            f"The event's {path}{key} is {_shown(value)}, not {wanted} (a tumbling window's field)."
        )
    return value


def _kind(value: object) -> str:
    """``a list``, ``a str``, ``null``: what a JSON value is, for a message."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def _shown(value: object) -> str:
    """A value for a one-line message, cut at 100 characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 100 else text[:97] + "..."


def _keys(event: Mapping[Any, Any]) -> str:
    names = sorted(str(k) for k in event)
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return shown or "none"


def typed_key(value: dict[str, Any]) -> dict[str, Any]:
    """A key as Lambda's JSON event carries it, for the low-level client: binary values come
    base64-encoded in the event."""
    kind, raw = next(iter(value.items()))
    if kind == "B" and isinstance(raw, str):
        return {"B": base64.b64decode(raw)}
    return {kind: raw}
