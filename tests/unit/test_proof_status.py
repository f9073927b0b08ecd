"""``index status`` decided without a server (``proof_status.decide``): from the table's
description, the index's record as GetItem returns it, and what the replay's read of the
stream found, whether a listing proves the index now, the listing's own reason when not, the
one command that fixes it and when it counts, and what a listing would pay now."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from ddbkeys._cli.index_status import render_status
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.state import StateCore, markers_key
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._listing.choice import IndexUnprovenError, behind_or_busy, declined
from ddbkeys.partition_keys._proof.evidence import Decline, Evidence, ShardMark
from ddbkeys.partition_keys._proof.replay import StreamRead, estimate, lag_of
from ddbkeys.partition_keys._proof.replay_window import replay_window
from ddbkeys.partition_keys._proof.report import ProofStatus
from ddbkeys.partition_keys._proof.shard_read import Replay
from ddbkeys.partition_keys._proof.status import Seen, decide, status_flow
from ddbkeys.partition_keys._streams.lambda_trigger import LAMBDA_PREFIX, TriggerCheck
from tests.unit.test_index_core import described, info, play

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/now"
OTHER_ARN = "arn:aws:dynamodb:r:1:table/orders/stream/before"
INDEX = "ddbkeys-partition-keys"
MARKERS = markers_key("ddbkeys_pk", DEFAULT_MARKER_SORT_KEY["N"])
NOW = 100_000.0
MARGIN = 60.0
FIRST = NOW - 500  # the maintainer's first position
SHARDS = [{"ShardId": "s1", "SequenceNumberRange": {"StartingSequenceNumber": "1"}}]


def record(
    *marks: ShardMark, backfill: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The index's record as GetItem returns it."""
    item: dict[str, Any] = {"id": {"S": f"orders/{INDEX}"}, "maintainer": {"S": "follow"}}
    item.update({f"shard {m.shard}": {"S": m.to_json()} for m in marks})
    if backfill is not None:
        item["backfill"] = {"S": json.dumps(backfill)}
    item.update(extra)
    return item


def backfill(started: float = FIRST + 100, **changes: Any) -> dict[str, Any]:
    raw = {
        "started": started,
        "stream": ARN,
        "maintained_since": FIRST,
        "finished": started + 5,
        "clashes": [],
        "markers": MARKERS,
        **changes,
    }
    return raw


MARK = ShardMark("s1", ARN, "start", (("5", FIRST), ("10", NOW - 120)))


def stream(item: dict[str, Any] | None, found: int = 0) -> StreamRead:
    """What the replay's read finds on the table's stream (SHARDS): ``found`` records, each
    naming a collection of its own, in s1."""
    from ddbkeys.partition_keys._index.state import evidence_from_item  # noqa: PLC0415

    evidence = evidence_from_item("orders", INDEX, item) if item else None
    window = replay_window(evidence, ARN, SHARDS, NOW, MARGIN, MARKERS)
    if isinstance(window, Decline):
        return StreamRead(SHARDS, decline=window)
    replay = Replay(MARGIN, records=found, by_shard={"s1": found} if found else {})
    for n in range(found):
        replay.touched[("S", f"k{n}")] = {"S": f"k{n}"}
    return StreamRead(SHARDS, window, replay)


def status(
    item: dict[str, Any] | None, read: StreamRead | None = None, **table: Any
) -> ProofStatus:
    described = info(stream_arn=ARN, **table)
    seen = Seen(described, "KEYS_ONLY", item, read if read is not None else stream(item))
    return decide(
        seen, index=INDEX, markers=MARKERS, state_table="ddbkeys-state", margin=MARGIN, now=NOW
    )


def test_a_proven_index_says_what_a_listing_would_pay() -> None:
    item = record(MARK, backfill=backfill(margin=60))
    got = status(item, stream(item, found=3), size_bytes=4096 * 1000, item_count=10_000)
    scan, index_scan, per_key = estimate(info(size_bytes=4096 * 1000, item_count=10_000), INDEX)
    assert got.provable and got.reason is None and got.fix is None
    assert (got.records, got.rechecks) == (3, 3)
    assert got.listing_rcu == index_scan + 3 * per_key and got.scan_rcu == scan == 500.0
    assert got.auto_uses_index
    assert got.maintainer == "follow" and got.first_position == FIRST
    assert got.backfill is not None and got.backfill.after_first == 100
    assert got.backfill.margin == 60.0  # the margin the backfill waited for
    (shard,) = got.shards
    assert shard.named and shard.newest == "10" and shard.age == 120 and shard.records == 3
    assert json.loads(json.dumps(got.to_json()))["provable"] is True


def test_a_follower_s_backfill_at_work_is_waited_for() -> None:
    """Where the fix is `index follow --backfill` and its backfill is at work (alive a moment
    ago), nothing is to be run: the status says so, as for `index backfill`."""
    running = backfill(finished=None, owner="h:42 (index follow)", alive=NOW - 1, margin=MARGIN)
    got = status(record(MARK, backfill=running))
    assert got.reason is not None and got.reason.startswith("a backfill is at work"), got.reason
    assert got.fix is None


def test_a_backfill_begun_before_any_maintainer_leaves_the_follower_s_own_to_come() -> None:
    """`index backfill` first (no maintainer: it cannot count), then `index follow --backfill`,
    waiting out its margin: the status says that nothing may need running, as where no
    backfill was recorded (it offered only `index backfill`)."""
    young = ShardMark("s1", ARN, NOW - 20, ((None, NOW - 20),))
    early = backfill(NOW - 100, maintained_since=None)
    got = status(record(young, backfill=early))
    assert got.fix == "ddbkeys partition-keys index backfill -t orders" and got.fix_in == 40.0
    assert "Or nothing, if `index follow --backfill` is what runs" in "\n".join(render_status(got))


def test_a_backfill_under_the_stream_before_leaves_the_follower_s_own_to_come() -> None:
    """helper-73 F2: the stream turned off and on while `index follow --backfill` ran; the
    follower said "backfill in 60 s" under the new stream, and status offered only `index
    backfill`. It says now that nothing may need running, as at a first setup."""
    young = ShardMark("s1", ARN, NOW - 4, ((None, NOW - 4),))
    before = backfill(stream="arn:aws:dynamodb:r:1:table/orders/stream/before")
    got = status(record(young, backfill=before))
    assert got.reason is not None and "under another stream" in got.reason, got.reason
    assert got.fix == "ddbkeys partition-keys index backfill -t orders" and got.fix_in == 56.0
    assert "Or nothing, if `index follow --backfill` is what runs" in "\n".join(render_status(got))


def test_with_the_stream_off_the_backfill_line_says_so_not_another_stream() -> None:
    """helper-73 F5: the Backfill line said "under another stream" where there was none."""
    item = record(MARK, backfill=backfill())
    described = info(stream_arn=None)
    got = decide(
        Seen(described, "KEYS_ONLY", item, StreamRead([])),
        index=INDEX,
        markers=MARKERS,
        state_table="ddbkeys-state",
        margin=MARGIN,
        now=NOW,
    )
    (line,) = [line for line in render_status(got) if line.startswith("Backfill:")]
    assert "; the table's stream is off now;" in line and "another stream" not in line, line
    on = status(item)  # (the same record, the stream it was made under on)
    (line,) = [line for line in render_status(on) if line.startswith("Backfill:")]
    assert "stream" not in line.split("(a listing needs")[1], line


def test_auto_lists_another_way_when_rechecks_cost_more_than_a_scan() -> None:
    item = record(MARK, backfill=backfill())
    got = status(item, stream(item, found=3))  # a 1 KB table: a scan is 0.5 RCU
    assert got.provable and not got.auto_uses_index
    # It says what to look at (a helper read "Provable: yes", no fix, and a stopped maintainer).
    text = "\n".join(render_status(got))
    assert "about 3.5 RCU, against 0.5 RCU for a scan (auto lists another way" in text, text
    assert "Behind: each listing re-checks the last 60 s of writes and what its maintainer " in text
    # (with the records read, they come before the question: helper-72 F7, whose words were
    # "has not applied 60 stream record(s) (...) and the last 60 s of writes")
    behind = "\n".join(render_status(replace(got, unapplied=60, behind=66.0)))
    assert (
        "has not applied (60 stream record(s), the oldest written at most 66 s ago): is `ddbkeys "
    ) in behind, behind
    assert "is `ddbkeys partition-keys index follow -t orders` running?" in text
    # A maintainer that saved a moment ago keeps up: the re-checks are the margin's writes (a
    # new user, just after a backfill, was asked whether a healthy follower was running).
    (shard,) = got.shards
    fresh = replace(got, shards=(replace(shard, age=3.0),))
    text = "\n".join(render_status(fresh))
    assert "Behind:" not in text and "Recent: its maintainer keeps up (it saved 3 s ago)" in text
    # Saved a moment ago, but with a backlog: not "keeps up" (helper-71: said beside 20,358
    # records it had not applied, the oldest 56 s old).
    text = "\n".join(render_status(replace(fresh, unapplied=20_358, behind=56.0)))
    assert "keeps up" not in text, text
    assert (
        "Backlog: its maintainer saved 3 s ago but has not applied 20,358 stream record(s) (the "
        "oldest written at most 56 s ago); each listing re-checks those"
    ) in text, text
    # Records from before its follower began, re-checked until it has said where the tip was:
    # history, not "the last 60 s" (helper-72 F3: said of writes 2 minutes old).
    text = "\n".join(render_status(replace(fresh, unapplied=0, history=300)))
    assert "Recent:" not in text and "Behind:" not in text, text
    assert (
        "History: each listing re-checks 300 stream record(s) written just before its maintainer "
        "began (history the backfill covers) until it has read the stream's tip with nothing "
        "new: within about 210 s of their writing, while it runs"
    ) in text, text


@pytest.mark.parametrize(
    ("item", "reason", "fix", "fix_in"),
    [
        # No maintainer has recorded a position: start one, which backfills once it may.
        (
            None,
            "there is no record of a backfill",
            "ddbkeys partition-keys index follow -t orders --backfill",
            0.0,
        ),
        # A backfill recorded (here still running, or stopped), no maintainer: the reason and
        # the `Fix:` line name the same command (helper-71 F4: the reason said `index backfill`).
        (
            record(backfill=backfill(finished=None)),
            "no maintainer has recorded a position in the table's stream, so no backfill can "
            "count: run `index follow --backfill`",
            "ddbkeys partition-keys index follow -t orders --backfill",
            0.0,
        ),
        # The Lambda handler has handled nothing under this stream: a backfill that waits.
        (
            record(maintainer={"S": "lambda"}),
            "there is no record of a backfill",
            "ddbkeys partition-keys index backfill -t orders --wait-for-maintainer",
            0.0,
        ),
        # A maintainer, no backfill: one counts now (its first position is 500 s old).
        (
            record(MARK),
            "there is no record of a backfill",
            "ddbkeys partition-keys index backfill -t orders",
            0.0,
        ),
        # The setup's dead end: the backfill began 6 s after the maintainer's first position.
        (
            record(MARK, backfill=backfill(FIRST + 6)),
            "the backfill began 6 s after the maintainer's first position, less than the "
            "replay margin (60 s)",
            "ddbkeys partition-keys index backfill -t orders",
            0.0,
        ),
        # A maintainer started 20 s ago: a backfill counts when begun 40 s from now.
        (
            record(ShardMark("s1", ARN, NOW - 20, ((None, NOW - 20),))),
            "there is no record of a backfill",
            "ddbkeys partition-keys index backfill -t orders",
            40.0,
        ),
        (
            record(MARK, backfill=backfill(finished=None)),
            "its backfill has not finished",
            "ddbkeys partition-keys index backfill -t orders",
            0.0,
        ),
        # One that `index follow --backfill` ran, and no longer runs (helper-70 F2: the fix
        # `index backfill` left no maintainer; every listing then replayed all since the dead
        # follower's position): that follower again.
        (
            record(MARK, backfill=backfill(finished=None, owner="h:42 (index follow)", alive=1.0)),
            "its backfill, begun by `index follow --backfill` (h:42), has not finished",
            "ddbkeys partition-keys index follow -t orders --backfill",
            0.0,
        ),
        (
            record(MARK, backfill=backfill(), clashes={"SS": ['{"S":"k1"}']}),
            "a maintainer found data at the marker's key of collection(s) 'k1'",
            "ddbkeys partition-keys index repair -t orders",
            0.0,
        ),
        # The backfill met your items at the marker's key: they must be moved first, which no
        # command does (it said "Fix: ... index backfill", which alone fails again).
        (
            record(MARK, backfill=backfill(clashes=['{"S":"k1"}'])),
            "the backfill met data at the marker's key of collection(s) 'k1': move those items",
            None,
            None,
        ),
        # A position the shard's range rules out: the reason says what comes before the command.
        (
            record(ShardMark("s1", ARN, "start", (("0", FIRST),)), backfill=backfill()),
            "lies before its first, 1: no maintainer wrote it",
            "ddbkeys partition-keys index backfill -t orders",
            0.0,
        ),
    ],
)
def test_not_provable_says_why_and_the_command_that_fixes_it(
    item: dict[str, Any] | None, reason: str, fix: str | None, fix_in: float | None
) -> None:
    got = status(item)
    assert not got.provable and got.reason is not None and reason in got.reason
    assert (got.fix, got.fix_in) == (fix, fix_in)
    assert got.records is None and got.rechecks is None and not got.auto_uses_index
    text = "\n".join(render_status(got))
    assert f"Provable: no: {got.reason}" in text
    assert (f"Fix: {fix}" in text) if fix else ("Fix:" not in text)


def test_the_stream_off_and_the_index_building_name_their_command() -> None:
    off = decide(
        Seen(info(stream_arn=None), None, record(MARK, backfill=backfill()), StreamRead()),
        index=INDEX,
        markers=MARKERS,
        state_table="ddbkeys-state",
        margin=MARGIN,
        now=NOW,
    )
    assert off.reason is not None and "stream is off" in off.reason
    assert off.fix == "ddbkeys partition-keys index stream -t orders" and off.stream is None
    building = status(record(MARK, backfill=backfill()), index_statuses={INDEX: "CREATING"})
    assert building.reason == f"index {INDEX!r} is not ACTIVE yet"
    assert building.fix == "ddbkeys partition-keys index create -t orders"


def test_options_that_are_not_the_default_are_in_the_fix() -> None:
    described = info(
        stream_arn=ARN,
        index_projections={"ix": "KEYS_ONLY"},
        index_statuses={"ix": "ACTIVE"},
        index_hash_keys={"ix": "ddbkeys_pk"},
    )
    seen = Seen(described, "KEYS_ONLY", record(MARK), stream(record(MARK)))
    got = decide(seen, index="ix", markers=MARKERS, state_table="mine", margin=MARGIN, now=NOW)
    assert (
        got.fix
        == "ddbkeys partition-keys index backfill -t orders --index-name ix --state-table mine"
    )
    wider = decide(seen, index="ix", markers=MARKERS, state_table="mine", margin=90, now=NOW)
    assert wider.fix is not None and wider.fix.endswith(" --state-table mine --replay-margin 90")


def test_a_shard_that_left_the_stream_within_the_margin_is_provable_by_waiting() -> None:
    gone = ShardMark("s0", ARN, "start", (("3", FIRST), ("4", NOW - 20)))
    item = record(MARK, gone, backfill=backfill())
    got = status(item)
    assert got.reason is not None and "left the stream less than 60 s" in got.reason
    assert got.provable_in == pytest.approx(40.0, abs=0.01)
    assert "Provable in 40 s with nothing done" in "\n".join(render_status(got))
    (left,) = [s for s in got.shards if s.shard == "s0"]
    assert not left.listed and left.named


def test_waiting_does_not_help_a_read_that_declined() -> None:
    item = record(MARK, backfill=backfill())
    read = StreamRead(SHARDS, decline=Decline("shard s1 is no longer in the stream"))
    got = status(item, read)
    assert got.reason == "shard s1 is no longer in the stream"
    assert got.provable_in is None and got.fix is None


def test_the_lambda_handlers_check_of_its_trigger_is_shown_per_shard() -> None:
    check = TriggerCheck(ARN, 1, NOW - 40, since=FIRST)
    item = record(MARK, backfill=backfill(), **{LAMBDA_PREFIX + "s1": {"S": check.to_json()}})
    (shard,) = status(item).shards
    assert (shard.trigger_factor, shard.trigger_checked_age) == (1, 40.0)
    assert "Lambda trigger's ParallelizationFactor 1 read 40 s ago" in "\n".join(
        render_status(status(item))
    )
    (plain,) = status(record(MARK, backfill=backfill())).shards
    assert (plain.trigger_factor, plain.trigger_checked_age) == (None, None)


def test_a_backfill_at_work_is_shown_with_who_runs_it() -> None:
    """(One at work is what a backfill begun now would wait for: see backfill_claim.)"""
    at_work = backfill(finished=None, alive=NOW - 4, owner="host-a:41 (index follow)")
    told = status(record(MARK, backfill=at_work))
    assert told.backfill is not None and told.backfill.at_work
    assert told.backfill.owner == "host-a:41 (index follow)" and told.backfill.alive == NOW - 4
    assert "; at work by host-a:41 (index follow) (alive 4 s ago);" in "\n".join(
        render_status(told)
    )
    dead = status(record(MARK, backfill=backfill(finished=None, alive=NOW - 31)))
    assert dead.backfill is not None and not dead.backfill.at_work
    assert "; not finished;" in "\n".join(render_status(dead))
    assert json.loads(json.dumps(told.to_json()))["backfill"]["at_work"] is True


def test_a_backfill_at_work_that_can_count_is_the_reason_and_nothing_is_to_run() -> None:
    """Not the listing's "run `index backfill`": that would only wait for the one at work. It
    becomes provable when that one finishes; no estimate of when (what is left is unknown)."""
    at_work = backfill(finished=None, alive=NOW - 4, owner="host-a:41", handled=12, margin=60)
    told = status(record(MARK, backfill=at_work))
    assert not told.provable and told.reason is not None
    assert told.reason.startswith("a backfill is at work (begun ")
    assert (
        " by host-a:41; 12 collection(s) handled so far, alive 4 s ago; if it was killed, 26 s "
        "until it is taken for dead): "
    ) in told.reason
    assert "listings can prove the index once it finishes, if it meets no clash" in told.reason
    assert "run `index backfill`" not in told.reason
    assert (told.fix, told.fix_in, told.provable_in) == (None, None, None)
    text = "\n".join(render_status(told))
    assert f"Provable: no: {told.reason}" in text and "Fix:" not in text
    assert "at work by host-a:41 (alive 4 s ago, 12 collection(s) handled)" in text
    assert not re.search(r"\bin (about )?\d+ s\b", text) and "Provable in" not in text
    document = json.loads(json.dumps(told.to_json()))
    assert document["reason"] == told.reason and document["fix"] is None
    assert document["provable"] is False and document["backfill"]["handled"] == 12


@pytest.mark.parametrize(
    "at_work",
    [
        # Begun 6 s after the maintainer's first position: it will not count when it ends.
        backfill(FIRST + 6, finished=None, alive=NOW - 4, owner="host-a:41"),
        # Silent for 31 s: dead (killed), in no one's way.
        backfill(finished=None, alive=NOW - 31, owner="host-a:41"),
        # It said it stopped (Ctrl-C).
        backfill(finished=None, alive=NOW - 4, stopped=NOW - 3, owner="host-a:41"),
    ],
)
def test_one_that_cannot_count_or_is_not_at_work_leaves_the_listings_reason(
    at_work: dict[str, Any],
) -> None:
    told = status(record(MARK, backfill=at_work))
    assert told.reason is not None and not told.reason.startswith("a backfill is at work")
    assert told.fix == "ddbkeys partition-keys index backfill -t orders"


def test_a_costly_replay_asks_after_the_maintainer_only_when_it_is_behind_the_margin() -> None:
    """Why re-checks cost too much, in words: a record the maintainer has not applied, written
    longer ago than the margin even if its time was rounded down a whole minute (DynamoDB
    Local's; a record 51 s old by its time was read as behind in CI), asks whether `index
    follow` runs; else the changes lie within the margin, which every listing reads again."""
    replay = Replay(60.0)
    replay.oldest_unapplied = 1_000.0
    assert lag_of(replay, 1_000.0 + 51) == 0.0  # (written 0-51 s ago: not known behind)
    assert lag_of(replay, 1_000.0 + 200) == 140.0  # (at least 140 s ago)
    assert lag_of(Replay(60.0), 2_000.0) is None  # every record read was applied
    busy = behind_or_busy("orders", 0.0, 60.0)
    assert (
        busy.startswith(" (they changed within the replay margin, 60 s,") and "follow" not in busy
    )
    history = behind_or_busy("orders", None, 60.0, history=300)
    assert history.startswith(" (300 of the records came just before its maintainer began") and (
        "within about 210 s of their writing" in history
    ), history
    asked = behind_or_busy("orders", 140.0, 60.0)
    assert "not applied a record written 140 s ago or more: is `ddbkeys partition-keys " in asked
    assert "index follow -t orders` running?" in asked


@pytest.mark.parametrize("maintainer", ["follow", "lambda"])
@pytest.mark.parametrize("age", [20.0, 59.0, 61.0, 500.0])  # (the maintainer's first position)
@pytest.mark.parametrize("recorded", ["none", "before", "elsewhere", "counting", "clashed"])
def test_a_listing_s_note_and_status_say_or_nothing_by_one_rule(
    maintainer: str, age: float, recorded: str
) -> None:
    """ "Or nothing, if `index follow --backfill` is what runs" is said by status and by a
    listing's note on the same records alike (``report.follower_may_backfill``): before, the
    listing added it after the margin had passed too, where a follower with --backfill would
    already be at work and none is recorded."""
    from ddbkeys.partition_keys._index.state import evidence_from_item  # noqa: PLC0415
    from ddbkeys.partition_keys._listing.choice import _follower_backfills  # noqa: PLC0415
    from ddbkeys.partition_keys._proof.report import follower_backfills  # noqa: PLC0415

    first = NOW - age
    mark = ShardMark("s1", ARN, first, ((None, first),))
    raw = {
        "none": None,
        "before": backfill(first - 100, maintained_since=None),
        "elsewhere": backfill(first - 100, stream=ARN + "-before"),
        "counting": backfill(first + 61, maintained_since=first),
        "clashed": backfill(first + 61, maintained_since=first, clashes=['{"S":"k"}']),
    }[recorded]
    if raw is not None and raw["started"] + 5 > NOW:
        raw["finished"] = None
    item = record(mark, backfill=raw, maintainer={"S": maintainer})
    got = status(item)
    if got.reason is None:
        return  # (proven: no note)
    evidence = evidence_from_item("orders", INDEX, item)
    note = _follower_backfills(got.reason, evidence, ARN, MARGIN, NOW)
    assert ("is what runs" in note) is follower_backfills(got), (got.reason, got.fix, got.fix_in)


def test_where_the_fix_is_a_backfill_that_waits_for_the_maintainer_status_says_one_may_wait() -> (
    None
):
    """helper-72 F6: while `index backfill --wait-for-maintainer` waits (it writes nothing
    meanwhile), status named that same command as the fix, and nothing else."""
    got = status(record(maintainer={"S": "lambda"}))
    lines = render_status(got)
    fix = lines.index(f"Fix: {got.fix}")
    assert got.fix is not None and got.fix.endswith("--wait-for-maintainer")
    assert lines[fix + 1].startswith("Or nothing, if that command runs already: it waits"), lines
    followed = render_status(status(record(MARK)))  # (a maintainer: the fix is a plain backfill)
    assert not any(line.startswith("Or nothing, if that command") for line in followed)


def test_a_stalled_maintainer_is_asked_after_while_auto_still_uses_the_index() -> None:
    """helper-87 F6: a follower stopped on a large busy table left "Provable: yes" and only
    "saved 91 s ago" on its shard's line, while auto went on with the index (its re-checks
    still cost less than a scan). Records unapplied for over a margin and the stream's
    rounding of their time ask whether it runs; fewer, or younger, do not."""
    item = record(MARK, backfill=backfill(margin=60))
    got = status(item, stream(item, found=3), size_bytes=4096 * 1000, item_count=10_000)
    assert got.provable and got.auto_uses_index
    stalled = "\n".join(render_status(replace(got, unapplied=40, behind=150.0)))
    assert (
        "Stalled: its maintainer has not applied 40 stream record(s) (the oldest written at "
        "most 150 s ago): is `ddbkeys partition-keys index follow -t orders` running?"
    ) in stalled, stalled
    for young in (replace(got, unapplied=40, behind=100.0), replace(got, unapplied=0)):
        assert "Stalled" not in "\n".join(render_status(young))


def test_no_maintainer_s_position_names_the_state_table_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-87 F2: a follower run with another state table (--state-table, or
    DDBKEYS_STATE_TABLE only in its own shell) records its positions there; status and a
    listing read the default one and named `index follow --backfill`, which was running.
    Both now name the state table they read, and why another may hold the positions."""
    got = replace(status(record(backfill=backfill())), maintainer=None, first_position=None)
    text = "\n".join(render_status(got))
    assert (
        "Maintainer: none has recorded a position under this stream in state table "
        "ddbkeys-state (one given another --state-table or DDBKEYS_STATE_TABLE records its "
        "positions there)"
    ) in text, text
    monkeypatch.setenv("DDBKEYS_STATE_TABLE", "mystate")
    why = "no maintainer has recorded a position in the table's stream, so no backfill can count"
    with pytest.raises(IndexUnprovenError) as raised:
        declined("index", info(), INDEX, why)
    assert "read in state table 'mystate': a maintainer given another" in str(raised.value)
    chosen = declined("auto", info(), INDEX, why, state_table="given")
    assert "--state-table given` says what to run; read in state table 'given'" in chosen.reason


def test_a_backfill_waiting_out_the_margin_after_its_markers_says_when_it_reads_the_stream() -> (
    None
):
    """helper-99 F3: while a read-mode backfill, its markers written, waited out the replay
    margin, `index status` said "0 collection(s) handled so far" and nothing of that wait."""
    waiting = backfill(
        finished=None, alive=NOW - 2, owner="host-a:41", handled=438, margin=60, tip_at=NOW + 52
    )
    told = status(record(MARK, backfill=waiting))
    assert told.backfill is not None and told.backfill.tip_at == NOW + 52
    assert told.reason is not None and (
        "its 438 collection(s) handled, it reads the stream's records in 52 s" in told.reason
    ), told.reason
    (line,) = [line for line in render_status(told) if line.startswith("Backfill:")]
    assert (
        "at work by host-a:41 (alive 2 s ago, 438 collection(s) handled); its markers are "
        "written: it waits out the replay margin and reads the stream's records at "
    ) in line and "(52 s from now), then finishes" in line, line


def test_a_stream_turned_off_and_on_under_a_follower_says_it_may_need_nothing() -> None:
    """helper-99 F4: for the seconds a running `index follow --backfill` takes to find the new
    stream, status and a listing named that very command, with no word that it may be what
    runs (a newcomer might start a second follower)."""
    old = ShardMark("s0", OTHER_ARN, "start", (("5", FIRST),))
    got = status(record(old, backfill=backfill(stream=OTHER_ARN)))
    assert got.reason is not None and got.reason.startswith(
        "no maintainer has recorded a position in the table's stream, so no backfill can count"
    ), got.reason
    assert (
        "; or nothing, if `index follow --backfill` runs: a follower moves to a stream turned "
        "off and on within seconds"
    ) in got.reason
    # Status says it on a line of its own beside its Fix (helper-102 F5: the Fix alone would
    # start a second follower).
    text = render_status(got)
    fix = next(i for i, line in enumerate(text) if line.startswith("Fix: "))
    assert text[fix + 1].startswith("Or nothing, if `index follow --backfill` runs: a follower"), (
        text
    )
    # No maintainer ever recorded a position: no such word.
    never = status(record(backfill=backfill(stream=OTHER_ARN)))
    assert never.reason is not None and never.reason.startswith("no maintainer has recorded")
    assert "or nothing" not in never.reason, never.reason


def test_status_of_a_dropped_index_says_so_and_how_to_remove_markers_left() -> None:
    """helper-102 F2: a maintainer killed between a late put and its take-back left a marker
    after `index drop`'s exit 0, and status said "has no index ... Create it ..., then backfill
    the markers", as of a table that never had one. Its record tells a dropped index apart."""

    def run(record: dict[str, Any] | None, created: float | None = None) -> str:
        flow = status_flow(Reader(None, "orders"), MarkerCore("orders"), StateCore("st"))
        table = described(None)
        if created is not None:  # (DescribeTable's CreationDateTime, as JSON has it)
            table["Table"]["CreationDateTime"] = created
        with pytest.raises(ConfigurationError) as raised:
            play(flow, [("describe_table", table), ("get_item", record)])
        return str(raised.value)

    said = run({"Item": record(MARK)})
    assert said == (
        "Table 'orders' has no index 'ddbkeys-partition-keys', but state table 'st' holds its "
        "record: it was dropped (or deleted another way). Markers are left only where a drop "
        "stopped before its end or a maintainer wrote one late: `ddbkeys partition-keys index "
        "drop -t orders --yes` removes them (run again, it removes what is left); `ddbkeys "
        "partition-keys index create -t orders` makes the index again."
    )
    assert run({}).startswith("Table 'orders' has no index 'ddbkeys-partition-keys'. Create it")
    # helper-103 F1: a table deleted and made again after the record's last time is another
    # table, which never had the index.
    assert run({"Item": record(MARK)}, created=NOW + 5).startswith(
        "Table 'orders' has no index 'ddbkeys-partition-keys'. Create it"
    )
    assert "it was dropped" in run({"Item": record(MARK)}, created=FIRST - 5)


def test_verify_of_a_dropped_index_says_so_too() -> None:
    """helper-101 F2, helper-102 F2: `index verify` of a dropped index said "has no index ...
    Create it"; its record tells it was dropped."""
    saved = Evidence("orders", INDEX, {}, None)
    flow = verify_flow(MarkerCore("orders"), saved, "st")
    with pytest.raises(ConfigurationError, match=r"but state table 'st' holds its record: it was"):
        play(flow, [("describe_table", described(None))])
    # helper-103 F4: an index of its own name and attribute is named so in the advice.
    own = MarkerCore("orders", index_name="keys", marker_attribute="mk")
    with pytest.raises(ConfigurationError) as raised:
        play(
            verify_flow(own, Evidence("orders", "keys", {}, None), "st"),
            [("describe_table", described(None))],
        )
    assert (
        "`ddbkeys partition-keys index drop -t orders --index-name keys --marker-attribute mk "
        in (str(raised.value))
    )
    never = verify_flow(MarkerCore("orders"), None, "st")
    with pytest.raises(ConfigurationError, match=r"has no index .*\. Create it"):
        play(never, [("describe_table", described(None))])


def test_status_says_the_cli_s_options_not_the_library_s_arguments() -> None:
    """helper-103 F7: `index status` advised "(marker_sort_key=, marker_attribute=; ...)"."""
    base = status(record(MARK, backfill=backfill()))
    got = replace(base, provable=False, reason="list with (marker_sort_key=)")
    text = "\n".join(render_status(got))
    assert "list with (--marker-sort-key)" in text and "marker_sort_key=" not in text, text
