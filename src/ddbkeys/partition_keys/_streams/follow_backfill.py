"""``index follow --backfill`` (``StreamFollower(..., backfill=True)``): one long-running command
takes a table from an empty index to a provable one. Beside the following, a flow waits until
the replay margin has passed since the follower's first position, backfills (see
``backfill.waited_backfill_flow``), and from then on looks again every ``CHECK`` seconds: it
backfills once per stream, and again only when no backfill record would let a listing prove
the index (a new stream, a backfill stopped before its end, records lost before anyone applied
them). A restarted follower does not backfill again while a counting record exists. Another
backfill at work under the stream (a manual ``index backfill``, another follower: alive in the
record, see ``backfill_claim``) is waited for, looked at again every ``OTHER_POLL`` seconds
(``report.backfill_state`` is ``"another running"``): its outcome is the follower's when
listings can prove the index from it, and the follower backfills itself when not, or when it
dies (silent for ``backfill_wait.ALIVE_FOR`` seconds).

The flow's own :class:`~ddbkeys.partition_keys._index.marker_core.MarkerCore` and
:class:`~ddbkeys.partition_keys._index.state.StateCore` (not the follower's): the sync follower
runs it in a thread, the asyncio one in a task."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow, Pause
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import DdbKeysError
from ddbkeys._key_json import brief_key
from ddbkeys.partition_keys._index.backfill import waited_backfill_flow
from ddbkeys.partition_keys._index.backfill_claim import left_here, owner_name
from ddbkeys.partition_keys._index.backfill_wait import (
    OTHER_POLL,
    OTHER_RUNNING,
    READING,
    TIP,
    WAITING,
    Readiness,
    began,
    can_count,
    dead_in,
    needs_backfill,
    running_backfill,
)
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import BackfillReport, _IndexGoneError, emptied_meanwhile
from ddbkeys.partition_keys._index.state import StateCore
from ddbkeys.partition_keys._listing.base import plain_key
from ddbkeys.partition_keys._proof.precheck import FOLLOW_ROLE

if TYPE_CHECKING:
    from ddbkeys.partition_keys._proof.evidence import Backfill
    from ddbkeys.partition_keys._streams.follow import FollowCore
    from ddbkeys.partition_keys._streams.follow_state import FollowReport

__all__ = ["CHECK", "PROGRESS", "keep_backfilled", "needed_flow", "needs_backfill"]

#: How often (seconds) a follower with ``backfill`` looks whether a backfill is needed.
CHECK = 10.0
#: How often (seconds) at most its backfill says how far it has come (a table of millions of
#: collections takes hours; a slow endpoint, minutes for thousands).
PROGRESS = 30.0


def needed_flow(
    index: MarkerCore, store: StateCore, margin: float
) -> Flow[tuple[bool | None, Backfill | None]]:
    """:func:`needs_backfill` on the table and the index's record as they are now (a
    DescribeTable and a GetItem of the state table, which is not created): None while the
    table's stream is off (no backfill can help then); False while another backfill that can
    count is at work under the stream (``backfill_wait.running_backfill``), which is then
    given too: the follower waits for it rather than read the table a second time."""
    description = yield from index.describe()
    stream = (
        str(description["LatestStreamArn"])
        if description.get("StreamSpecification", {}).get("StreamEnabled")
        else None
    )
    if stream is None:
        return None, None
    evidence = yield from store.load(index.table, index.name)
    now = store.clock()
    other = running_backfill(evidence, stream, now)
    if left_here(other):  # (this process's own, ended: taken over at once, see backfill_claim)
        return needs_backfill(evidence, stream, margin), None
    if other is not None and not can_count(other, margin):
        other = None  # (one that cannot count is taken over: see backfill_claim)
    return needs_backfill(evidence, stream, margin, now=now), other


def _done(report: BackfillReport, table: str) -> str:
    what = (
        f"backfill done: {report.written:,} marker(s) written, {report.present:,} already there, "
        f"{report.removed:,} removed{emptied_meanwhile(report)}"
    )
    if report.clashes:
        shown = ", ".join(brief_key(plain_key(k)) for k in report.clashes[:5])
        more = f" and {len(report.clashes) - 5} more" if len(report.clashes) > 5 else ""
        return what + (
            f"; it does not count: {len(report.clashes)} collection(s) of table {table!r} hold "
            f"data at the marker's key ({shown}{more}): move those items, then run "
            f"`ddbkeys partition-keys index backfill -t {table}`"
        )
    if report.counts:
        return what + "; listings can prove the index from now on"
    return what + f"; it does not count: {report.advice}"


class _Progress:
    """The progress lines of a follower's backfill: at most one every ``PROGRESS`` seconds
    since the last line (``told``), from the report of the backfill at work (``fresh``), as
    it grows (helper-76 F3: markers written alone said 0 for good where every collection was
    marked already). Called as the backfill's ``progress``."""

    def __init__(self, clock: Callable[[], float], say: Callable[[str], None]) -> None:
        self.clock, self.say = clock, say
        self.told = clock()
        self.report = BackfillReport()
        #: Whether a line said its read mode's read of the keys, still under way.
        self.reading = False
        #: The markers the read mode will write, once its read of the keys is done.
        self.to_mark: int | None = None

    def fresh(self) -> BackfillReport:
        self.report, self.reading, self.to_mark = BackfillReport(), False, None
        return self.report

    def waited(self, where: Readiness, report: FollowReport) -> None:
        """What the backfill's ``on_wait`` tells (``where``, but another backfill at work): a
        line on entering a state (``report.backfill_state``), and the read mode's read of the
        keys in a line every ``PROGRESS`` seconds, and its end once one said it was under way."""
        if where.state == READING:
            self.to_mark = where.to_mark
            if self.clock() - self.told >= PROGRESS or (where.to_mark is not None and self.reading):
                self.told, self.reading = self.clock(), where.to_mark is None
                self.say(f"backfill: {where.advice()}")
        elif (told := _told(where)) is not None and report.backfill_state != told[0]:
            report.backfill_state = told[0]
            self.told = self.clock()
            self.say(told[1])

    def __call__(self, _written: int) -> None:
        if self.clock() - self.told < PROGRESS:
            return
        self.told, report = self.clock(), self.report
        handled = report.written + report.present + report.removed + report.emptied
        handled += len(report.clashes)
        of = f" of {self.to_mark:,}" if self.to_mark is not None else ""
        self.say(
            f"backfill: {handled:,} collection(s) handled so far ({report.written:,}{of} "
            f"marker(s) written, {report.present:,} already there)"
        )


def _told(where: Readiness) -> tuple[str, str] | None:
    """The state a follower's backfill is in, and the line it says on entering it, as its
    wait (``where``) tells it; None: nothing to say."""
    if where.state == WAITING:
        return "waiting", (
            f"backfill in {where.left:.0f} s (the replay margin, {where.margin:g} s, after the "
            "follower's first position)"
        )
    if where.state == TIP:
        return TIP, f"backfill: {where.advice()}"
    return None  # (ready: "backfill begins" once the record is its own, see keep_backfilled)


def _cores(follow: FollowCore) -> tuple[MarkerCore, StateCore]:
    """The backfill's own cores, made as ``follow``'s (see the module)."""
    index = follow.index
    core = MarkerCore(
        index.table,
        index_name=index.name,
        marker_attribute=index.attribute_given,
        marker_sort_key=index.sort_key_given,
        usage=Usage(),
        deadline=index.deadline,
        retry=index.retry,
        read_timeout=index.read_timeout,
    )
    store = StateCore(
        follow.store.name, deadline=follow.store.deadline, clock=follow.clock, retry=index.retry
    )
    return core, store


def keep_backfilled(
    follow: FollowCore,
    report: FollowReport,
    margin: float,
    stop: StopFlag,
    tell: Callable[[str], None] | None = None,
    *,
    once: bool = False,
) -> Flow[None]:
    """Backfill ``follow``'s index when :func:`needs_backfill` says so, until ``stop`` (or,
    ``once``, after the first look that needs none or the first backfill). What it does is
    counted in ``report`` (``backfills``, ``backfill``) and said to ``tell`` in one line each
    time it starts waiting, begins, ends or fails, and every ``PROGRESS`` seconds while it
    reads the keys or writes markers."""
    core, store = _cores(follow)
    said: list[str] = []

    def say(line: str) -> None:
        if tell is not None and (not said or said[-1] != line):
            tell(line)
        said.append(line)

    def another(other: Backfill) -> None:
        if report.backfill_state != OTHER_RUNNING:
            report.backfill_state = OTHER_RUNNING
            say(
                f"another backfill is at work ({began(other)}): waiting for it to end (it was "
                f"{dead_in(other, store.clock())} at most)"
            )

    watch = _Progress(store.clock, say)

    def begun() -> None:
        if watch.report.counts:
            report.backfill_state = "running"
            watch.told = store.clock()
            say("backfill begins")

    def on_wait(where: Readiness) -> None:
        if where.state == OTHER_RUNNING and where.other is not None:
            another(where.other)
        else:
            watch.waited(where, report)

    while not stop.requested:
        doing = False  # (a failure before the backfill is a look's, not the backfill's)
        try:
            yield from core.maintained()
            needed, other = yield from needed_flow(core, store, margin)
            if needed is None:
                pass  # the stream is off: the follower says so, and waits for a new one
            elif other is not None:
                another(other)  # looked at again in CHECK seconds (a dead one is passed over)
            elif needed:
                doing = True
                done = yield from waited_backfill_flow(
                    core,
                    watch,
                    store,
                    margin,
                    for_maintainer=True,
                    on_wait=on_wait,
                    stop=stop,
                    owner=owner_name(FOLLOW_ROLE),
                    report=watch.fresh(),
                    on_claim=begun,
                )
                report.backfill = done
                report.backfill_state = "done"
                if done.joined is not None:
                    say(
                        f"the backfill it waited for ({began(done.joined)}) has ended: listings "
                        "can prove the index from now on"
                    )
                else:
                    report.backfills += 1
                    say(_done(done, core.table))
            elif report.backfill_state in (None, OTHER_RUNNING, "failed"):
                # ("failed": a look that failed, an outage, then one that needs none: done,
                # where Ctrl-C said "The backfill was not done", exit 1; helper-98 F6)
                report.backfill_state = "done"
                say("a backfill under this stream already lets listings prove the index")
        except DdbKeysError as exc:
            if _failed(report, say, exc, once, doing):
                return
        if once and report.backfill_state != OTHER_RUNNING:
            return
        again = OTHER_POLL if report.backfill_state == OTHER_RUNNING else CHECK
        yield Pause(again, core.retry.sleep, stop=stop)


def _failed(
    report: FollowReport, say: Callable[[str], None], exc: DdbKeysError, once: bool, doing: bool
) -> bool:
    """A backfill (``doing``), or the look at whether one is needed, failed with ``exc``: said,
    and whether the loop ends (the index gone: the follower ends too, helper-99 F2, where it
    said "tried again in 10 s"). With ``once`` it is not tried again either: the caller says
    what then (helper-75). A look that fails leaves a backfill done so (helper-101 F3: an
    outage said "backfill failed" where none was needed)."""
    if doing or report.backfill_state != "done":
        report.backfill_state = "failed"
    gone = isinstance(exc, _IndexGoneError)
    what, verb = ("backfill", "tried") if doing else ("look at the index's backfill", "looked")
    again = "" if once or gone else f"; {verb} again in {CHECK:g} s"
    say(f"{what} failed: {str(exc).rstrip('.')}{again}")
    return gone
