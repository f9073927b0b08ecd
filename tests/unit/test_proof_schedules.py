"""The proven marker index under random schedules (issue 21, point 6).

A Hypothesis state machine (tests/support/proof_machine.py) drives a model of the table, its
lagging index, its stream and the state table, with ddbkeys' own maintainers acting on it (two
followers and the backfill stepped a request at a time, the Lambda handler fed by a model of
Lambda's event source mapping, ``index repair``), and after every step runs the listing's
decision core: the evidence and ``precheck``, ``replay_flow`` (``replay_window``, the stream read
to its tip, the re-checks) and ``ReplayedIndexMethod`` over the lagging index. The listing must
decline with a reason, or answer exactly the collections that hold something besides
ddbkeys' marker.

The backfill runs in either mode; once a read-mode backfill has finished, the machine also
holds it to its own guarantee (``check_backfill``: the collections its window is there for
hold the right marker).

The negative controls break the listing (no margin while the index lags; the index read as
it is after the replay, without the re-checks; the pending collections left out of the
re-checks), the handler (a trigger that hands out a shard's batches out of order, read as
ParallelizationFactor 1) and the read-mode backfill (the window's tip read at the end of the
table's read, not a margin after the last write; a re-check that only reads): the checker must
find each out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, run_state_machine_as_test

from ddbkeys.partition_keys._index import backfill_read
from ddbkeys.partition_keys._index.backfill_read import Controls
from ddbkeys.partition_keys._index.markers import collection_query
from ddbkeys.partition_keys._proof import replay, replay_window
from ddbkeys.partition_keys._streams import follow_state, streams
from ddbkeys.partition_keys._streams.streams import DESCRIBE_AGAIN
from tests.support.proof_actors import Verdict, follower
from tests.support.proof_machine import (
    KEYS,
    SEEN,
    SORTS,
    BackfillWrong,
    ListingWrong,
    ProofMachine,
)

#: 1,500 schedules of up to 50 steps, a listing after each step.
# Derandomized: the same schedules on every run, so that CI does not pass or fail by chance;
# a longer random run is one command away (see tests/support/proof_machine.py).
SCHEDULES = settings(
    max_examples=1500, stateful_step_count=50, deadline=None, derandomize=True, database=None
)


def schedules() -> None:
    """The 1,500 schedules, in this interpreter; what they saw, as JSON on stdout."""
    SEEN.clear()
    run_state_machine_as_test(ProofMachine, settings=SCHEDULES)
    print(json.dumps(dict(SEEN)))


def test_the_listing_is_exact_or_declines_under_random_schedules() -> None:
    # In an interpreter of their own: derandomized, the schedules (and what they cover) are
    # the same on every run there; in an xdist worker after the other unit tests they were
    # not (some state outside the model, not yet found, changed them), and the coverage
    # floors below failed by the luck of which tests ran before.
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tests.unit.test_proof_schedules import schedules; schedules()",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    SEEN.clear()
    SEEN.update(json.loads(run.stdout.splitlines()[-1]))
    # A checker that only ever saw declines would prove nothing.
    assert SEEN["proven"] > SEEN["declined"] / 10, SEEN
    assert SEEN["proven, with keys from the index"] > 1000, SEEN
    assert SEEN["proven, with re-checks"] > 1000, SEEN
    # Collections that did not settle (issue 33): recorded, re-checked, and a full set held
    # (96 pending in the run of PYTHONHASHSEED=0 since the split rule draws hidden children).
    assert SEEN["proven, with pending collections"] > 75, SEEN
    # A floor of coverage (85 in the run of PYTHONHASHSEED=0, with every rule merged).
    assert SEEN["a follower held a shard's position (the pending set full)"] > 50, SEEN
    # Read-mode backfills finished and were held to their own guarantee (check_backfill).
    assert SEEN["read-mode backfill: collections checked"] > 300, SEEN
    # Listings proven from the backfill a new one replaced, while that one ran or once killed
    # (precheck.basis), and checked like every other. (20 in the run of PYTHONHASHSEED=0 since
    # followers save a tip every half margin, which moves the schedules: 109 before. Few
    # schedules reach it, each with many listings: random runs of 1,500 gave 126 and 216
    # before, 108 and 489 after.)
    assert SEEN["proven while a backfill had not finished (the one it replaced kept)"] > 10, SEEN
    # The state table restored from a copy taken up to 7 steps before, under running
    # followers (703 and 834 in the run of PYTHONHASHSEED=0), which found it at a save.
    assert SEEN["the state table restored under a follower"] > 300, SEEN
    assert SEEN["a follower found its record put back"] > 300, SEEN
    # Listings past a follower's word on a shard's tip, no record applied there (36 in the
    # run of PYTHONHASHSEED=0; random runs of 1,500: 122 and 695): where they leave out what
    # came before it.
    assert SEEN["proven, past a tip a follower read before any record"] > 20, SEEN


# --- the negative controls --------------------------------------------------------------------


class MarginIgnored(ProofMachine):
    """A listing that takes the maintainer's newest positions while the index lags."""

    margin = 0.0


class NoRecheck(ProofMachine):
    """A listing that reads the index as it is once the replay has proven it."""

    recheck = False


class PendingIgnored(ProofMachine):
    """A listing that re-checks what the stream names but not the pending collections. Its
    maintainers' reconciliations give up with no write at every step (the one cause only the
    pending set records: a write's own stream record names a hot collection anyway), so that
    pending collections are common: drawn only now and then, 1,000 random schedules missed
    them once in CI."""

    pending = False

    def upset(self, upset: tuple[str, str] | None) -> None:
        super().upset(("*", "unsettled"))

    # Without the rules that make every listing decline for reasons of their own, or take the
    # schedule elsewhere: with them, once ``split`` drew hidden children, 3,000 random
    # schedules missed it in a CI run, and the 1,000 derandomized ones miss it (measured);
    # without them, five runs caught it within 0.5-17.5 s. (Plain methods hide the rules.)
    def clash(self) -> None:
        pass

    def stream_changes(self) -> None:
        pass

    def backfill_killed(self) -> None:
        pass

    def long_wait_behind(self) -> None:
        pass

    def split(self) -> None:
        pass

    def trigger_removed(self) -> None:
        pass


CONTROLS = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    report_multiple_bugs=False,
)


class FactorUnseen(ProofMachine):
    """A Lambda trigger whose ParallelizationFactor the handler always reads as 1, while it
    hands out a shard's batches out of order (B before A): a check read in a new execution
    environment then vouches for B's position, and only the factor it reads keeps a listing
    from trusting it. (And the handler's read of the stream, that B follows on from what was
    applied, which finds A's records between: off too, in this control.)"""

    factor_seen = False

    # (a start with the handler keeping the index)
    @initialize(
        history=st.lists(st.tuples(KEYS, SORTS), max_size=4),
        shards=st.integers(1, 3),
    )
    def start(self, history: list[tuple[str, int]], shards: int) -> None:
        super().start(history, shards, "lambda")


def batches_out_of_order_read_as_factor_1(machine: type[ProofMachine]) -> Verdict:
    """Found (and shrunk) by FactorUnseen's random search: the trigger hands the handler a
    later batch first, the application writing meanwhile, while a follower starts. Kept as
    a schedule: since the handler also reads from the stream that a batch follows on from what
    was applied, the random search found the control's wrong listing more rarely, and a CI
    run's 3,000 schedules missed it."""
    state = machine()
    state.start(history=[], shards=2)
    state.quiet()
    state.follower_starts(slot=0, from_start=False, steps=1)
    state.check()
    state.lambda_ahead(
        fresh=True, lane=1, n=0, size=1, then=0.0, writes=[("e", 1, True), ("a", 1, True)]
    )
    state.check()
    state.quiet()
    return state.check()


def test_the_checker_catches_a_handler_that_reads_factor_1_with_batches_out_of_order() -> None:
    with pytest.raises(ListingWrong, match=r"missing \['e'\]"):
        batches_out_of_order_read_as_factor_1(FactorUnseen)
    # The handler as it is (it reads the factor, and the stream): right, or declined.
    lambda_kept = type("LambdaKept", (FactorUnseen,), {"factor_seen": True})
    verdict = batches_out_of_order_read_as_factor_1(lambda_kept)
    assert verdict.keys is None or sorted(verdict.keys) == ["a", "e"], verdict


@pytest.mark.parametrize("machine", [MarginIgnored, NoRecheck, PendingIgnored])
def test_the_checker_catches_a_broken_listing(machine: type[ProofMachine]) -> None:
    # The out-of-order schedule, and a pending collection the index has wrong at a listing,
    # take a few steps in a row: in 300 schedules the checker found them 9 times in 10 (the
    # first, measured) and not always (the second, once the schedules also drove the Lambda
    # trigger), so these controls run up to 1,000 (each stops at the first it finds).
    rare = (PendingIgnored,)
    chosen = settings(CONTROLS, max_examples=1000) if machine in rare else CONTROLS
    # A rare control's 1,000 random schedules still missed about 1 run in 10 (measured):
    # three runs of them, and the first that catches it ends the test (a checker that cannot
    # catch it fails all three). First, the derandomized schedules: alone, they caught
    # PendingIgnored within 0.2 s, where random runs took 10 s to 110 s (a CI run's share).
    if not caught(machine, chosen, ListingWrong, 3 if machine in rare else 1):
        pytest.fail(f"the checker caught no broken listing of {machine.__name__}")


def caught(
    machine: type[ProofMachine], chosen: settings, wrong: type[Exception], random_runs: int
) -> bool:
    """Whether the checker raises ``wrong`` on ``machine``'s schedules: the derandomized ones
    first, then up to ``random_runs`` runs of random ones (the first that catches it ends)."""
    for each in [settings(chosen, derandomize=True)] + [chosen] * random_runs:
        try:
            run_state_machine_as_test(machine, settings=each)
        except wrong:
            return True
    return False


def a_collection_left_pending(machine: type[ProofMachine]) -> list[Verdict]:
    """The follower applies collection ``c``'s first write, but its reconciliation gives up
    with no write (``unsettled``): ``c`` has no marker and is in the pending set only, and the
    follower's position goes past its record. A listing a margin later replays nothing of
    ``c``: only the pending set names it. (Cut down by hand, so that the control is caught
    by a schedule of its own whatever the random ones reach.)"""
    state = machine()
    state.start(history=[], shards=1, settled="follower")
    state.put("c", 1, tag=None, lane=0)
    state.follower_runs(slot=0, requests=30, refused=None, upset=("*", "unsettled"))
    verdicts = [state.check()]
    for seconds in (2.0, 2.0, 2.0):  # to past the margin (5 s)
        state.tick(seconds)
        verdicts.append(state.check())
    return verdicts


def test_a_collection_left_pending_is_listed_and_the_control_that_ignores_it_is_caught() -> None:
    verdicts = a_collection_left_pending(ProofMachine)
    assert [v.keys for v in verdicts] == [["c"]] * 4
    assert verdicts[-1].replay is not None and verdicts[-1].replay.pending == 1
    assert verdicts[-1].replay.records == 0  # past the margin: only the pending set names c
    with pytest.raises(ListingWrong, match=r"missing \['c'\]"):
        a_collection_left_pending(PendingIgnored)


class BackfillControl(ProofMachine):
    """A broken read-mode backfill (every backfill reads), begun on a table whose history no
    maintainer saw (no marker, no stream record): what a backfill is for."""

    @initialize(
        history=st.lists(st.tuples(KEYS, SORTS), min_size=1, max_size=4),
        shards=st.integers(1, 3),
        rounding=st.sampled_from((1.0, 60.0)),
    )
    def start(self, history: list[tuple[str, int]], shards: int, rounding: float = 1.0) -> None:
        super().start(history, shards, "none", rounding, "read")
        # (a margin after the stream began: a younger stream cannot hold the window, and the
        # backfill would only say so)
        self.world.tick(self.margin + 1)
        self.backfill = self.backfill_of("read")  # begun: the rules step it


class WindowAtRead(BackfillControl):
    """The window's tip read at the end of the table's read."""

    controls = Controls(window_at_read=True)


class RecheckReadsOnly(BackfillControl):
    """The window's collections re-checked by a read that writes nothing."""

    controls = Controls(read_only=True)


@pytest.mark.parametrize("machine", [WindowAtRead, RecheckReadsOnly])
def test_the_checker_catches_a_broken_backfill(machine: type[ProofMachine]) -> None:
    # As the broken listings': the derandomized schedules first, then random ones, up to three
    # runs (a CI run's 300 random schedules missed WindowAtRead once, session 84).
    if not caught(machine, CONTROLS, BackfillWrong, 3):
        pytest.fail(f"the checker caught no broken backfill of {machine.__name__}")


# --- schedules the machine found, kept --------------------------------------------------------


def a_backfill_on_a_stream_just_turned_on() -> ProofMachine:
    """The table is created again without a stream; the application puts an item in
    collection ``a`` while no stream records it; the stream is turned on and, half a second
    later, a read-mode backfill begins, its scan as stale as the margin allows (so it does not
    see ``a``). Found by the PendingIgnored control, once in a full unit run, while the
    model's stream labels were not times."""
    state = ProofMachine()
    state.start(history=[], shards=2, settled="lambda", rounding=60.0, mode="read")
    state.check()
    state.stream_changes("recreated without a stream", 1)
    state.put("a", 1, None, 0)
    state.tick(0.5)
    state.scans_lag(1.0)
    state.stream_changes("on", 2)
    state.backfill_starts("read")
    for _ in range(20):
        assert state.backfill is not None
        if state.backfill.done:
            break
        state.backfill_runs(10)  # (checks the backfill once it has finished)
        state.tick(6.0)
    return state


def test_a_read_backfill_on_a_stream_younger_than_its_window_says_it_does_not_count() -> None:
    state = a_backfill_on_a_stream_just_turned_on()
    assert state.backfill is not None and state.backfill.done
    report = state.backfill.result
    assert report is not None and report.written == 0  # it never saw ``a``...
    assert report.uncounted is not None  # ...and says it does not count
    assert "stream began" in report.uncounted
    verdict = state.check()  # a listing declines, quoting it
    assert verdict.keys is None and "stream began" in verdict.reason, verdict


def test_the_checker_catches_a_read_backfill_that_trusts_a_stream_younger_than_its_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fault: the stream's age not checked (as for a label that is not a time, before).
    monkeypatch.setattr(backfill_read, "unreadable", lambda stream, started, margin: None)
    with pytest.raises(BackfillWrong, match=r"the markers of \['a'\] wrong"):
        a_backfill_on_a_stream_just_turned_on()


def a_collection_made_in_a_child_not_listed_yet(hidden: float) -> Verdict:
    """The follower has applied everything; a shard closes and its child takes its keys, but
    DescribeStream lists the child only ``hidden`` seconds later (the service may list a
    closed shard a moment before its child: Flink's DynamoDB Streams source and the Kinesis
    Client Library both meet "a closed shard with no children"); the application makes
    collection ``b``, whose record lands in the child. Found by reading the model against the
    service (it listed a child at once), not by a schedule."""
    state = ProofMachine()
    state.start(history=[("a", 1)], shards=1, settled="follower", rounding=1.0)
    state.quiet()
    state.check()
    state.split(0, 1, hidden)
    state.put("b", 1, None, 0)
    return state.check()


def test_a_child_shard_listed_a_moment_late_is_waited_for_or_the_listing_declines() -> None:
    # Listed 2 s later: described again a second apart, and right.
    assert sorted(a_collection_made_in_a_child_not_listed_yet(2.0).keys or ()) == ["a", "b"]
    # Not listed after DESCRIBE_AGAIN more seconds: declined, saying why.
    verdict = a_collection_made_in_a_child_not_listed_yet(DESCRIBE_AGAIN + 2.0)
    assert verdict.keys is None
    assert "is closed and DescribeStream lists no shard after it yet" in verdict.reason


def test_the_checker_catches_a_listing_that_reads_the_shards_as_first_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fault: the shards as DescribeStream first lists them, a closed one with no child.
    monkeypatch.setattr(streams, "DESCRIBE_AGAIN", 0)
    monkeypatch.setattr(replay_window, "unlisted_child", lambda shards: None)
    with pytest.raises(ListingWrong, match=r"missing \['b'\]"):
        a_collection_made_in_a_child_not_listed_yet(2.0)


def a_read_backfill_a_day_long() -> ProofMachine:
    """No maintainer; collection ``x`` is emptied half a second before a read-mode backfill
    begins, whose scan (as stale as the margin allows) still sees it: the backfill marks it,
    blind. Then a day passes before it reads its window (a backfill of a huge table, or its
    host asleep): the record of the emptying is trimmed, the shard reads empty, and nothing
    says that the window lost it. Found by reading the model's schedules once the read mode
    checked its stream's age (the export mode checked its own)."""
    state = ProofMachine()
    state.start(history=[("x", 1)], shards=1, settled="none")
    state.tick(state.margin + 1)
    state.scans_lag(1.0)
    state.delete("x", 1, 0)
    state.tick(0.5)
    state.backfill_starts("read")
    assert state.backfill is not None
    state.backfill.advance(50)  # its reads and its blind write; then it waits
    assert state.backfill.blind is not None and not state.backfill.done
    state.long_wait_behind(25.0)
    state.backfill_runs(50)  # (checked once it has finished)
    assert state.backfill.done
    return state


def test_a_read_backfill_that_reads_its_window_a_day_late_says_it_does_not_count() -> None:
    state = a_read_backfill_a_day_long()
    assert state.backfill is not None
    report = state.backfill.result
    assert report is not None and report.uncounted is not None
    assert "began more than a day before it read the table's stream" in report.uncounted


def test_the_checker_catches_a_read_backfill_that_trusts_a_window_a_day_old(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fault: the window's age not checked.
    monkeypatch.setattr(backfill_read, "nearly_a_day_old", lambda at, now: False)
    with pytest.raises(BackfillWrong, match=r"the markers of \['x'\] wrong"):
        a_read_backfill_a_day_long()


def test_the_checker_catches_a_re_check_that_is_not_consistent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model answers a GetItem or Query that is not ConsistentRead from the table as it
    may have been a moment ago (as a Scan): with the listing's re-check made eventually
    consistent (a flag a change could drop), the checker finds a wrong listing. (Before, the
    model answered every read exactly, and nothing would have noticed, a helper found.)"""

    def eventual(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**collection_query(*args, **kwargs), "ConsistentRead": False}

    monkeypatch.setattr(replay, "collection_query", eventual)
    chosen = settings(CONTROLS, max_examples=1000)
    for _ in range(3):
        try:
            run_state_machine_as_test(ProofMachine, settings=chosen)
        except ListingWrong:
            return
    pytest.fail("the checker caught no listing whose re-check was eventually consistent")


def a_follower_restarted_behind_hollow_pages(steps: int, pages: int = 2) -> Verdict:
    """A follower begun at the shard's end, no record applied yet, is killed; collection
    ``x`` is written; 100 s on, a new follower run reads the shard from its start, where
    GetRecords answers ``pages`` empty pages before ``x``'s record (to it alone: the
    listing's reads get none); it is stopped after ``steps`` requests; a listing a margin
    later."""
    state = ProofMachine()
    state.start(history=[], shards=1, settled="follower", rounding=1.0)
    state.follower_killed(0)
    state.put("x", 1, None, 0)
    state.tick(100.0)
    state.world.hollow = pages
    state.follower_starts(slot=0, from_start=False, steps=steps)
    state.world.hollow = 0
    state.tick(ProofMachine.margin + 1)
    return state.check()


def a_first_start_behind_hollow_pages(steps: int) -> Verdict:
    """A follower starts at the shard's end, where GetRecords will answer two empty pages
    before the next records, and reads nothing yet; a backfill a margin later; collection
    ``x`` is written; 100 s on, the follower reads, and is stopped after ``steps`` requests;
    a listing a margin later."""
    state = ProofMachine()
    state.start(history=[], shards=1, settled="none", rounding=1.0)
    state.world.hollow = 2
    state.followers[0] = follower(state.world, state.client, False)  # (up to its first read)
    state.world.hollow = 0
    state.tick(ProofMachine.margin + 1)
    state.backfill_starts()
    while state.backfill is not None and not state.backfill.done:
        state.backfill_runs(10)
    state.put("x", 1, None, 0)
    state.tick(100.0)
    state.followers[0].advance(steps)
    state.tick(ProofMachine.margin + 1)
    return state.check()


def test_a_tip_is_read_from_three_empty_pages_and_the_control_that_takes_one_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A follower begun at a shard's end with no record applied says where the tip was (see
    evidence's rule): the start of the first of three empty pages in a row, as a listing's
    read takes the tip. Taken from one empty page, it said so in front of ``x``'s record,
    and the listing left ``x`` out as history."""
    for steps in range(1, 9):  # (its reads, its save of a tip, its reads of x)
        verdict = a_first_start_behind_hollow_pages(steps)
        assert verdict.keys == ["x"], (steps, verdict)
    monkeypatch.setattr(follow_state, "EMPTY_AT_TIP", 1)
    with pytest.raises(ListingWrong, match=r"missing \['x'\]"):
        for steps in range(1, 9):
            a_first_start_behind_hollow_pages(steps)


def test_no_tip_is_said_from_a_shard_read_from_its_oldest_record() -> None:
    """helper-72 F1: a follower restarted with no position reads the shard from its oldest
    record, where empty pages may come before records it has not applied (the helper made the
    service's last 240 s): it took three of them for the tip, and listings left out what was
    written while it was down (50 keys of 60, exit 0). From there, no tip is said until a
    record is read (its position then counts instead)."""
    for steps in range(6, 20):
        verdict = a_follower_restarted_behind_hollow_pages(steps, pages=6)
        assert verdict.keys == ["x"], (steps, verdict)


def test_a_shard_split_a_day_after_its_records_leaves_the_positions_inside_it() -> None:
    """A random schedule's find: a follower applied ``x``'s record, the table stayed quiet
    for 25 h (the stream forgot the record), then the shard split. The model closed it at its
    start (it ended a shard at its newest record kept, and none was), so the follower's
    position lay past the shard's end, and the listing declined saying no maintainer wrote
    it: a false accusation (the service's EndingSequenceNumber is the newest number the
    shard took; a day's trimming does not move it back). The listing now answers, or
    declines for another reason."""
    state = ProofMachine()
    state.start(history=[], shards=1, settled="follower", rounding=1.0)
    state.put("x", 1, None, 0)
    state.quiet()
    state.long_wait(25.0)
    stream = state.world.stream
    assert stream is not None
    (shard,) = [s for s in stream.shards.values() if s.open]
    assert not shard.records and shard.trimmed_to > 0  # (the day's records are gone)
    state.split(0, 2)
    assert shard.ending == shard.trimmed_to
    state.quiet()
    verdict = state.check()
    assert verdict.keys == ["x"] or "no maintainer wrote it" not in verdict.reason, verdict
