"""How ``ddbkeys partition-keys index follow`` rides out an endpoint that stops answering once
following has begun (a network blip, DynamoDB Local restarted): its follower runs again from
its position, as a restart would, until ``--outage-wait`` seconds have passed without an
answer."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import click

from ddbkeys._cli.errors import error_text
from ddbkeys._cli.group import quiet_output
from ddbkeys._errors import DeadlineExceededError, EndpointUnreachableError
from ddbkeys.partition_keys._streams.follow_state import FollowReport
from ddbkeys.partition_keys._streams.follower import StreamFollower

__all__ = ["OUTAGE_PAUSE", "OUTAGE_WAIT", "Outage", "say"]


def say(line: str) -> None:
    """``line`` on stderr; where no one reads it any more, nothing (the follower goes on)."""
    try:
        click.echo(line, err=True)
    except BrokenPipeError:
        quiet_output()


#: Seconds ``index follow`` keeps trying an endpoint that stopped answering (--outage-wait).
OUTAGE_WAIT = 900.0

#: The longest pause between two tries of an endpoint that does not answer.
OUTAGE_PAUSE = 30.0


class Outage:
    """How ``index follow`` rides out an endpoint that stops answering once following has
    begun: ``run`` runs the follower again from its position (its checkpoint: as a restart
    would) after a jittered pause that doubles up to ``OUTAGE_PAUSE``, until ``wait`` seconds
    have passed without an answer; then the error is raised. Said on stderr when the outage
    begins and when the endpoint answers again (``answered``, from each batch and from the
    follower's start, which must have answered once: a wrong endpoint fails at once, helper-74
    F1). ``said`` keeps a line said again and again during an outage (the backfill's
    failures, one a run) to once."""

    def __init__(self, wait: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.wait = wait
        self.clock = clock
        self.since: float | None = None  # when the endpoint stopped answering
        self.begun = False  # whether following began (its start answered once)
        self.last: str | None = None  # the last line said through ``said``

    def said(self, line: str) -> bool:
        """Whether ``line`` is to be said: not the same line again during an outage."""
        again = line == self.last and self.since is not None
        self.last = line
        return not again

    def answered(self) -> None:
        self.begun = True
        if self.since is not None:
            say(
                f"The endpoint answers again after {self.clock() - self.since:.0f} s: "
                "following goes on from the checkpoint."
            )
            self.since = None

    def on_batch(self, _report: FollowReport) -> None:
        self.answered()

    def run(
        self, follower: StreamFollower, stop: threading.Event, once: bool, from_start: bool
    ) -> FollowReport:
        pause = 1.0
        while True:
            try:
                return follower.run(stop, until_caught_up=once, from_start=from_start)
            except (EndpointUnreachableError, DeadlineExceededError) as exc:
                if not self.begun:
                    raise  # (never answered: a wrong endpoint, said at once)
                follower.report.caught_up = False  # (whatever it was before)
                now = self.clock()
                if self.since is None:
                    self.since, pause = now, 1.0
                    if self.wait > 0:
                        say(
                            f"Warning: {error_text(exc)} Trying again for up to {self.wait:g} "
                            "s (it goes on from its checkpoint; Ctrl-C stops)."
                        )
                left = self.since + self.wait - now
                if left <= 0:
                    say(
                        f"No answer for {now - self.since:.0f} s, past --outage-wait "
                        f"({self.wait:g} s; a try that hangs lasts up to --timeout): giving up."
                    )
                    raise
                if stop.wait(min(pause * random.uniform(0.5, 1.0), left)):
                    return follower.report
                pause = min(2 * pause, OUTAGE_PAUSE)
