"""The error base keeps its cause, exposes the code and the table; unknown errors pass unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)

from ddbkeys.errors import (
    ConfigurationError,
    CredentialsError,
    DdbKeysError,
    EndpointUnreachableError,
    KeySchemaError,
    ServiceError,
    TableNotFoundError,
    raise_translated,
    translate_error,
)


def client_error(code: str, message: str, operation: str = "GetItem") -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": message}}
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
    assert "--endpoint-url" in str(error)


def test_missing_credentials_and_region() -> None:
    assert isinstance(translate_error(NoCredentialsError()), CredentialsError)
    assert "--profile" in str(translate_error(NoCredentialsError()))
    region = translate_error(NoRegionError())
    assert isinstance(region, ConfigurationError)
    assert "--region" in str(region)


def test_unknown_service_error_is_a_ddbkeys_error_with_its_code() -> None:
    cause = client_error("SomethingNewException", "Something new", "PutItem")
    with pytest.raises(ServiceError) as raised:
        raise_translated(cause, table="t")
    assert raised.value.cause is cause and raised.value.__cause__ is cause
    assert (raised.value.code, raised.value.table) == ("SomethingNewException", "t")
    assert str(raised.value) == (
        "DynamoDB refused PutItem for table 't' (SomethingNewException): Something new"
    )
    big = client_error(
        "ValidationException", "Item size has exceeded the maximum allowed size", "PutItem"
    )
    assert str(translate_error(big, table="t")) == (
        "The item is too large for table 't': DynamoDB items are at most 400 KB, attribute "
        "names and values included (PutItem: Item size has exceeded the maximum allowed size)."
    )
    other = ValueError("not botocore's")
    assert translate_error(other) is other


def test_raise_translated_chains() -> None:
    cause = client_error("ResourceNotFoundException", "not found")
    with pytest.raises(TableNotFoundError) as raised:
        raise_translated(cause, table="t")
    assert raised.value.__cause__ is cause
    assert raised.value.cause is cause
