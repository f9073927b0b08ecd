"""Whether the Lambda trigger hands the marker handler a shard's batches one at a time, in order
(``ParallelizationFactor`` 1), as the handler checks it and records it per shard, and what a
listing makes of that record. Pure: no I/O, no boto3, no clock.

Why it matters: with a factor above 1, Lambda runs several batches of one shard at once, so a
later batch (B) can be handled before an earlier one (A). The handler then records a position
past B while A's records are not applied, and a listing that trusts that position misses A's
collections. So the handler reads its trigger (``ListEventSourceMappings`` selected by the
batch's ``eventSourceARN`` and its own qualified function ARN) after its first batch in an
execution environment (the reading then vouches for that batch) and again every
``CHECK_EVERY`` seconds, and records per shard, next to its positions but in an attribute
of its own (``lambda <shard id>``, so a follower's ``shard <shard id>`` is never touched), what
it read and when. A factor other than 1 is also recorded once per stream (``parallelized``),
which no check reading 1 overwrites.

A listing (see :func:`trigger_decline`) judges the shards whose positions the backfill does not
cover (the newest saved within the margin before the backfill began, or later). It declines
when the handler recorded no check for such a shard, its check failed, is older than
``CHECK_STALE`` when it handled its latest batch, or read a factor other than 1; when a factor
other than 1 was read since the handler's checks began reading 1; and until a backfill begins a
margin after the first check reading 1 (``since``), if the shard held positions before it
that may be out of order (``first``: a trigger set back to 1, or a handler upgraded from a
version that did not check, needs ``index backfill`` again; a shard the handler began with a
check, or a follower's positions, do not). And it uses only
positions saved no later than the shard's last check (:func:`checked_cut`): a check vouches for
what was applied before it, so a factor raised between two checks never lets a position of
that time be trusted.

Kept as a second guard: a batch that begins at or before the handler's own newest applied
position in the shard, and within none of the batches it handled (Lambda sends a batch again
from its first record, or from its first failed one), came out of order; the handler records
it as a gap (:func:`out_of_order`), and listings decline until a backfill begun after it.
The first record of the batch it began and has not applied is kept here too (``failed``), not
only in the shard's mark, which a follower on the same shard saves its own over: a later batch
beginning past it means Lambda gave up on that batch (``lost``, :func:`went_past`), and
listings decline the same way.

What it rests on: the factor does not go above 1 and back between two checks of every
execution environment handling the shard (a few minutes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "CHECK_EVERY",
    "CHECK_RETRY",
    "CHECK_STALE",
    "LAMBDA_PREFIX",
    "PARALLELIZED",
    "Parallelized",
    "Reading",
    "TriggerCheck",
    "checked_cut",
    "factor_of",
    "out_of_order",
    "recorded",
    "same_stream",
    "trigger_decline",
    "went_past",
]

#: Seconds between two reads of the trigger by one execution environment (and at its first
#: batch): one ListEventSourceMappings per environment every five minutes.
CHECK_EVERY = 300.0
#: Seconds after a failed read before the handler tries again (at its next batch).
CHECK_RETRY = 60.0
#: A check older than this when the handler began its latest batch of the shard is stale: the
#: handler could not read its trigger since (a listing declines).
CHECK_STALE = 2 * CHECK_EVERY
#: The attribute of the index's record that holds the handler's check for one shard.
LAMBDA_PREFIX = "lambda "
#: The attribute that holds the latest reading of a factor other than 1.
PARALLELIZED = "parallelized"
#: The batches (first and last sequence numbers) a shard's record keeps: the last one and the
#: one before (Lambda sends a batch again from its first record or its first failed one). The
#: record is written with each of the handler's writes to the state item, whose size sets
#: their cost: it is kept small (its stream as its label, times to the millisecond).
MAX_BATCHES = 2


@dataclass(frozen=True)
class Reading:
    """One read of the trigger: the ``ParallelizationFactor`` of the mapping of ``function`` on
    the stream, at ``at``; ``factor`` None with ``error`` saying why (no mapping, refused)."""

    function: str | None
    factor: int | None
    at: float
    error: str | None = None


def same_stream(one: str, other: str) -> bool:
    """Whether two streams of the table are one (a record keeps only its label, the part of
    the ARN after ``/stream/``)."""
    return one.rsplit("/stream/", 1)[-1] == other.rsplit("/stream/", 1)[-1]


@dataclass(frozen=True)
class TriggerCheck:
    """The handler's record for one shard of ``stream``: its latest check of the trigger
    (``factor``, ``checked``; ``error`` when the latest read failed), ``since``
    (from when checks have read 1 for this shard with no other reading since, None when not),
    ``first`` (since when the shard's positions may be the handler's),
    ``seen`` (when it began its latest batch), ``batches`` (the first and last sequence numbers
    it applied of its latest batches, oldest first) and ``gap`` (when a batch came out of
    order)."""

    stream: str
    factor: int | None = None
    checked: float | None = None
    since: float | None = None
    seen: float | None = None
    error: str | None = None
    batches: tuple[tuple[str, str], ...] = ()
    gap: float | None = None
    #: Since when the shard's positions may be the handler's: its first batch of the shard, or
    #: the oldest position the shard held then, when a handler that did not check may have
    #: saved it (an upgrade).
    first: float | None = None
    #: The first record of the batch the handler began and has not applied (set when a batch
    #: begins, cleared or moved to the first failed record when it ends), and when it found a
    #: batch beginning past such a record (Lambda gave up on it) or records grown too old:
    #: records it never applied. Kept here, in the handler's own attribute, as well as in the
    #: shard's mark, which a follower on the same shard overwrites with its own (see
    #: :func:`went_past`).
    failed: str | None = None
    lost: float | None = None

    @property
    def applied(self) -> str | None:
        """The handler's newest applied position in the shard."""
        lasts = [int(last) for _, last in self.batches]
        return str(max(lasts)) if lasts else None

    def to_json(self) -> str:
        raw: dict[str, Any] = {"stream": self.stream.rsplit("/stream/", 1)[-1]}
        for name in ("factor", "checked", "since", "seen", "first", "gap", "lost", "error"):
            value = getattr(self, name)
            if value is not None:
                raw[name] = (
                    _millis(value, up=name != "first") if isinstance(value, float) else value
                )
        if self.batches:
            raw["batches"] = [list(b) for b in self.batches]
        if self.failed is not None:
            raw["failed"] = self.failed
        return json.dumps(raw, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TriggerCheck | None:
        """The record saved as ``text``; None when it is not one."""
        try:
            raw = json.loads(text)
            batches = tuple((str(f), str(last)) for f, last in raw.get("batches", []))
            if not all(f.isdigit() and last.isdigit() for f, last in batches):
                return None
            failed = record_text(raw.get("failed"))
            if failed is not None and not failed.isdigit():
                return None
            factor = raw.get("factor")
            return cls(
                stream=str(raw["stream"]),
                factor=None if factor is None else int(factor),
                checked=record_time(raw.get("checked")),
                since=record_time(raw.get("since")),
                seen=record_time(raw.get("seen")),
                error=record_text(raw.get("error")),
                batches=batches,
                gap=record_time(raw.get("gap")),
                first=record_time(raw.get("first")),
                failed=failed,
                lost=record_time(raw.get("lost")),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


@dataclass(frozen=True)
class Parallelized:
    """The latest reading of a factor other than 1 (or of none) on ``stream``."""

    stream: str
    at: float
    factor: int | None
    function: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "stream": self.stream,
                "at": self.at,
                "factor": self.factor,
                "function": self.function,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Parallelized | None:
        try:
            raw = json.loads(text)
            factor = raw.get("factor")
            return cls(
                str(raw["stream"]),
                float(record_time(raw["at"])),  # type: ignore[arg-type]
                None if factor is None else int(factor),
                record_text(raw.get("function")),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def _millis(value: float, *, up: bool) -> float:
    """A time kept to the millisecond, rounded so that order holds: a check is taken after the
    position it vouches for was saved, so its time (and ``since``, ``seen``, ``gap``: later is
    the stricter) is rounded up, and ``first`` down. Rounding to the nearest could put a check
    before the position saved in the same millisecond, and vouch for nothing (or, rounding
    ``since`` down, let a backfill count too soon)."""
    scaled = value * 1000
    return (math.ceil(scaled) if up else math.floor(scaled)) / 1000


def record_time(value: Any) -> float | None:
    """A time from the state record: a finite number, or None (anything else is not one
    ddbkeys wrote: ValueError, which the record's reader reports as a broken part)."""
    if value is None:
        return None
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"not a time: {value!r}")
    return number


def record_text(value: Any) -> str | None:
    """A text from the state record, or None."""
    return None if value is None else str(value)


def factor_of(
    mappings: Iterable[Mapping[str, Any]], stream: str, function: str
) -> tuple[int | None, str | None]:
    """The ``ParallelizationFactor`` of ``function``'s mapping on ``stream`` among
    ``mappings`` (ListEventSourceMappings' ``EventSourceMappings``), the highest when there are
    several; or None and why."""
    factors = [
        int(m.get("ParallelizationFactor", 1))
        for m in mappings
        if m.get("EventSourceArn") == stream
        and _latest(str(m.get("FunctionArn"))) == _latest(function)
    ]
    if not factors:
        return None, (
            f"Lambda lists no event source mapping of {function} on {stream} (the function "
            "invoked through another alias or version than its trigger names?)"
        )
    return max(factors), None


def _latest(function: str) -> str:
    """A function's ARN, ``$LATEST`` written out or not (Lambda names the unqualified function
    either way)."""
    return function.removesuffix(":$LATEST")


def out_of_order(check: TriggerCheck | None, first: str) -> bool:
    """Whether a batch beginning at ``first`` came out of order: at or before the handler's
    newest applied position, and within none of the batches it applied (a batch sent again
    begins at its first record, or at its first failed one, past the position)."""
    if check is None or not check.batches:
        return False
    applied = check.applied
    assert applied is not None
    if int(first) > int(applied):
        return False
    return not any(int(f) <= int(first) <= int(last) for f, last in check.batches)


def went_past(check: TriggerCheck | None, mark_failed: str | None, first: str) -> bool:
    """Whether a batch beginning at ``first`` goes past a record the handler began and never
    applied (Lambda gave up on its batch and went on): the first record of an unfinished batch
    as the shard's mark keeps it (``mark_failed``) or as the handler's own record does. The
    mark alone is not enough: a follower on the same shard saves its own mark over it (true
    for what the follower applied, but without the handler's record), and the handler would
    then take the follower's position for its own and go past the lost batch unseen."""
    pending = [f for f in (mark_failed, check.failed if check is not None else None) if f]
    return any(int(first) > int(f) for f in pending)


def recorded(
    stored: TriggerCheck | None,
    stream: str,
    reading: Reading | None,
    now: float,
    *,
    bad: Parallelized | None,
    began: float | None = None,
    batch: tuple[str, str] | None = None,
    gap: float | None = None,
    oldest: float | None = None,
) -> TriggerCheck:
    """The shard's record once the handler has begun (``began`` None) or ended a batch begun
    at ``began`` (``batch``: the first and last records it applied, None if none), with its
    latest ``reading``; ``oldest``, the oldest position the shard holds (when the record is
    new). The newest check wins whoever wrote it; ``since`` is kept while no other
    factor than 1 was read after it (``bad``), else set by a reading of 1 (to this batch's start
    when the reading was taken during it: it vouches for the batch)."""
    base = stored if stored is not None and same_stream(stored.stream, stream) else None
    if base is None:
        base = TriggerCheck(stream, first=min(now, oldest if oldest is not None else now))
    if bad is not None and bad.stream != stream:
        bad = None
    record = replace(base, seen=now if began is None else base.seen)
    if reading is not None and (record.checked is None or reading.at > record.checked):
        if reading.factor is not None:
            record = replace(record, factor=reading.factor, checked=reading.at, error=None)
        else:
            record = replace(record, error=reading.error)
    since = _since(record.since, reading, bad, began)
    batches = record.batches
    if batch is not None:
        batches = (*batches, batch)[-MAX_BATCHES:]
    return replace(
        record,
        since=since,
        batches=batches,
        gap=gap if gap is not None else record.gap,
    )


def _since(
    since: float | None, reading: Reading | None, bad: Parallelized | None, began: float | None
) -> float | None:
    """Since when the checks have read ParallelizationFactor 1 with none other after: kept
    while no other factor was read after it, else set by a reading of 1 (to the batch's start
    ``began`` when the reading was taken during it)."""
    if since is not None and bad is not None and since <= bad.at:
        since = None
    if reading is not None and reading.factor not in (None, 1):
        since = None
    good = reading is not None and reading.factor == 1 and (bad is None or reading.at > bad.at)
    if since is None and good:
        assert reading is not None
        since = reading.at
        if began is not None and reading.at >= began and (bad is None or began > bad.at):
            since = began
    return since


def checked_cut(check: TriggerCheck | None, stream: str, cut: float) -> float:
    """The newest a position of the shard may have been saved at to be used: ``cut``, or the
    handler's last check if earlier (a check vouches for what was applied before it)."""
    if check is None or not same_stream(check.stream, stream) or check.checked is None:
        return cut
    return min(cut, check.checked)


def trigger_decline(
    stream: str,
    saved: Mapping[str, Sequence[float]],
    checks: Mapping[str, TriggerCheck],
    bad: Parallelized | None,
    lambda_maintains: bool,
    backfill_started: float,
    margin: float,
) -> str | None:
    """Why the handler's positions cannot be trusted, if so (see the module's docstring):
    ``saved`` maps each shard the maintainers named in ``stream`` to when its positions were
    saved; ``lambda_maintains``, whether the record says the Lambda handler keeps the index
    (it then must have checked every such shard)."""
    if bad is not None and bad.stream != stream:
        bad = None
    covered = backfill_started - margin
    for shard, times in sorted(saved.items()):
        if not times or max(times) <= covered:
            continue  # every record applied by then is the backfill's to cover
        check = checks.get(shard)
        if check is not None and not same_stream(check.stream, stream):
            check = None
        if check is None:
            if not lambda_maintains:
                continue
            return (
                f"the Lambda handler recorded no check of its trigger's ParallelizationFactor "
                f"for shard {shard} (a ddbkeys older than the index's reader?): update the "
                "function, then run `index backfill` again once it has handled a batch"
            )
        why = _check_decline(shard, check, bad, covered) or _since_decline(
            shard, check, min(times), covered, margin
        )
        if why is not None:
            return why
    return None


def _check_decline(
    shard: str, check: TriggerCheck, bad: Parallelized | None, covered: float
) -> str | None:
    """Why the handler's check of ``shard`` does not vouch for its order, if so."""
    if check.lost is not None and check.lost > covered:
        return (
            f"records of shard {shard} were lost before the maintainer applied them "
            "(Lambda went on past a batch it gave up on, or they grew too old): run "
            "`index backfill` again"
        )
    if check.gap is not None and check.gap > covered:
        return (
            f"a batch of shard {shard} older than the Lambda handler's position in it came "
            "after it (out of order, or a batch applied long before delivered again: is the "
            "trigger's ParallelizationFactor above 1?): keep it at 1, then run `index "
            "backfill` again"
        )
    if check.checked is None:
        why = check.error or "it has not checked it yet"
        return (
            f"the Lambda handler could not read its trigger on shard {shard} ({why}): give "
            "its role lambda:ListEventSourceMappings (`ddbkeys iam-policy lambda-handler`)"
        )
    if check.factor != 1:
        return (
            f"the Lambda handler's trigger reads ParallelizationFactor "
            f"{check.factor} (batches of shard {shard} may be applied out of order): set it "
            "to 1, then run `index backfill` again once the handler has read 1"
        )
    if check.seen is not None and check.seen - check.checked > CHECK_STALE:
        why = f": {check.error}" if check.error else ""
        return (
            f"the Lambda handler's last check of its trigger on shard {shard} is "
            f"{check.seen - check.checked:.0f} s older than its latest batch{why}: give its "
            "role lambda:ListEventSourceMappings (`ddbkeys iam-policy lambda-handler`)"
        )
    if bad is not None and (check.since is None or check.since <= bad.at):
        return (
            f"the Lambda trigger of {bad.function} read ParallelizationFactor {bad.factor}, "
            f"and no check of shard {shard} has read 1 since: set it to 1, then run "
            "`index backfill` again once the handler has read 1"
        )
    return None


def _since_decline(
    shard: str, check: TriggerCheck, saved_first: float, covered: float, margin: float
) -> str | None:
    """Why the factor read 1 too briefly before the backfill to vouch for ``shard``, if so."""
    since = check.since
    first = check.first if check.first is not None else saved_first
    if since is None or (since > covered and first < since):
        return (
            f"the Lambda handler's checks of shard {shard} read ParallelizationFactor 1 "
            f"only since less than the replay margin ({margin:g} s) before the backfill "
            "began: run `index backfill` again"
        )
    return None
