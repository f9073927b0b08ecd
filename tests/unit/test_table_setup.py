"""The CreateTable request of ``ddbkeys table create`` (pure: no server)."""

from __future__ import annotations

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys._table_setup import STRATEGY_KEYS, key_spec, table_request


def test_each_strategy_has_the_key_schema_its_docs_use() -> None:
    assert STRATEGY_KEYS["collection"] == (("pk", "S"), ("sk", "N"))
    for strategy in ("counter", "blocks", "gapless"):
        assert STRATEGY_KEYS[strategy] == (("pk", "S"), None)


def test_the_request_is_on_demand_with_the_keys_and_the_stream_asked_for() -> None:
    request = table_request("issues", partition_key=("pk", "S"), sort_key=("sk", "N"))
    assert request == {
        "TableName": "issues",
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
    streamed = table_request("orders", stream=True)
    assert streamed["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": "KEYS_ONLY",
    }
    assert [k["AttributeName"] for k in streamed["KeySchema"]] == ["pk"]


def test_bad_settings_are_named() -> None:
    assert key_spec("id:n") == ("id", "N")
    for wrong in ("id:X", ":S", "", "id"):  # (the type is said, as --help asks: NAME:TYPE)
        with pytest.raises(ConfigurationError, match="give NAME:TYPE"):
            key_spec(wrong)
    with pytest.raises(ConfigurationError, match="cannot have the partition key's name"):
        table_request("orders", partition_key=("pk", "S"), sort_key=("pk", "N"))
    with pytest.raises(ConfigurationError, match="Invalid table name 'x'"):
        table_request("x")
