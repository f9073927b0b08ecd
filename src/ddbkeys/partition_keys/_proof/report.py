"""What ``index status`` tells (``MarkerIndex.proof_status()``): plain values, decided by
:mod:`ddbkeys.partition_keys._proof.status` and rendered by the CLI."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "FOLLOWER_BACKFILLS",
    "BackfillStatus",
    "ProofStatus",
    "ShardStatus",
    "follower_backfills",
    "follower_may_backfill",
]


@dataclass(frozen=True)
class ShardStatus:
    """One shard of the stream (or one a maintainer named that left it)."""

    shard: str
    parent: str | None
    #: Listed by DescribeStream now; open (no last sequence number yet).
    listed: bool
    open: bool
    #: A maintainer recorded positions in it: where its coverage began ("start", or a time),
    #: its newest position, and how old that is (seconds).
    named: bool
    since: str | float | None
    newest: str | None
    age: float | None
    #: Records a listing would read now past the held-back position (None: not read).
    records: int | None
    #: The Lambda handler's latest check of its trigger on this shard: the
    #: ParallelizationFactor it read (None: none read) and how long ago (None: no check).
    trigger_factor: int | None = None
    trigger_checked_age: float | None = None


@dataclass(frozen=True)
class BackfillStatus:
    """The backfill's record: when it began, against the maintainer's first position then."""

    started: float
    finished: float | None
    #: Under the stream the table has now.
    current_stream: bool
    maintained_since: float | None
    #: ``started - maintained_since`` (seconds; None: no maintainer then): a listing needs at
    #: least its margin.
    after_first: float | None
    #: The replay margin the backfill waited for (None: not recorded, older backfills).
    margin: float | None
    clashes: tuple[str, ...]
    #: Who runs (or ran) it (``host:pid``; None: an older record), its last sign of life, and
    #: whether it is at work now (unfinished, alive within ``backfill_wait.ALIVE_FOR``: a
    #: backfill begun now waits for it; see ``backfill_claim``).
    owner: str | None = None
    alive: float | None = None
    at_work: bool = False
    #: How many collections it had handled at its last sign of life (None: an older record).
    handled: int | None = None
    #: Where it has not finished and listings prove the index from the finished backfill it
    #: replaced (``precheck.basis``): when that one finished.
    kept_finished: float | None = None
    #: When it reads the stream's tip, its markers written, and then finishes (the read and
    #: export modes wait out the replay margin after their last marker; None: not yet).
    tip_at: float | None = None


#: What to do instead of the fix, where :func:`follower_backfills`.
FOLLOWER_BACKFILLS = (
    "nothing, if `index follow --backfill` is what runs: it backfills by itself once the margin "
    "has passed"
)


@dataclass(frozen=True)
class ProofStatus:
    """Where the marker index stands against its proof, at ``now`` with ``margin``."""

    table: str
    index: str
    state_table: str
    index_status: str | None
    stream: str | None
    view_type: str | None
    #: The maintainer that last recorded its positions ("follow", "lambda"; None: none).
    maintainer: str | None
    #: Its first position under the current stream (the backfill must begin a margin after).
    first_position: float | None
    shards: tuple[ShardStatus, ...]
    backfill: BackfillStatus | None
    margin: float
    now: float
    #: A listing (``--method index``) proves the index now; if not, why, in its words.
    provable: bool
    reason: str | None
    #: The one command that fixes it (None: none does; the reason says what to do), and in
    #: how many seconds it counts (a backfill must begin a margin after the maintainer's
    #: first position; 0: now).
    fix: str | None
    fix_in: float | None
    #: Seconds until a listing proves it with nothing done but waiting (None: not by waiting).
    provable_in: float | None
    #: What a listing would pay now: stream records to read, collections to re-check (a
    #: consistent Query each), and read units, against a scan of the table.
    records: int | None
    rechecks: int | None
    listing_rcu: float | None
    scan_rcu: float
    #: ``auto`` would list from the index (provable, and its re-checks cost less than a scan).
    auto_uses_index: bool
    #: Of ``records``, those past its maintainer's newest positions (not applied yet: None,
    #: not read), and how long ago the oldest of them was written (seconds, at most: the
    #: stream rounds creation times down; None: none, or not known).
    unapplied: int | None = None
    behind: float | None = None
    #: Of the collections' records re-checked, those written before the maintainer began at a
    #: shard's end (history the backfill covers, left out of listings once it has said where
    #: the stream's tip was: not applied, and not a lag; None: not read).
    history: int | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict of JSON types (what ``--output json`` prints)."""
        fields = asdict(self)
        fields["shards"] = [dict(s) for s in fields["shards"]]
        if fields["backfill"] is not None:
            fields["backfill"]["clashes"] = list(fields["backfill"]["clashes"])
        return fields


def follower_backfills(status: ProofStatus) -> bool:
    """The fix is a backfill that waits out the margin beside ``index follow`` (see
    :func:`follower_may_backfill`), as ``index status`` has it."""
    backfill = status.backfill
    return status.fix is not None and follower_may_backfill(
        " backfill " in status.fix,
        status.maintainer,
        backfill is not None and backfill.maintained_since is not None and backfill.current_stream,
        status.fix_in,
    )


def follower_may_backfill(
    advised: bool, maintainer: str | None, counts_here: bool, left: float | None
) -> bool:
    """Where the advice is a backfill (``advised``) and it would wait out ``left`` seconds
    more of the margin: ``index follow --backfill`` (the ``maintainer``, "follow") would run it
    by itself, so nothing may need doing (:data:`FOLLOWER_BACKFILLS`) unless a backfill that
    could count here is recorded (``counts_here``: begun after a maintainer, under the table's
    stream now). The record cannot say which follower runs. Counted in so: none recorded; one
    begun before any maintainer (`index backfill` first: it cannot count, and the follower's
    own runs once its margin has passed); one under another stream (turned off and on: a
    running ``index follow --backfill`` backfills again under the new one, as helper-73 saw
    it say "backfill in 60 s" while status named only `index backfill`). The rule of status
    and of a listing's note alike. Pure."""
    return bool(advised and left and maintainer == "follow" and not counts_here)
