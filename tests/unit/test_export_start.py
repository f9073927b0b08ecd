"""The export's start and wait as flows, driven here without a client: which requests they send,
what an answer means, what a retry resends (the same ClientToken), and each error's one line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Pause, Request
from ddbkeys._errors import (
    ConfigurationError,
    DdbKeysError,
    DeadlineExceededError,
    TableNotFoundError,
)
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys.partition_keys import ExportFailedError, TableExport
from ddbkeys.partition_keys._export.described import (
    check_format,
    check_wait,
    described,
    export_uri,
    table_of,
)
from ddbkeys.partition_keys._export.start import prepared_wait, start_flow, wait_flow

ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders"
# The form of AWS's documented example (DynamoDB developer guide, "Requesting a table export").
EXPORT_ARN = f"{ARN}/export/01234567890123-a1b2c3d4"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def answer(status: str = "IN_PROGRESS", **more: Any) -> dict[str, Any]:
    return {
        "ExportDescription": {
            "ExportArn": EXPORT_ARN,
            "ExportStatus": status,
            "TableArn": ARN,
            "S3Bucket": "my-exports",
            "S3Prefix": "ddbkeys",
            "ExportFormat": "DYNAMODB_JSON",
            **more,
        }
    }


def refused(code: str, message: str = "no", operation: str = "ExportTableToPointInTime") -> Any:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def run(flow: Any, replies: list[Any]) -> tuple[Any, list[Any]]:
    """Drive ``flow``: each Request gets the next reply (an exception is thrown into it), each
    Pause is recorded. Returns the flow's result and the steps it yielded."""
    steps: list[Any] = []
    try:
        step = next(flow)
        while True:
            steps.append(step)
            if isinstance(step, Pause):
                step.sleep(step.seconds)
                step = flow.send(None)
                continue
            reply = replies.pop(0)
            step = flow.throw(reply) if isinstance(reply, BaseException) else flow.send(reply)
    except StopIteration as done:
        assert not replies, f"replies left over: {replies}"
        return done.value, steps


def start(table: str = "orders", clock: Clock | None = None, **kw: Any) -> Any:
    clock = clock or Clock()
    policy = RetryPolicy(sleep=clock.sleep, clock=clock, random=lambda: 0.5)
    return start_flow(
        table,
        "my-exports",
        s3_prefix=kw.pop("s3_prefix", "ddbkeys"),
        export_format="DYNAMODB_JSON",
        client_token=kw.pop("client_token", "token-1"),
        policy=policy,
        deadline=Deadline(60, clock=clock),
        usage=Usage(),
    )


def test_the_uri_is_the_export_folder_of_aws_layout() -> None:
    # <export-prefix>/AWSDynamoDB/<ExportId>/, ExportId the ARN's last part (S3DataExport.Output).
    assert export_uri("b", "ddbkeys", EXPORT_ARN) == (
        "s3://b/ddbkeys/AWSDynamoDB/01234567890123-a1b2c3d4/"
    )
    assert export_uri("b", None, EXPORT_ARN) == "s3://b/AWSDynamoDB/01234567890123-a1b2c3d4/"
    assert export_uri("b", "", EXPORT_ARN) == "s3://b/AWSDynamoDB/01234567890123-a1b2c3d4/"
    assert export_uri("b", "/a/b/", EXPORT_ARN) == "s3://b/a/b/AWSDynamoDB/01234567890123-a1b2c3d4/"
    assert table_of(EXPORT_ARN) == table_of(ARN) == table_of("orders") == "orders"
    # moto's export ARNs hold the table's ARN: still the table's name.
    assert table_of(f"arn:aws:dynamodb:us-east-1:1:table/{ARN}/import/abc") == "orders"


def test_a_name_is_looked_up_and_every_attempt_sends_the_same_token() -> None:
    lost = ConnectionClosedError(endpoint_url="http://127.0.0.1:1")
    export, steps = run(
        start(),
        [{"Table": {"TableArn": ARN, "TableName": "orders"}}, lost, answer()],
    )
    requests = [s for s in steps if isinstance(s, Request)]
    assert [r.operation for r in requests] == [
        "describe_table",
        "export_table_to_point_in_time",
        "export_table_to_point_in_time",
    ]
    first, again = requests[1], requests[2]
    assert first is not again  # a request is yielded once; its parameters are the same
    assert (
        dict(first.params)
        == dict(again.params)
        == {
            "TableArn": ARN,
            "S3Bucket": "my-exports",
            "S3Prefix": "ddbkeys",
            "ExportFormat": "DYNAMODB_JSON",
            "ClientToken": "token-1",
        }
    )
    assert isinstance(export, TableExport)
    assert export.uri == "s3://my-exports/ddbkeys/AWSDynamoDB/01234567890123-a1b2c3d4/"
    assert (export.table, export.status, export.client_token) == (
        "orders",
        "IN_PROGRESS",
        "token-1",
    )


def test_an_arn_is_sent_as_it_is_and_no_prefix_is_left_out() -> None:
    _, steps = run(start(ARN, s3_prefix=None), [answer()])
    (request,) = steps
    assert request.operation == "export_table_to_point_in_time"
    assert request.params["TableArn"] == ARN and "S3Prefix" not in request.params


def test_pitr_off_is_one_line_saying_how_to_turn_it_on_and_its_cost() -> None:
    with pytest.raises(ConfigurationError) as caught:
        run(start(ARN), [refused("PointInTimeRecoveryUnavailableException")])
    message = str(caught.value)
    assert "\n" not in message and caught.value.table == "orders"
    assert message.startswith("Table 'orders' has point-in-time recovery (PITR) off")
    assert (
        "aws dynamodb update-continuous-backups --table-name orders "
        "--point-in-time-recovery-specification PointInTimeRecoveryEnabled=true" in message
    )
    assert "per GB-month" in message and "no export was started" in message


def test_the_services_refusals_name_the_table() -> None:
    with pytest.raises(TableNotFoundError, match="Table 'orders' not found"):
        run(start(ARN), [refused("TableNotFoundException")])
    with pytest.raises(ConfigurationError, match="'token-1' started an export of table 'orders'"):
        run(start(ARN), [refused("IdempotentParameterMismatchException")])


def waiting(clock: Clock, deadline: float = 60.0, seen: list[Any] | None = None) -> Any:
    policy = RetryPolicy(sleep=clock.sleep, clock=clock, random=lambda: 0.5)
    return wait_flow(
        EXPORT_ARN,
        poll=10.0,
        policy=policy,
        deadline=Deadline(deadline, clock=clock),
        usage=Usage(),
        on_progress=None if seen is None else seen.append,
    )


def test_wait_polls_until_completed() -> None:
    clock, seen = Clock(), list[TableExport]()
    at = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    done = answer("COMPLETED", ExportTime=at, ItemCount=8, BilledSizeBytes=1024)
    export, steps = run(waiting(clock, seen=seen), [answer(), answer(), done])
    assert [s.seconds for s in steps if isinstance(s, Pause)] == [10.0, 10.0]
    assert [e.status for e in seen] == ["IN_PROGRESS", "IN_PROGRESS", "COMPLETED"]
    assert (export.status, export.export_time, export.item_count) == ("COMPLETED", at, 8)
    assert export.as_dict()["export_time"] == "2026-11-29T08:00:00+00:00"
    assert export.as_dict()["export_id"] == "01234567890123-a1b2c3d4"


def test_a_failed_export_is_one_line_with_dynamodbs_reason() -> None:
    failed = answer("FAILED", FailureCode="S3NoSuchBucket", FailureMessage="No bucket.")
    with pytest.raises(ExportFailedError) as caught:
        run(waiting(Clock()), [answer(), failed])
    assert str(caught.value) == (
        f"Export {EXPORT_ARN} of table 'orders' FAILED (S3NoSuchBucket): No bucket."
    )
    assert caught.value.export.failure_code == caught.value.code == "S3NoSuchBucket"


def test_an_export_dynamodb_does_not_know_is_one_line() -> None:
    with pytest.raises(ConfigurationError) as caught:
        run(waiting(Clock()), [refused("ExportNotFoundException", operation="DescribeExport")])
    assert str(caught.value).startswith(f"No export {EXPORT_ARN} in this account and region")


def test_a_start_that_ran_out_of_attempts_names_its_token() -> None:
    clock = Clock()
    throttled = refused("ThrottlingException")
    with pytest.raises(DdbKeysError) as caught:
        run(start(ARN, clock=clock), [throttled] * 25)
    assert "client token 'token-1' (--client-token, client_token=)" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_wait_past_its_deadline_says_the_export_goes_on() -> None:
    clock = Clock()
    with pytest.raises(DeadlineExceededError) as caught:
        run(waiting(clock, deadline=25.0), [answer(), answer(), answer()])
    assert clock.now == 20.0  # two polls waited; a third would pass the deadline
    message = str(caught.value)
    assert "still IN_PROGRESS after 25 s" in message and "\n" not in message
    assert f"export wait --export-arn {EXPORT_ARN}" in message


def test_bad_arguments_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(ConfigurationError, match="'CSV' is not an export format"):
        check_format("CSV")
    assert check_format("ION") == "ION"
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigurationError, match="poll must be"):
            check_wait(bad, 10.0)
    with pytest.raises(ConfigurationError, match="is not an export's ARN"):
        prepared_wait("orders", poll=1.0, deadline=1.0, on_progress=None, retry=None)


def test_an_answer_without_a_description_is_not_dynamodbs() -> None:
    with pytest.raises(Exception, match="holds no ExportDescription"):
        described({"Oops": 1}, "DescribeExport")
