"""Client settings precedence: argument, then environment, then config files, then defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from ddbkeys.connect import is_loopback, make_client, resolve_settings
from ddbkeys.errors import ConfigurationError

AWS_VARS = [
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
]


def signer_credentials(client: object) -> Any:
    """The credentials the client will sign with (a private botocore attribute, read only)."""
    return cast(Any, client)._request_signer._credentials


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS variables, and config files that we write ourselves."""
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return config


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
    # AWS_PROFILE is left to boto3 (test_credentials_resolve_as_boto3_resolves_them)
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


def test_client_uses_environment(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:4567")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    client = make_client()
    assert client.meta.endpoint_url == "http://127.0.0.1:4567"
    assert client.meta.region_name == "eu-west-3"


def test_credentials_resolve_as_boto3_resolves_them(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_PROFILE set and keys exported: boto3 (and the AWS CLI) sign with the exported keys,
    and so does ddbkeys (it signed with the profile's); --profile picks the profile's."""
    import boto3  # noqa: PLC0415

    clean_env.write_text(
        "[profile team]\nregion = sa-east-1\naws_access_key_id = AKIDTEAM\n"
        "aws_secret_access_key = secret\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "team")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXPORTED")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "exported-secret")
    boto3_keys = signed_with(
        boto3.Session().client("dynamodb")
    )  # (a fresh session: as a new process)
    ours = make_client()
    assert boto3_keys == "AKIDEXPORTED"
    assert signed_with(ours) == boto3_keys
    assert ours.meta.region_name == "sa-east-1"  # the profile still gives its settings
    assert signed_with(make_client(profile="team")) == "AKIDTEAM"


class _Sent(Exception):
    """(Stops a request once signed: nothing leaves the machine.)"""


def signed_with(client: Any) -> str:
    """The access key id a client signs its requests with (read from the Authorization header
    of a request stopped before it is sent)."""
    seen: list[str] = []

    def stop(request: Any, **_: Any) -> None:
        seen.append(request.headers["Authorization"].decode())
        raise _Sent

    client.meta.events.register("before-send.dynamodb", stop)
    with pytest.raises(_Sent):
        client.list_tables()
    return seen[0].split("Credential=")[1].split("/")[0]


def test_client_uses_profile_from_config_file(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean_env.write_text(
        "[profile team]\nregion = sa-east-1\naws_access_key_id = AKIDTEAM\n"
        "aws_secret_access_key = secret\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "team")
    client = make_client()
    assert client.meta.region_name == "sa-east-1"
    assert client.meta.endpoint_url == "https://dynamodb.sa-east-1.amazonaws.com"
    # The argument still wins over the profile's region.
    assert make_client(region="us-west-2").meta.region_name == "us-west-2"
    assert make_client(region="us-west-2", profile="team").meta.region_name == "us-west-2"


def test_missing_region_says_what_to_do(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"No AWS region set\. Pass --region"):
        make_client()


def test_unknown_profile_is_named(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match="AWS profile 'nope' not found"):
        make_client(profile="nope", region="us-east-1")


def test_bad_endpoint_url_is_named(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match="'localhost:8000' is not an http"):
        make_client(endpoint_url="localhost:8000")


def test_loopback_gets_region_and_dummy_credentials(clean_env: Path) -> None:
    client = make_client(endpoint_url="http://127.0.0.1:8000")
    assert client.meta.region_name == "us-east-1"
    credentials = signer_credentials(client)
    assert credentials is not None
    assert credentials.access_key == "ddbkeyslocal"


def test_loopback_keeps_real_credentials(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDREAL")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    client = make_client(endpoint_url="http://localhost:8000", region="eu-west-1")
    credentials = signer_credentials(client)
    assert credentials is not None
    assert credentials.access_key == "AKIDREAL"
    assert client.meta.region_name == "eu-west-1"


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
