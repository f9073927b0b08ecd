"""Schedules where the proven listing answers wrong today (found by the state machine of
test_proof_schedules.py and its variants, then cut down by hand): each is the machine's steps,
with the listing checked after each as the machine does. With their fault they are expected
failures (strict: one that starts to pass says its bug is fixed, and the machine's rule that
leaves the fault out, see tests/support/proof_machine.py, can take it in again). Without it,
the same schedule is answered right, or declined."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from ddbkeys.partition_keys._index.state import evidence_from_item
from ddbkeys.partition_keys._proof.evidence import DAY
from tests.support.proof_actors import Verdict, follower_at_rest, repair
from tests.support.proof_machine import ListingWrong, ProofMachine
from tests.support.proof_world import ATTR, INDEX, MARKER_SK, TABLE, typed_item


def started(
    settled: str, history: list[tuple[str, int]] | None = None, shards: int = 1
) -> ProofMachine:
    """A table with one shard, maintained (``settled``) and backfilled, the margin past."""
    state = ProofMachine()
    state.start(history=history or [], shards=shards, settled=settled)
    state.check()
    return state


def a_day_passes(state: ProofMachine, fault: bool) -> None:
    """25 hours: with ``fault``, nothing applied meanwhile (records may be trimmed unread);
    without it, the maintainers catch up first."""
    if fault:
        state.long_wait_behind(hours=25.0)
    else:
        state.long_wait(hours=25.0)


def a_day_behind(fault: bool) -> Verdict:
    """The follower started reading its shard at the end and has applied nothing since (its
    mark: no sequence number); a collection is written, and the follower applies nothing for
    a day: the record is trimmed. The listing reads the named shard "from its start"
    (TRIM_HORIZON), which now begins after the trimmed record, finds nothing to re-check and
    proves the index complete without the collection. A read from a shard's start proves
    nothing once the shard may have lost records (its mark, or the shard, a day old).
    Without the fault the follower applies the record before the day passes."""
    state = started("follower")
    state.put("a", 1, tag=None, lane=0)
    state.check()
    if fault:
        state.world.tick(DAY + 3600)  # the follower, alive or not, read nothing meanwhile
    else:
        state.long_wait(hours=25.0)
    return state.check()


def lambda_drops_a_failed_batch(fault: bool) -> Verdict:
    """Lambda's trigger (tumbling window) hands the handler a record whose collection cannot
    be reconciled: the handler reports it in batchItemFailures and records no position. The
    event source mapping gives up on it (MaximumRetryAttempts, which aws_lambda.py advises
    setting, or MaximumRecordAgeInSeconds, or the record's 24 hours) and goes on; the next
    batch of that shard is applied and the handler records a position past the dropped
    record, as if it had been applied. After the margin the listing reads after that
    position and misses the collection, which never got its marker. Without the fault the
    mapping sends the failed record again."""
    state = started("lambda")
    state.put("c", 1, tag=None, lane=0)
    state.check()
    state.lambda_batch(n=0, size=1, fail=0, meanwhile=None)  # c's Query is refused
    state.check()
    if fault:
        assert state.trigger is not None
        state.trigger.give_up(0)  # the mapping's retry limit: the batch is dropped
    state.put("d", 1, tag=None, lane=0)
    state.check()
    state.quiet()  # the next batch is applied: its position is recorded
    return state.check()


def lambda_gives_up_a_batch_that_never_began(fault: bool) -> Verdict:
    """Found by a helper's fleet of processes (session 51): every invocation of a batch ends
    before the handler writes anything (an init error after a deploy, a timeout at cold
    start, its first request refused), so it leaves no trace; the trigger gives up on it and
    hands out the next, and the handler records its position past the lost records: after
    the margin ``c`` was missing from a "proven" listing, and `index status` said provable.
    The handler now reads, from the stream, the record right after what was applied of the
    shard: where it is not the batch's first, records were skipped (a gap). Without the fault
    the batch is handled."""
    state = started("lambda")
    state.tick(400.0)  # (the handler's next batch checks its trigger again: CHECK_EVERY)
    state.put("c", 1, tag=None, lane=0)
    state.check()
    if fault:
        assert state.trigger is not None
        state.trigger.dies(state.world, 0, 4)
        state.trigger.give_up(0)
    state.put("d", 1, tag=None, lane=0)
    state.check()
    state.quiet()
    state.check()
    state.quiet()  # the margin past d's batch: its position is used
    return state.check()


def a_backfill_forgets_a_clash(fault: bool) -> Verdict:
    """The application writes data at the marker's key of a new collection; the follower
    meets the clash and records it (the listing declines). A backfill starts a moment later:
    it takes every recorded clash out, and its eventually consistent Scan does not see the
    collection yet, so it records none. After the margin the listing proves the index
    without the collection (its record was applied long ago, and it has no marker). Without
    the fault the Scan sees the collection and the backfill records the clash again."""
    state = started("follower")
    state.world.write(("c", MARKER_SK), typed_item("c", MARKER_SK, note={"S": "data"}))
    state.follower_runs(slot=0, requests=30, refused=None)  # the clash is recorded
    state.check()
    state.scans_lag(stale=1.0 if fault else 0.0)  # a Scan sees the table as it was the lag ago
    state.tick(1.0)
    state.backfill_starts()
    state.backfill_runs(requests=10)
    state.backfill_runs(requests=10)
    state.check()
    state.quiet()
    return state.check()


def repair_reads_a_lagging_index(fault: bool) -> Verdict:
    """The application writes data over a collection's marker; the follower meets the clash
    and records it. ``index repair`` runs while the index still shows the old marker: verify
    finds the collection marked, so repair takes the recorded clash out. Once the index
    catches up the collection is in it no more, and after the margin the listing proves the
    index complete without it. Without the fault repair runs once the index has caught up."""
    state = started("follower", history=[("c", 1)])
    state.clash(pk="c", lane=0)
    state.follower_runs(slot=0, requests=30, refused=None)
    state.check()
    assert state.world.pending  # the index has not caught up with the overwritten marker
    if not fault:
        state.world.tick(state.lag)
    repair(state.world, state.client)
    state.check()
    state.quiet()
    return state.check()


def an_empty_page_before_the_tip(fault: bool) -> Verdict:
    """GetRecords "might take multiple calls to get to a portion of the shard that contains
    stream records" (its API reference): an empty page with a next iterator is not the tip.
    The replay stops at the first empty page, re-checks nothing, and proves the index without
    a collection written a moment ago. Without the fault the first page holds the record."""
    state = started("follower")
    state.world.hollow = 1 if fault else 0
    state.put("c", 1, tag=None, lane=0)
    return state.check()


def a_write_while_the_follower_starts(fault: bool) -> Verdict:
    """The follower takes the time it begins covering the stream (its marks' ``since``)
    before it opens each shard at its end (LATEST); a write in between is after ``since``
    but before the shard's iterator, so the follower never applies it. The backfill, begun a
    margin after ``since`` as the proof asks, reads with an eventually consistent Scan that
    does not show the write yet. Once the follower has applied a later record of that shard
    (its mark past the write), the listing, after the margin, misses the collection. Without
    the fault the backfill's Scan is not stale and marks the collection."""
    state = started("none", shards=2)
    state.followers[0] = follower_at_rest(state.world, state.client, from_start=False)
    state.followers[0].advance(5)  # up to its first GetShardIterator (LATEST)
    state.check()
    state.tick(0.5)
    state.put("c", 1, tag=None, lane=1)  # in the shard it has not opened yet
    state.check()
    state.follower_runs(slot=0, requests=10, refused=None)
    state.check()
    state.scans_lag(stale=1.0 if fault else 0.0)
    state.tick(state.margin - 0.5)
    state.backfill_starts()
    state.backfill_runs(requests=10)
    state.backfill_runs(requests=10)
    state.check()
    state.put("d", 1, tag=None, lane=1)
    state.check()
    state.quiet()
    return state.check()


def a_data_item_holds_another_key_in_the_marker_attribute(fault: bool) -> Verdict:
    """An unstated assumption rather than a slip: an application item that carries the marker
    attribute is indexed under that attribute's value. With its own partition key there the
    listing is right (the machine does that); with another key it lists a collection that
    may not exist, and the maintainers take the item for a marker, not data, so its own
    collection gets no marker and is missed. Without the fault the item holds its own key."""
    state = started("follower")
    item = typed_item("c", Decimal(1), note={"S": "data"})
    item[ATTR] = {"S": "z" if fault else "c"}
    state.world.write(("c", Decimal(1)), item)
    state.check()
    state.quiet()
    return state.check()


def a_day_behind_then_a_split(fault: bool) -> Verdict:
    """Found by a longer run of the machine after the fixes above: the follower, a day behind,
    reads its shard from its oldest record and finds nothing (the record was trimmed); the
    shard splits, and the child, read from its start, holds nothing either. Nothing a record
    could say shows the loss: the follower must know it from the time (it began at the shard's
    end over a day ago), and a listing must heed a gap in a shard that left the stream."""
    state = started("follower")
    state.put("a", 1, tag=None, lane=0)
    state.check()
    a_day_passes(state, fault)
    state.check()
    state.split(children=1, n=0)
    state.check()
    state.long_wait(hours=25.0)
    state.check()
    state.split(children=1, n=0)
    state.check()
    state.quiet()
    return state.check()


def a_day_off(state: ProofMachine, fault: bool) -> None:
    """With ``fault``, 29 hours with nothing applied (the trigger off, or throttled); without
    it, the maintainers run meanwhile. Checked on the way."""
    if fault:
        state.long_wait_behind(hours=6.0)
        state.check()
        state.long_wait_behind(hours=23.0)
    else:
        state.quiet()
    state.check()


def lambda_a_day_without_batches(fault: bool) -> Verdict:
    """Found by a longer run after the fixes above: the trigger hands the handler nothing for
    more than a day (disabled, throttled) while a clash is written; its record is trimmed
    before Lambda reads it, and the next batch (a later write) begins past it with nothing
    pending. The handler must know from the time: its shard's last batch is nearly a day old.
    Without the fault the trigger runs meanwhile."""
    state = started("lambda", history=[("b", 1)])
    state.clash(pk="a", lane=0)
    state.check()
    a_day_off(state, fault)
    state.delete(pk="b", sk=1, lane=0)
    state.check()
    state.long_wait(hours=6.0)
    return state.check()


def lambda_a_day_off_across_a_split(fault: bool) -> Verdict:
    """Found by a random run (session 50): the trigger hands the handler nothing for more
    than a day while its shard closes and a child takes its keys; collection ``b``'s record,
    in the child, is trimmed unread; Lambda's first batch of the child (a later write, ``a``)
    begins at what is left, fresh, and the handler, with no mark of the child, saw nothing
    amiss: b was missing from a "proven" listing. The handler now tells from the child's id
    (the time it was made, on the service and DynamoDB Local) that it is nearly a day old and
    never applied: a gap. Without the fault the trigger runs meanwhile."""
    state = started("lambda")
    state.backfill_starts(mode="reconcile")
    state.split(children=1, n=0)
    state.put(pk="b", sk=1, tag=None, lane=0)
    state.check()
    a_day_off(state, fault)
    state.put(pk="a", sk=1, tag=None, lane=0)
    state.check()
    state.long_wait(hours=6.0)
    return state.check()


def lambda_read_from_the_start_of_a_day_old_shard(fault: bool) -> Verdict:
    """Found by a random run (session 51): the Lambda handler's positions count up to its
    trigger's last check, made as it began; a follower on the same shard saves its marks over
    the handler's, none of them that old, so a listing has no position old enough and reads
    the shard from its start. Data is written at ``a``'s marker key, and nothing applies it
    for a day: the record is trimmed unread. A later write (``b``) is the shard's oldest
    record left, a moment old, so the read "from the start" looked whole, and ``a`` was
    missing from a "proven" listing. A read from the start, for want of a position, of a
    shard made nearly a day ago (its id says when) now declines. Without the fault the
    maintainers run meanwhile and meet the clash."""
    state = started("lambda")
    state.follower_starts(slot=0, from_start=False, steps=None)
    state.put(pk="a", sk=1, tag=None, lane=0)
    state.long_wait(hours=25.0)
    state.quiet()
    state.clash(pk="a", lane=0)
    state.check()
    a_day_passes(state, fault)
    state.clash(pk="b", lane=0)
    return state.check()


def a_follower_restarted_after_its_shards_are_gone(fault: bool) -> Verdict:
    """Found by a random run (session 50), on the follower's pruning of marks: the follower
    stops; a clash is written; its shard closes twice; a day later, every shard it named is
    gone and a follower starts again from the shards' start. Had it taken the gone shards'
    marks off the record as it started, the start would look like the first under the stream,
    its shard covered "from the start" (its first records trimmed), and the clash missing from
    a "proven" listing. Without the fault the follower is not stopped."""
    state = started("follower")
    if fault:
        state.follower_killed(slot=0)
    state.clash(pk="a", lane=0)
    state.split(children=1, n=0)
    state.split(children=1, n=0)
    state.check()
    state.long_wait(hours=25.0)
    state.check()
    state.follower_starts(from_start=True, slot=0, steps=None)
    state.check()
    state.quiet()
    return state.check()


def a_follower_started_anew_on_a_day_old_shard(fault: bool) -> Verdict:
    """Found by a random run (session 51): the follower's shard closes twice, and collection
    ``a`` is made in the grandchild; nothing is applied for a day (its record trimmed). The
    follower, running again, takes the gone shards' marks off the record and finds the
    grandchild, whose mark it kept in memory only: the record held no mark of the stream.
    A second follower, started from the shards' oldest records, took that for a first start
    and claimed the grandchild whole ("start"), though it was made a day before: ``a`` was
    missing from a "proven" listing. Now a follower saves a shard's mark as it finds it, a
    first start on a shard made nearly a day ago covers it from then, and a listing declines
    a "start" first saved a day after its shard was made, after the backfill began. Without
    the fault the follower applies the record in time."""
    state = started("follower")
    state.split(children=1, n=0)
    state.split(children=1, n=0)
    state.put(pk="a", sk=1, tag=None, lane=0)
    state.check()
    a_day_passes(state, fault)
    state.quiet()
    state.follower_starts(slot=1, from_start=True, steps=None)
    state.check()
    state.tick(6.0)
    state.quiet()
    return state.check()


def a_follower_from_the_start_then_a_day_behind(fault: bool) -> Verdict:
    """Found by a random run in CI: a follower that began a shard from its start has applied
    none of its records when it stops for a day; the record of a collection written meanwhile
    is trimmed, and a read from the shard's start shows nothing. A mark with nothing applied,
    a day old, proves nothing (the follower now says a quiet shard's position again while it
    runs, so only a stopped one grows that old)."""
    state = ProofMachine()
    state.start(history=[], shards=1, settled="none")
    state.backfill_starts()
    state.follower_starts(from_start=True, slot=0, steps=1)
    state.long_wait(hours=6.0)
    state.backfill_runs(requests=6)
    state.put(pk="a", sk=1, tag=None, lane=0)
    state.check()
    a_day_passes(state, fault)
    return state.check()


#: Each schedule, and what it answers without its fault (None: it declines).
SCHEDULES: list[tuple[Callable[[bool], Verdict], list[str] | None]] = [
    (a_day_behind, ["a"]),
    # (Without the fault the follower still sleeps a day between two reads, so its position is
    # older than the stream keeps when it reads again: it cannot tell what it missed, and the
    # listing declines until a backfill, as the docs say of a follower stopped for a day.)
    (a_day_behind_then_a_split, None),
    (lambda_a_day_without_batches, None),
    (lambda_a_day_off_across_a_split, ["a", "b"]),
    (a_follower_restarted_after_its_shards_are_gone, None),  # (the clash: declined)
    (lambda_read_from_the_start_of_a_day_old_shard, None),  # (declined: a's clash)
    (a_follower_started_anew_on_a_day_old_shard, ["a"]),
    (
        a_follower_from_the_start_then_a_day_behind,
        ["a"],
    ),  # (a's clash: declined, with or without the fault)
    (lambda_drops_a_failed_batch, ["a", "c", "d"]),
    (lambda_gives_up_a_batch_that_never_began, ["a", "c", "d"]),
    (a_backfill_forgets_a_clash, None),
    (repair_reads_a_lagging_index, None),
    (an_empty_page_before_the_tip, ["c"]),
    # (Fixed: the follower takes its start once its shards are open, after the write, so this
    # backfill begins less than the margin after it and proves nothing: the listing declines.)
    (a_write_while_the_follower_starts, None),
    (a_data_item_holds_another_key_in_the_marker_attribute, ["c"]),
]
NAMES = [schedule.__name__ for schedule, _ in SCHEDULES]
#: The schedules whose fault still makes the listing answer wrong (each a bug to fix).
OPEN: set[str] = set()


@pytest.mark.parametrize(
    ("schedule", "right"),
    [
        pytest.param(
            schedule,
            right,
            id=schedule.__name__,
            marks=[pytest.mark.xfail(strict=True, raises=ListingWrong, reason="a bug in ddbkeys")]
            if schedule.__name__ in OPEN
            else [],
        )
        for schedule, right in SCHEDULES
    ],
)
def test_with_its_fault_the_listing_is_exact_or_declines(
    schedule: Callable[[bool], Verdict], right: list[str] | None
) -> None:
    schedule(True)  # every listing of the schedule is checked: ListingWrong if one is wrong


@pytest.mark.parametrize(("schedule", "right"), SCHEDULES, ids=NAMES)
def test_without_its_fault_the_listing_is_right(
    schedule: Callable[[bool], Verdict], right: list[str] | None
) -> None:
    verdict = schedule(False)
    assert (sorted(verdict.keys) if verdict.keys is not None else None) == right, verdict.reason


class _Died(Exception):
    """The handler's invocation ended (a timeout, kill -9) in the middle of its batch."""


def test_a_follower_started_while_a_lambda_batch_is_under_way_leaves_no_gap_behind() -> None:
    """Found by a helper's fleet of processes (session 51): the Lambda handler records the
    batch it begins (``failed``, its first record) and dies in it; a follower starts meanwhile
    and loads that mark. Lambda sends the batch again, and the handler applies it and clears
    ``failed``; the follower, saving its own mark, wrote the old ``failed`` back, so the
    handler's next batch began "past a batch it never applied": a gap at every batch, the
    index never provable again while the follower ran. The follower now loads the marks
    without the handler's ``failed`` (the handler's own record keeps what it needs)."""
    state = started("lambda")
    state.put(pk="c", sk=1, tag=None, lane=0)
    record = f"{TABLE}/{INDEX}"

    def die_once_begun() -> None:
        mark = evidence_from_item(TABLE, INDEX, state.world.state[record]).shards
        if any(m.failed is not None for m in mark.values()):
            state.client.clear_between()
            raise _Died

    for after in range(1, 40):
        state.client.between(after, die_once_begun)
    with pytest.raises(_Died):
        state.lambda_batch(n=0, size=4, fail=None, meanwhile=None)
    state.client.clear_between()
    state.follower_starts(slot=0, from_start=False, steps=None)  # loads the handler's failed
    state.quiet()  # Lambda sends the batch again; the follower saves its marks
    state.put(pk="d", sk=1, tag=None, lane=0)
    state.quiet()
    saved = evidence_from_item(TABLE, INDEX, state.world.state[record])
    assert all(m.gap is None for m in saved.shards.values()), saved.shards
    assert sorted(state.check().keys or ()) == ["a", "c", "d"]
