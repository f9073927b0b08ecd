"""``index drop`` / ``MarkerIndex.drop``: the index and its markers taken away, nothing of
yours with them, on DynamoDB Local (helper-89 C1: `index create` sent the user to the AWS CLI,
which deletes the GSI and leaves a marker in every collection, read by every later scan)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError, KeySchemaError
from ddbkeys._retry import RetryPolicy
from ddbkeys.aio import MarkerIndex as AsyncMarkerIndex
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index import marker_core
from ddbkeys.partition_keys._index.drop import IndexDropWarning
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.testing import Fault, FaultProxy, Faults
from tests.conftest import proxied_client
from tests.integration.test_index_async import run
from tests.integration.test_index_setup import ddbkeys
from tests.support.exports import consistent_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration
INDEX = "ddbkeys-partition-keys"


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drop waits ``marker_core.RECHECK`` + 1 s for a maintainer to look at the index again
    (10 + 1 s): 1 s in tests of other points (the defaults: in the follower's test)."""
    monkeypatch.setattr(marker_core, "RECHECK", 0.0)


def indexes(client: DynamoDBClient, table: str) -> list[str]:
    described = client.describe_table(TableName=table)["Table"]
    return [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])]


def marked_table(client: DynamoDBClient, factory: TableFactory) -> tuple[str, list[Any]]:
    """A table with 30 collections of 2 items each and the marker index backfilled, and an
    item of yours at the marker's key of collection c000 (a clash: data, never removed)."""
    table = factory(("pk", "S"), ("sk", "N"))
    for k in range(30):
        for sk in ("1", "2"):
            client.put_item(TableName=table, Item={"pk": {"S": f"c{k:03}"}, "sk": {"N": sk}})
    at_marker = {"pk": {"S": "c000"}, "sk": DEFAULT_MARKER_SORT_KEY["N"], "note": {"S": "mine"}}
    client.put_item(TableName=table, Item=at_marker)
    # Another tool's item whose ddbkeys_pk holds its own key, at another sort key: no marker
    # (helper-94 F1: the drop's filter left the sort key out, and removed it).
    client.put_item(
        TableName=table,
        Item={"pk": {"S": "c001"}, "sk": {"N": "5"}, "ddbkeys_pk": {"S": "c001"}},
    )
    index = MarkerIndex(client, table)
    index.create()
    report = index.backfill(record=False)
    assert report.written == 29 and len(report.clashes) == 1
    return table, sorted(consistent_items(client, table), key=json.dumps)


def test_drop_takes_the_index_and_its_markers_and_nothing_of_yours(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    quick: None,
) -> None:
    table, before = marked_table(ddb_client, ddb_table_factory)
    assert len(before) == 62 + 29  # (yours, and the markers)
    told: list[int] = []
    assert MarkerIndex(ddb_client, table).drop(told.append) == 29
    assert told == list(range(1, 30)) and indexes(ddb_client, table) == []
    left = consistent_items(ddb_client, table)
    assert len(left) == 62 and not [i for i in left if "ddbkeys_type" in i]
    assert {"S": "mine"} in [i.get("note") for i in left]  # (the clash: yours, kept)
    assert {"S": "c001"} in [i.get("ddbkeys_pk") for i in left]  # (yours, kept)
    listing = distinct_partition_keys(ddb_client, table)
    assert sorted(listing) == [f"c{k:03}" for k in range(30)]
    # Again: nothing there, nothing removed (and no error); asyncio the same.
    assert MarkerIndex(ddb_client, table).drop() == 0

    async def again(client: Any) -> int:
        return await AsyncMarkerIndex(client, table).drop()

    assert run(ddb_client, again) == 0


def test_drop_whose_answers_were_lost_still_drops(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    quick: None,
) -> None:
    """The UpdateTable's answer lost (the retry finds the index DELETING or gone), and a
    DeleteItem's (the retry's condition fails on a marker already gone): all removed."""
    for operation in ("UpdateTable", "DeleteItem"):
        table, _ = marked_table(ddb_client, ddb_table_factory)
        fault_proxy.set_faults(
            Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({operation}))
        )
        removed = MarkerIndex(proxied_client(fault_proxy), table).drop()
        assert fault_proxy.counts_by_operation[(operation, "lose_response")] == 1
        # (a lost DeleteItem's retry finds the marker gone, and counts it: the try whose answer
        # was lost removed it, as `index unmark` counts one)
        assert removed == 29
        assert indexes(ddb_client, table) == []
        assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_the_cli_asks_first_and_create_names_it(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    quick: None,
) -> None:
    table, before = marked_table(ddb_client, ddb_table_factory)
    runner = CliRunner()
    args = ["partition-keys", "index", "drop", "-t", table, "--endpoint-url", ddb_endpoint_url]
    refused = runner.invoke(cli, args)  # (off a terminal, without --yes)
    assert refused.exit_code == 2, refused.output
    assert "add --yes to go on" in refused.output
    assert sorted(consistent_items(ddb_client, table), key=json.dumps) == before
    dropped = runner.invoke(cli, [*args, "--yes"])
    assert dropped.exit_code == 0, dropped.output
    assert dropped.stdout == (
        f"Index ddbkeys-partition-keys of table {table} deleted; 29 marker(s) removed.\n"
    )
    again = json.loads(runner.invoke(cli, [*args, "--yes", "--output", "json"]).stdout)
    assert (again["deleted"], again["removed"]) == (False, 0)
    # `index create`'s warning sends the user here (it named the AWS CLI, which left the
    # markers): the command it prints, pasted as printed, takes the index away.
    small = ddb_table_factory(("pk", "B"), ("sk", "B"))
    for k in range(300):  # (tiny binary keys: markers dearer than what they save)
        ddb_client.put_item(
            TableName=small, Item={"pk": {"B": k.to_bytes(2, "big")}, "sk": {"B": b"\x01"}}
        )
    created = runner.invoke(
        cli, ["partition-keys", "index", "create", "-t", small, "--endpoint-url", ddb_endpoint_url]
    )
    assert created.exit_code == 0, created.output
    line = created.stderr.splitlines()[-1]
    assert "take it away with `ddbkeys partition-keys index drop" in line, line
    pasted = shlex.split(line.split("`")[1])
    assert pasted[:4] == ["ddbkeys", "partition-keys", "index", "drop"]
    assert runner.invoke(cli, pasted[1:]).exit_code == 0
    assert indexes(ddb_client, small) == []


def test_drop_takes_only_a_marker_index(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    quick: None,
) -> None:
    """An index of that name that is no marker index (helper-94 F7: a GSI of yours, gone), one
    keyed on another marker attribute than given (F6: dropped, 0 markers removed, exit 0), and
    the marker index under another name than given (F9: its markers removed, the index left in
    place, empty): each refused, nothing changed."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1"}})
    mine: Any = {
        "IndexName": "by-email",
        "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    ddb_client.update_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "email", "AttributeType": "S"}],
        GlobalSecondaryIndexUpdates=[{"Create": mine}],
    )
    with pytest.raises(ConfigurationError, match="projects ALL, not KEYS_ONLY"):
        MarkerIndex(ddb_client, table, index_name="by-email").drop()
    assert indexes(ddb_client, table) == ["by-email"]
    MarkerIndex(ddb_client, table, index_name="keys", marker_attribute="mk").create()
    runner = CliRunner()
    args = ["partition-keys", "index", "drop", "-t", table, "--endpoint-url", ddb_endpoint_url]
    keyed = runner.invoke(cli, [*args, "--index-name", "keys", "--yes"])
    assert keyed.exit_code == 1 and "keyed on 'mk', not on the marker attribute" in keyed.output
    named = runner.invoke(cli, [*args, "--marker-attribute", "mk", "--yes"])
    assert named.exit_code == 1, named.output
    assert "has no index 'ddbkeys-partition-keys', but 'keys' is keyed on" in named.output
    assert sorted(indexes(ddb_client, table)) == ["by-email", "keys"]
    done = runner.invoke(cli, [*args, "--index-name", "keys", "--marker-attribute", "mk", "--yes"])
    assert done.exit_code == 0, done.output
    assert indexes(ddb_client, table) == ["by-email"]


def test_a_follower_left_running_stops_and_the_drop_holds_at_the_defaults(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """helper-94 F4: a follower left running put back 220 of the 227 markers removed, within 5
    s (each marker deleted is a stream record), and the CLI then refused while the record named
    a maintainer, until --force, whatever its age (helper-95 F7: every drop after the natural
    `follow --backfill` needed it). Now the drop goes on, with a note; the follower, its last
    look at the index older than 10 s when the drop's deletes reach it, looks again, ends 1
    saying the index is gone, and marks nothing (the defaults: 10 s, the drop waits 11)."""
    table, _ = marked_table(ddb_client, ddb_table_factory)
    runner = CliRunner()
    where = ["-t", table, "--endpoint-url", ddb_endpoint_url]
    assert runner.invoke(cli, ["partition-keys", "index", "stream", *where]).exit_code == 0
    log = tmp_path / "follow.log"
    with log.open("wb") as err:
        follower = subprocess.Popen(
            ddbkeys(ddb_endpoint_url, "partition-keys", "index", "follow", "-t", table),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        ends = time.monotonic() + 60
        while (saved := StateStore(ddb_client, None).load(table, INDEX)) is None or not (
            saved.shards and saved.maintainer
        ):
            assert follower.poll() is None and time.monotonic() < ends, log.read_text()
            time.sleep(0.2)
        dropped = runner.invoke(cli, ["partition-keys", "index", "drop", *where, "--yes"])
        assert dropped.exit_code == 0, dropped.output
        assert "Note: the index's record names a maintainer (follow" in dropped.stderr
        assert dropped.stdout.endswith("29 marker(s) removed.\n")
        assert follower.wait(timeout=60) == 1
    finally:
        if follower.poll() is None:
            follower.kill()
    said = log.read_text()
    assert f"Index {INDEX!r} of table {table!r} is gone (`index drop`?)" in said, said
    assert indexes(ddb_client, table) == []
    assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_a_backfill_that_marks_after_the_index_is_gone_stops(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    """helper-94 F10: a backfill running while the index was dropped wrote its markers into a
    table without the index, exit 0. Its next marker, once its last look is ``recheck``
    seconds old, describes the table again: gone, an error, nothing written."""
    table, _ = marked_table(ddb_client, ddb_table_factory)
    index = MarkerIndex(ddb_client, table)
    assert index.unmark("c005") is True  # (its look at the index: now)
    other = MarkerIndex(ddb_client, table)
    other.core.recheck = 0.0  # (the drop waits 1 s)
    assert other.drop() == 28
    index.core.recheck = 0.0  # (as if 10 s had passed)
    with pytest.raises(ConfigurationError, match=r"is gone \(`index drop`\?\): no marker is"):
        index.mark("c005")
    assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_markers_of_other_settings_are_said_and_left(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    quick: None,
) -> None:
    """helper-95 F2: an index made with `--marker-sort-key '!m'`, its record in another state
    table: `index drop` with the defaults deleted the GSI, removed 0 markers and said nothing,
    exit 0, its markers left as data. Now it names them (a warning, in Python an
    IndexDropWarning; `warnings` in JSON) and what to pass; dropped again so, they go."""
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for k in range(5):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"c{k}"}, "sk": {"S": "a"}})
    made = MarkerIndex(ddb_client, table, marker_sort_key="!m")
    made.create()
    assert made.backfill(record=False).written == 5
    with pytest.warns(
        IndexDropWarning,
        match=r"5 items say they are ddbkeys' marker .* the first "
        r"at sort key '!m': .* --marker-sort-key",
    ) as said:
        assert MarkerIndex(ddb_client, table).drop() == 0
    assert said[0].filename == __file__  # (the line of yours that called it)
    runner = CliRunner()
    args = ["partition-keys", "index", "drop", "-t", table, "--endpoint-url", ddb_endpoint_url]
    again = runner.invoke(cli, [*args, "--yes", "--output", "json"])
    assert again.exit_code == 0, again.output
    answer = json.loads(again.stdout)
    assert answer["removed"] == 0 and "5 items say they are" in answer["warnings"][0]
    assert "Warning: Table" in again.stderr
    done = runner.invoke(cli, [*args, "--yes", "--marker-sort-key", "!m"])
    assert done.exit_code == 0, done.output
    assert done.stdout.endswith("5 marker(s) removed.\n") and "Warning" not in done.stderr
    assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_drop_refuses_an_index_with_a_range_key_or_on_a_table_without_sort_key(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """helper-95 F5: a KEYS_ONLY GSI of yours keyed on ddbkeys_pk and a range key, named with
    --index-name, was taken for a marker index and deleted (exit 0); with the marker index
    gone, a drop sent the user to drop it. F6: on a table without a sort key, a KEYS_ONLY GSI
    named as the marker index (never ddbkeys': `index create` refuses such a table) got a
    listing's advice, and no way to delete it."""
    table = ddb_table_factory(
        ("pk", "S"),
        ("sk", "S"),
        attributes=[("ddbkeys_pk", "S"), ("created", "N")],
        global_secondary_indexes=[
            {
                "IndexName": "mine-by-ddbkeys",
                "KeySchema": [
                    {"AttributeName": "ddbkeys_pk", "KeyType": "HASH"},
                    {"AttributeName": "created", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    runner = CliRunner()
    args = ["partition-keys", "index", "drop", "-t", table, "--endpoint-url", ddb_endpoint_url]
    named = runner.invoke(cli, [*args, "--index-name", "mine-by-ddbkeys", "--yes"])
    assert named.exit_code == 1, named.output
    assert (
        f"Error: Index 'mine-by-ddbkeys' of table {table!r} has the range key 'created' besides "
        "'ddbkeys_pk': it is not a marker index" in named.output
    ), named.output
    assert "name the marker index (--index-name)" in named.output
    with pytest.raises(ConfigurationError, match="has the range key 'created'"):
        MarkerIndex(ddb_client, table, index_name="mine-by-ddbkeys").drop()
    # No marker index: nothing to drop, and no pointing at that one (F5's second half).
    unnamed = runner.invoke(cli, [*args, "--yes"])
    assert unnamed.exit_code == 0, unnamed.output
    assert unnamed.stdout.endswith(": not there; 0 marker(s) removed.\n")
    assert indexes(ddb_client, table) == ["mine-by-ddbkeys"]

    keyless = ddb_table_factory(
        ("pk", "S"),
        attributes=[("ddbkeys_pk", "S")],
        global_secondary_indexes=[
            {
                "IndexName": "ddbkeys-partition-keys",
                "KeySchema": [{"AttributeName": "ddbkeys_pk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    refused = runner.invoke(cli, [*args[:4], keyless, *args[5:], "--yes"])
    assert refused.exit_code == 1, refused.output
    assert "is not one ddbkeys made, and holds no marker" in refused.output
    told = refused.output.split("`")[-2]  # (the command it names, pasted as printed)
    assert told == (
        f"aws dynamodb update-table --table-name {keyless} --global-secondary-index-updates "
        '\'[{"Delete": {"IndexName": "ddbkeys-partition-keys"}}]\''
    ), refused.output
    with pytest.raises(
        KeySchemaError, match="its index 'ddbkeys-partition-keys' is not one ddbkeys made"
    ):
        MarkerIndex(ddb_client, keyless).drop()
    assert indexes(ddb_client, keyless) == ["ddbkeys-partition-keys"]
    pasted = shlex.split(told)[3:]  # (what the AWS CLI would send)
    ddb_client.update_table(TableName=keyless, GlobalSecondaryIndexUpdates=json.loads(pasted[3]))
    assert indexes(ddb_client, keyless) in ([], ["ddbkeys-partition-keys"])  # (DELETING)


def test_a_backfill_whose_index_is_dropped_after_its_last_marker_does_not_say_finished(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, quick: None
) -> None:
    """helper-98 F3: a backfill whose index was dropped after its last marker (in its stream
    window, no write since) said "listings can prove the index from it", exit 0. It looks at
    the index again before it says it finished: gone, an error."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for k in range(5):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"c{k}"}, "sk": {"N": "1"}})
    index = MarkerIndex(ddb_client, table)
    index.create()

    def dropped_after_the_last(written: int) -> None:
        if written == 5:
            assert MarkerIndex(ddb_client, table).drop() == 5

    with pytest.raises(ConfigurationError, match=r"is gone \(`index drop`\?\)"):
        index.backfill(dropped_after_the_last)
    assert indexes(ddb_client, table) == []
    assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_an_index_made_again_during_the_drop_s_wait_is_said_and_its_markers_kept(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, quick: None
) -> None:
    """helper-100 F1: `index create` 1.5 s after `index drop` (in its wait): the drop removed
    the new index's markers, then waited 600 s for it to go, and said it was "still DELETING".
    Now it looks at the index after its wait: made again, an error, nothing removed."""
    table, before = marked_table(ddb_client, ddb_table_factory)
    made: list[bool] = []

    def sleep(seconds: float) -> None:  # (the drop's wait: the index made again meanwhile)
        if seconds >= 1.0 and not made:
            made.append(MarkerIndex(ddb_client, table).create())

    index = MarkerIndex(ddb_client, table, retry=RetryPolicy(sleep=sleep))
    with pytest.raises(ConfigurationError, match=r"made again during the drop .* no marker was"):
        index.drop()
    assert made == [True] and indexes(ddb_client, table) == [INDEX]
    assert sorted(consistent_items(ddb_client, table), key=json.dumps) == before
