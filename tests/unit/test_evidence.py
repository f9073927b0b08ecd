"""The proof's decisions without a server: where a listing reads each shard of the stream from,
and why it declines (see ddbkeys.partition_keys._proof.evidence)."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from ddbkeys.partition_keys._index.state import evidence_from_item
from ddbkeys.partition_keys._proof.evidence import DAY, Backfill, Decline, Evidence, ShardMark
from ddbkeys.partition_keys._proof.marks import MAX_MARKS, advance, thin
from ddbkeys.partition_keys._proof.precheck import basis
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, ShardRead, replay_window
from ddbkeys.partition_keys._streams.follow_state import covered_since
from ddbkeys.partition_keys._streams.streams import streams_settings

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/now"
NOW = 10_000.0


def shard(name: str, parent: str | None = None, ending: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"ShardId": name, "SequenceNumberRange": {}}
    if parent is not None:
        found["ParentShardId"] = parent
    if ending is not None:
        found["SequenceNumberRange"]["EndingSequenceNumber"] = ending
    return found


def mark(name: str, *marks: tuple[str | None, float], since: str | float = "start") -> ShardMark:
    return ShardMark(name, ARN, since, tuple(marks))


def evidence(*marks: ShardMark, **backfill: Any) -> Evidence:
    """A record with a backfill (``backfill``: its fields changed) and ``marks`` (by default a
    maintainer's, as GOOD's: without one, every reason is that no maintainer runs)."""
    marks = marks or (mark("s1", ("10", 7_000.0), ("20", 9_990.0)),)
    fields: dict[str, Any] = {"started": 5_000.0, "stream": ARN, "maintained_since": 1_000.0}
    fields["finished"] = 6_000.0
    fields.update(backfill)
    clashes = fields.pop("maintainer_clashes", ())
    return Evidence("orders", "ix", {m.shard: m for m in marks}, Backfill(**fields), tuple(clashes))


GOOD = evidence(mark("s1", ("10", 7_000.0), ("20", 9_990.0)))


@pytest.mark.parametrize(
    ("record", "stream", "why"),
    [
        (None, ARN, "there is no record of a backfill"),
        (GOOD, None, "the table's stream is off"),
        (GOOD, ARN + "x", "another stream"),
        # (off, then on: not "turned off and on", a helper's find)
        (evidence(stream=None), ARN, "the backfill ran while the table's stream was off"),
        (evidence(finished=None), ARN, "has not finished"),
        (
            evidence(finished=None, owner="h:1 (index follow)"),
            ARN,
            "begun by `index follow --backfill` (h:1), has not finished (that follower was "
            "stopped or killed): run `index follow --backfill` again",
        ),
        (evidence(clashes=('{"S":"k"}',)), ARN, "backfill met data at the marker's key of"),
        (evidence(maintained_since=None), ARN, "no maintainer had recorded a position"),
        (evidence(maintained_since=4_990.0), ARN, "less than the replay margin"),
        # (helper-68: the margin a README's 1 s backfill was begun for was offered first)
        (
            evidence(maintained_since=4_990.0, margin=1.0),
            ARN,
            "run `index backfill --replay-margin 60` again, or list with --replay-margin 1 "
            "(shorter than the default 60 s, meant for AWS)",
        ),
        (evidence(maintainer_clashes=('{"S":"k"}',)), ARN, "a maintainer found data"),
        (evidence(mark("s1", since=4_999.0)), ARN, "began reading shard s1 after the backfill"),
        # No maintainer's position under the stream: that is the fix, whatever the backfill's
        # own words advised (helper-71 F4: `index backfill` again, beside `Fix: ... follow`).
        (
            replace(evidence(finished=None), shards={}),
            ARN,
            "no maintainer has recorded a position in the table's stream, so no backfill can "
            "count: run `index follow --backfill`, which keeps the markers and backfills once the "
            "margin has passed (with the Lambda handler as the maintainer, `index backfill "
            "--wait-for-maintainer` once it runs); the backfill recorded: its backfill has not "
            "finished (or was stopped)",
        ),
        (
            replace(evidence(clashes=('{"S":"k"}',)), shards={}),
            ARN,
            "backfill met data at the marker's key of",  # (move those items first)
        ),
    ],
)
def test_it_declines_with_a_reason(record: Evidence | None, stream: str | None, why: str) -> None:
    verdict = replay_window(record, stream, [shard("s1")], NOW, 60.0)
    assert isinstance(verdict, Decline) and why in verdict.reason


def test_while_a_backfill_has_not_finished_the_one_it_replaced_proves() -> None:
    """A backfill run again (or killed half way) withdrew a proof that held, for its whole
    run, or until another one finished; the finished one it replaced now stands meanwhile."""
    marks = mark("s1", ("10", 7_000.0), ("20", 9_990.0))
    kept = GOOD.backfill
    again = replace(evidence(marks, started=9_000.0, finished=None), kept=kept)
    assert basis(again, ARN, 60.0).backfill == kept
    assert replay_window(again, ARN, [shard("s1")], NOW, 60.0) == replay_window(
        GOOD, ARN, [shard("s1")], NOW, 60.0
    )
    # Not where the new one finished proving (its outcome is the index's), nor where the kept
    # one proves nothing: the newer one's words are then the reason.
    done = replace(evidence(marks, started=9_000.0, finished=9_500.0), kept=kept)
    assert basis(done, ARN, 60.0) is done
    # One that finished proving nothing (a clash, or it did not count: a helper's redundant
    # backfill with a larger margin) leaves the kept one standing.
    for nothing in ({"clashes": ('{"S":"k"}',)}, {"uncounted": "its window was not read"}):
        vain = replace(evidence(marks, started=9_000.0, finished=9_500.0, **nothing), kept=kept)
        assert basis(vain, ARN, 60.0).backfill == kept
        assert replay_window(vain, ARN, [shard("s1")], NOW, 60.0) == replay_window(
            GOOD, ARN, [shard("s1")], NOW, 60.0
        )
    assert kept is not None
    # Nor where the new one changes the markers (--force, another sort key): the maintainers
    # it runs beside keep its markers, not the kept one's (a helper's listings lost keys).
    assert again.backfill is not None
    switch = replace(again, backfill=replace(again.backfill, markers="ddbkeys_pk@N:-5"))
    kept_default = replace(switch, kept=replace(kept, markers="ddbkeys_pk@S:#ddbkeys#marker"))
    assert basis(kept_default, ARN, 60.0) is kept_default
    verdict = replay_window(kept_default, ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(verdict, Decline) and "has not finished" in verdict.reason
    same = replace(kept_default, kept=replace(kept, markers="ddbkeys_pk@N:-5"))
    assert basis(same, ARN, 60.0).backfill == same.kept
    for bad in (replace(kept, stream=ARN + "x"), replace(kept, clashes=('{"S":"k"}',))):
        held = replace(again, kept=bad)
        assert basis(held, ARN, 60.0) is held
        verdict = replay_window(held, ARN, [shard("s1")], NOW, 60.0)
        assert isinstance(verdict, Decline) and "has not finished" in verdict.reason
    # A record's kept backfill reads back; one edited by hand is a broken record.
    item = {"backfill": {"S": json.dumps({"started": 9_000.0, "stream": ARN})}}
    item["kept_backfill"] = {"S": json.dumps({"started": 5_000.0, "finished": 6_000.0})}
    read = evidence_from_item("orders", "ix", item)
    assert read.kept is not None and read.kept.finished == 6_000.0 and read.corrupt is None
    item["kept_backfill"] = {"S": "[1]"}
    assert "kept backfill" in str(evidence_from_item("orders", "ix", item).corrupt)


def test_a_named_shard_is_read_from_the_newest_mark_older_than_the_margin() -> None:
    window = replay_window(GOOD, ARN, [shard("s1")], NOW, 60.0)
    assert window == ReplayWindow(ARN, (ShardRead("s1", "10", reach="20"),), 60.0, NOW - 60.0)
    # Once the newest mark is old enough, nothing before it is read again.
    later = replay_window(GOOD, ARN, [shard("s1")], NOW + 61, 60.0)
    assert isinstance(later, ReplayWindow) and later.reads == (ShardRead("s1", "20", reach="20"),)


def test_a_shard_with_no_mark_old_enough_is_read_from_its_start() -> None:
    young = evidence(mark("s1", ("20", 9_990.0)))
    window = replay_window(young, ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow) and window.reads == (ShardRead("s1", None, reach="20"),)


def test_a_shard_begun_at_its_end_skips_the_history_the_backfill_covers() -> None:
    latest = evidence(mark("s1", (None, 1_000.0), since=1_000.0))
    window = replay_window(latest, ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    assert window.reads == (ShardRead("s1", None, skip_before=940.0, began=1_000.0),)
    # A day on with nothing applied: records after its start may have been trimmed unapplied.
    stale = replay_window(latest, ARN, [shard("s1")], 1_000.0 + DAY, 60.0)
    assert isinstance(stale, Decline) and "for nearly a day" in stale.reason


def test_a_tip_read_since_moves_on_where_the_history_ends() -> None:
    """A follower begun at the shard's end saves ``(None, t)`` marks at the tips it read with
    nothing found since it began: a listing leaves out what was written before the newest
    such mark held back the margin (else every listing re-checked what came just before the
    follower began, such as a backfill's marker writes, until a later write: 303 RCU against
    a scan's 3.48 on a 300-key table)."""
    tips = mark("s1", (None, 1_000.0), (None, 9_000.0), (None, 9_980.0), since=1_000.0)
    window = replay_window(evidence(tips), ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    # (the mark at 9,980 is within the margin of NOW: held back, it is not used yet)
    assert window.reads == (ShardRead("s1", None, skip_before=8_940.0, began=9_980.0),)
    # A mark of the Lambda handler (since "start") makes no such claim: read whole.
    lambda_kept = mark("s1", (None, 1_000.0), (None, 9_000.0))
    window = replay_window(evidence(lambda_kept), ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    assert window.reads == (ShardRead("s1", None),)
    # Once a record is applied, its position is where the read begins, as before.
    applied = mark("s1", (None, 1_000.0), (None, 9_000.0), ("5", 9_500.0), since=1_000.0)
    window = replay_window(evidence(applied), ARN, [shard("s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    assert window.reads == (ShardRead("s1", "5", skip_before=940.0, reach="5", began=1_000.0),)


def test_unnamed_shards() -> None:
    listed = [shard("s1", ending="30"), shard("child", "s1"), shard("grandchild", "child")]
    window = replay_window(GOOD, ARN, listed, NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    # Descendants of a named shard: every record, from their start.
    assert [r.shard for r in window.reads] == ["s1", "child", "grandchild"]
    assert window.reads[1:] == (ShardRead("child", None), ShardRead("grandchild", None))
    # A stranger: read from its start, but only if it holds nothing from before the backfill.
    window = replay_window(GOOD, ARN, [shard("s1"), shard("s9")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)
    assert window.reads[1] == ShardRead("s9", None, only_after=5_000.0)
    # ... and not at all once the backfill is older than the stream keeps records.
    declined = replay_window(GOOD, ARN, [shard("s1"), shard("s9")], 5_000.0 + DAY, 60.0)
    assert isinstance(declined, Decline) and "no maintainer recorded a position in shard s9" in (
        declined.reason
    )
    hinted = Evidence("orders", "ix", GOOD.shards, GOOD.backfill, (), unnamed_batches=1.0)
    declined = replay_window(hinted, ARN, [shard("s1"), shard("s9")], 5_000.0 + DAY, 60.0)
    assert isinstance(declined, Decline) and "tumbling window" in declined.reason


def test_a_named_shard_that_left_the_stream_within_the_margin_is_declined() -> None:
    verdict = replay_window(GOOD, ARN, [shard("s2", "s1")], NOW, 60.0)
    assert isinstance(verdict, Decline) and "left the stream" in verdict.reason
    old = evidence(mark("s1", ("10", 7_000.0)))
    window = replay_window(old, ARN, [shard("s2", "s1")], NOW, 60.0)
    assert isinstance(window, ReplayWindow)  # gone long ago: its child is read from its start
    assert window.reads == (ShardRead("s2", None, only_after=5_000.0),)


def test_marks_of_another_stream_count_for_nothing() -> None:
    other = ShardMark("s1", ARN + "old", "start", (("10", 7_000.0),))
    verdict = replay_window(evidence(other), ARN, [shard("s1")], 5_000.0 + DAY, 60.0)
    assert isinstance(verdict, Decline) and "shard s1" in verdict.reason


def test_advance_never_goes_back_and_thins() -> None:
    first = advance(None, "s1", ARN, "start", "5", 100.0)
    assert first.marks == (("5", 100.0),)
    again = advance(first, "s1", ARN, "start", "3", 200.0)  # a batch delivered again
    assert again.marks[-1] == ("5", 200.0)
    moved = advance(again, "s1", ARN, "start", "12", 300.0)
    assert moved.marks[-1] == ("12", 300.0) and moved.since == "start"
    restarted = advance(moved, "s1", ARN + "new", 400.0, None, 400.0)  # a new stream
    assert restarted.marks == ((None, 400.0),) and restarted.since == 400.0
    many = [(str(n), float(n)) for n in range(10_000)]
    kept = thin(many, 10_000.0)
    assert len(kept) <= MAX_MARKS and kept[-1] == many[-1]
    assert [s for s, _ in kept] == sorted((s for s, _ in kept), key=lambda s: int(s or 0))
    assert kept[0] == many[0]  # (the first, under a day old: when coverage began)
    # A second mark 0.8 s after the first keeps the first: when coverage was first recorded
    # (where a backfill's margin starts) does not move later (it did: CI, a Lambda handler's
    # second batch, and a backfill begun the margin after the first read as begun too soon).
    second = advance(first, "s1", ARN, "start", "6", 100.8)
    assert second.first_saved == 100.0 and second.marks[-1] == ("6", 100.8)


@pytest.mark.parametrize("every", [0.3, 1.0, 10.0])
def test_a_shard_saved_every_second_keeps_a_position_about_the_margin_old(every: float) -> None:
    """A follower saves a shard's mark after each batch: every second or so on a table
    written steadily. Thinned from the newer side, the newest mark but one was dropped at each
    save, and the record held the first and the newest only: every listing replayed the stream
    from the follower's first position (405 RCU against a scan's 7 after 3 minutes, a helper
    found). For the margins a listing may use, a mark between 1 and 2 times it old is kept."""
    mark: ShardMark | None = None
    now, worst = 0.0, dict.fromkeys((60.0, 600.0, 3600.0), 0.0)
    while now < 3 * 3600:
        mark = advance(mark, "s1", ARN, "start", str(int(now * 10)), now)
        assert len(mark.marks) <= MAX_MARKS and mark.marks[0] == ("0", 0.0)
        if now > 3600:
            for margin in worst:
                held = max(t for _, t in mark.marks if t <= now - margin)
                worst[margin] = max(worst[margin], (now - held) / margin)
        now += every
    assert all(ratio < 2 for ratio in worst.values()), worst


def test_the_last_mark_before_a_lull_is_kept_until_those_after_it_are_old_enough() -> None:
    """helper-72 F2: a follower saved 5 marks in its first minute, none in 7 quiet minutes,
    then 2 for one write. Spaced from its first mark, the newest mark before the lull went
    with the first of the two new ones, and for a margin every listing replayed all since the
    follower began (304.5 RCU against 3.5 on 300 keys). It is kept: a listing then reads past
    it, and re-checks the one write."""
    mark = advance(None, "s1", ARN, 0.0, None, 0.0)
    for sequence, at in ((None, 30.0), ("2653", 60.0), ("2810", 62.0), ("3064", 64.0)):
        mark = advance(mark, "s1", ARN, 0.0, sequence, at)
    for sequence, at in (("6402", 500.0), ("6403", 500.5)):
        mark = advance(mark, "s1", ARN, 0.0, sequence, at)
    assert ("3064", 64.0) in mark.marks, mark.marks
    assert mark.held_back(500.5 + 10 - 60.0) == ("3064", True)
    # ... for as long as the marks after it are too young to use: a listing at each save
    # (margin 60 s) reads past 3064 at least, never from the follower's start.
    for at in (510.0, 530.0, 545.0, 560.0, 590.0, 700.0):
        mark = advance(mark, "s1", ARN, 0.0, str(int(at * 100)), at)
        sequence, found = mark.held_back(at - 60.0)
        assert found and sequence is not None and int(sequence) >= 3064, (at, mark.marks)


def test_the_record_reads_back() -> None:
    item = {
        "id": {"S": "orders/ix"},
        "shard s1": {"S": GOOD.shards["s1"].to_json()},
        "shard junk": {"S": "not json"},
        "backfill": {"S": json.dumps({"started": 5000, "stream": ARN, "maintained_since": 1000})},
        "clashes": {"SS": ['{"S":"k"}']},
        "unnamed_batches": {"N": "3"},
    }
    read = evidence_from_item("orders", "ix", item)
    assert read.shards == {"s1": GOOD.shards["s1"]}
    assert read.backfill == Backfill(5000.0, ARN, 1000.0)
    assert read.clashes == ('{"S":"k"}',) and read.unnamed_batches == 3.0


@pytest.mark.parametrize(
    ("endpoint", "own"),
    [
        ("https://dynamodb.eu-west-1.amazonaws.com", True),
        ("https://dynamodb-fips.us-east-1.amazonaws.com", True),
        ("https://dynamodb.cn-north-1.amazonaws.com.cn", True),
        ("https://dynamodb.us-east-1.api.aws", True),
        ("https://vpce-1a2b.dynamodb.us-east-1.vpce.amazonaws.com", True),
        ("http://127.0.0.1:8000", False),
        ("http://localhost:8000", False),
    ],
)
def test_the_streams_client_finds_its_own_endpoint_on_aws(endpoint: str, own: bool) -> None:
    """On AWS the Streams API has endpoints of its own (botocore finds them from the region);
    DynamoDB Local serves both APIs on one port. (What streams_settings reads of a client is
    its ``meta``: a stand-in has that.)"""
    config = object()
    meta = SimpleNamespace(endpoint_url=endpoint, region_name="us-east-1", config=config)
    settings = streams_settings(SimpleNamespace(meta=meta))
    assert ("endpoint_url" not in settings) is own
    assert settings["region_name"] == "us-east-1" and settings["config"] is config


def test_a_held_back_position_that_applied_nothing_a_day_ago_is_declined() -> None:
    """The position held back the margin says nothing was applied (no sequence number): the
    shard would be read from its start, where a record trimmed since leaves no trace. Nearly a
    day old, that is declined; younger, it is read. (Found once the marks were thinned from
    the older side: the Lambda handler's marks of a day-old shard then held back its first,
    and a clash written meanwhile, trimmed, was missing from a "proven" listing.)"""
    now = 5_000.0 + DAY
    old = evidence(mark("s1", (None, 5_010.0), ("6", now - 30.0)))
    declined = replay_window(old, ARN, [shard("s1")], now, 60.0)
    assert isinstance(declined, Decline) and "had applied none of its records" in declined.reason
    young = evidence(mark("s1", (None, now - 600.0), ("6", now - 30.0)))
    window = replay_window(young, ARN, [shard("s1")], now, 60.0)
    assert isinstance(window, ReplayWindow) and window.reads[0].after is None


#: Shard ids say when they were made in milliseconds since the epoch: times of these tests.
EPOCH = 1_700_000_000.0


def born(seconds: float) -> str:
    """A shard id that says when it was made (``EPOCH`` + seconds), as the service's and
    DynamoDB Local's do."""
    return f"shardId-{int((EPOCH + seconds) * 1000):020d}-0a1b2c3d"


def at(started: float) -> dict[str, float]:
    """A backfill's times, ``EPOCH`` + ``started`` (its maintainer 4,000 s before it)."""
    return {
        "started": EPOCH + started,
        "maintained_since": EPOCH + started - 4_000.0,
        "finished": EPOCH + started + 1_000.0,
    }


def test_a_day_old_shard_read_from_its_start_for_want_of_a_position_is_declined() -> None:
    """No mark old enough (held back the margin, or to a Lambda trigger's check): the shard is
    read from its start, whole only if nothing of it can have been trimmed. Made nearly a day
    ago (its id's time), it is declined; a young shard is read. (A random run: a trimmed clash
    left no trace, the oldest record left a minute old.)"""
    now = 5_000.0 + DAY
    old, young = born(4_000.0), born(now - 3_600.0)
    for name, right in ((old, False), (young, True)):
        found = mark(name, ("6", EPOCH + now - 30.0), since=EPOCH + 4_000.0)
        record = evidence(found, **at(5_000.0))
        window = replay_window(record, ARN, [shard(name)], EPOCH + now, 60.0)
        if right:
            assert isinstance(window, ReplayWindow) and window.reads[0].after is None
        else:
            assert isinstance(window, Decline) and "old enough to use" in window.reason


def test_a_start_first_saved_a_day_after_its_shard_was_made_is_declined() -> None:
    """A maintainer claims a shard from its oldest record ("start") but first saved it nearly a
    day after the shard was made, after the backfill began: what was trimmed before it read
    the shard was never applied. Declined, saying to backfill again; a backfill begun after
    that first save covers it."""
    made = 10_000.0
    name = born(made)
    first = made + DAY
    now = EPOCH + first + 200

    def listed(first_mark: float, started: float) -> ReplayWindow | Decline:
        marks = mark(name, ("6", EPOCH + first_mark), ("7", EPOCH + first + 100))
        return replay_window(evidence(marks, **at(started)), ARN, [shard(name)], now, 60.0)

    declined = listed(first, 50_000.0)
    assert isinstance(declined, Decline) and "`index backfill` again" in declined.reason
    assert isinstance(listed(first, first + 61), ReplayWindow)  # a backfill begun after
    assert isinstance(listed(made + 10, 50_000.0), ReplayWindow)  # read at the shard's birth


def test_a_first_start_from_the_oldest_record_covers_a_day_old_shard_from_now() -> None:
    now = EPOCH + 5_000.0 + DAY
    assert covered_since(born(5_000.0 + DAY - 3_600.0), now) == "start"
    assert covered_since(born(4_000.0), now) == now
    assert covered_since("shardId-00000003", now) == "start"  # (no time in the id)
