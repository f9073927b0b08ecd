"""The marker index's decisions without a server or a client: each flow of its core driven by
hand with scripted answers (what mark, unmark, backfill, verify and a reconciliation send and
conclude from each answer), the pagers, and the follower's handling of stream records (the
evidence rule is in test_evidence.py)."""

from __future__ import annotations

import copy
import itertools
import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from ddbkeys._core.steps import Flow, Pause, Request
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import ConfigurationError, DdbKeysError, KeySchemaError
from ddbkeys._retry import RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo, table_info
from ddbkeys.partition_keys._index.backfill import backfill_flow
from ddbkeys.partition_keys._index.create import create_flow
from ddbkeys.partition_keys._index.drop import drop_flow
from ddbkeys.partition_keys._index.maintain import (
    MAX_ROUNDS,
    Outcome,
    Step,
    next_step,
    reconcile_flow,
)
from ddbkeys.partition_keys._index.marker_core import RECHECK, MarkerCore
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_MARKER_SORT_KEY,
    BackfillReport,
    IndexPages,
    MarkerClashError,
    Markers,
    SkipPages,
    check_index,
    create_request,
    emptied_meanwhile,
    index_status,
    marker_shaped,
    marker_sort_key,
    marker_table,
    put_answer,
    read_collection,
)
from ddbkeys.partition_keys._index.state import SAVES, update_request
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._listing.base import MAX_SORT_KEY
from ddbkeys.partition_keys._listing.choice import index_ready
from ddbkeys.partition_keys._listing.recognise import same_value
from ddbkeys.partition_keys._proof.evidence import DAY, GONE_AFTER, ShardMark
from ddbkeys.partition_keys._streams.follow import FollowCore
from ddbkeys.partition_keys._streams.follow_state import (
    FollowReport,
    FollowState,
    StopOn,
    Stopped,
    gone_marks,
    keys_of_records,
    note_page,
    ready,
    said_again,
)

SK = DEFAULT_MARKER_SORT_KEY["N"]
M = "ddbkeys_pk"
RULE = Markers("pk", "sk", M, SK)


def info(**changes: Any) -> TableInfo:
    fields: dict[str, Any] = {
        "name": "orders",
        "partition_key": KeyAttribute("pk", "S"),
        "sort_key": KeyAttribute("sk", "N"),
        "replica_regions": (),
        "index_projections": {"ddbkeys-partition-keys": "KEYS_ONLY"},
        "item_count": 10,
        "size_bytes": 1000,
        "index_statuses": {"ddbkeys-partition-keys": "ACTIVE"},
        "index_hash_keys": {"ddbkeys-partition-keys": M},
    }
    fields.update(changes)
    return TableInfo(**fields)


def index(**changes: Any) -> MarkerCore:
    """A marker index's core that knows its table: its flows need no DescribeTable."""
    return MarkerCore("orders", info=info(**changes), deadline=5.0)


def failure(code: str, **extra: Any) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": code}, **extra}
    return ClientError(response, "Op")


def described(status: str | None) -> dict[str, Any]:
    """DescribeTable's answer for table orders, its marker index ``status`` (None: none)."""
    names = [("pk", "S", "HASH"), ("sk", "N", "RANGE")]
    index = {
        "IndexName": "ddbkeys-partition-keys",
        "KeySchema": [{"AttributeName": M, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
        "IndexStatus": status,
    }
    return {
        "Table": {
            "TableName": "orders",
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in names],
            "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in names],
            **({"GlobalSecondaryIndexes": [index]} if status else {}),
        }
    }


def play(flow: Flow[Any], script: list[tuple[str, Any]]) -> tuple[Any, list[Request]]:
    """Run ``flow``, answering its requests in turn from ``script`` ((operation, answer or
    exception)); pauses pass at once. The flow's result and the requests it sent."""
    sent: list[Request] = []
    answers = iter(script)
    try:
        step = next(flow)
        while True:
            if isinstance(step, Pause):
                step = flow.send(None)
                continue
            assert isinstance(step, Request), step
            sent.append(step)
            operation, answer = next(answers)
            assert step.operation == operation, (step.operation, operation)
            step = flow.throw(answer) if isinstance(answer, Exception) else flow.send(answer)
    except StopIteration as done:
        assert next(answers, None) is None, "the flow ended before the script"
        return done.value, sent


# --- pure decisions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "old", "expected"),
    [
        (True, None, True),  # written
        (False, {"pk": {"S": "a"}, "sk": SK, M: {"S": "a"}}, False),  # a marker was there
        (False, {"pk": {"S": "a"}, "sk": SK, "note": {"S": "data"}}, None),  # data: a clash
        (False, {"pk": {"S": "a"}, "sk": SK, M: {"S": "zzz"}}, None),  # another key: data
        (False, {"pk": {"S": "1"}, "sk": SK, M: {"N": "1"}}, None),  # another type: data
        (False, {}, None),  # nothing said: not known to be a marker
    ],
)
def test_put_answer(written: bool, old: dict[str, Any] | None, expected: bool | None) -> None:
    assert put_answer(written, old, RULE) is expected


MARKER = {"pk": {"S": "a"}, "sk": SK, M: {"S": "a"}, "ddbkeys_v": {"S": "v1"}}
DATA = {"pk": {"S": "a"}, "sk": {"N": "1"}}
LOW = {"pk": {"S": "a"}, "sk": {"N": "-1E+100"}}  # below the marker's -(10**38 - 1)


@pytest.mark.parametrize(
    ("items", "more", "data", "has_marker", "look_up"),
    [
        ([], False, False, False, False),  # empty
        ([MARKER], False, False, True, False),  # a marker alone
        ([MARKER, DATA], True, True, True, False),  # both
        ([DATA], False, True, False, False),  # data, no marker (all read)
        # Two data items, or more than read: the marker, were it there, would have come first.
        ([DATA, {"sk": {"N": "2"}}], False, True, False, False),
        ([DATA], True, True, False, False),
        # Data sorting before the marker's key: it may come later, so it is looked up.
        ([LOW, {"sk": {"N": "2"}}], False, True, False, True),
        ([LOW], True, True, False, True),
        ([{"pk": {"S": "a"}, "sk": SK}], False, True, False, False),  # data at the marker's key
        # The marker attribute on data: at the marker's key with another key, or elsewhere.
        ([{**MARKER, M: {"S": "zzz"}}], False, True, False, False),
        ([{**DATA, M: {"S": "a"}}], False, True, False, False),
        ([{**DATA, M: {"S": "a"}}, MARKER], False, True, True, False),
    ],
)
def test_read_collection(
    items: list[dict[str, Any]], more: bool, data: bool, has_marker: bool, look_up: bool
) -> None:
    found, marker, must = read_collection(items, more, RULE)
    assert (found, marker is not None, must) == (data, has_marker, look_up)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"S": "a"}, {"S": "a"}, True),
        ({"S": "1"}, {"N": "1"}, False),  # another type
        ({"N": "1"}, {"N": "1.0"}, True),  # numbers by value, as DynamoDB compares them
        ({"B": b"x"}, {"B": bytearray(b"x")}, True),
        ({"S": "a"}, None, False),  # missing
        ({"L": []}, {"L": []}, False),  # not a key value
    ],
)
def test_same_value(a: Any, b: Any, same: bool) -> None:
    assert same_value(a, b) is same and same_value(b, a) is same


@pytest.mark.parametrize(
    ("data", "marker", "step"),
    [
        (True, None, Step.MARK),
        (False, MARKER, Step.UNMARK),
        (True, MARKER, Step.DONE),
        (False, None, Step.DONE),
    ],
)
def test_next_step(data: bool, marker: dict[str, Any] | None, step: Step) -> None:
    assert next_step(data, marker) is step


def test_marker_sort_key_index_status_and_check() -> None:
    assert marker_sort_key(info()) == SK
    assert marker_sort_key(info(), 7) == {"N": "7"}
    with pytest.raises(KeySchemaError, match="has no sort key"):
        marker_sort_key(info(sort_key=None))
    assert index_status(info(), "ddbkeys-partition-keys") == "ACTIVE"
    assert index_status(info(index_statuses={}), "ddbkeys-partition-keys") == "ACTIVE"
    assert index_status(info(), "other") is None
    check_index(info(), "ddbkeys-partition-keys", M)
    with pytest.raises(ConfigurationError, match="has no index 'other'"):
        check_index(info(), "other", M)
    with pytest.raises(ConfigurationError, match="projects ALL, not KEYS_ONLY"):
        check_index(info(index_projections={"x": "ALL"}, index_hash_keys={"x": M}), "x", M)


def test_an_index_with_a_range_key_is_no_marker_index() -> None:
    """helper-95 F5: a KEYS_ONLY GSI of yours on ddbkeys_pk and a range key passed the check,
    and `index drop --index-name` deleted it."""
    ranged = info(index_range_keys={"ddbkeys-partition-keys": "created"})
    with pytest.raises(ConfigurationError) as refused:
        check_index(ranged, "ddbkeys-partition-keys", M, active=False)
    assert str(refused.value) == (
        "Index 'ddbkeys-partition-keys' of table 'orders' has the range key 'created' besides "
        "'ddbkeys_pk': it is not a marker index (one is keyed on the marker attribute alone); "
        "name the marker index (index_name=), or leave this one to what it serves."
    )
    assert index_ready(info(), "ddbkeys-partition-keys", M)
    assert not index_ready(ranged, "ddbkeys-partition-keys", M)  # (auto lists otherwise)
    assert marker_shaped(info(), "ddbkeys-partition-keys", M)
    assert not marker_shaped(ranged, "ddbkeys-partition-keys", M)
    assert not marker_shaped(info(), "ddbkeys-partition-keys", "mk")
    assert not marker_shaped(info(index_projections={}), "ddbkeys-partition-keys", M)
    described = table_info(
        {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "mine",
                    "KeySchema": [
                        {"AttributeName": M, "KeyType": "HASH"},
                        {"AttributeName": "created", "KeyType": "RANGE"},
                    ],
                },
                {"IndexName": "plain", "KeySchema": [{"AttributeName": M, "KeyType": "HASH"}]},
            ],
        },
        "orders",
    )
    assert described.index_range_keys == {"mine": "created"}
    assert described.index_hash_keys == {"mine": M, "plain": M}


def test_a_table_without_sort_key_is_told_how_to_delete_an_index_named_as_the_marker_s() -> None:
    """helper-95 F6: `index drop` there said a listing's "list its keys with a plain scan",
    and the index could not be removed: no marker can be there and `index create` refuses such
    a table, so ddbkeys made none; the error names the command that deletes it."""
    keyless = info(sort_key=None)
    with pytest.raises(KeySchemaError) as refused:
        MarkerCore("orders", info=keyless)
    assert "its index 'ddbkeys-partition-keys' is not one ddbkeys made" in str(refused.value)
    assert str(refused.value).endswith(
        "`aws dynamodb update-table --table-name orders --global-secondary-index-updates "
        '\'[{"Delete": {"IndexName": "ddbkeys-partition-keys"}}]\'`.'
    )
    with pytest.raises(KeySchemaError, match="list its keys with a plain scan"):
        marker_table(info(sort_key=None, index_projections={}), "ddbkeys-partition-keys", M)
    with pytest.raises(KeySchemaError, match="list its keys with a plain scan"):  # (not one)
        marker_table(info(sort_key=None), "ddbkeys-partition-keys", "mk")
    marker_table(info(), "ddbkeys-partition-keys", M)


@pytest.mark.parametrize(
    ("description", "throughput"),
    [
        ({"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"}}, None),
        (
            {"ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4}},
            {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
        ),
    ],
)
def test_create_request(description: dict[str, Any], throughput: Any) -> None:
    request = create_request(description, "orders", "ix", M, "S")
    create = request["GlobalSecondaryIndexUpdates"][0]["Create"]
    assert create.get("ProvisionedThroughput") == throughput
    assert create["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert request["AttributeDefinitions"] == [{"AttributeName": M, "AttributeType": "S"}]


def test_update_request() -> None:
    request = update_request(
        "state", {"id": {"S": "t/i"}}, {"b": 1.5, "a": "x", "s": ["z", "y"]}, remove=("c",)
    )
    assert request["UpdateExpression"] == "SET #a0 = :v0, #a1 = :v1, #a2 = :v2 REMOVE #r0"
    assert request["ExpressionAttributeNames"] == {"#a0": "a", "#a1": "b", "#a2": "s", "#r0": "c"}
    assert request["ExpressionAttributeValues"] == {
        ":v0": {"S": "x"},
        ":v1": {"N": "1.5"},
        ":v2": {"SS": ["y", "z"]},
    }


# --- the flows, driven by hand -------------------------------------------------------------


def test_mark_reads_each_answer() -> None:
    marker = index()
    deadline = marker.begin()
    written, sent = play(marker.mark("a", deadline), [("put_item", {})])
    assert written is True
    params = sent[0].params
    assert params["Item"]["pk"] == params["Item"][M] == {"S": "a"} and params["Item"]["sk"] == SK
    assert params["ConditionExpression"] == "attribute_not_exists(#pk)"
    assert params["Item"]["ddbkeys_type"] == {"S": "marker"}
    there = failure("ConditionalCheckFailedException", Item=MARKER)
    assert play(marker.mark("a", deadline), [("put_item", there)])[0] is False
    squatter = failure("ConditionalCheckFailedException", Item={"note": {"S": "x"}})
    with pytest.raises(MarkerClashError, match="cannot be marked") as clash:
        play(marker.mark("a", deadline), [("put_item", squatter)])
    assert clash.value.key == {"S": "a"}
    # Throttled, then written: the one retry layer sends it again.
    throttled = failure("ProvisionedThroughputExceededException")
    assert play(marker.mark("a", deadline), [("put_item", throttled), ("put_item", {})])[0]
    with pytest.raises(DdbKeysError, match="ValidationException"):
        play(marker.mark("a", deadline), [("put_item", failure("ValidationException"))])


def test_unmark_checks_the_index_once_and_reads_the_condition() -> None:
    marker = index()
    removed, sent = play(marker.unmark("a", marker.begin()), [("delete_item", {})])
    assert removed is True and sent[0].params["ConditionExpression"] == "#m = #pk"
    assert sent[0].params["ExpressionAttributeNames"] == {"#m": M, "#pk": "pk"}
    gone = failure("ConditionalCheckFailedException")
    assert play(marker.unmark("a", marker.begin()), [("delete_item", gone)])[0] is False
    with pytest.raises(ConfigurationError, match="has no index"):
        play(index(index_projections={}).unmark("a", marker.begin()), [])


def test_nothing_is_written_unless_the_index_is_keyed_on_the_marker_and_active() -> None:
    """An index seen building is described again before a refusal; one that is still not
    ACTIVE, or keyed on another attribute, is refused with nothing sent to the table."""
    building = index(index_statuses={"ddbkeys-partition-keys": "CREATING"})

    with pytest.raises(ConfigurationError, match="is CREATING, not ACTIVE: wait until it is"):
        play(building.mark("a"), [("describe_table", described("CREATING"))])
    written, sent = play(
        building.mark("a"),
        [("describe_table", described("ACTIVE")), ("put_item", {})],
    )
    assert written is True and [r.operation for r in sent] == ["describe_table", "put_item"]
    other = index(index_hash_keys={"ddbkeys-partition-keys": "owner"})
    with pytest.raises(ConfigurationError, match="is keyed on 'owner', not on the marker"):
        play(other.mark("a"), [])
    # A maintainer given no attribute takes the index's own.
    assert play(other.maintained(), [])[0] is other.info
    assert other.attribute == "owner"


def test_a_look_at_the_index_older_than_recheck_is_taken_again_before_a_change() -> None:
    """helper-94 F10: a maintainer that checked the index once, at its start, marked into a
    table whose index was dropped since. Its look is trusted ``recheck`` seconds (the clock
    its retry policy keeps); then the table is described again: an index gone or DELETING
    is an error, and nothing is sent to the table."""
    now = [100.0]
    marker = MarkerCore(
        "orders", info=info(), deadline=5.0, retry=RetryPolicy(clock=lambda: now[0])
    )
    assert marker.recheck == RECHECK == 10.0
    assert [r.operation for r in play(marker.mark("a"), [("put_item", {})])[1]] == ["put_item"]
    now[0] += 9.9  # (trusted still: nothing but the write)
    assert [r.operation for r in play(marker.unmark("a"), [("delete_item", {})])[1]] == [
        "delete_item"
    ]
    now[0] += 0.1
    _, sent = play(marker.mark("a"), [("describe_table", described("ACTIVE")), ("put_item", {})])
    assert [r.operation for r in sent] == ["describe_table", "put_item"]
    for status, said in (("DELETING", "is being deleted"), (None, "is gone")):
        now[0] += 10.0
        with pytest.raises(ConfigurationError, match=f"{said} .* no marker is written"):
            play(marker.mark("a"), [("describe_table", described(status))])
        # Said again at once, nothing sent (the Lambda handler goes on to the next collection)
        with pytest.raises(ConfigurationError, match=said):
            play(marker.mark("b"), [])
        now[0] += 10.0
        with pytest.raises(ConfigurationError, match=said):
            play(marker.unmark("a"), [("describe_table", described(status))])
    # Made again: marked again.
    now[0] += 10.0
    assert play(marker.mark("a"), [("describe_table", described("ACTIVE")), ("put_item", {})])[0]


def test_a_put_sent_after_a_long_wait_or_on_an_old_description_looks_again_first() -> None:
    """A throttled put retried after a wait past ``recheck`` describes the table again before
    it is sent again (a put is never sent on a look older than ``recheck``); a core whose
    description is that old, never checked (a warm Lambda environment's), the same."""
    now = [0.0]
    marker = MarkerCore(
        "orders", info=info(), deadline=None, retry=RetryPolicy(clock=lambda: now[0])
    )
    flow, sent = marker.mark("a"), []
    throttled = failure("ProvisionedThroughputExceededException")
    answers = iter([throttled, described("ACTIVE"), {}])
    step = next(flow)
    try:
        while True:
            if isinstance(step, Pause):
                now[0] += 20.0  # (as if the wait had been that long: the throttle lasted)
                step = flow.send(None)
                continue
            assert isinstance(step, Request)
            sent.append(step.operation)
            answer = next(answers)
            step = flow.throw(answer) if isinstance(answer, Exception) else flow.send(answer)
    except StopIteration as done:
        assert done.value is True
    assert sent == ["put_item", "describe_table", "put_item"] and now[0] >= 10.0
    old = MarkerCore("orders", info=info(), deadline=5.0, retry=RetryPolicy(clock=lambda: now[0]))
    now[0] += 3600.0
    # It had seen the index ACTIVE: gone since, it says so (helper-100 F2: it told the operator
    # who had just dropped it to create it), and again at once; a core that never saw the index
    # says the table has none.
    gone: list[list[tuple[str, Any]]] = [[("describe_table", described(None))], []]
    for given in gone:
        with pytest.raises(ConfigurationError, match=r"is gone \(`index drop`\?\)"):
            play(old.mark("a"), given)
    never = MarkerCore("orders", deadline=5.0, retry=RetryPolicy(clock=lambda: now[0]))
    with pytest.raises(ConfigurationError, match=r"has no index .* Create it"):
        play(never.mark("a"), [("describe_table", described(None))])


def test_status_and_check_from_a_known_description_send_nothing() -> None:
    marker = index(index_statuses={"ddbkeys-partition-keys": "CREATING"})
    assert play(marker.status(False), [])[0] == "CREATING"
    names = [("pk", "S", "HASH"), ("sk", "N", "RANGE")]
    fresh = {
        "Table": {  # the index is gone since
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in names],
            "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in names],
        }
    }
    assert play(marker.status(True), [("describe_table", fresh)])[0] is None
    assert marker.info is not None and marker.info.index_projections == {}


def page(*keys: str, last: bool = True, markers: bool = False) -> dict[str, Any]:
    """A Scan page of data items (or, ``markers``, of the index's markers) of ``keys``."""
    items = [{"pk": {"S": k}, "sk": SK if markers else {"N": "1"}} for k in keys]
    if markers:
        items = [{**item, M: item["pk"]} for item in items]
    answer: dict[str, Any] = {"Items": items, "ScannedCount": len(keys)}
    if not last:
        answer["LastEvaluatedKey"] = {**items[-1]}
    return answer


def test_backfill_reconciles_each_key_once_and_reports_clashes() -> None:
    # (a stream: a table known to have none is described again, its stream maybe on since)
    marker = index(stream_arn="arn:aws:dynamodb:r:1:table/orders/stream/2026-11-28T18:00:00.000")
    progress: list[int] = []
    report, sent = play(
        backfill_flow(marker, progress.append, None),
        [
            ("scan", page("a", "a", "b", last=False)),
            ("query", query(DATA)),  # a: data, no marker: marked
            ("put_item", {}),
            ("query", query(DATA, MARKER)),
            ("query", query(DATA)),  # b: data at the marker's key: a clash
            ("put_item", failure("ConditionalCheckFailedException", Item={"x": {"S": "1"}})),
            ("scan", page("b", "c", "d", "e", "f")),  # b again (the page's start): handed out once
            ("query", query(DATA, MARKER)),  # c: marked already
            ("query", query(MARKER)),  # d: its marker alone: removed
            ("delete_item", {}),
            ("query", query()),
            # e: emptied by the application since the scan found it: nothing to mark, and not
            # "already there" (helper-89 C8: 46 of these on a fresh index)
            ("query", query()),
            # f: an id strategy's counter alone: nothing to mark, and not emptied (helper-101
            # F4: "1 emptied meanwhile" at every run)
            (
                "query",
                query({"pk": {"S": "f"}, "sk": {"N": "0"}, "ddbkeys_type": {"S": "counter"}}),
            ),
        ],
    )
    assert (report.written, report.present, report.removed, report.emptied) == (1, 1, 1, 1)
    assert report.clashes == [{"S": "b"}]
    assert progress == [1, 1, 1, 1, 1, 1]
    assert emptied_meanwhile(report) == ", 1 emptied meanwhile"
    assert emptied_meanwhile(BackfillReport()) == ""
    # The second page jumps past collection b (the skip scan), not from where the first ended.
    assert sent[6].params["ExclusiveStartKey"] == {"pk": {"S": "b"}, "sk": MAX_SORT_KEY["N"]}


def test_verify_finds_missing_orphans_and_clashes() -> None:
    marker = index()
    report, sent = play(
        verify_flow(marker, None),
        [
            ("scan", page("a", "b", "c", "e")),  # the table's collections
            ("scan", page("a", "d", "f", markers=True)),  # the markers
            ("get_item", {}),  # b: nothing at the marker's key: missing
            ("get_item", {"Item": {"note": {"S": "x"}}}),  # c: data there: a clash
            ("get_item", {}),  # e: nothing there either: missing
            ("query", {"Items": [MARKER, DATA]}),  # a: marker and data
            ("query", {"Items": [MARKER]}),  # d: the marker alone: an orphan
            ("query", {"Items": [MARKER]}),  # f: an orphan too
            # The second look, once both key sets are read (consistent reads):
            ("get_item", {}),  # b: still no marker,
            ("query", {"Items": [DATA]}),  # and data: missing
            ("get_item", {"Item": MARKER}),  # e: marked meanwhile (a maintainer),
            ("query", {"Items": [MARKER, DATA]}),  # and data: settled
            ("get_item", {"Item": MARKER}),  # d: the marker still there,
            ("query", {"Items": [MARKER]}),  # alone: an orphan
            ("get_item", {}),  # f: its marker removed meanwhile: settled
            ("query", {"Items": []}),
            # That look settled some (writes in flight): after a pause, one more at the rest,
            # which settles none: the last.
            ("get_item", {}),
            ("query", {"Items": [DATA]}),  # b: missing
            ("get_item", {"Item": MARKER}),
            ("query", {"Items": [MARKER]}),  # d: an orphan
        ],
    )
    assert (report.collections, report.markers) == (4, 3)
    assert report.missing == [{"S": "b"}] and report.clashes == [{"S": "c"}]
    assert report.orphans == [{"S": "d"}] and not report.healthy
    assert report.settled == [{"S": "e"}, {"S": "f"}]
    assert all(r.params["ConsistentRead"] for r in sent[-12:] if r.operation == "get_item")


def test_index_pages_follow_last_evaluated_key() -> None:
    pages = IndexPages("orders", "ix", RULE)
    assert pages.take(page("a", "b", last=False, markers=True)) == [{"S": "a"}, {"S": "b"}]
    request = pages.request()
    assert request is not None and request["ExclusiveStartKey"][M] == {"S": "b"}
    assert pages.take(page("b", "c", markers=True)) == [{"S": "c"}] and pages.request() is None


def test_skip_pages_jump_past_the_last_collection() -> None:
    pages = SkipPages(info(), RULE)
    assert pages.take(page("a", last=False)) == [{"S": "a"}]
    request = pages.request()
    assert request is not None and request["ExclusiveStartKey"]["pk"] == {"S": "a"}
    assert pages.take({"Items": [], "LastEvaluatedKey": {"pk": {"S": "z"}}}) == []
    request = pages.request()  # an empty page goes on from where it ended
    assert request is not None and request["ExclusiveStartKey"] == {"pk": {"S": "z"}}


# --- reconciliation ------------------------------------------------------------------------


def query(*items: dict[str, Any], more: bool = False) -> dict[str, Any]:
    answer: dict[str, Any] = {"Items": list(items), "ScannedCount": len(items)}
    if more:
        answer["LastEvaluatedKey"] = {"pk": {"S": "a"}, "sk": {"N": "2"}}
    return answer


CCF = failure("ConditionalCheckFailedException")


@pytest.mark.parametrize(
    ("script", "outcome"),
    [
        ([("query", query(DATA, MARKER))], Outcome.UNCHANGED),
        ([("query", query())], Outcome.UNCHANGED),  # a replayed INSERT of a gone item
        ([("query", query(DATA)), ("put_item", {}), ("query", query(DATA, MARKER))], "MARKED"),
        # ABA: marked, but the last item went meanwhile: the read after the write unmarks.
        (
            [
                ("query", query(DATA)),
                ("put_item", {}),
                ("query", query(MARKER)),
                ("delete_item", {}),
                ("query", query()),
            ],
            Outcome.UNMARKED,
        ),
        ([("query", query(MARKER)), ("delete_item", {}), ("query", query())], "UNMARKED"),
        # The marker was written again since our read: our delete does nothing.
        ([("query", query(MARKER)), ("delete_item", CCF), ("query", query(MARKER, DATA))], "-"),
        # Another maintainer marked it between our read and our put.
        (
            [
                ("query", query(DATA)),
                ("put_item", failure("ConditionalCheckFailedException", Item=MARKER)),
            ],
            Outcome.UNCHANGED,
        ),
        (
            [
                ("query", query(DATA)),
                ("put_item", failure("ConditionalCheckFailedException", Item={"x": {"S": "1"}})),
            ],
            Outcome.CLASH,
        ),
        # Two data items first, sorting before the marker's key: it is looked up by its key.
        ([("query", query(LOW, LOW, more=True)), ("get_item", {"Item": MARKER})], "-"),
        # ... and after it: it would have come first, so it is not there.
        (
            [
                ("query", query(DATA, DATA, more=True)),
                ("put_item", {}),
                ("query", query(MARKER, DATA)),
            ],
            "MARKED",
        ),
    ],
)
def test_reconcile_reads_the_state_not_the_event(
    script: list[tuple[str, Any]], outcome: Outcome | str
) -> None:
    marker = index()
    result, sent = play(reconcile_flow(marker, {"S": "a"}, marker.begin()), script)
    expected = {"MARKED": Outcome.MARKED, "UNMARKED": Outcome.UNMARKED, "-": Outcome.UNCHANGED}
    assert result is (expected[outcome] if isinstance(outcome, str) else outcome)
    assert sent[0].params["ConsistentRead"] is True
    for request in sent:
        if request.operation == "delete_item":  # conditional on the version read
            assert request.params["ExpressionAttributeValues"] == {":v": {"S": "v1"}}


def test_reconcile_gives_up_after_max_rounds() -> None:
    marker = index()
    churn: list[tuple[str, Any]] = []
    for _ in range(MAX_ROUNDS // 2):
        churn += [("query", query(DATA)), ("put_item", {})]
        churn += [("query", query(MARKER)), ("delete_item", {})]
    with pytest.raises(DdbKeysError, match="did not settle"):
        play(reconcile_flow(marker, {"S": "a"}, marker.begin()), churn)


# --- stream records ----------------------------------------------------------------------------


def record(pk: Any, sequence: str = "1") -> dict[str, Any]:
    return {"dynamodb": {"Keys": {"pk": pk, "sk": {"N": "1"}}, "SequenceNumber": sequence}}


def test_keys_of_records_dedupes_in_order() -> None:
    records = [record({"S": "b"}), record({"S": "a"}), record({"S": "b"}), {"dynamodb": {}}]
    records += [record({"B": b"\x00"}), record({"B": bytearray(b"\x00")})]
    assert keys_of_records(records, "pk") == [{"S": "b"}, {"S": "a"}, {"B": b"\x00"}]


def follower() -> FollowCore:
    return FollowCore(index(), state_table="state", clock=lambda: 50.0)


@pytest.mark.parametrize(
    ("answer", "iterator", "finished", "records"),
    [
        ({"Records": [record({"S": "a"})], "NextShardIterator": "it2"}, "it2", False, 1),
        ({"Records": []}, None, True, 0),  # the shard's end: its children come next
        (failure("ExpiredIteratorException"), None, False, 0),  # taken again next round
        (failure("TrimmedDataAccessException"), None, False, 0),
    ],
)
def test_reading_a_shard(answer: Any, iterator: str | None, finished: bool, records: int) -> None:
    state = FollowState(iterators={"s1": "it1"})
    got, sent = play(follower().read(state, "s1"), [("get_records", answer)])
    assert sent[0].params == {"ShardIterator": "it1", "Limit": 1000}
    assert len(got) == records
    assert state.iterators.get("s1") == iterator and ("s1" in state.finished) is finished


def test_handling_a_batch_reconciles_each_collection_once_then_saves_the_mark() -> None:
    state = FollowState()
    batch = [record({"S": "a"}, "5"), record({"S": "a"}, "6"), record({"S": "b"}, "7")]
    _, sent = play(
        follower().handle(state, "arn", "s1", batch),
        [
            ("query", query(DATA)),
            ("put_item", {}),
            ("query", query(DATA, MARKER)),
            ("query", query(MARKER)),
            ("delete_item", {}),
            ("query", query()),
            # The mark, only once every record is applied (and counted: see state.SAVES).
            ("update_item", {"Attributes": {SAVES: {"N": "1"}}}),
        ],
    )
    assert state.marks["s1"].marks == (("7", 50.0),)
    assert sent[-1].params["ExpressionAttributeValues"][":v0"]["S"] == state.marks["s1"].to_json()
    assert state.report == FollowReport(records=3, batches=1, marked=1, unmarked=1)


class StopAtLook(StopFlag):
    """Requested from its ``at``-th look on (a stop that comes in the middle of a batch)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.looks, self.at = 0, at

    @property
    def requested(self) -> bool:
        self.looks += 1
        return self.looks >= self.at

    @requested.setter
    def requested(self, value: bool) -> None:
        pass


def test_a_stop_in_the_middle_of_a_batch_ends_it_between_collections_the_mark_unmoved() -> None:
    """helper-70 F1: SIGTERM took up to 151 s, a batch of 1,000 records applied first. The
    stop is looked at before each collection; the mark stays, so the next run reads the batch
    again (what was applied is applied again: nothing changes)."""
    state = FollowState()
    batch = [record({"S": "a"}, "5"), record({"S": "b"}, "6"), record({"S": "c"}, "7")]
    _, sent = play(
        follower().handle(state, "arn", "s1", batch, StopAtLook(2)),
        [("query", query(DATA)), ("put_item", {}), ("query", query(DATA, MARKER))],
    )
    assert [r.operation for r in sent] == ["query", "put_item", "query"]  # "a" alone
    assert "s1" not in state.marks and not state.owed and not state.unsaved
    assert state.report == FollowReport(marked=1, cut_short=3)  # (helper-71 F5: said so)


def test_a_failed_reconciliation_leaves_the_mark_where_it_was() -> None:
    state = FollowState()
    with pytest.raises(DdbKeysError):
        play(
            follower().handle(state, "arn", "s1", [record({"S": "a"}, "5")]),
            [("query", failure("ValidationException"))],
        )
    assert "s1" not in state.marks


def test_a_child_shard_waits_for_its_parent() -> None:
    state = FollowState(parents={"parent": None, "child": "parent", "orphan": "gone"})
    assert ready(state, "parent") and ready(state, "orphan") and not ready(state, "child")
    state.finished.add("parent")
    assert ready(state, "child")


def test_stop_on_an_event() -> None:
    event = threading.Event()
    flag = StopOn(event)
    assert not flag.requested
    flag.check()
    event.set()
    assert flag.requested
    with pytest.raises(Stopped):
        flag.check()


def test_the_description_is_read_by_the_first_flow_that_needs_it_and_kept() -> None:
    fresh = MarkerCore("orders")
    assert fresh.info is None and fresh.marker_sort_key is None
    names = [("pk", "S", "HASH"), ("sk", "N", "RANGE")]
    table = {
        "Table": {
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in names],
            "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in names],
        }
    }
    described, sent = play(fresh.table_info(), [("describe_table", table)])
    assert [r.operation for r in sent] == ["describe_table"]
    assert fresh.info is described and fresh.marker_sort_key == SK
    assert play(fresh.table_info(), [])[0] is described  # kept: nothing sent again
    with pytest.raises(KeySchemaError, match="has no sort key"):
        MarkerCore("orders", info=info(sort_key=None))
    with pytest.raises(ConfigurationError, match="describes table 'other'"):
        MarkerCore("orders", info=info(name="other"))


def follow_answers() -> dict[str, Any]:
    """Answers to a follower's requests on a table with a marker index and a stream of one
    shard, s1, whose GetRecords give nothing."""
    names = [("pk", "S", "HASH"), ("sk", "N", "RANGE"), (M, "S", None)]
    table = {
        "TableName": "orders",
        "TableStatus": "ACTIVE",
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in names],
        "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in names if k],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "ddbkeys-partition-keys",
                "KeySchema": [{"AttributeName": M, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "IndexStatus": "ACTIVE",
            }
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
        "LatestStreamArn": "arn",
    }
    return {
        "describe_table": {"Table": table},
        "get_item": {},
        "describe_stream": {
            "StreamDescription": {
                "Shards": [
                    {"ShardId": "s1", "SequenceNumberRange": {"StartingSequenceNumber": "1"}}
                ],
            }
        },
        "get_shard_iterator": {"ShardIterator": "it"},
        "get_records": {"Records": [], "NextShardIterator": "it"},
        "update_item": {"Attributes": {SAVES: {"N": "1"}}},  # (a save of marks is counted)
    }


def test_caught_up_at_is_the_start_of_the_round_that_found_every_shard_at_its_end() -> None:
    """A record written while a round reads may lie past a shard it already read: the time a
    follower says it was caught up is when that round began, not when it ended (a test that
    waited for "caught up after my write" then saw its write unread; found in CI)."""
    ticks = iter(range(1000, 2000))
    core = FollowCore(index(), state_table="state", clock=lambda: float(next(ticks)))
    clock_at_reads: list[float] = []
    report, _ = run_follower(core, follow_answers(), None, clock_at_reads, until_caught_up=True)
    # The round that found the shard at its end began before its read and ended after it.
    assert report.caught_up and report.caught_up_at is not None
    assert report.caught_up_at < clock_at_reads[-1]


def run_follower(
    core: FollowCore,
    answers: dict[str, Any],
    reads: list[Any] | None,
    read_at: list[float] | None = None,
    until_caught_up: bool = False,
) -> tuple[FollowReport, list[Request]]:
    """``core`` following from the stream's end (a first start), its GetRecords answered by
    ``reads`` in turn, then stopped (None: by ``answers``, as the other requests are, until
    it is caught up). Its report and what it sent; the clock's last reading before each
    GetRecords, into ``read_at``."""
    stop, sent = StopFlag(), []
    flow = core.follow(FollowState(), stop, until_caught_up, from_start=False)
    step = next(flow)
    try:
        while True:
            if isinstance(step, Pause):
                step = flow.send(None)
                continue
            assert isinstance(step, Request), step
            sent.append(step)
            answer = answers[step.operation]
            if step.operation == "get_records":
                if read_at is not None:
                    read_at.append(core.clock() - 1)  # (the clock ticks a second a reading)
                if reads is not None:
                    answer = reads.pop(0)
                    if not reads:
                        stop.set()
            step = flow.send(answer)
    except StopIteration as done:
        return done.value, sent


def saved_marks(sent: list[Request], shard: str) -> list[ShardMark]:
    """The marks of ``shard`` that the follower's requests saved, in turn."""
    out = []
    for request in sent:
        if request.operation == "update_item":
            for value in request.params.get("ExpressionAttributeValues", {}).values():
                text = value.get("S", "")
                if '"marks"' in text and (got := ShardMark.from_json(shard, text)) is not None:
                    out.append(got)
    return out


def test_a_follower_begun_at_the_end_says_the_tips_it_reads_while_nothing_comes() -> None:
    """A first start reads each shard from its end. Until a record comes, its position is
    None: every half margin it saves the tip it read (when the first of three empty pages
    in a row began), so that a listing leaves out what came before (see evidence's rule;
    before, only hourly, at the round's end, and a listing read from the shard's start
    re-checked what was written just before the follower began)."""
    ticks = iter(range(1000, 100_000))
    core = FollowCore(index(), state_table="state", clock=lambda: float(next(ticks)))
    answers = follow_answers()
    empty = {"Records": [], "NextShardIterator": "it"}
    read_at: list[float] = []
    _, sent = run_follower(core, answers, [empty] * 40, read_at)
    marks = saved_marks(sent, "s1")
    since = marks[0].since
    assert isinstance(since, float) and marks[0].marks == ((None, since),)
    tips = sorted({t for m in marks for s, t in m.marks if s is None and t > since})
    assert len(tips) >= 3, marks[-1]
    # Each tip is the clock read just before a GetRecords that two more empty pages followed;
    # the tips are over half the margin apart.
    assert all(t in read_at[:-2] for t in tips), (tips, read_at)
    assert all(b - a > core.replay_margin / 2 for a, b in itertools.pairwise([since, *tips]))
    # A record: its position is kept from then on, and no tip without a position after it.
    record_page = {"Records": [record({"S": "a"}, "77")], "NextShardIterator": "it"}
    answers["query"] = {"Items": [], "Count": 0, "ScannedCount": 0}
    _, sent = run_follower(core, answers, [empty] * 3 + [record_page] + [empty] * 60)
    newest = saved_marks(sent, "s1")[-1]
    assert newest.marks[-1][0] == "77"


def test_a_tip_is_said_only_after_three_empty_pages_and_never_over_unapplied_records() -> None:
    def state(**extra: Any) -> FollowState:
        begun = ShardMark("s1", "arn", 100.0, ((None, 100.0),))
        return FollowState(marks={"s1": begun}, iterators={"s1": "it"}, **extra)

    quiet = state()
    for began in (150.0, 151.0):
        note_page(quiet, "s1", [], began)
    assert said_again(quiet, "arn", 160.0, 3600.0, 30.0) == []  # (two pages: no tip yet)
    note_page(quiet, "s1", [], 152.0)
    note_page(quiet, "s1", [], 153.0)  # (the tip: the first of the last three)
    assert said_again(quiet, "arn", 160.0, 3600.0, 30.0) == ["s1"]
    assert quiet.marks["s1"].marks[-1] == (None, 151.0)
    assert said_again(quiet, "arn", 170.0, 3600.0, 30.0) == []  # (said, not half a margin on)
    # A page with records begins the count again.
    note_page(quiet, "s1", [{"dynamodb": {}}], 190.0)
    assert said_again(quiet, "arn", 200.0, 3600.0, 30.0) == []
    # Records read and not applied yet (owed, or the position they reach not saved): no tip.
    for held in (state(owed={"s1": {}}), state(unsaved={"s1": "9"})):
        for began in (150.0, 151.0, 152.0):
            note_page(held, "s1", [], began)
        assert said_again(held, "arn", 160.0, 3600.0, 30.0) == []
    # A mark of the Lambda handler's kind (since "start") or with a position: said hourly at
    # "now", as before (its position is what counts).
    placed = FollowState(
        marks={"s1": ShardMark("s1", "arn", 100.0, (("5", 100.0),))}, iterators={"s1": "it"}
    )
    assert said_again(placed, "arn", 160.0, 3600.0, 30.0) == []
    assert said_again(placed, "arn", 3_800.0, 3600.0, 30.0) == ["s1"]
    assert placed.marks["s1"].marks[-1] == ("5", 3_800.0)


def test_a_follower_takes_the_marks_of_shards_a_day_gone_off_its_record() -> None:
    """Shards close every few hours on the service: a follower that kept every mark grew its
    record by one each (171 marks, 35.6 KB after a week of 4 shards: a helper's measure), on
    to DynamoDB's 400 KB item limit. What it keeps: what a listing or its own reads use."""
    now, old, recent = 10 * DAY, 10 * DAY - GONE_AFTER - 1, 10 * DAY - 60

    def mark(shard: str, at: float, stream: str = "arn", gap: float | None = None) -> ShardMark:
        return ShardMark(shard, stream, "start", (("5", at),), gap=gap)

    marks = {
        "other": mark("other", old, stream="arn-before"),  # a stream turned off long ago
        "gone": mark("gone", old),  # left the stream a day ago
        "parent": mark("parent", old),  # left it, but its child is read from its start
        "lost": mark("lost", old, gap=old),  # records lost: a listing declines for it
        "young": mark("young", recent),  # left it a minute ago: a listing checks that
        "listed": mark("listed", old),  # still listed (a listing declines: a day old)
        "again": mark("again", recent, stream="arn-before"),
    }
    parents = {"listed": None, "child": "parent"}
    assert gone_marks(marks, parents, "arn", now) == ["gone", "other"]


def test_create_right_after_a_drop_waits_for_the_old_index_to_go() -> None:
    """helper-100: `index create` while the dropped index was still DELETING waited 600 s for
    it to be ACTIVE (it never is: it goes), then failed. It waits for it to go, then adds."""
    made, sent = play(
        create_flow(MarkerCore("orders", deadline=5.0), True, 600.0),
        [
            ("describe_table", described("DELETING")),
            ("describe_table", described("DELETING")),
            ("describe_table", described(None)),
            ("describe_table", described(None)),
            ("update_table", {}),
            ("describe_table", described("ACTIVE")),
        ],
    )
    assert made is True and sent[4].params["GlobalSecondaryIndexUpdates"][0]["Create"]


def test_create_says_whether_its_own_update_added_the_index() -> None:
    # (helper-67: creates run at once all said they had created it. On the service, the
    # UpdateTable of a create that comes second is refused while the table is updating;
    # DynamoDB Local accepts them all, so the refusal is scripted here.)
    fresh = MarkerCore("orders", deadline=5.0)
    made, sent = play(
        create_flow(fresh, True, 600.0),
        [
            ("describe_table", described(None)),
            ("update_table", {}),
            ("describe_table", described("CREATING")),
            ("describe_table", described("ACTIVE")),
        ],
    )
    assert made is True and sent[1].params["GlobalSecondaryIndexUpdates"][0]["Create"]
    busy = failure("ResourceInUseException")  # another create's update is under way
    made, sent = play(
        create_flow(MarkerCore("orders", deadline=5.0), True, 600.0),
        [
            ("describe_table", described(None)),
            ("update_table", busy),
            ("describe_table", described("CREATING")),
            ("describe_table", described("ACTIVE")),
        ],
    )
    assert made is False
    # Its own try whose answer was lost made it (the retry is refused, as the service does):
    # "there already: nothing created", the command said so (helper-86).
    made, sent = play(
        create_flow(MarkerCore("orders", deadline=5.0), True, 600.0),
        [
            ("describe_table", described(None)),
            ("update_table", ReadTimeoutError(endpoint_url="http://127.0.0.1:9")),
            ("update_table", busy),
            ("describe_table", described("CREATING")),
            ("describe_table", described("ACTIVE")),
        ],
    )
    assert made is True
    there, sent = play(create_flow(fresh, True, 600.0), [("describe_table", described("ACTIVE"))])
    assert there is False and len(sent) == 1
    with pytest.raises(DdbKeysError, match="ResourceInUseException"):  # and no index made
        play(
            create_flow(MarkerCore("orders", deadline=5.0), True, 600.0),
            [
                ("describe_table", described(None)),
                ("update_table", busy),
                ("describe_table", described(None)),
            ],
        )


def test_a_follower_stops_when_its_index_is_gone_whether_records_come_or_not() -> None:
    """helper-94 F4: a follower left running after `index drop` went on (and marked every
    collection the drop emptied). It looks at the table every ``DISCOVER`` seconds: an index
    gone since it found it ends the run with the error, though no record came."""
    ticks = iter(range(1000, 100_000))
    core = FollowCore(index(), state_table="state", clock=lambda: float(next(ticks)))
    answers = follow_answers()
    gone = copy.deepcopy(answers["describe_table"])
    del gone["Table"]["GlobalSecondaryIndexes"]
    flow = core.follow(FollowState(), StopFlag(), False, from_start=False)
    step, reads = next(flow), 0
    with pytest.raises(ConfigurationError, match=r"is gone .* this maintainer stops"):
        while True:
            if isinstance(step, Pause):
                step = flow.send(None)
                continue
            assert isinstance(step, Request), step
            reads += step.operation == "get_records"
            answer = answers[step.operation]
            if step.operation == "describe_table" and reads >= 3:
                answer = gone  # (dropped while it ran)
            step = flow.send(answer)
    assert 3 <= reads < 30


def test_a_drop_stopped_once_the_index_is_deleted_says_what_it_left_and_what_to_do() -> None:
    """helper-101 F2: a drop whose endpoint stopped answering after the index was deleted said
    only "Gave up on DescribeTable ..."; every marker was left, and `index status` advised to
    create the index. The error now says the index is deleted, markers may be left, and to run
    `index drop` again."""
    marker = MarkerCore("orders", deadline=5.0)
    with pytest.raises(DdbKeysError) as raised:
        play(
            drop_flow(marker, None, wait=False, timeout=60.0),
            [
                ("describe_table", described("ACTIVE")),
                ("update_table", {}),
                ("describe_table", described("DELETING")),
                ("scan", failure("AccessDeniedException")),
            ],
        )
    said = str(raised.value)
    assert said.startswith("DynamoDB refused Op on table 'orders' (AccessDeniedException)"), said
    assert said.endswith(
        "Index 'ddbkeys-partition-keys' of table 'orders' is deleted, but markers may be left "
        "in the table: run `index drop` again to remove them."
    ), said
    assert not isinstance(raised.value, ConfigurationError)


def test_a_put_answered_too_late_for_the_drop_s_wait_looks_again_and_takes_its_marker_back() -> (
    None
):
    """helper-101 F6: a maintainer's put, sent on a fresh look but held 25 s in the network,
    landed after `index drop` had waited its ``recheck`` + 1 s and swept: a marker left after
    the drop's exit 0. A put answered later than that after its look describes the table
    again; where the index is gone, the marker is taken back and the error raised."""
    now = [0.0]

    def run(answers: dict[str, list[Any]], delay: float) -> tuple[Any, list[str]]:
        core = MarkerCore("orders", info=info(), retry=RetryPolicy(clock=lambda: now[0]))
        flow, sent = core.mark("a"), []
        step = next(flow)
        try:
            while True:
                assert isinstance(step, Request), step
                sent.append(step.operation)
                if step.operation == "put_item":
                    now[0] += delay  # (the put's answer comes ``delay`` s after it was sent)
                answer = answers[step.operation].pop(0)
                step = flow.throw(answer) if isinstance(answer, Exception) else flow.send(answer)
        except StopIteration as done:
            return done.value, sent
        except DdbKeysError as gone:
            return gone, sent

    assert run({"put_item": [{}]}, RECHECK + 0.9) == (True, ["put_item"])  # (in time: as ever)
    late = RECHECK + 1.5
    kept = run({"put_item": [{}], "describe_table": [described("ACTIVE")]}, late)
    assert kept == (True, ["put_item", "describe_table"])  # (a drop begun now sweeps after it)
    taken, sent = run(
        {"put_item": [{}], "describe_table": [described(None)], "delete_item": [{}]}, late
    )
    assert sent == ["put_item", "describe_table", "delete_item"]
    assert isinstance(taken, ConfigurationError) and "is gone (`index drop`?)" in str(taken)
    # helper-102 F3: where the take-back (or the look) fails, the error says the marker may be
    # left, and how to remove it (it said nothing, and the marker stayed).
    refused = failure("AccessDeniedException")
    left, _ = run(
        {"put_item": [{}], "describe_table": [described(None)], "delete_item": [refused]}, late
    )
    assert "is gone (`index drop`?)" in str(left), left
    assert "The marker of collection 'a', written after the drop's sweep, could not be taken " in (
        str(left)
    )
    assert str(left).endswith("AccessDeniedException): run `index drop` again to remove it.")
    unknown, _ = run({"put_item": [{}], "describe_table": [refused]}, late)
    assert str(unknown).endswith(
        "Its marker was written late: the marker of collection 'a' may be left in the table "
        "after an `index drop`: where the index was dropped, run `index drop` again to remove it."
    ), unknown


def test_a_maintainer_s_look_at_an_index_it_had_seen_says_it_is_gone() -> None:
    """helper-102 F1: `follow --backfill`'s look at the index (``maintained``, every 10 s)
    after a drop said "has no index ... Create it" before the follower's "is gone" line."""
    core = MarkerCore("orders", info=info(), deadline=5.0)
    assert play(core.status(True), [("describe_table", described(None))])[0] is None
    with pytest.raises(ConfigurationError, match=r"is gone \(`index drop`\?\)"):
        play(core.maintained(), [])
    never = MarkerCore("orders", deadline=5.0)  # (one that never saw it: the table has none)
    with pytest.raises(ConfigurationError, match="has no index"):
        play(never.maintained(), [("describe_table", described(None))])


def test_a_core_that_read_the_table_once_and_saw_the_index_says_it_is_gone_later() -> None:
    """helper-102 F4 (helper-100 F2 again, with helper-100's own script): a warm Lambda
    environment's core that had read the table's description (``table_info``, its first batch
    needing no marker) said "has no index ... Create it" after a drop: that read kept the
    description without noting the index seen."""
    now = [0.0]
    core = MarkerCore("orders", deadline=5.0, retry=RetryPolicy(clock=lambda: now[0]))
    play(core.table_info(), [("describe_table", described("ACTIVE"))])
    now[0] += 3600.0
    with pytest.raises(ConfigurationError, match=r"is gone \(`index drop`\?\)"):
        play(core.mark("a"), [("describe_table", described(None))])


def test_a_put_that_got_no_answer_then_finds_the_index_gone_says_its_marker_may_land() -> None:
    """helper-103 F3: a marker put abandoned by the client's read timeout, retried after the
    drop: the retry's look found the index gone and said only "is gone"; the first put, held in
    the network, landed after the drop's sweep. The error now names the marker and says to run
    `index drop` again."""

    now = [0.0]
    core = MarkerCore("orders", info=info(), retry=RetryPolicy(clock=lambda: now[0]))
    flow, step = core.mark("a"), None
    timeout = ReadTimeoutError(endpoint_url="http://x")
    with pytest.raises(ConfigurationError) as raised:
        step = next(flow)
        assert isinstance(step, Request) and step.operation == "put_item"
        now[0] += 30.0  # (the read timeout)
        step = flow.throw(timeout)
        while isinstance(step, Pause):
            step = flow.send(None)
        assert isinstance(step, Request) and step.operation == "describe_table"
        flow.send(described(None))
    said = str(raised.value)
    assert "is gone (`index drop`?)" in said
    assert said.endswith(
        "A put of its marker got no answer: the marker of collection 'a' may be left in the "
        "table after an `index drop`: where the index was dropped, run `index drop` again to "
        "remove it."
    ), said
