"""The CLI's last resort and its refusal of malformed input, as a user meets them: one line,
an exit code, never a traceback."""

from __future__ import annotations

import base64
import json

import click
import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._cli.group import DdbKeysGroup
from ddbkeys.partition_keys._listing.checkpoint import digest
from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


@click.group(cls=DdbKeysGroup)
def broken() -> None:
    """A group whose command fails the way a bug would."""


@broken.command()
def crash() -> None:
    raise RuntimeError("something\nnobody foresaw")


def test_an_unforeseen_error_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DDBKEYS_DEBUG", raising=False)
    result = CliRunner().invoke(broken, ["crash"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: internal error (RuntimeError: something nobody foresaw); please report it. "
        "Set DDBKEYS_DEBUG=1 for the traceback.\n"
    )


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDBKEYS_DEBUG", "1")
    result = CliRunner().invoke(broken, ["crash"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert 'raise RuntimeError("something\\nnobody foresaw")' in result.stderr
    assert result.stderr.splitlines()[-1] == (
        "Error: internal error (RuntimeError: something nobody foresaw); please report it. "
        "Set DDBKEYS_DEBUG=1 for the traceback."
    )


def token(payload: object) -> str:
    """A token with a valid check around ``payload``."""
    data = base64.urlsafe_b64encode(json.dumps(payload).encode())
    return f"{data.decode()}.{digest(data)}"


def v2(positions: object) -> dict[str, object]:
    return {"v": 2, "table": "t", "keys": "pk:S", "method": "scan", "positions": positions}


@pytest.mark.parametrize(
    ("resume", "why"),
    [
        ("nonsense", "no check"),
        (token(v2([{"N": 5}])), "not a key: {'N': 5}"),
        (token(v2([{"X": "a"}])), "not a key: {'X': 'a'}"),
        (token(v2([{"S": "a", "N": "1"}])), "too many values to unpack (expected 1)"),
        (token(v2([])), "0 segments"),
        (token(v2([None]))[:-1], "its check does not match"),
        (base64.urlsafe_b64encode(b"[" * 100_000).decode(), "no check"),  # deeper than json goes
    ],
)
def test_malformed_resume_tokens(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, resume: str, why: str
) -> None:
    table = ddb_table_factory(("pk", "S"))
    result = CliRunner().invoke(
        cli,
        ["partition-keys", "-t", table, "--resume", resume, "--endpoint-url", ddb_endpoint_url],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: The resume token {resume[:40]!r}{'...' if len(resume) > 40 else ''} is not "
        f"one ddbkeys wrote, or it was cut short or changed ({why}): copy it whole from the "
        "listing that stopped.\n"
    )


def test_an_old_resume_token(ddb_endpoint_url: str, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"))
    old = base64.urlsafe_b64encode(b'{"v":1,"method":"scan","positions":[null]}').decode()
    result = CliRunner().invoke(
        cli, ["partition-keys", "-t", table, "--resume", old, "--endpoint-url", ddb_endpoint_url]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: The resume token is of version 1, and this ddbkeys reads version 2 only: the "
        "listing cannot go on from it; start it again.\n"
    )


def test_a_key_that_is_not_utf8(ddb_endpoint_url: str, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    url = ddb_endpoint_url
    result = CliRunner().invoke(
        cli,
        ["partition-keys", "index", "mark", "-t", table, "\udcffkey", "--endpoint-url", url],
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for KEYS: '\\\\udcffkey' is not valid UTF-8 text"
    )
    scan = ddb_table_factory.client.scan(TableName=table)
    assert scan["Count"] == 0


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf", "1e9"])
def test_timeout_must_be_a_positive_number(value: str) -> None:
    result = CliRunner().invoke(cli, ["partition-keys", "-t", "orders", "--timeout", value])
    assert result.exit_code == 2
    assert "Invalid value for '--timeout'" in result.stderr.splitlines()[-1]
