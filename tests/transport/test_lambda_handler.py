"""The Lambda entry point's one handler per execution environment: boto3's default client,
with the settings the function's environment gives (building it sends no request)."""

from __future__ import annotations

from typing import Any

import pytest

from ddbkeys.partition_keys import aws_lambda


def test_the_default_handler_is_made_once_with_the_environment_s_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = {"DDBKEYS_INDEX": "ix", "DDBKEYS_MARKER_ATTRIBUTE": "m", "DDBKEYS_STATE_TABLE": "st"}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    aws_lambda._default_handler.cache_clear()
    try:
        made: Any = aws_lambda._default_handler()
        assert aws_lambda._default_handler() is made
    finally:
        aws_lambda._default_handler.cache_clear()
    assert (made.index_name, made.attribute, made.state_table) == ("ix", "m", "st")
    client: Any = made.client
    assert client.meta.region_name == "eu-west-1"
