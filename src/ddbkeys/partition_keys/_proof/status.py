"""Where a marker index stands against its proof (``ddbkeys partition-keys index status``,
``MarkerIndex.proof_status()``): whether a listing can prove it complete now and, if not, the
reason in the listing's own words, the one command that fixes it and when; and what a listing
would pay now against a scan.

:func:`status_flow` reads what a listing reads, and no more: DescribeTable, the index's record
in the state table (GetItem) and the stream (DescribeStream, GetShardIterator, GetRecords),
never the table (the listing's re-checks are counted, not made) and it writes nothing, the
state table included. :func:`decide` turns what was read into a :class:`ProofStatus`, with no
I/O, by the proof's own code (``choice.not_active``, ``precheck.precheck``,
``replay_window`` and the replay's read of the stream)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow
from ddbkeys._errors import DdbKeysError
from ddbkeys._key_json import show_key
from ddbkeys.partition_keys._index.backfill_wait import (
    NO_MAINTAINER,
    at_work,
    readiness,
    running_backfill,
)
from ddbkeys.partition_keys._index.drop import index_dropped
from ddbkeys.partition_keys._index.markers import check_index, index_status
from ddbkeys.partition_keys._index.state import StateCore, evidence_from_item, markers_key
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._listing.choice import (
    most_keys,
    not_active,
    proof_failed,
    recorded_markers,
)
from ddbkeys.partition_keys._listing.recognise import (
    DEFAULT_MARKER_ATTRIBUTE,
    DEFAULT_MARKER_SORT_KEY,
)
from ddbkeys.partition_keys._proof.evidence import (
    CLASHED,
    DEFAULT_REPLAY_MARGIN,
    Decline,
    Evidence,
    ShardMark,
)
from ddbkeys.partition_keys._proof.precheck import basis, precheck
from ddbkeys.partition_keys._proof.replay import (
    StreamRead,
    estimate,
    index_listing_units,
    read_flow,
)
from ddbkeys.partition_keys._proof.replay_window import replay_window
from ddbkeys.partition_keys._proof.report import BackfillStatus, ProofStatus, ShardStatus
from ddbkeys.partition_keys._streams.lambda_trigger import same_stream

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = [
    "BackfillStatus",
    "ProofStatus",
    "Seen",
    "ShardStatus",
    "command_options",
    "decide",
    "status_flow",
    "status_reader",
]

#: The command lines a status names as the fix: ``index <verb> -t <table>``.
COMMAND = "ddbkeys partition-keys index"
#: How the reason begins where the command was told other markers than the index's.
OTHER_MARKERS = "the backfill knew markers by another attribute or sort key"
#: A reason's own advice, as the proof words it: `index backfill`, `ddbkeys partition-keys
#: index repair`, ...
ADVISED = re.compile(r"`(?:ddbkeys partition-keys )?index (\w+)( --backfill)?`?")


@dataclass(frozen=True)
class Seen:
    """What :func:`status_flow` read: the table's description (and its stream's view type),
    the index's record (``item``: as GetItem returns it; None: none) and the stream."""

    info: TableInfo
    view_type: str | None
    item: dict[str, Any] | None
    read: StreamRead


def decide(
    seen: Seen, *, index: str, markers: str, state_table: str, margin: float, now: float
) -> ProofStatus:
    """The status of marker index ``index`` from what was read (pure). ``markers``: how the
    listing knows markers (``state.markers_key``), as a backfill records it."""
    info = seen.info
    evidence = evidence_from_item(info.name, index, seen.item) if seen.item is not None else None
    stream = info.stream_arn
    # The listing's order: the index's status, the record, then the stream.
    declined = (
        not_active(info, index)
        or _reason(precheck(evidence, stream, margin, markers))
        or _reason(seen.read.decline)
    )
    ours = _current(evidence, stream)
    first = min((f for m in ours.values() if (f := m.first_saved) is not None), default=None)
    item = seen.item or {}
    maintainer = item.get("maintainer", {}).get("S")
    fix, fix_in = _fix(declined, info, index, state_table, evidence, maintainer, margin, now)
    working = _at_work(declined, fix, evidence, stream, margin, now)
    if working is not None:  # the backfill it would run is at work: wait for it, run nothing
        declined, fix, fix_in = working, None, None
    replay = seen.read.replay if declined is None else None
    scan = estimate(info, index)[0]
    rechecks = len(replay.touched) if replay is not None else None
    most = most_keys("auto", info, index)
    return ProofStatus(
        table=info.name,
        index=index,
        state_table=state_table,
        index_status=index_status(info, index),
        stream=stream,
        view_type=seen.view_type,
        maintainer=maintainer,
        first_position=first,
        shards=_shards(seen.read, evidence, stream, now, replay is not None),
        backfill=_backfill(evidence, stream, now, margin),
        margin=margin,
        now=now,
        provable=declined is None,
        reason=declined,
        fix=fix,
        fix_in=fix_in,
        provable_in=_waiting(declined, evidence, stream, seen.read, markers, margin, now),
        records=replay.records if replay is not None else None,
        rechecks=rechecks,
        listing_rcu=index_listing_units(info, index, rechecks) if rechecks is not None else None,
        scan_rcu=scan,
        auto_uses_index=rechecks is not None and (most is None or rechecks <= most),
        unapplied=replay.unapplied if replay is not None else None,
        history=replay.history if replay is not None else None,
        behind=(
            max(now - replay.oldest_unapplied, 0.0)
            if replay is not None and replay.oldest_unapplied is not None
            else None
        ),
    )


def _reason(decline: Decline | None) -> str | None:
    return None if decline is None else decline.reason


def _current(evidence: Evidence | None, stream: str | None) -> dict[str, ShardMark]:
    """The maintainer's marks under the table's stream as it is now."""
    if evidence is None or stream is None:
        return {}
    return {s: m for s, m in evidence.shards.items() if m.stream == stream}


def _fix(
    reason: str | None,
    info: TableInfo,
    index: str,
    state_table: str,
    evidence: Evidence | None,
    maintainer: str | None,
    margin: float,
    now: float,
) -> tuple[str | None, float | None]:
    """The one command that fixes ``reason``, and in how many seconds it counts (a backfill:
    ``backfill_wait.readiness``, the rule ``index backfill`` waits by; it waits out the rest
    itself)."""
    if reason is None or reason.startswith(OTHER_MARKERS):
        return None, None  # (the command's own settings are the fix: the reason says so)
    if reason.startswith(CLASHED):
        return None, None  # (your items must be moved first: the reason says so)
    where = readiness(info.name, evidence, info.stream_arn, now, margin)
    verb, extra = _verb(reason, info, index, evidence, maintainer, where.state)
    if not verb:
        return None, None
    options = extra + command_options(
        index,
        state_table if verb in ("follow", "backfill", "repair") else None,
        margin if verb in ("follow", "backfill") else None,
    )
    command = f"{COMMAND} {verb} -t {info.name}{options}{_marker_flags(evidence, info)}"
    return command, where.left if verb == "backfill" else 0.0


def command_options(index: str, state_table: str | None, margin: float | None) -> str:
    """The options an ``index`` command named to the user needs to act where the one naming it
    does: ``--index-name``, ``--state-table`` and ``--replay-margin`` where not the defaults
    (None: not an option of that command)."""
    options = "" if index == "ddbkeys-partition-keys" else f" --index-name {index}"
    if state_table is not None and state_table != "ddbkeys-state":
        options += f" --state-table {state_table}"
    if margin is not None and margin != DEFAULT_REPLAY_MARGIN:
        options += f" --replay-margin {margin:g}"
    return options


def _verb(
    reason: str,
    info: TableInfo,
    index: str,
    evidence: Evidence | None,
    maintainer: str | None,
    state: str,
) -> tuple[str, str]:
    """The ``index`` subcommand that fixes ``reason`` ("": none), and an option it needs
    (``state``: ``backfill_wait.readiness``'s)."""
    if info.stream_arn is None:
        return "stream", ""
    if not_active(info, index) is not None:
        return "create", ""  # (it waits until the index is ACTIVE)
    if evidence is not None and evidence.corrupt is not None:
        return "", ""  # (the reason says which part of the record is broken)
    if state == NO_MAINTAINER and maintainer == "lambda":
        return "backfill", " --wait-for-maintainer"
    if state == NO_MAINTAINER:
        return "follow", " --backfill"  # one command: maintain, then fill once
    advised = ADVISED.search(reason)
    if advised is None:
        return "", ""
    return advised.group(1), advised.group(2) or ""


def _marker_flags(evidence: Evidence | None, info: TableInfo) -> str:
    """The options that tell a command the index's own markers, where its record knows them
    otherwise than the defaults (a fix without them was refused: a helper's `Fix:` line)."""
    if info.sort_key is None:
        return ""
    default = DEFAULT_MARKER_SORT_KEY[info.sort_key.type]
    recorded = recorded_markers(evidence, markers_key(DEFAULT_MARKER_ATTRIBUTE, default))
    if recorded is None:
        return ""
    attribute, value = recorded
    flags = "" if attribute == DEFAULT_MARKER_ATTRIBUTE else f" --marker-attribute {attribute}"
    kind = info.sort_key.type
    if {kind: str(value) if kind == "N" else value} != default:
        flags += f" --marker-sort-key {shlex.quote(show_key(value))}"
    return flags


def _at_work(
    reason: str | None,
    fix: str | None,
    evidence: Evidence | None,
    stream: str | None,
    margin: float,
    now: float,
) -> str | None:
    """The reason to give instead of ``reason`` when its fix is a backfill (``index backfill``
    or ``index follow --backfill``) and one that can count is at work
    (``backfill_wait.at_work``, as the listing says it)."""
    backfills = fix is not None and (
        fix.startswith(f"{COMMAND} backfill ")
        or (fix.startswith(f"{COMMAND} follow ") and " --backfill" in fix)
    )
    if reason is None or not backfills:
        return None
    return at_work(evidence, stream, margin, now)


def _waiting(
    reason: str | None,
    evidence: Evidence | None,
    stream: str | None,
    read: StreamRead,
    markers: str,
    margin: float,
    now: float,
) -> float | None:
    """Seconds until the replay window proves the index with nothing done but waiting: the
    first moment a mark becomes old enough (the margin after it was saved) at which
    :func:`replay_window` no longer declines; None when waiting does not help."""
    if reason is None:
        return 0.0
    if read.shards is None or read.decline is None or reason != read.decline.reason:
        return None
    if not isinstance(replay_window(evidence, stream, read.shards, now, margin, markers), Decline):
        return None  # declined by the read, not the window: waiting may not help
    moments = sorted(
        {saved + margin for m in _current(evidence, stream).values() for _, saved in m.marks}
    )
    for moment in moments:
        if moment <= now:
            continue
        later = replay_window(evidence, stream, read.shards, moment + 0.001, margin, markers)
        if not isinstance(later, Decline):
            return moment - now
    return None


def _shards(
    read: StreamRead,
    evidence: Evidence | None,
    stream: str | None,
    now: float,
    counted: bool,
) -> tuple[ShardStatus, ...]:
    listed = {str(s["ShardId"]): s for s in read.shards or ()}
    ours = _current(evidence, stream)
    checks = {
        s: c
        for s, c in (evidence.triggers.items() if evidence is not None else ())
        if stream is not None and same_stream(c.stream, stream)
    }
    by_shard = read.replay.by_shard if read.replay is not None and counted else {}
    out = []
    for shard in sorted(set(listed) | set(ours)):
        raw, mark, check = listed.get(shard, {}), ours.get(shard), checks.get(shard)
        newest = mark.marks[-1] if mark is not None and mark.marks else None
        out.append(
            ShardStatus(
                shard=shard,
                parent=raw.get("ParentShardId"),
                listed=shard in listed,
                open="EndingSequenceNumber" not in raw.get("SequenceNumberRange", {}),
                named=mark is not None,
                since=mark.since if mark is not None else None,
                newest=newest[0] if newest is not None else None,
                age=now - newest[1] if newest is not None else None,
                records=by_shard.get(shard, 0) if counted else None,
                trigger_factor=check.factor if check is not None else None,
                trigger_checked_age=(
                    now - check.checked if check is not None and check.checked else None
                ),
            )
        )
    return tuple(out)


def _backfill(
    evidence: Evidence | None, stream: str | None, now: float, margin: float
) -> BackfillStatus | None:
    backfill = evidence.backfill if evidence is not None else None
    if backfill is None:
        return None
    assert evidence is not None
    held = basis(evidence, stream, margin).backfill
    since = backfill.maintained_since
    begun_for = backfill.margin
    return BackfillStatus(
        started=backfill.started,
        finished=backfill.finished,
        current_stream=stream is not None and backfill.stream == stream,
        maintained_since=since,
        after_first=backfill.started - since if since is not None else None,
        margin=float(begun_for) if begun_for is not None else None,
        clashes=backfill.clashes,
        owner=backfill.owner,
        alive=backfill.alive,
        at_work=running_backfill(evidence, stream, now) is not None,
        handled=backfill.handled,
        kept_finished=held.finished if held is not backfill and held is not None else None,
        tip_at=backfill.tip_at,
    )


def status_reader(client: Any, marker: MarkerCore) -> Reader:
    """The reader of the stream a status sends with, within the marker index's settings."""
    return Reader(
        client,
        marker.table,
        retry=marker.retry,
        usage=marker.usage,
        deadline=marker.deadline,
        what="reading the marker index's evidence",
    )


def status_flow(
    reader: Reader,
    marker: MarkerCore,
    store: StateCore,
    margin: float = DEFAULT_REPLAY_MARGIN,
    now: float | None = None,
) -> Flow[ProofStatus]:
    """Read what a listing reads (no Query or Scan of the table, nothing written) and
    :func:`decide`. A :class:`~ddbkeys.DdbKeysError` when the table, the index (or the
    marker index it names is not one: not KEYS_ONLY, keyed on another attribute) or the
    state table is missing."""
    raw = yield from marker.describe()
    info = yield from marker.table_info()
    if index_status(info, marker.name) is None:  # (dropped? its record says: helper-102 F2)
        try:
            item = yield from store.record(info.name, marker.name)
        except DdbKeysError:  # (no state table: never made)
            item = None
        saved = evidence_from_item(info.name, marker.name, item) if item else None
        index_dropped(info, marker.name, saved, store.name, marker.attribute)
    check_index(info, marker.name, marker.attribute, active=False)
    item = yield from store.record(info.name, marker.name)
    when = store.clock() if now is None else now
    evidence = evidence_from_item(info.name, marker.name, item) if item is not None else None
    try:
        read = yield from read_flow(reader, marker, info, evidence, margin, when, None)
    except DdbKeysError as exc:  # the stream failing past the deadline: the listing's words
        read = StreamRead(decline=Decline(proof_failed(exc)))
    spec = raw.get("StreamSpecification") or {}
    return decide(
        Seen(info, spec.get("StreamViewType") if info.stream_arn else None, item, read),
        index=marker.name,
        markers=markers_key(marker.attribute, marker.sort_key(info)),
        state_table=store.name,
        margin=margin,
        now=when,
    )
