"""When a backfill may begin so that listings can prove the marker index from it: the proof's rule
(see :mod:`ddbkeys.partition_keys._proof.evidence`), applied *before* anything is written, so that
the natural order of setup (create the index, start ``index follow``, run ``index backfill`` at
once) ends with an index a listing can prove, not with one that needs a second backfill.

The rule: a backfill counts when it begins at least the replay margin after the maintainer's
first recorded position under the table's current stream (and after every position a
maintainer began at a shard's end). :func:`readiness` decides it from the index's record, the
stream and the time, with no I/O; :func:`wait_flow` re-reads the record and waits (a flow, so
the sync and the asyncio ``MarkerIndex`` share it, and a test drives it with no client).

One backfill at a time: a backfill at work says so in its record (``Backfill.alive``, refreshed
at least every ``ALIVE`` seconds between its requests); :func:`running_backfill` decides, from
the record and the time alone, whether another one is at work under the table's stream (alive
within ``ALIVE_FOR``), so that a second one waits for it rather than reading the whole table
again (see ``backfill_claim``), and one killed is out of the way ``ALIVE_FOR`` seconds after
its last sign of life.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ddbkeys._core.steps import Flow, Pause
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import ConfigurationError, DdbKeysError
from ddbkeys.partition_keys._index.state import markers_key
from ddbkeys.partition_keys._proof.evidence import Backfill, Evidence
from ddbkeys.partition_keys._proof.precheck import backfill_reason, basis, shown_markers
from ddbkeys.partition_keys._streams.lambda_trigger import same_stream

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._index.state import StateCore

__all__ = [
    "ALIVE",
    "ALIVE_FOR",
    "NO_MAINTAINER",
    "NO_STREAM",
    "OTHER_RUNNING",
    "READING",
    "READY",
    "TIP",
    "WAITING",
    "Readiness",
    "alive_at",
    "began",
    "can_count",
    "dead_in",
    "known_markers",
    "markers_checked",
    "needs_backfill",
    "other_markers",
    "readiness",
    "running_backfill",
    "same_markers",
    "unmaintained",
    "wait_flow",
]

#: It counts if it begins now.
READY = "ready"
#: A maintainer's first position is younger than the margin: it counts ``left`` seconds from now.
WAITING = "waiting"
#: No maintainer has recorded a position under the table's current stream.
NO_MAINTAINER = "no maintainer"
#: The table's stream is off: nothing can prove the index.
NO_STREAM = "no stream"
#: Another backfill is at work under the table's stream (``other``): this one waits for it.
OTHER_RUNNING = "another running"
#: A backfill of the read mode has written its markers and waits ``left`` seconds more (the
#: replay margin after its last write) before it reads the stream's tip, so that every change
#: made meanwhile is in what it reads. Told to ``on_wait`` after the writes, not before.
TIP = "tip"
#: A backfill of the read mode reads the table's keys, then the marker index (``reading`` says
#: which, ``keys`` how many so far), before it writes a marker; once both are read, ``to_mark``
#: says how many markers it will write. Told about once a second while it reads.
READING = "reading"
#: How often (seconds) a backfill at work refreshes its record's ``alive`` time (between its
#: requests: a single request that takes longer delays it).
ALIVE = 10.0
#: An unfinished backfill whose record's ``alive`` time is older than this (seconds) is taken
#: for dead (killed, or its host gone): it is no longer in the way of another. Three times
#: ``ALIVE``: a slow request or two, and clocks of two hosts a few seconds apart, do not make
#: one at work look dead.
ALIVE_FOR = 3 * ALIVE
#: How often (seconds) a backfill waiting for another reads the index's record again.
OTHER_POLL = 2.0
#: How often (seconds) a backfill waiting for a maintainer reads the index's record again.
MAINTAINER_POLL = 1.0
#: How long (seconds) a backfill of a table whose stream is on waits for a maintainer's first
#: position even when not asked to: one started a moment before (``index follow &``, then
#: ``index backfill`` at once) takes a second or two to record it.
MAINTAINER_GRACE = 10.0
#: The longest (seconds) a wait sleeps before it says how long is left again.
TICK = 1.0


@dataclass(frozen=True)
class Readiness:
    """Where a backfill of ``table``'s index stands before it writes (see the module).
    ``state`` is one of ``READY``, ``WAITING`` (``left`` seconds to go), ``NO_MAINTAINER``,
    ``NO_STREAM``, ``OTHER_RUNNING``, in the read mode ``READING`` while it reads the keys, and
    once the markers are written ``TIP`` (``left`` seconds to the stream's read);
    ``maintained_since`` is the maintainer's first position (None: none); ``margin`` the replay
    margin the rule was applied with."""

    table: str
    state: str
    margin: float
    left: float = 0.0
    maintained_since: float | None = None
    #: Whether it waits for the margin after records a maintainer lost (a gap), not after its
    #: first position.
    after_gap: bool = False
    #: The state table it read the maintainer's positions from (None: not said).
    state_table: str | None = None
    #: ``OTHER_RUNNING``: the record of the backfill at work it waits for.
    other: Backfill | None = None
    #: ``READING``: what it reads ("the table" or "the marker index"), the keys read so far in
    #: it, and once both are read the markers it will write (None: not known yet).
    reading: str = ""
    keys: int = 0
    to_mark: int | None = None

    @property
    def counts(self) -> bool:
        """Whether a backfill begun now can prove the index (given it meets no clash)."""
        return self.state == READY

    def advice(self) -> str:
        """One line for the user: why a backfill begun now will not count, and what to do (or,
        ``READING`` and ``TIP``, where the backfill at work stands)."""
        t = self.table
        follow = f"ddbkeys partition-keys index follow -t {t}"
        backfill = f"ddbkeys partition-keys index backfill -t {t}"
        if self.state == NO_STREAM:
            return (
                f"the stream of table {t!r} is off, so no listing can prove this backfill's "
                f"markers: turn it on (`ddbkeys partition-keys index stream -t {t}`), start "
                f"`{follow}` (or the Lambda handler), then run `{backfill}`"
            )
        if self.state == NO_MAINTAINER:
            where = f" (in state table {self.state_table!r})" if self.state_table else ""
            return (
                f"no maintainer has recorded a position{where} in the stream of table {t!r}: no "
                f"listing can prove the index until `{follow}` (or the Lambda handler) runs and "
                f"a backfill begins {self.margin:g} s after its first position (`{backfill} "
                "--wait-for-maintainer` waits for it; `index follow --backfill` does both)"
            )
        if self.state == OTHER_RUNNING and self.other is not None:
            return (
                f"another backfill of table {t!r} is at work ({began(self.other)}): this one "
                "waits for it to end rather than read the table a second time"
            )
        if self.state == READING:
            if self.to_mark is not None:
                return f"the keys are read: {self.to_mark:,} marker(s) to write"
            return f"reading {self.reading}: {self.keys:,} keys so far (the markers follow)"
        if self.state == TIP:
            return (
                f"the markers are written; the stream is read in {self.left:.0f} s (the replay "
                f"margin, {self.margin:g} s, after the last write)"
            )
        if self.state == WAITING:
            young = (
                "records a maintainer lost are"
                if self.after_gap
                else "the maintainer's first position is"
            )
            return (
                f"{young} younger than the replay margin ({self.margin:g} s): a backfill begun "
                f"now does not count (no listing can prove it); one begun in {self.left:.0f} s "
                "does"
            )
        return "a backfill begun now counts"


def readiness(
    table: str, evidence: Evidence | None, stream: str | None, now: float, margin: float
) -> Readiness:
    """The rule, decided from the index's record (``evidence``), the table's ``stream`` (its
    ARN; None: off), the time ``now`` and the replay ``margin``. Pure.

    The backfill may begin once ``margin`` has passed since the maintainer's first position
    under ``stream`` (the earliest first mark of its shards: ``precheck.backfill_reason``'s
    rule), since every shard's ``since`` time (a shard the maintainer began at its end) and
    since every gap a maintainer recorded (records it lost): ``replay_window``'s rules."""
    if stream is None:
        return Readiness(table, NO_STREAM, margin)
    shards = [
        m for m in (evidence.shards.values() if evidence is not None else ()) if m.stream == stream
    ]
    firsts = [m.first_saved for m in shards if m.first_saved is not None]
    if not firsts:
        return Readiness(table, NO_MAINTAINER, margin)
    since = min(firsts)
    begun = [float(m.since) for m in shards if isinstance(m.since, int | float)]
    # Records a maintainer lost (a gap) are covered only by a backfill begun the margin after.
    gaps = [m.gap for m in shards if m.gap is not None]
    gaps += [
        c.gap
        for c in (evidence.triggers.values() if evidence is not None else ())
        if c.gap is not None and same_stream(c.stream, stream)
    ]
    ready_at = max([since, *begun, *gaps]) + margin
    if now >= ready_at:
        return Readiness(table, READY, margin, 0.0, since)
    lost = bool(gaps) and max(gaps) + margin >= ready_at
    return Readiness(table, WAITING, margin, ready_at - now, since, lost)


#: A backfill that wrote markers for at least this long (seconds) while no maintainer saved a
#: position is said to (:func:`unmaintained`): a live one applies its marker writes meanwhile.
SILENT_AFTER = 30.0


def unmaintained(evidence: Evidence | None, wrote: int) -> str | None:
    """What to say after a backfill that counts and wrote ``wrote`` markers (or removed them)
    for ``SILENT_AFTER`` seconds or more, when no maintainer saved a position under its stream
    since it began: each write is a stream record a live maintainer would have applied, so none
    runs (or one is stuck), and every listing replays all since the last position (helper-70
    F2: 4,498 RCU against a scan's 64, after a follower had died). None otherwise. Pure."""
    backfill = evidence.backfill if evidence is not None else None
    if evidence is None or backfill is None or backfill.finished is None or wrote <= 0:
        return None
    if backfill.finished - backfill.started < SILENT_AFTER:
        return None
    saves = [t for m in evidence.shards.values() if m.stream == backfill.stream for _, t in m.marks]
    newest = max(saves, default=None)
    if newest is None or newest >= backfill.started:
        return None
    table = evidence.table
    return (
        f"no maintainer has recorded a position in the stream for {backfill.finished - newest:.0f} "
        f"s, though this backfill's {wrote} marker write(s) are records in it: is `ddbkeys "
        f"partition-keys index follow -t {table}` (or the Lambda handler) running? Until one "
        "catches up, each listing from the index replays all since its last position "
        f"(`ddbkeys partition-keys index status -t {table}` says what that costs)"
    )


def alive_at(backfill: Backfill) -> float:
    """The last sign of life of ``backfill`` (its ``alive`` time; a record of an older
    ddbkeys has none: its start)."""
    return backfill.alive if backfill.alive is not None else backfill.started


def running_backfill(evidence: Evidence | None, stream: str | None, now: float) -> Backfill | None:
    """The backfill at work under ``stream`` (the table's stream now) that the record holds,
    if any: not finished, and alive within ``ALIVE_FOR`` seconds of ``now`` (or later: another
    host's clock ahead). One under another stream is not (it cannot count: the next backfill
    runs); nor one that said it stopped; one silent for longer is dead (killed): it is in no
    one's way. Pure."""
    backfill = evidence.backfill if evidence is not None else None
    if backfill is None or stream is None or backfill.stream != stream:
        return None
    if backfill.finished is not None or backfill.stopped is not None:
        return None
    if now - alive_at(backfill) > ALIVE_FOR:
        return None
    return backfill


def dead_in(backfill: Backfill, now: float) -> str:
    """How long a backfill waiting for ``backfill`` may wait, as a message says it: at most
    until ``ALIVE_FOR`` after its last sign of life (one killed says nothing: it is taken for
    dead then, and the waiting one runs)."""
    left = max(ALIVE_FOR - (now - alive_at(backfill)), 0.0)
    return f"alive {max(now - alive_at(backfill), 0.0):.0f} s ago; if it was killed, {left:.0f} s"


def can_count(backfill: Backfill, margin: float) -> bool:
    """Whether ``backfill``, once finished with no clash, could let listings with the replay
    ``margin`` prove the index: it began the margin after a maintainer's first position, and
    did not say itself it does not count (the proof's rule, ``precheck.backfill_reason``, on
    what the record says while it runs). Pure."""
    return (
        backfill.maintained_since is not None
        and backfill.started - backfill.maintained_since >= margin
        and backfill.uncounted is None
    )


def at_work(evidence: Evidence | None, stream: str | None, margin: float, now: float) -> str | None:
    """Why a listing cannot prove the index now when a backfill that can count (with this
    ``margin``) is at work under ``stream`` (:func:`running_backfill`): it is running, and
    nothing is to be run but waiting for it (`index backfill` would only wait). The same words
    in a listing's decline and in ``index status``. No estimate of when it ends: how many
    collections are left is not known without reading the table. Pure."""
    other = running_backfill(evidence, stream, now)
    if other is None or not can_count(other, margin):
        return None
    handled = f"{other.handled or 0} collection(s) handled so far"
    if other.tip_at is not None:  # (helper-99 F3: "0 handled so far" as it waited the margin)
        handled = (
            f"its {other.handled or 0} collection(s) handled, it reads the stream's records in "
            f"{max(other.tip_at - now, 0.0):.0f} s"
        )
    return (
        f"a backfill is at work ({began(other)}; {handled}, {dead_in(other, now)} until it is "
        "taken for dead): listings can prove the index once it "
        "finishes, if it meets no clash (nothing to run: `index backfill` would wait for it)"
    )


def began(backfill: Backfill) -> str:
    """When ``backfill`` began and who runs it, as a message says it."""
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(backfill.started))
    who = f" by {backfill.owner}" if backfill.owner else ""
    return f"begun {at}{who}"


def wait_flow(
    index: MarkerCore,
    store: StateCore,
    margin: float,
    *,
    wait: bool = True,
    for_maintainer: bool = False,
    timeout: float | None = None,
    on_wait: Callable[[Readiness], None] | None = None,
    stop: StopFlag | None = None,
    grace: float = MAINTAINER_GRACE,
) -> Flow[Readiness]:
    """Read the index's record and the table's stream, and wait as the rule says: until the
    margin has passed since the maintainer's first position (``wait``), and, with
    ``for_maintainer``, until a maintainer has recorded one (at most ``timeout`` seconds; None:
    no limit; then a :class:`~ddbkeys.DdbKeysError`, nothing written); without it, for
    ``grace`` seconds (a maintainer started a moment before records its first position within
    a second or two). ``on_wait`` is
    told where it stands at each step of the wait (about once a second). Returns where it
    stands when the backfill begins: ``counts`` False when it will not count (no stream; no
    maintainer and not waiting for one; ``wait=False`` while it is too early)."""
    clock = store.clock
    started = clock()
    while True:
        yield from index.describe()  # the stream as it is now
        stream = (yield from index.table_info()).stream_arn
        saved = yield from store.load(index.table, index.name)
        where = replace(
            readiness(index.table, saved, stream, clock(), margin), state_table=store.name
        )
        if where.state == WAITING and wait:
            # Sleep to the moment, saying how long is left; then read the record again (a
            # new stream, or a shard begun since, moves the moment).
            ready_at = clock() + where.left
            while (left := ready_at - clock()) > 0:
                if on_wait is not None:
                    on_wait(replace(where, left=left))
                yield Pause(min(left, TICK), index.retry.sleep, stop=stop)
            continue
        waited = clock() - started
        if where.state == NO_MAINTAINER and wait and not for_maintainer and waited < grace:
            yield Pause(min(1.0, grace - waited), index.retry.sleep, stop=stop)
            continue
        if where.state == NO_MAINTAINER and for_maintainer:
            if on_wait is not None:
                on_wait(where)
            if timeout is not None and waited >= timeout:
                raise DdbKeysError(
                    f"No maintainer recorded a position in the stream of table "
                    f"{index.table!r} within {timeout:g} s: start `ddbkeys partition-keys index "
                    f"follow -t {index.table}` or the Lambda handler (nothing was written).",
                    table=index.table,
                )
            pause = MAINTAINER_POLL if timeout is None else min(MAINTAINER_POLL, timeout - waited)
            yield Pause(max(pause, 0.0), index.retry.sleep, stop=stop)
            continue
        if on_wait is not None:
            on_wait(where)
        return where


def known_markers(evidence: Evidence | None) -> list[str]:
    """How the index knows its markers (``state.markers_key``), as its record says: its last
    backfill's, and while that one is at work (one run with --force to change them), the
    finished one kept beside it too, last. Pure."""
    current = evidence.backfill if evidence is not None else None
    known = [current]
    if evidence is not None and current is not None and current.finished is None:
        known.append(evidence.kept)  # (while one is at work: the last finished one too)
    said = [b.markers for b in known if b is not None and b.markers is not None]
    return list(dict.fromkeys(said))


def other_markers(evidence: Evidence | None, markers: str, table: str) -> DdbKeysError | None:
    """The error when the index's last finished backfill (the record's, or the one kept beside
    an unfinished one) knew markers otherwise than ``markers`` (``state.markers_key``: this
    command's attribute and sort key), else None. A backfill or maintainer told another
    marker sort key would write a second set of markers, and the first set would then read as
    data: collections emptied since would be listed for good (a helper left the flag out
    once). A backfill at work that knows them as this command does (one run with --force to
    change them) counts as the index's too. Pure."""
    said = known_markers(evidence)
    if not said or markers in said:
        return None
    last = said[-1]
    return ConfigurationError(
        f"The marker index of table {table!r} was backfilled with markers of "
        f"{shown_markers(last)}, not {shown_markers(markers)} as given here: give the "
        "index's own (marker_sort_key=, marker_attribute=; the Lambda handler's "
        "DDBKEYS_MARKER_SORT_KEY, "
        "DDBKEYS_MARKER_ATTRIBUTE). To change them, run `index backfill --force` with the new "
        "ones: it removes the old markers first. Nothing was written.",
        table=table,
    )


def same_markers(saved: Evidence | None, index: MarkerCore, info: TableInfo) -> Evidence | None:
    """``saved``, once ``index`` (a backfill's, a maintainer's) is known to know markers as
    the record does; else :func:`other_markers`' error, raised before anything is written (a
    Lambda handler's batch then fails, and Lambda shows it)."""
    mismatch = other_markers(saved, markers_key(index.attribute, index.sort_key(info)), index.table)
    if mismatch is not None:
        raise mismatch
    return saved


def markers_checked(index: MarkerCore, saved: Evidence | None) -> Flow[None]:
    """:func:`same_markers` as a flow (the table's description read first, if not known)."""
    same_markers(saved, index, (yield from index.table_info()))


def needs_backfill(
    evidence: Evidence | None, stream: str | None, margin: float, *, now: float | None = None
) -> bool:
    """Whether a backfill would let listings prove the index where the record does not: the
    stream is on, and there is no finished backfill under it begun the margin after the
    maintainer's first position, or records were lost since it began. A backfill that met a
    clash is not run again by itself (the data at the marker's key must move first). With
    ``now``, not while another backfill that can count is at work under the stream
    (``running_backfill``, ``can_count``): that one is waited for (one killed is not, once
    ``ALIVE_FOR`` has passed). Pure."""
    if stream is None:
        return False
    other = running_backfill(evidence, stream, now) if now is not None else None
    if other is not None and can_count(other, margin):
        return False
    held = basis(evidence, stream, margin) if evidence is not None else Evidence("", "")
    backfill, _ = backfill_reason(held, stream, margin)
    if backfill is None:
        last = evidence.backfill if evidence is not None else None
        return last is None or last.stream != stream or not last.clashes
    return any(
        m.stream == stream and m.gap is not None and m.gap > backfill.started - margin
        for m in held.shards.values()
    )
