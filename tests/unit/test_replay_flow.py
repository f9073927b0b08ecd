"""The listing's replay driven by hand (no server, no client): what it reads from the stream,
what it re-checks, and each way it declines (a position the stream no longer keeps, an iterator
that expired, a shard holding history nobody applied, too many collections for auto, the stream
refused: DynamoDB Local has no IAM, so AccessDenied is played here)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ddbkeys._retry import RetryPolicy
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.pending import element
from ddbkeys.partition_keys._index.state import markers_key
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._listing.choice import most_keys, proven
from ddbkeys.partition_keys._proof.evidence import Backfill, Decline, Evidence, ShardMark
from ddbkeys.partition_keys._proof.replay import ReplayedIndexMethod, replay_flow
from ddbkeys.partition_keys._proof.shard_read import Replay
from tests.unit.test_index_core import failure, info, play

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/now"
MARKER_SK = DEFAULT_MARKER_SORT_KEY["N"]
NOW = 10_000.0


def evidence(*marks: ShardMark) -> Evidence:
    known = markers_key("ddbkeys_pk", MARKER_SK)
    return Evidence(
        "orders",
        "ix",
        {m.shard: m for m in marks},
        Backfill(5_000.0, ARN, 1_000.0, 6_000.0, markers=known),
    )


def setup() -> tuple[Reader, MarkerCore, Any]:
    """The listing's reader (no client: its flows are driven by hand) and the index's core."""
    table = info(stream_arn=ARN)
    reader = Reader(None, "orders", retry=RetryPolicy(max_attempts=2), deadline=5.0)
    return reader, MarkerCore("orders", info=table), table


def record(pk: str, sequence: str, created: float = 9_000.0) -> dict[str, Any]:
    keys = {"pk": {"S": pk}, "sk": {"N": "1"}}
    return {
        "dynamodb": {
            "Keys": keys,
            "SequenceNumber": sequence,
            "ApproximateCreationDateTime": created,
        }
    }


def described(*shards: str) -> dict[str, Any]:
    return {"StreamDescription": {"Shards": [{"ShardId": s} for s in shards]}}


GOOD = evidence(ShardMark("s1", ARN, "start", (("10", 7_000.0),)))


def test_it_reads_past_the_mark_and_rechecks_what_the_records_name() -> None:
    reader, marker, table = setup()
    data = {"pk": {"S": "a"}, "sk": {"N": "1"}}
    only_marker = {"pk": {"S": "b"}, "sk": MARKER_SK, "ddbkeys_pk": {"S": "b"}}
    result, sent = play(
        replay_flow(reader, marker, table, GOOD, 60.0, NOW, None),
        [
            ("describe_stream", described("s1")),
            ("get_shard_iterator", {"ShardIterator": "i1"}),
            (
                "get_records",
                {"Records": [record("a", "11"), record("b", "12")], "NextShardIterator": "i2"},
            ),
            ("get_records", {"Records": [record("a", "13")], "NextShardIterator": "i3"}),
            # Past the maintainer's position (10), three empty pages in a row: the tip.
            ("get_records", {"Records": [], "NextShardIterator": "i4"}),
            ("get_records", {"Records": [], "NextShardIterator": "i5"}),
            ("get_records", {"Records": [], "NextShardIterator": "i6"}),
            ("query", {"Items": [data]}),
            ("query", {"Items": [only_marker]}),  # b holds nothing but the marker: gone
        ],
    )
    assert isinstance(result, Replay)
    assert sent[1].params["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER"
    assert sent[1].params["SequenceNumber"] == "10"
    assert all(r.params["ConsistentRead"] for r in sent if r.operation == "query")
    assert result.records == 3 and result.exists == {("S", "a"): True, ("S", "b"): False}
    assert list(result.existing()) == [{"S": "a"}]
    # The token carries the re-checked keys; the method hands out those that exist last.
    again = Replay.from_json(result.to_json())
    assert again.exists == result.exists and again.margin == 60.0
    method = ReplayedIndexMethod(table, marker, again)
    emitted = [s.value for s in method.keys(reader, 1, 2, None)]  # type: ignore[union-attr]
    assert emitted == [{"S": "a"}]


def test_records_from_before_the_maintainer_began_are_history_not_a_lag() -> None:
    """A follower begun at the shard's end (at 4,000) with no record applied: a listing reads
    the shard from its start and re-checks what is not surely history yet (created within a
    margin and a rounding of its start). What came before it began is not what it has yet to
    apply: counted as history, so nothing says the maintainer is behind (a walk's status said
    "Behind: ... is `index follow` running?" while it ran)."""
    reader, marker, table = setup()
    begun = evidence(ShardMark("s1", ARN, 4_000.0, ((None, 4_000.0),)))
    result, _ = play(
        replay_flow(reader, marker, table, begun, 60.0, NOW, None),
        [
            ("describe_stream", described("s1")),
            ("get_shard_iterator", {"ShardIterator": "i1"}),
            (
                "get_records",
                {
                    "Records": [
                        record("old", "5", created=3_000.0),  # (history, left out)
                        record("a", "6", created=3_930.0),  # (history, re-checked)
                        # (its time rounded down a minute at most: maybe after it began)
                        record("c", "7", created=3_990.0),
                        record("b", "8", created=9_500.0),  # (after it began: unapplied)
                    ],
                    "NextShardIterator": "i2",
                },
            ),
            ("get_records", {"Records": [], "NextShardIterator": "i3"}),
            ("get_records", {"Records": [], "NextShardIterator": "i4"}),
            ("get_records", {"Records": [], "NextShardIterator": "i5"}),
            ("query", {"Items": []}),
            ("query", {"Items": []}),
            ("query", {"Items": []}),
        ],
    )
    assert isinstance(result, Replay)
    assert set(result.touched) == {("S", "a"), ("S", "b"), ("S", "c")}
    assert (result.records, result.history, result.unapplied) == (4, 1, 2)
    assert result.oldest_unapplied == 3_990.0
    # The collections the unapplied records name (what the lag alone costs to re-check).
    assert result.lagging == {("S", "c"), ("S", "b")}
    # Said where the records read are counted (helper-72 F4: they read as a lag there).
    reason = proven(table, marker, result).reason
    assert (
        "4 stream record(s) read past the maintainer's positions held back 60 s (1 of them "
        "from before it began), 3 collection(s) re-checked" in reason
    ), reason
    assert Replay(60.0, records=4).of_history() == ""


@pytest.mark.parametrize(
    ("script", "why"),
    [
        (
            [("describe_stream", failure("AccessDeniedException"))],
            "describing the table's stream was refused (AccessDeniedException)",
        ),
        (
            [
                ("describe_stream", described("s1")),
                ("get_shard_iterator", failure("TrimmedDataAccessException")),
            ],
            "older than the stream keeps",
        ),
        (
            [
                ("describe_stream", described("s1")),
                ("get_shard_iterator", {"ShardIterator": "i1"}),
                ("get_records", failure("AccessDeniedException")),
            ],
            "reading the table's stream was refused",
        ),
    ],
)
def test_it_declines_what_it_cannot_read(script: list[tuple[str, Any]], why: str) -> None:
    reader, marker, table = setup()
    result, _ = play(replay_flow(reader, marker, table, GOOD, 60.0, NOW, None), script)
    assert isinstance(result, Decline) and why in result.reason


def test_an_expired_iterator_is_taken_again_past_the_last_record_read() -> None:
    reader, marker, table = setup()
    result, sent = play(
        replay_flow(reader, marker, table, GOOD, 60.0, NOW, None),
        [
            ("describe_stream", described("s1")),
            ("get_shard_iterator", {"ShardIterator": "i1"}),
            ("get_records", {"Records": [record("a", "11")], "NextShardIterator": "i2"}),
            ("get_records", failure("ExpiredIteratorException")),
            ("get_shard_iterator", {"ShardIterator": "i5"}),
            ("get_records", {"Records": []}),  # a closed shard's end
            ("query", {"Items": []}),
        ],
    )
    assert isinstance(result, Replay) and sent[4].params["SequenceNumber"] == "11"


def test_a_shard_nobody_named_must_hold_nothing_from_before_the_backfill() -> None:
    reader, marker, table = setup()
    script: list[tuple[str, Any]] = [
        ("describe_stream", described("s1", "s9")),
        ("get_shard_iterator", {"ShardIterator": "i1"}),
        ("get_records", {"Records": []}),
        ("get_shard_iterator", {"ShardIterator": "j1"}),
        ("get_records", {"Records": [record("z", "3", created=4_000.0)]}),
    ]
    result, sent = play(replay_flow(reader, marker, table, GOOD, 60.0, NOW, None), script)
    assert sent[3].params["ShardIteratorType"] == "TRIM_HORIZON"
    assert isinstance(result, Decline) and "holds records from before the backfill" in (
        result.reason
    )


def test_auto_counts_the_collections_before_rechecking_them() -> None:
    reader, marker, table = setup()
    most = most_keys("auto", table, "ddbkeys-partition-keys")
    assert most is not None and most == 0  # a 1 KB table: a scan costs 0.5 RCU
    result, sent = play(
        replay_flow(reader, marker, table, GOOD, 60.0, NOW, most),
        [
            ("describe_stream", described("s1")),
            ("get_shard_iterator", {"ShardIterator": "i1"}),
            ("get_records", {"Records": [record("a", "11")]}),
        ],
    )
    assert not any(r.operation == "query" for r in sent)
    assert isinstance(result, Decline) and "costs more than a scan of this small table" in (
        result.reason
    )
    big = info(stream_arn=ARN, size_bytes=4096 * 1000, item_count=10_000)
    assert most_keys("auto", big, "ddbkeys-partition-keys") == 499  # (500 - 0.5) / 1 RCU a re-check
    assert most_keys("index", big, "ddbkeys-partition-keys") is None


def test_it_rechecks_every_pending_collection_whatever_the_stream_says() -> None:
    """The maintainers recorded b as pending (its reconciliation did not settle): no record
    past the mark names it, and it is re-checked all the same (see evidence's docstring)."""
    reader, marker, table = setup()
    pending = (element({"S": "b"}, 6_500.0, "m-1"), element({"S": "b"}, 6_600.0, "n-1"))
    given = replace(GOOD, pending=pending)
    data = {"pk": {"S": "b"}, "sk": {"N": "1"}}
    result, sent = play(
        replay_flow(reader, marker, table, given, 60.0, NOW, None),
        [
            ("describe_stream", described("s1")),
            ("get_shard_iterator", {"ShardIterator": "i1"}),
            ("get_records", {"Records": [record("a", "11")], "NextShardIterator": "i2"}),
            ("get_records", {"Records": [], "NextShardIterator": "i3"}),
            ("get_records", {"Records": [], "NextShardIterator": "i4"}),
            ("get_records", {"Records": [], "NextShardIterator": "i5"}),
            ("query", {"Items": [data]}),  # b: holds data
            ("query", {"Items": []}),  # a: empty
        ],
    )
    assert isinstance(result, Replay) and result.pending == 1
    assert list(result.existing()) == [{"S": "b"}]
    assert [r.params["ExpressionAttributeValues"][":pk"] for r in sent[-2:]] == [
        {"S": "b"},
        {"S": "a"},
    ]
    # auto, with fewer collections worth re-checking than are pending: declined at once.
    declined, sent = play(
        replay_flow(reader, marker, table, given, 60.0, NOW, 0),
        [
            ("describe_stream", described("s1")),
        ],
    )
    assert isinstance(declined, Decline) and "1 collection(s) are pending" in declined.reason


def test_a_replays_repr_counts_its_collections_not_lists_them() -> None:
    # (helper-89 C5: repr(listing.replay) printed each of 1,900 re-checked keys twice)
    replay = Replay(60.0, records=4_000, shards=2, unapplied=3)
    for n in range(1_900):
        hashed = ("S", f"customer#{n:05}")
        replay.touched[hashed] = {"S": hashed[1]}
        replay.exists[hashed] = n % 2 == 0
    assert repr(replay) == (
        "Replay(records=4000, shards=2, touched=1900, rechecked=1900, pending=0, "
        "unapplied=3, margin=60.0)"
    )
