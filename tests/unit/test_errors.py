"""The error base keeps its cause, exposes the code and the table; every botocore error becomes a
DdbKeysError, and a failure is described in one line (pure functions: no server)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    ReadTimeoutError,
)

from ddbkeys._cli.errors import cli_words, error_text
from ddbkeys._errors import (
    ConfigurationError,
    CredentialsError,
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    KeySchemaError,
    ServiceError,
    TableNotFoundError,
    error_code,
)
from ddbkeys._translate import (
    deadline_exceeded,
    describe_failure,
    fresh,
    raise_translated,
    translate_error,
)


def client_error(
    code: str, message: str, operation: str = "GetItem", status: int = 400
) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


def test_base_keeps_cause_code_and_table() -> None:
    cause = client_error("ConditionalCheckFailedException", "The conditional request failed")
    error = DdbKeysError("it failed", table="orders", cause=cause)
    assert error.cause is cause
    assert error.code == "ConditionalCheckFailedException"
    assert error.table == "orders"
    assert str(error) == "it failed"


def test_missing_table() -> None:
    cause = client_error("ResourceNotFoundException", "Requested resource not found")
    error = translate_error(cause, table="orders")
    assert isinstance(error, TableNotFoundError)
    assert error.table == "orders"
    assert error.code == "ResourceNotFoundException"
    assert str(error).startswith("Table 'orders' not found: check the name, the region")


def test_an_operation_the_endpoint_does_not_have() -> None:
    """DynamoDB Local has no exports (a new user ran the exports page against it): the error
    says so, and what tests use instead, not only "an unknown operation was requested"."""
    cause = client_error(
        "UnknownOperationException",
        "An unknown operation was requested.",
        "ExportTableToPointInTime",
    )
    error = translate_error(cause, table="orders")
    assert isinstance(error, DdbKeysError) and error.code == "UnknownOperationException"
    assert str(error).startswith(
        "This endpoint has no ExportTableToPointInTime (UnknownOperationException) for table "
        "'orders': DynamoDB Local has no exports"
    )
    assert "ddbkeys.testing.write_export" in str(error)


def test_wrong_key_schema() -> None:
    cause = client_error(
        "ValidationException", "The provided key element does not match the schema"
    )
    error = translate_error(cause, table="orders")
    assert isinstance(error, KeySchemaError)
    assert "for table 'orders'" in str(error)


def test_unreachable_endpoint() -> None:
    error = translate_error(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert isinstance(error, EndpointUnreachableError)
    assert "http://127.0.0.1:1" in str(error)
    assert "endpoint_url=" in str(error)


def test_missing_credentials_and_region() -> None:
    assert isinstance(translate_error(NoCredentialsError()), CredentialsError)
    assert "profile=" in str(translate_error(NoCredentialsError()))
    region = translate_error(NoRegionError())
    assert isinstance(region, ConfigurationError)
    assert "region=" in str(region)


def test_unknown_service_error_becomes_a_service_error() -> None:
    cause = client_error("TransactionCanceledException", "Transaction cancelled", "PutItem")
    error = translate_error(cause, table="orders")
    assert isinstance(error, ServiceError)
    assert str(error) == (
        "DynamoDB refused PutItem on table 'orders' (TransactionCanceledException): "
        "Transaction cancelled"
    )
    assert (error.cause, error.code, error.table) == (
        cause,
        "TransactionCanceledException",
        "orders",
    )
    assert error_code(cause) == "TransactionCanceledException"
    with pytest.raises(ServiceError) as raised:
        raise_translated(cause, table="orders")
    assert raised.value.__cause__ is cause
    assert str(translate_error(cause)) == (
        "DynamoDB refused PutItem (TransactionCanceledException): Transaction cancelled"
    )


def test_errors_dynamodb_answered_are_also_botocore_client_errors() -> None:
    """Code that catches botocore's ClientError and reads the code (the habit of every boto3
    user) still sees DynamoDB's answer through ddbkeys: the response is the answer's own; the
    message stays ddbkeys' one line; across processes (pickle) the class and response stay."""
    import pickle  # noqa: PLC0415

    cause = client_error("AccessDeniedException", "not allowed", "UpdateItem")
    missing = client_error("ResourceNotFoundException", "Requested resource not found")
    for raw, kind in ((cause, ServiceError), (missing, TableNotFoundError)):
        with pytest.raises(ClientError) as caught:
            raise_translated(raw, table="orders")
        error = caught.value
        assert isinstance(error, kind) and isinstance(error, DdbKeysError)
        assert error.response["Error"]["Code"] == raw.response["Error"]["Code"]
        assert error.operation_name == raw.operation_name
        assert "'orders'" in str(error)
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is kind and again.response == error.response
        assert str(again) == str(error)
    made_here = TableNotFoundError("Table 'x' not found.", table="x")
    assert isinstance(made_here, ClientError)
    assert made_here.response["Error"] == {"Code": "", "Message": "Table 'x' not found."}
    assert not isinstance(KeySchemaError("not the schema"), ClientError)


def test_an_html_page_for_an_answer_is_not_dynamodb() -> None:
    """Every DynamoDB answer is JSON; an HTML error page (a proxy, a portal, the wrong port) is
    named in one line with its title, never pasted whole."""
    from ddbkeys._errors import UnexpectedAnswerError  # noqa: PLC0415
    from ddbkeys._translate import foreign_answer  # noqa: PLC0415

    page = "<html><head><title>Sign in to the network</title></head><body>" + "x" * 500
    cause = client_error("404", page, "DescribeTable", status=404)
    cause.response["ResponseMetadata"]["HTTPHeaders"] = {"content-type": "text/html; charset=utf-8"}
    assert foreign_answer(cause) == "text/html"
    error = translate_error(cause, table="orders")
    assert isinstance(error, UnexpectedAnswerError)
    assert str(error) == (
        "The endpoint answered DescribeTable on table 'orders' with HTTP 404 and a text/html "
        "page ('Sign in to the network'), not DynamoDB's JSON: is the endpoint DynamoDB? "
        "(check endpoint_url= and AWS_ENDPOINT_URL_DYNAMODB)"
    )
    json_answer = client_error("ValidationException", "bad", "GetItem")
    json_answer.response["ResponseMetadata"]["HTTPHeaders"] = {
        "content-type": "application/x-amz-json-1.0"
    }
    assert foreign_answer(json_answer) is None
    assert foreign_answer(client_error("ValidationException", "no headers")) is None


def test_other_exceptions_are_not_botocore_answers() -> None:
    bug = ZeroDivisionError("division by zero")
    assert translate_error(bug) is bug
    already = TableNotFoundError("gone", table="t")
    assert translate_error(already, table="u") is already


def test_item_over_400_kb() -> None:
    cause = client_error(
        "ValidationException", "Item size has exceeded the maximum allowed size", "PutItem"
    )
    error = translate_error(cause, table="users")
    assert isinstance(error, ServiceError)
    assert str(error) == (
        "An item is too large for table 'users': DynamoDB items are at most 400 KB, attribute "
        "names and values included; nothing was written (Item size has exceeded the maximum "
        "allowed size)."
    )
    assert (error.code, error.table) == ("ValidationException", "users")


def test_other_validation_error_names_operation_and_table() -> None:
    cause = client_error(
        "ValidationException",
        "One or more parameter values were invalid:\nAn string set may not be empty",
        "UpdateItem",
    )
    error = translate_error(cause, table="users")
    assert isinstance(error, ServiceError)
    assert str(error) == (
        "DynamoDB refused UpdateItem on table 'users' as invalid (ValidationException): One "
        "or more parameter values were invalid: An string set may not be empty"
    )


def test_a_key_of_another_type_or_shape_is_a_key_schema_error() -> None:
    """The service's words and DynamoDB Local's: a table made again with another key is then
    described again (a helper's process kept saying "refused GetItem")."""
    for words in (
        "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N",
        "The number of conditions on the keys is invalid",
    ):
        error = translate_error(client_error("ValidationException", words, "GetItem"), table="t")
        assert isinstance(error, KeySchemaError), words


def test_timeouts_and_closed_connections_are_unreachable_endpoints() -> None:
    timeout = translate_error(
        ReadTimeoutError(endpoint_url="http://127.0.0.1:5", error="x"), table="t"
    )
    assert isinstance(timeout, EndpointUnreachableError)
    assert str(timeout) == (
        "The DynamoDB endpoint http://127.0.0.1:5 did not answer (read timeout) for table 't': "
        "is it overloaded or stuck? Try again, or allow longer with deadline=."
    )
    closed = translate_error(ConnectionClosedError(endpoint_url="http://127.0.0.1:5"))
    assert isinstance(closed, EndpointUnreachableError)
    assert str(closed).startswith("The DynamoDB endpoint http://127.0.0.1:5 closed the connection")
    connect = translate_error(ConnectTimeoutError(endpoint_url="http://10.0.0.1:5"))
    assert isinstance(connect, EndpointUnreachableError)
    assert "http://10.0.0.1:5" in str(connect)


def test_other_botocore_errors_are_ddbkeys_errors() -> None:
    invalid = translate_error(ParamValidationError(report="Invalid type for\nparameter Key"))
    assert isinstance(invalid, ConfigurationError)
    assert str(invalid) == (
        "boto3 refused the request before sending it: Parameter validation failed: Invalid "
        "type for parameter Key"
    )


def test_describe_failure() -> None:
    url = "http://127.0.0.1:1234"
    assert describe_failure(ReadTimeoutError(endpoint_url=url, error="x"), read_timeout=2) == (
        f"the DynamoDB endpoint {url} did not answer within 2 s (read timeout)"
    )
    assert describe_failure(EndpointConnectionError(endpoint_url=url)) == (
        f"could not connect to the DynamoDB endpoint {url}: is it running?"
    )
    throttled = client_error("ProvisionedThroughputExceededException", "slow down", "Scan")
    assert describe_failure(throttled, times=12) == (
        "throttled (ProvisionedThroughputExceededException) 12 times"
    )
    assert describe_failure(throttled) == (
        "throttled (ProvisionedThroughputExceededException) 1 time"
    )
    busy = client_error("InternalServerError", "oops", "Scan", status=500)
    assert describe_failure(busy) == "DynamoDB answered HTTP 500 (InternalServerError): oops"
    assert describe_failure(None) == "no request could be sent in time"


def test_deadline_exceeded_says_what_happened() -> None:
    last = ReadTimeoutError(endpoint_url="http://127.0.0.1:1234", error="x")
    error = deadline_exceeded("the next id", "T", 5.0, 3, last, read_timeout=2.0)
    assert str(error) == (
        "Gave up on the next id on table 'T' after 5.0 s (the deadline; raise it with "
        "deadline=): the DynamoDB endpoint http://127.0.0.1:1234 did not answer "
        "within 2 s (read timeout), 3 attempts."
    )
    assert (error.seconds, error.attempts, error.table, error.cause) == (5.0, 3, "T", last)
    throttled = client_error("ThrottlingException", "slow", "Scan")
    error = deadline_exceeded("a listing", None, 0.5, 1, throttled)
    assert str(error) == (
        "Gave up on a listing after 0.5 s (the deadline; raise it with deadline=): "
        "throttled (ThrottlingException) 1 time, 1 attempt."
    )
    assert error.code == "ThrottlingException"
    # The CLI says its own option in its place.
    assert error_text(error) == (
        "Gave up on a listing after 0.5 s (the deadline; raise it with --timeout): "
        "throttled (ThrottlingException) 1 time, 1 attempt."
    )


def test_messages_name_the_setting_the_reader_can_change() -> None:
    # The library names make_client's argument; the CLI its option, in the same sentence.
    refused = EndpointConnectionError(endpoint_url="http://127.0.0.1:5")
    assert str(translate_error(refused)).endswith(
        "Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB."
    )
    assert error_text(refused).endswith("Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.")
    said = error_text(NoCredentialsError())
    assert "pass --profile" in said and "point --endpoint-url at" in said, said
    assert "=" not in said, said
    assert error_text(NoRegionError()).startswith("No AWS region set. Pass --region, or set")
    # A value of the user's is theirs (helper-67: a counter named deadline=1 was said as
    # '--timeout1').
    named = DdbKeysError("The counter 'deadline=1' holds a string; raise it with deadline=.")
    assert error_text(named) == (
        "The counter 'deadline=1' holds a string; raise it with --timeout."
    )
    assert cli_words("the item 'region=' of 'x profile='") == "the item 'region=' of 'x profile='"


def test_raise_translated_chains() -> None:
    cause = client_error("ResourceNotFoundException", "not found")
    with pytest.raises(TableNotFoundError) as raised:
        raise_translated(cause, table="t")
    assert raised.value.__cause__ is cause
    assert raised.value.cause is cause


def test_fresh_copies_an_error_for_each_caller_with_its_attributes_and_cause() -> None:
    cause = TimeoutError("read timed out")
    try:
        raise DeadlineExceededError("late", seconds=2.0, attempts=3, table="t") from cause
    except DeadlineExceededError as error:
        original = error
    copy = fresh(original)
    assert copy is not original and type(copy) is DeadlineExceededError
    assert (str(copy), copy.seconds, copy.attempts, copy.table) == ("late", 2.0, 3, "t")
    assert copy.__cause__ is cause and copy.__traceback__ is original.__traceback__

    class Odd(Exception):
        __slots__ = ()

        def __new__(cls, *args: object) -> Odd:
            raise RuntimeError("cannot be made again")

    odd = Exception.__new__(Odd)
    assert fresh(odd) is odd  # (what cannot be copied is raised as it is)
