"""One backfill at a time: a backfill takes the index's record before it reads anything, says
it is alive there while it works, and a second one finds it and waits rather than read the
whole table again.

- **Taking the record.** A backfill writes its entry (``backfill`` in the index's record, see
  :mod:`ddbkeys.partition_keys._index.state`) on the condition that the entry is still the one it
  read (a compare-and-set of the whole entry): of two that begin at once (two followers with
  ``--backfill``, whose margins end together), one takes it, and the other reads it again and finds
  that one at work. Every later write of the entry is conditioned the same way on the entry it wrote
  last: a backfill whose entry another one replaced (one that took it for dead, or ``force``) stops
  at its next write, saying so, instead of writing over the other's.
- **The one it replaces.** The claim keeps the entry it replaces, where that one proves the
  index, beside its own (``state.KEPT``, in the same write): until this one proves it (at
  work, killed, stopped, or finished with a clash or not counting), listings prove the index
  from that one (``precheck.basis``), so running a backfill again, or killing one, does not
  withdraw a proof that held.
- **Alive.** While it works, a backfill refreshes its entry's ``alive`` time (and how many
  collections it has handled) at least every ``backfill_wait.ALIVE`` seconds: the flow does
  it between its own requests (:func:`kept_alive`), so the sync and asyncio drivers share it
  and no thread is needed. A pause longer than that is cut in two around a refresh.
- **Finding another at work** (``backfill_wait.running_backfill``: unfinished, under the
  table's stream, alive within ``ALIVE_FOR``), a backfill that could count for the same replay
  margin (``backfill_wait.can_count``): by default this one waits for it, telling ``on_wait``
  (``OTHER_RUNNING``) about every ``OTHER_POLL`` seconds, and when it ends its outcome is this
  one's (``BackfillReport.joined``) if listings can prove the index from it; otherwise (it met
  a clash, did not count, or died: silent for ``ALIVE_FOR``) this one runs. ``wait=False``
  refuses at once (an error, nothing written); ``force`` runs anyway, taking the record (the
  other stops at its next write). One that cannot count (begun too early, ``--no-wait``) is
  not waited for: this one takes the record, and that one stops.
- **One of this process's, no longer at work.** A process remembers the claims it made (their
  owner, ``host:pid``, and start). A backfill that finds an unfinished one of them that is no
  longer at work there (it failed during an outage, and could not say so
  in the record: ``index follow`` runs its backfill again once the endpoint answers; a script
  that calls ``backfill()`` again after an error) takes the record at once, as it would one
  silent for ``ALIVE_FOR``, rather than wait that long for itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, update_item
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import DdbKeysError, error_code
from ddbkeys._retry import Deadline
from ddbkeys.partition_keys._index.backfill_wait import (
    ALIVE,
    OTHER_POLL,
    OTHER_RUNNING,
    TIP,
    Readiness,
    began,
    can_count,
    markers_checked,
    needs_backfill,
    running_backfill,
)
from ddbkeys.partition_keys._index.markers import BackfillReport
from ddbkeys.partition_keys._index.state import KEPT, StateCore, evidence_from_item, update_request
from ddbkeys.partition_keys._proof.evidence import Evidence
from ddbkeys.partition_keys._proof.precheck import backfill_reason

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._proof.evidence import Backfill

__all__ = [
    "ATTRIBUTE",
    "FAREWELL",
    "Claim",
    "claim_flow",
    "farewell",
    "kept_alive",
    "left_here",
    "owner_name",
    "released",
    "rewrite",
]

T = TypeVar("T")

#: The record's attribute that holds the backfill's entry (JSON).
ATTRIBUTE = "backfill"
#: At most this many times in a row another backfill's write comes between this one's read of
#: the record and its conditional write before it gives up (each means another one wrote).
MOST_RACES = 20
#: The longest (seconds) a backfill that is stopped (an error, Ctrl-C, SIGTERM, a cancelled
#: task) spends writing ``stopped`` into its record on its way out: the exit never hangs on it.
FAREWELL = 2.0


#: This process's claims (their owner and start, as the record says them), and those of them
#: whose backfill is at work (from the claim to its end).
_MADE: set[tuple[str | None, float]] = set()
_AT_WORK: set[tuple[str | None, float]] = set()


def left_here(backfill: Backfill | None) -> bool:
    """Whether ``backfill`` (the record's) is a claim of this process whose backfill is no
    longer at work here: it ended and could not say so (see the module)."""
    if backfill is None:
        return False
    made = (backfill.owner, backfill.started)
    return made in _MADE and made not in _AT_WORK


def released(claim: Claim) -> None:
    """The claim's backfill is no longer at work in this process (it ended, however)."""
    _AT_WORK.discard(_made(claim.entry))


def _made(entry: dict[str, Any]) -> tuple[str | None, float]:
    return entry.get("owner"), float(entry["started"])


def owner_name(role: str | None = None) -> str:
    """Who runs a backfill, as its record says: ``host:pid``, and ``role`` after it."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    return f"{name} ({role})" if role else name


@dataclass
class Claim:
    """The entry a backfill keeps in the index's record, and its text as last written (what
    its next conditional write expects to find there)."""

    entry: dict[str, Any]
    text: str
    #: The index's record as read when the backfill took it.
    saved: Evidence | None
    #: When the entry was last written (the store's clock).
    written: float = 0.0
    report: BackfillReport = field(default_factory=BackfillReport)
    #: The text of a write whose answer never came (a Ctrl-C or a cancelled task during the
    #: request): it may be in the record, so the next write expects it there too.
    sent: str | None = None
    #: When it reads the stream's tip, its markers written (the store's clock; None: not
    #: yet, or not a mode that reads the stream): in the entry as ``tip_at`` at once, so that
    #: ``index status`` says the backfill waits out the margin (helper-99 F3: it said "0
    #: collection(s) handled so far" then).
    tip_at: float | None = None


def telling(
    claim: Claim,
    clock: Callable[[], float],
    on_wait: Callable[[Readiness], None] | None,
    on_claim: Callable[[], None] | None = None,
) -> Callable[[Readiness], None]:
    """Once the record is the backfill's ``claim``: ``on_claim`` called, and ``on_wait``
    returned with ``claim`` told when the stream's tip is read (state ``TIP``)."""
    if on_claim is not None:
        on_claim()

    def told(where: Readiness) -> None:
        if where.state == TIP and claim.tip_at is None:
            claim.tip_at = clock() + where.left
        if on_wait is not None:
            on_wait(where)

    return told


def claim_flow(
    index: MarkerCore,
    store: StateCore,
    make: Callable[[str | None, Evidence | None], dict[str, Any]],
    margin: float,
    report: BackfillReport,
    *,
    wait: bool = True,
    force: bool = False,
    on_wait: Callable[[Readiness], None] | None = None,
    stop: StopFlag | None = None,
) -> Flow[Claim | BackfillReport]:
    """Take the index's record for this backfill (see the module): the entry ``make`` builds
    from the table's stream and the record, written on the condition that the record's entry
    is still the one read. Returns the :class:`Claim`, or, when it waited for another
    backfill that ended letting listings prove the index, the ``report`` saying so
    (``joined``: that backfill's record)."""
    clock = store.clock
    waited = False
    for _ in range(MOST_RACES):
        while True:
            yield from index.describe()  # the stream as it is now
            stream = (yield from index.table_info()).stream_arn
            item = yield from store.record(index.table, index.name)
            saved = evidence_from_item(index.table, index.name, item) if item else None
            seen = _entry_text(item)
            if not force:  # (told other markers than the index's: a second set)
                yield from markers_checked(index, saved)
            if waited and saved is not None and saved.backfill is not None:
                proven, _ = backfill_reason(saved, stream, margin)
                if proven is not None and not needs_backfill(saved, stream, margin):
                    return _joined(report, proven)
            other = running_backfill(saved, stream, clock())
            if left_here(other):  # (this process's, ended: see the module)
                other = None
            if force or other is None or not can_count(other, margin):
                break
            if not wait:
                raise DdbKeysError(
                    f"Another backfill of table {index.table!r} is at work ({began(other)}; "
                    f"alive {max(clock() - (other.alive or other.started), 0):.0f} s ago): it "
                    "does this one's work, so nothing was written. Wait for it (leave out "
                    "--no-wait: this one then reports its outcome), or run over it with --force "
                    "(a second read of the table; that one stops).",
                    table=index.table,
                )
            waited = True
            if on_wait is not None:
                on_wait(Readiness(index.table, OTHER_RUNNING, margin, other=other))
            yield Pause(OTHER_POLL, index.retry.sleep, stop=stop)
        entry = make(stream, saved)
        # The entry replaced, where it proves the index: the proof rests on it until this
        # one proves (one that did not is not kept, and the one kept before it stays).
        proved = saved is not None and backfill_reason(saved, stream, margin)[0] is not None
        if (yield from _take(store, index, entry, seen, seen if proved else None)):
            return Claim(entry, _text(entry), saved, clock(), report)
    raise DdbKeysError(
        f"The record of table {index.table!r}'s index in state table {store.name!r} changed "
        f"{MOST_RACES} times between a read and this backfill's write of it: other backfills "
        "keep taking it. Run one backfill at a time.",
        table=store.name,
    )


def _joined(report: BackfillReport, other: Backfill) -> BackfillReport:
    """``report`` as the outcome of ``other``, the backfill it waited for (its ``mode``
    too, where the record says it: helper-76 F4)."""
    report.joined, report.counts, report.advice = other, True, None
    report.mode = other.mode or report.mode
    return report


def _take(
    store: StateCore, index: MarkerCore, entry: dict[str, Any], seen: str | None, kept: str | None
) -> Flow[bool]:
    """Write ``entry`` as the record's if it still is ``seen`` (see :func:`_swap`): whether it
    was. This process's own from then (``_MADE``), at work here once written (``_AT_WORK``:
    from before the write, whose answer may be lost)."""
    made = _made(entry)
    _MADE.add(made)
    _AT_WORK.add(made)
    try:
        swapped = yield from _swap(store, index.table, index.name, _text(entry), seen, kept)
    except BaseException:
        _AT_WORK.discard(made)
        raise
    if not swapped:
        _AT_WORK.discard(made)
    return swapped


def rewrite(
    claim: Claim, store: StateCore, index: MarkerCore, changes: dict[str, Any]
) -> Flow[None]:
    """Write the claim's entry with ``changes`` (and this moment as its ``alive``), on the
    condition that the record still holds the entry this backfill wrote last; a
    :class:`~ddbkeys.DdbKeysError` when another backfill has taken it since (this one
    then stops: its work goes on there)."""
    entry = {**claim.entry, **changes, "alive": store.clock()}
    if claim.tip_at is not None:
        entry["tip_at"] = claim.tip_at
    report = claim.report
    entry["handled"] = (
        report.written + report.present + report.removed + report.emptied + len(report.clashes)
    )
    text = _text(entry)
    unanswered, claim.sent = claim.sent, text
    swapped = yield from _swap(store, index.table, index.name, text, claim.text)
    if not swapped and unanswered is not None:  # that write may have landed
        swapped = yield from _swap(store, index.table, index.name, text, unanswered)
    if not swapped:
        item = yield from store.record(index.table, index.name)
        now = evidence_from_item(index.table, index.name, item) if item else None
        other = now.backfill if now is not None else None
        who = f" ({began(other)})" if other is not None else ""
        raise DdbKeysError(
            f"Another backfill{who} took over the record of table {index.table!r}'s index in "
            f"state table {store.name!r} (it found this one silent, or was run with --force): "
            "this one stops, and that one's outcome is the index's.",
            table=index.table,
        )
    claim.entry, claim.text, claim.written, claim.sent = entry, text, store.clock(), None


def farewell(claim: Claim, store: StateCore, index: MarkerCore) -> Flow[None]:
    """Say in the record that this backfill stopped (``stopped``: its time), so that the next
    one begins at once rather than wait ``ALIVE_FOR`` for its alive time to age: best effort,
    within ``FAREWELL`` seconds, no error (not said when the record is another's now)."""
    quick = StateCore(store.name, deadline=FAREWELL, clock=store.clock, retry=store.retry)
    with contextlib.suppress(Exception):  # (the error that stopped it is the one to tell)
        yield from rewrite(claim, quick, index, {"stopped": store.clock()})


def kept_alive(
    flow: Flow[T],
    claim: Claim,
    store: StateCore,
    index: MarkerCore,
    every: float | None = None,
) -> Flow[T]:
    """``flow`` (the backfill's work), with the claim's ``alive`` time refreshed
    (:func:`rewrite`) between its steps whenever ``every`` seconds have passed since the entry
    was last written; a pause of ``flow`` longer than what is left until then is cut in two
    around the refresh. A refresh that finds the record taken ends ``flow`` with that error.
    ``every``: ``ALIVE`` (this module's, read when called) when None."""
    every = ALIVE if every is None else every  # (and at once when ``tip_at`` is new)
    clock = store.clock
    try:
        step = next(flow)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    while True:
        if clock() - claim.written >= every or claim.tip_at != claim.entry.get("tip_at"):
            try:
                yield from rewrite(claim, store, index, {})
            except BaseException:
                flow.close()
                raise
        out = step
        if isinstance(step, Pause) and step.seconds > (due := claim.written + every - clock()):
            out = Pause(max(due, 0.0), step.sleep, step.stop)
        try:
            sent = yield out
        except Exception as exc:  # the step's failure (or a stop), for the flow to read
            try:
                step = flow.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            continue
        if out is not step:  # the first part of a pause cut in two: the rest, after a refresh
            assert isinstance(step, Pause)
            step = Pause(step.seconds - out.seconds, step.sleep, step.stop)  # type: ignore[union-attr]
            continue
        try:
            step = flow.send(sent)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def _text(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"))


def _entry_text(item: dict[str, Any] | None) -> str | None:
    value = (item or {}).get(ATTRIBUTE, {})
    return str(value["S"]) if "S" in value else None


def _swap(
    store: StateCore, table: str, index: str, text: str, seen: str | None, kept: str | None = None
) -> Flow[bool]:
    """Set the record's entry to ``text`` if it still is ``seen`` (None: none): whether it was
    (also when an answer was lost and the retry found ``text`` there already). ``kept``: the
    finished entry this one replaces, set beside it as ``KEPT`` in the same write (None: that
    is left as it is)."""
    values = {ATTRIBUTE: text, **({KEPT: kept} if kept is not None else {})}
    params: Any = update_request(store.name, store.key(table, index), values)
    params["ExpressionAttributeNames"]["#seen"] = ATTRIBUTE
    if seen is None:
        params["ConditionExpression"] = "attribute_not_exists(#seen)"
    else:
        params["ConditionExpression"] = "#seen = :seen"
        params["ExpressionAttributeValues"][":seen"] = {"S": seen}

    def attempt(_: int) -> Flow[bool]:
        try:
            yield update_item(params, counted=False)
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    if (
        yield from attempts(
            attempt,
            what="writing the index's record",
            table=store.name,
            policy=store.retry,
            deadline=Deadline(store.deadline, clock=store.retry.clock),
            usage=store.usage,
        )
    ):
        return True
    item = yield from store.record(table, index)  # a retry after a lost answer finds its own
    return _entry_text(item) == text
