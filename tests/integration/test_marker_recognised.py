"""Markers are recognised, never assumed (issue 21), against DynamoDB Local: only the item at the
marker's sort key whose marker attribute holds its own partition key is a marker. Data that
carries the marker attribute (another key's value, or its own key at another sort key) lists no
key from the index, never makes its collection look marked, and is never taken for a marker by
mark, unmark, verify, backfill, a reconciliation or a collection's id audit; in the sync and the
asyncio forms. Every marker written carries ``ddbkeys_type: marker``, which recognition never
reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.aio import _index as aio_index
from ddbkeys.aio._audit import audit_collection as aio_audit_collection
from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.ids._audit import audit_collection
from ddbkeys.partition_keys import MarkerClashError, MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.index import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.maintain import Outcome, reconcile
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_index_async import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

MARKER_SK = DEFAULT_MARKER_SORT_KEY["S"]
#: At the marker's sort key, naming another key: data (a clash), not d's marker.
SQUATTER = {"pk": {"S": "d"}, "sk": MARKER_SK, "ddbkeys_pk": {"S": "zzz"}}
#: A stray marker of another tool: the entity attribute alone makes nothing a marker.
LOOKALIKE = {**SQUATTER, "pk": {"S": "e"}, "ddbkeys_type": {"S": "marker"}}


def decoys(client: DynamoDBClient, factory: TableFactory) -> str:
    """Collections a to e, none marked, whose data carries the marker attribute."""
    table = factory(("pk", "S"), ("sk", "S"))
    for item in (
        {"pk": {"S": "a"}, "sk": {"S": "5"}, "ddbkeys_pk": {"S": "zzz"}},  # another key's value
        {"pk": {"S": "b"}, "sk": {"S": "x"}, "ddbkeys_pk": {"S": "b"}},  # its own, elsewhere
        {"pk": {"S": "c"}, "sk": {"S": "y"}},
        SQUATTER,
        {"pk": {"S": "d"}, "sk": {"S": "y"}},
        LOOKALIKE,
    ):
        client.put_item(TableName=table, Item=item)
    return table


def at_marker_key(client: DynamoDBClient, table: str, pk: str) -> dict[str, Any] | None:
    key = {"pk": {"S": pk}, "sk": MARKER_SK}
    return client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")


def test_data_with_the_marker_attribute_is_never_a_marker(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = decoys(ddb_client, ddb_table_factory)
    index = MarkerIndex(ddb_client, table)
    index.create()
    # The index holds a, b, d and e's data under "zzz" and "b": none is a marker.
    assert list(distinct_partition_keys(ddb_client, table, "index", trust_index=True)) == []
    verify = index.verify()
    assert (verify.collections, verify.markers, verify.orphans) == (5, 0, [])
    assert verify.missing == [{"S": "a"}, {"S": "b"}, {"S": "c"}]
    assert verify.clashes == [{"S": "d"}, {"S": "e"}]
    # A data item at the marker's key naming another key is a clash: never "already marked",
    # never removed, never reconciled away.
    for pk in ("d", "e"):
        with pytest.raises(MarkerClashError):
            index.mark(pk)
        assert index.unmark(pk) is False
        assert reconcile(index, {"S": pk}) is Outcome.CLASH
    assert at_marker_key(ddb_client, table, "d") == SQUATTER
    assert at_marker_key(ddb_client, table, "e") == LOOKALIKE
    report = index.backfill(state_table=None)
    assert (report.written, report.present, report.clashes) == (3, 0, [{"S": "d"}, {"S": "e"}])
    assert sorted(distinct_partition_keys(ddb_client, table, "index", trust_index=True)) == [
        "a",
        "b",
        "c",
    ]
    verify = index.verify()
    assert (verify.missing, verify.orphans, verify.markers) == ([], [], 3)
    # Every marker written says what it is (for other readers).
    marker = at_marker_key(ddb_client, table, "a")
    assert marker is not None and marker["ddbkeys_type"] == {"S": "marker"}
    # The table's own listings never took the decoys for markers.
    for method in ("scan", "skip", "skip-pages"):
        keys = sorted(distinct_partition_keys(ddb_client, table, method))
        assert keys == ["a", "b", "c", "d", "e"], method


def test_a_reconciled_marker_carries_the_entity_attribute(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "x"}})
    index = MarkerIndex(ddb_client, table)
    index.create()
    assert reconcile(index, {"S": "a"}) is Outcome.MARKED
    marker = at_marker_key(ddb_client, table, "a")
    assert marker is not None and marker["ddbkeys_type"] == {"S": "marker"}
    # Recognition never reads it: without it, the marker is still one (and is removed).
    ddb_client.update_item(
        TableName=table,
        Key={"pk": {"S": "a"}, "sk": MARKER_SK},
        UpdateExpression="REMOVE ddbkeys_type",
    )
    assert sorted(distinct_partition_keys(ddb_client, table, "index", trust_index=True)) == ["a"]
    assert index.unmark("a") is True


def test_the_asyncio_forms_recognise_markers_alike(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = decoys(ddb_client, ddb_table_factory)

    async def body(client: Any) -> None:
        index = aio_index.MarkerIndex(client, table)
        await index.create()
        assert [k async for k in await aio_keys(client, table, "index", trust_index=True)] == []
        for pk in ("d", "e"):
            with pytest.raises(MarkerClashError):
                await index.mark(pk)
            assert await index.unmark(pk) is False
            assert await aio_index.reconcile(index, {"S": pk}) is Outcome.CLASH
        report = await index.backfill(state_table=None)
        assert (report.written, report.present) == (3, 0)
        assert sorted(
            [k async for k in await aio_keys(client, table, "index", trust_index=True)]
        ) == [
            "a",
            "b",
            "c",
        ]
        verify = await index.verify()
        assert (verify.missing, verify.orphans, verify.markers) == ([], [], 3)
        assert verify.clashes == [{"S": "d"}, {"S": "e"}]

    run(ddb_client, body)
    assert at_marker_key(ddb_client, table, "d") == SQUATTER
    assert at_marker_key(ddb_client, table, "e") == LOOKALIKE
    marker = at_marker_key(ddb_client, table, "b")
    assert marker is not None and marker["ddbkeys_type"] == {"S": "marker"}


def test_the_collection_audit_counts_an_id_that_carries_the_marker_attribute(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Ids 1 to 3 of collection a, id 2 holding ``ddbkeys_pk`` (another tool's), and a's
    marker: the marker is not an id, id 2 is (sync and asyncio)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in (1, 2, 3):
        item: dict[str, Any] = {"pk": {"S": "a"}, "sk": {"N": str(n)}}
        if n == 2:
            item["ddbkeys_pk"] = {"S": "a"}
        ddb_client.put_item(TableName=table, Item=item)
    index = MarkerIndex(ddb_client, table)
    index.create()
    assert index.mark("a") is True
    report = audit_collection(ddb_client, table, "a")
    assert (report.count, report.first, report.last, report.gaps) == (3, 1, 3, [])

    async def body(client: Any) -> tuple[int, list[Any]]:
        found = await aio_audit_collection(client, table, "a")
        return found.count, found.gaps

    assert run(ddb_client, body) == (3, [])


def test_the_collection_audit_knows_a_marker_at_another_sort_key(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Ids 1 to 3 of collection a and its marker at sort key -1 (an index made with
    ``marker_sort_key=-1``): told so, the audit does not count the marker as a number below 1
    (sync, asyncio and ``ids audit --marker-sort-key``)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in (1, 2, 3):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": str(n)}})
    index = MarkerIndex(ddb_client, table, marker_sort_key=-1)
    index.create()
    assert index.mark("a") is True
    assert audit_collection(ddb_client, table, "a").below_start == [-1]  # (not told)
    report = audit_collection(ddb_client, table, "a", marker_sort_key=-1)
    assert (report.count, report.last, report.below_start, report.gaps) == (3, 3, [], [])

    async def body(client: Any) -> list[int]:
        return (await aio_audit_collection(client, table, "a", marker_sort_key=-1)).below_start

    assert run(ddb_client, body) == []
    args = ["ids", "audit", "-t", table, "-k", "a", "--endpoint-url", ddb_endpoint_url]
    told = CliRunner().invoke(cli, [*args, "--marker-sort-key", "-1"])
    assert told.exit_code == 0 and "below 1" not in told.stdout, told.output
    assert "below 1: 1: -1" in CliRunner().invoke(cli, args).stdout
    wrong = CliRunner().invoke(cli, [*args, "--marker-sort-key", "x"])
    assert wrong.exit_code == 2 and "'x' is not a number" in wrong.stderr, wrong.output
