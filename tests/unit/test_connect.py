"""Client settings precedence: argument, then environment, then config files, then defaults;
and what make_client refuses before it builds a client. The clients it builds are checked in
tests/transport/test_connect.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddbkeys._connect import is_loopback, make_client, resolve_settings
from ddbkeys._errors import ConfigurationError


def test_argument_beats_environment() -> None:
    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1111",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:2222",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AWS_PROFILE": "from-env",
    }
    settings = resolve_settings("http://127.0.0.1:9999", "ap-south-1", "from-arg", environ=env)
    assert settings.endpoint_url == "http://127.0.0.1:9999"
    assert settings.region == "ap-south-1"
    assert settings.profile == "from-arg"
    # AWS_PROFILE is left to boto3 (see tests/transport/test_connect.py)
    assert resolve_settings(environ=env).profile is None


def test_service_specific_variables_beat_general_ones() -> None:
    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1111",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:2222",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-central-1",
    }
    settings = resolve_settings(environ=env)
    assert settings.endpoint_url == "http://127.0.0.1:1111"
    assert settings.region == "eu-west-1"
    del env["AWS_ENDPOINT_URL_DYNAMODB"], env["AWS_REGION"]
    settings = resolve_settings(environ=env)
    assert settings.endpoint_url == "http://127.0.0.1:2222"
    assert settings.region == "eu-central-1"


def test_nothing_set_leaves_it_to_botocore() -> None:
    settings = resolve_settings(environ={})
    assert (settings.endpoint_url, settings.region, settings.profile) == (None, None, None)


def test_missing_region_says_what_to_do(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"No AWS region set\. Pass region=,"):
        make_client()


def test_unknown_profile_is_named(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match="AWS profile 'nope' not found"):
        make_client(profile="nope", region="us-east-1")


def test_bad_endpoint_url_is_named(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match="'localhost:8000' is not an http"):
        make_client(endpoint_url="localhost:8000")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", True),
        ("http://localhost:1", True),
        ("http://[::1]:8000", True),
        ("https://dynamodb.us-east-1.amazonaws.com", False),
        (None, False),
    ],
)
def test_is_loopback(url: str | None, expected: bool) -> None:
    assert is_loopback(url) is expected
