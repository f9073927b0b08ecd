"""`index follow`'s ride through an endpoint that stops answering (``_cli.follow_outage``),
with a follower that fails as told and a clock of its own: no server, no sleeping past a few
jittered pauses of a second."""

from __future__ import annotations

import threading

import pytest

from ddbkeys._cli.follow_outage import Outage
from ddbkeys._cli.index_follow import _await_index
from ddbkeys._errors import EndpointUnreachableError
from ddbkeys.partition_keys._streams.follow_state import FollowReport


class Follower:
    """Fails ``failures`` times (the clock moving ``step`` seconds each), then returns."""

    def __init__(self, failures: int, clock: list[float], step: float) -> None:
        self.failures, self.clock, self.step = failures, clock, step
        self.runs = 0
        self.report = FollowReport()

    def run(self, _stop: object, **_: object) -> FollowReport:
        self.runs += 1
        if self.failures:
            self.failures -= 1
            self.clock[0] += self.step
            raise EndpointUnreachableError("Could not connect to the DynamoDB endpoint")
        return self.report


def test_it_runs_the_follower_again_until_the_endpoint_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("ddbkeys._cli.follow_outage.OUTAGE_PAUSE", 0.01)
    clock = [0.0]
    outage = Outage(60.0, clock=lambda: clock[0])
    outage.answered()  # (its start answered: following began)
    follower = Follower(3, clock, 10.0)
    stop = threading.Event()
    assert outage.run(follower, stop, False, False) is follower.report  # type: ignore[arg-type]
    assert follower.runs == 4
    said = capsys.readouterr().err
    assert said.count("Warning: Could not connect") == 1  # (once an outage)
    assert "Trying again for up to 60 s" in said
    outage.answered()  # (the follower's first batch after it)
    assert "answers again after 20 s" in capsys.readouterr().err
    # A later outage has its own wait: not the one that ended.
    clock[0] += 3_600
    follower.failures = 2
    outage.run(follower, stop, False, False)  # type: ignore[arg-type]
    assert follower.runs == 7


def test_past_its_wait_the_error_is_raised_and_with_0_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("ddbkeys._cli.follow_outage.OUTAGE_PAUSE", 0.01)
    clock = [0.0]
    follower = Follower(100, clock, 10.0)
    outage = Outage(25.0, clock=lambda: clock[0])
    outage.answered()
    with pytest.raises(EndpointUnreachableError):
        outage.run(follower, threading.Event(), False, False)  # type: ignore[arg-type]
    assert follower.runs == 4  # (its first failure at 10 s, then 20, 30 and 40: 30 s > 25)
    said = capsys.readouterr().err
    assert "Trying again for up to 25 s" in said
    assert said.rstrip().endswith(
        "No answer for 30 s, past --outage-wait (25 s; a try that hangs lasts up to --timeout): "
        "giving up."
    )
    follower.runs = 0
    outage = Outage(0.0, clock=lambda: clock[0])
    outage.answered()
    with pytest.raises(EndpointUnreachableError):
        outage.run(follower, threading.Event(), False, False)  # type: ignore[arg-type]
    assert follower.runs == 1
    assert "Trying again" not in capsys.readouterr().err  # (0: at once, as before)


def test_an_endpoint_that_never_answered_fails_at_once() -> None:
    """helper-74 F1: with --until-caught-up a wrong endpoint was tried for 900 s (and Ctrl-C
    then exited 0): following never began, there is no outage to ride out."""
    clock = [0.0]
    follower = Follower(100, clock, 1.0)
    with pytest.raises(EndpointUnreachableError):
        Outage(900.0, clock=lambda: clock[0]).run(follower, threading.Event(), True, False)  # type: ignore[arg-type]
    assert follower.runs == 1


def test_a_line_said_again_during_an_outage_is_said_once() -> None:
    clock = [0.0]
    outage = Outage(60.0, clock=lambda: clock[0])
    assert outage.said("backfill failed: x")
    outage.since = 0.0  # (an outage)
    assert not outage.said("backfill failed: x") and outage.said("backfill in 60 s")
    outage.since = None
    assert outage.said("backfill in 60 s")


def test_a_stop_during_the_pause_returns_what_it_did() -> None:
    clock = [0.0]
    follower = Follower(100, clock, 1.0)
    stop = threading.Event()
    stop.set()
    outage = Outage(60.0, clock=lambda: clock[0])
    outage.answered()
    follower.report.caught_up = True  # (before the outage)
    report = outage.run(follower, stop, False, False)  # type: ignore[arg-type]
    assert report is follower.report and follower.runs == 1
    assert not report.caught_up  # (helper-74 F6: it said "caught up" with the endpoint gone)


class Statuses:
    """A marker index whose status goes through ``states``, the last one kept."""

    name = "ddbkeys-partition-keys"

    def __init__(self, *states: str | None) -> None:
        self.states = list(states)

    def status(self, *, fresh: bool) -> str | None:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


def test_a_follower_waiting_for_its_index_names_index_create_only_where_none_is_coming(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # helper-100 F3: a follower waiting for a CREATING index told the user to run `index
    # create`, which invited a second one.
    monkeypatch.setattr("ddbkeys._cli.index_follow.WAIT_FOR_INDEX", 0.0)
    index = Statuses(None, None, "CREATING", "CREATING", "ACTIVE")
    _await_index(index, "nat", threading.Event(), False)  # type: ignore[arg-type]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines  # (once each state)
    assert "(not there yet): `ddbkeys partition-keys index create -t nat` makes it" in lines[0]
    assert "(CREATING): being created; following begins once it is ACTIVE" in lines[1]
    assert "index create" not in lines[1]
