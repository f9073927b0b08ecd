"""The CLI's last resort and its refusal of malformed input, as a user meets them: one line,
an exit code, never a traceback."""

from __future__ import annotations

import base64
import json

import click
import pytest
from click.testing import CliRunner

from ddbkeys.cli import cli
from ddbkeys.cli.common import DdbKeysGroup
from ddbkeys.testing.tables import TableFactory

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
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


@pytest.mark.parametrize(
    "resume",
    [
        "\udcff\udcfeabc",  # not UTF-8 (as a shell passes such bytes to Python)
        "nonsense",
        token({"v": 1, "method": "scan", "positions": [{"N": 5}]}),
        token({"v": 1, "method": "scan", "positions": [{"X": "a"}]}),
        token({"v": 1, "method": "scan", "positions": [{"S": "a", "N": "1"}]}),
        token({"v": 1, "method": "scan", "positions": []}),
        base64.urlsafe_b64encode(b"[" * 100_000).decode(),  # deeper than json can go
    ],
)
def test_malformed_resume_tokens(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, resume: str
) -> None:
    table = ddb_table_factory(("pk", "S"))
    result = CliRunner().invoke(
        cli,
        ["partition-keys", "-t", table, "--resume", resume, "--endpoint-url", ddb_endpoint_url],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: The resume token {resume[:40]!r}... is not one ddbkeys wrote: copy it whole "
        "from the listing that stopped.\n"
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


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_timeout_must_be_a_positive_number(value: str) -> None:
    result = CliRunner().invoke(cli, ["partition-keys", "-t", "orders", "--timeout", value])
    assert result.exit_code == 2
    assert "Invalid value for '--timeout'" in result.stderr.splitlines()[-1]
