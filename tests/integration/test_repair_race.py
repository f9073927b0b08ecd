"""`index repair` racing a maintainer (issue 33, found by a tester): between repair's verify
and its writes, the follower removes an orphan's marker (or marks a collection repair found
unmarked). The marker repair meant to remove is already gone, the one it meant to write is
already there: the index is as repair wanted, so it is repaired, exit 0 ("NOT REPAIRED: 1: w4
left as they are" before). The race is made deterministic: verify's flow is wrapped so that
the maintainer's writes land right after it, before repair's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.partition_keys._index import backfill
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._proof.evidence import Evidence
from tests.integration.test_marker_lifecycle import item, marked

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys._core.steps import Flow
    from ddbkeys.partition_keys._index.markers import VerifyReport

pytestmark = pytest.mark.integration


def set_up(client: DynamoDBClient, table: str) -> MarkerIndex:
    """Collections a (marked), w4 (an orphan: its data gone, its marker left), m (data and no
    marker), y (an orphan whose marker a writer will replace with data)."""
    index = MarkerIndex(client, table)
    for pk in ("a", "w4", "m", "y"):
        client.put_item(TableName=table, Item=item(pk, 1))
    for pk in ("a", "w4", "y"):
        assert index.mark(pk)
    for pk in ("w4", "y"):
        client.delete_item(TableName=table, Key=item(pk, 1))
    return index


def racing(monkeypatch: pytest.MonkeyPatch, after_verify: Callable[[VerifyReport], object]) -> None:
    """Repair's verify runs ``after_verify`` (the maintainer's writes) once it has
    read the table and the index, before it returns its report to repair."""
    verify = verify_flow

    def verify_then_race(
        core: MarkerCore, saved: Evidence | None, state_table: str | None = None
    ) -> Flow[VerifyReport]:
        report = yield from verify(core, saved, state_table)
        after_verify(report)
        return report

    monkeypatch.setattr(backfill, "verify_flow", verify_then_race)


def test_a_marker_already_gone_or_already_written_is_repaired(
    ddb_client: DynamoDBClient, streamed_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = streamed_table
    index = set_up(ddb_client, table)
    seen: list[VerifyReport] = []

    def follower(report: VerifyReport) -> None:  # what `index follow` does meanwhile
        seen.append(report)
        assert index.unmark("w4") and index.mark("m")

    racing(monkeypatch, follower)
    report = index.repair()
    assert sorted(k["S"] for k in seen[0].orphans) == ["w4", "y"]
    assert [k["S"] for k in seen[0].missing] == ["m"]
    assert report.repaired and report.unfixed == []
    assert sorted(k["S"] for k in report.fixed_orphans) == ["w4", "y"]
    assert [k["S"] for k in report.fixed_missing] == ["m"]
    assert marked(ddb_client, table) == ["a", "m"]


def test_the_cli_says_repaired_and_exits_0(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = streamed_table
    index = set_up(ddb_client, table)
    racing(monkeypatch, lambda _: index.unmark("w4"))
    args = ["partition-keys", "index", "repair", "-t", table, "--endpoint-url", ddb_endpoint_url]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "REPAIRED", result.stdout
    assert marked(ddb_client, table) == ["a", "m"]


def test_data_written_at_the_orphans_key_meanwhile_is_left_and_named(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The negative control: an item that is not a marker now sits at the orphan's marker
    key (a writer's): not the state repair wanted, so it is named and the exit is 1."""
    table = streamed_table
    index = set_up(ddb_client, table)
    key: dict[str, Any] = index.marker_key("y")

    def writer(_: VerifyReport) -> None:
        ddb_client.put_item(TableName=table, Item={**key, "data": {"S": "a writer's"}})

    racing(monkeypatch, writer)
    args = ["partition-keys", "index", "repair", "-t", table, "--endpoint-url", ddb_endpoint_url]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "NOT REPAIRED: 1: y left as they are" in result.stdout, result.stdout
    assert marked(ddb_client, table) == ["a", "m"]
