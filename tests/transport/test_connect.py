"""The clients make_client builds, read back from botocore: the endpoint and region it found in
the environment or a profile, and the credentials it signs with (a request is signed and stopped
before it leaves the machine).

Not unit tests: what is checked is botocore's own resolution (its config files, its credential
chain, its signer) as make_client drives it, which only a real client shows. The precedence
rules and what make_client refuses before building a client are in tests/unit/test_connect.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from ddbkeys._connect import make_client


def signer_credentials(client: object) -> Any:
    """The credentials the client will sign with (a private botocore attribute, read only)."""
    return cast(Any, client)._request_signer._credentials


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
