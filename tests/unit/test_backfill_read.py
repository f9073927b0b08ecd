"""The backfill's read mode without a server (see ddbkeys.partition_keys._index.backfill_read):
which mode ``auto`` takes, where its window reads each shard from, which records name a collection,
and how a backfill that says it does not count is read back and declined."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._index.backfill import choose_mode
from ddbkeys.partition_keys._index.backfill_read import (
    backfill_window,
    stream_born,
    unreadable,
    window_names,
)
from ddbkeys.partition_keys._index.state import evidence_from_item
from ddbkeys.partition_keys._listing.recognise import markers_of
from ddbkeys.partition_keys._proof.evidence import Evidence, ShardMark
from ddbkeys.partition_keys._proof.precheck import precheck
from ddbkeys.partition_keys._proof.replay_window import ShardRead

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/2026-11-28T18:00:00.000"
MARGIN = 60.0


def info(items: int = 5000, stream: str | None = ARN) -> TableInfo:
    return TableInfo(
        name="orders",
        partition_key=KeyAttribute("pk", "S"),
        sort_key=KeyAttribute("sk", "N"),
        replica_regions=(),
        index_projections={},
        size_bytes=items * 100,
        item_count=items,
        stream_arn=stream,
    )


def test_auto_reads_a_streamed_table_of_a_thousand_items_and_reconciles_otherwise() -> None:
    assert choose_mode("auto", info()) == "read"
    assert choose_mode("auto", info(items=999)) == "reconcile"
    assert choose_mode("auto", info(stream=None)) == "reconcile"
    # a stream whose label does not say when it began cannot be shown to hold the window
    assert choose_mode("auto", info(stream=ARN.replace("2026-11-28T18:00:00.000", "x"))) == (
        "reconcile"
    )
    assert choose_mode("read", info(items=1)) == "read"
    assert choose_mode("reconcile", info()) == "reconcile"
    with pytest.raises(ConfigurationError, match="'scan' for table 'orders' is not one of"):
        choose_mode("scan", info())


def test_the_stream_label_is_when_the_stream_began() -> None:
    assert stream_born(ARN) == datetime(2026, 11, 28, 18, tzinfo=UTC).timestamp()
    assert stream_born("arn:aws:dynamodb:r:1:table/orders/stream/g0-0001") is None
    assert stream_born("not an arn") is None


def test_a_stream_younger_than_the_window_or_of_no_known_age_cannot_hold_it() -> None:
    born = stream_born(ARN)
    assert born is not None
    assert unreadable(ARN, born + MARGIN, MARGIN) is None  # began at the window's start
    young = unreadable(ARN, born + MARGIN - 5, MARGIN)
    assert young is not None and "stream began 5 s after the start of its window" in young.reason
    off = unreadable(None, born + MARGIN, MARGIN)
    assert off is not None and "stream was off" in off.reason
    unknown = unreadable("arn:aws:dynamodb:r:1:table/orders/stream/g0-0001", 1e12, MARGIN)
    assert unknown is not None
    assert "label ('g0-0001') is not a time" in unknown.reason
    assert "--mode reconcile" in unknown.reason


def shard(name: str) -> dict[str, Any]:
    return {"ShardId": name, "SequenceNumberRange": {}}


def test_the_window_reads_each_shard_after_the_newest_position_saved_before_it_starts() -> None:
    started = 10_000.0
    saved = Evidence(
        "orders",
        "idx",
        shards={
            # positions saved before the window's start, and one after it (not used)
            "s1": ShardMark("s1", ARN, "start", (("100", 9_000.0), ("200", 9_950.0))),
            # nothing saved that early: read from the shard's start
            "s2": ShardMark("s2", ARN, 9_990.0, ((None, 9_990.0),)),
            # another stream's mark counts for nothing
            "s3": ShardMark("s3", "arn:other", "start", (("5", 1.0),)),
        },
    )
    window = backfill_window(
        saved, ARN, [shard("s1"), shard("s2"), shard("s3")], started, MARGIN, 10_500.0
    )
    start = started - MARGIN
    assert window.reads == (
        ShardRead("s1", "100", skip_before=start, reach="200"),
        ShardRead("s2", None, skip_before=start, reach=None),
        ShardRead("s3", None, skip_before=start, reach=None),
    )
    assert window.cut + window.margin == 10_500.0  # "now", for the day-old check of a shard's start
    nobody = backfill_window(None, ARN, [shard("s1")], started, MARGIN, 10_500.0)
    assert nobody.reads == (ShardRead("s1", None, skip_before=start),)


def record(sk: str, **images: dict[str, Any]) -> dict[str, Any]:
    return {"dynamodb": {"Keys": {"pk": {"S": "a"}, "sk": {"N": sk}}, **images}}


def test_a_record_of_the_marker_s_key_names_its_collection_only_when_it_shows_data() -> None:
    table = info()
    markers = markers_of(table)
    assert markers is not None
    names = window_names(table, markers)
    marker_sk = str(markers.sort_value["N"])
    marker = {"pk": {"S": "a"}, "sk": {"N": marker_sk}, "ddbkeys_pk": {"S": "a"}}
    squatter = {"pk": {"S": "a"}, "sk": {"N": marker_sk}, "note": {"S": "data"}}
    assert names(record("1"))  # data
    assert not names(record(marker_sk))  # KEYS_ONLY: a marker written or removed
    assert not names(record(marker_sk, NewImage=marker))
    assert names(record(marker_sk, NewImage=squatter))  # data put at the marker's key
    assert names(record(marker_sk, OldImage=squatter))  # ... or removed from it


def test_a_backfill_that_says_it_does_not_count_is_declined_with_its_reason() -> None:
    entry = {
        "started": 100.0,
        "stream": ARN,
        "maintained_since": 10.0,
        "finished": 200.0,
        "clashes": [],
        "markers": None,
        "mode": "read",
        "uncounted": "the table's stream was turned off (or on again) while it ran",
    }
    maintainer = ShardMark("s1", ARN, "start", ((None, 10.0),)).to_json()
    item = {"backfill": {"S": json.dumps(entry)}, "shard s1": {"S": maintainer}}
    evidence = evidence_from_item("orders", "idx", item)
    assert evidence.corrupt is None and evidence.backfill is not None
    assert evidence.backfill.uncounted == entry["uncounted"]
    declined = precheck(evidence, ARN, MARGIN)
    assert declined is not None
    assert declined.reason == f"the backfill does not count: {entry['uncounted']}"
    counted = replace(evidence, backfill=replace(evidence.backfill, uncounted=None))
    assert precheck(counted, ARN, MARGIN) is None
