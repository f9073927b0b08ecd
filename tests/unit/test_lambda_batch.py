"""What the Lambda handler records as a batch begins (``lambda_batch.begin_batch``), decided
from the state record alone: here, a shard it never applied that was made nearly a day ago."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._index.backfill_wait import same_markers
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.state import markers_key
from ddbkeys.partition_keys._proof.evidence import DAY, TRIM_SAFETY, Backfill, Evidence, ShardMark
from ddbkeys.partition_keys._streams.lambda_batch import begin_batch
from ddbkeys.partition_keys._streams.lambda_follows import applied_before
from ddbkeys.partition_keys._streams.lambda_trigger import TriggerCheck
from ddbkeys.partition_keys._streams.streams import shard_born

ARN = "arn:aws:dynamodb:us-east-1:1:table/orders/stream/2026-11-30T19:00:00.000"


def test_a_shard_id_says_when_the_shard_was_made() -> None:
    # (the service's, from the AWS CLI's documentation, and DynamoDB Local's: milliseconds)
    made = shard_born("shardId-00000001536019433021-5e0f51de")
    assert made == datetime(2018, 9, 4, 0, 3, 53, 21000, tzinfo=UTC).timestamp()
    assert shard_born("shardId-00000001796068906466-bc90b014") == 1796068906.466
    assert shard_born("shardId-00000003") is None and shard_born("s1") is None


def test_the_first_batch_of_a_shard_made_nearly_a_day_ago_is_a_gap() -> None:
    made = 1_796_068_906.466
    shard = "shardId-00000001796068906466-bc90b014"
    fresh = begin_batch(None, shard, ARN, "100", made + 10, now=made + 60)
    assert not fresh.lost and fresh.mark.gap is None
    late = made + DAY - TRIM_SAFETY + 1  # (the batch's records are fresh: a later write)
    old = begin_batch(None, shard, ARN, "100", late - 5, now=late)
    assert old.lost and old.mark.gap == late
    # An id that says no time: as before (nothing to tell from).
    assert not begin_batch(None, "s1", ARN, "100", late - 5, now=late).lost


def test_the_marks_of_shards_a_day_old_go_but_those_with_a_gap() -> None:
    now = 10 * DAY
    old, gap = now - DAY - 3601, now - DAY - 4000
    shards = {
        "s1": ShardMark("s1", ARN, "start", (("5", old),)),
        "s2": ShardMark("s2", ARN, "start", (("5", old),), gap=gap),  # (a listing heeds it)
        "s3": ShardMark("s3", ARN, "start", (("5", now - 60),)),
    }
    saved = Evidence("orders", "ix", shards, Backfill(5_000.0, ARN, 1_000.0))
    assert begin_batch(saved, "s4", ARN, "100", now - 5, now=now).gone == ("shard s1",)


def test_a_batch_is_checked_against_the_newest_position_applied_as_written() -> None:
    """The position the stream is read after (``lambda_follows``): the newest of the handler's
    own batches and the shard's mark (a follower's counts), kept as written (DynamoDB Local's
    sequence numbers are zero-padded to 21 digits; GetShardIterator refuses one shorter), and
    only where the batch begins past it."""
    batches = (("000000000000000000004", "000000000000000000006"),)
    check = TriggerCheck(ARN.rsplit("/stream/", 1)[1], batches=batches)
    mark = ShardMark("s1", ARN, "start", (("000000000000000000005", 1.0),))
    saved = Evidence("orders", "ix", {"s1": mark}, triggers={"s1": check})
    assert applied_before(saved, "s1", ARN, "000000000000000000009") == "000000000000000000006"
    assert applied_before(saved, "s1", ARN, "000000000000000000006") is None  # (sent again)
    assert applied_before(None, "s1", ARN, "9") is None
    ahead = ShardMark("s1", ARN, "start", (("000000000000000000008", 1.0),))
    followed = Evidence("orders", "ix", {"s1": ahead}, triggers={"s1": check})
    assert applied_before(followed, "s1", ARN, "000000000000000000009") == "000000000000000000008"


def test_a_handler_told_other_markers_than_the_index_s_refuses_before_writing() -> None:
    """A handler whose DDBKEYS_MARKER_SORT_KEY is not the index's would keep a second set of
    markers (the first then read as data): its batch fails first, saying which to give."""
    info = TableInfo(
        name="orders",
        partition_key=KeyAttribute("pk", "S"),
        sort_key=KeyAttribute("sk", "S"),
        replica_regions=(),
        index_projections={},
        item_count=0,
        size_bytes=0,
    )
    made = MarkerCore("orders", marker_sort_key="#mk")
    theirs = markers_key("ddbkeys_pk", made.sort_key(info))
    record = Evidence(
        "orders", "ix", backfill=Backfill(1.0, "arn", 0.0, finished=2.0, markers=theirs)
    )
    assert same_markers(record, made, info) is record
    with pytest.raises(ConfigurationError, match="at sort key '#mk', not "):
        same_markers(record, MarkerCore("orders"), info)
    assert same_markers(None, MarkerCore("orders"), info) is None  # (no record yet)
