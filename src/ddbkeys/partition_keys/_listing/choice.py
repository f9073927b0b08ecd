"""Which method a listing uses, and why: decided from the table's description, and for the
marker index from the proof (:mod:`ddbkeys.partition_keys._proof.replay`). What both the sync and
the asyncio listing share; they differ only in how they run the proof's flows."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._errors import ConfigurationError, DdbKeysError, KeySchemaError
from ddbkeys._names import state_table_name
from ddbkeys.partition_keys._index.backfill_wait import at_work, known_markers, readiness
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import marker_shaped
from ddbkeys.partition_keys._index.state import StateCore, markers_key, markers_of_key
from ddbkeys.partition_keys._listing.base import plain_key, read_timeout
from ddbkeys.partition_keys._listing.index_method import IndexMethod
from ddbkeys.partition_keys._listing.joining import Joining
from ddbkeys.partition_keys._listing.scan import ScanMethod
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod, SkipMethod
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING, Decline, Evidence
from ddbkeys.partition_keys._proof.lag import lag_note
from ddbkeys.partition_keys._proof.precheck import NO_MAINTAINER, RECORDS_ELSEWHERE
from ddbkeys.partition_keys._proof.replay import (
    ReplayedIndexMethod,
    estimate,
    index_weighed,
    load_evidence,
    replay_flow,
)
from ddbkeys.partition_keys._proof.report import FOLLOWER_BACKFILLS, follower_may_backfill
from ddbkeys.partition_keys._proof.shard_read import Replay

if TYPE_CHECKING:
    from ddbkeys._core.steps import Flow
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._listing.base import Reader, SegmentMethod

__all__ = [
    "METHODS",
    "Choice",
    "IndexUnprovenError",
    "check_margin",
    "check_method",
    "choose",
    "choose_flow",
    "declined",
    "index_ready",
    "most_keys",
    "not_active",
    "proof_failed",
    "proven",
    "read_as_is",
    "resumed_replay",
]

METHODS: tuple[str, ...] = ("auto", "scan", "skip", "skip-pages", "index")


class IndexUnprovenError(DdbKeysError):
    """``method="index"`` was asked for, and the marker index cannot be proven complete now
    (the message says why); ``trust_index=True`` reads it as it is."""


@dataclass
class Choice:
    method: SegmentMethod
    reason: str
    trusted: bool | None = None
    replay: Replay | None = None
    readers: int = 1  # how many read at once (see opening.readers_for)
    joining: Joining | None = None  # ... at first, where more join as segments end
    #: ddbkeys' markers (attribute, sort key value) as the index's record knows them, where
    #: the listing was told otherwise (None: as it was told)
    markers: tuple[str, Any] | None = None

    def knowing(self, attribute: str, sort_key: Any, own_items: bool) -> SegmentMethod:
        """The method, knowing ddbkeys' markers by ``attribute`` and ``sort_key`` (a listing's
        ``marker_attribute`` and ``marker_sort_key``), or as the index's record does where
        ``auto`` read it and they differ (told the defaults, a listing of an index made with
        its own --marker-sort-key read its markers as data: a helper's emptied collections
        were listed, exit 0); ``own_items``: its ``include_own_items``."""
        attribute, sort_key = self.markers or (attribute, sort_key)
        return self.method.knowing_markers_by(attribute, sort_key=sort_key, own_items=own_items)


def index_ready(info: TableInfo, index: str, attribute: str | None = None) -> bool:
    """The marker index exists, is KEYS_ONLY and (when known) keyed on ``attribute`` (ACTIVE
    is asked separately): :func:`marker_shaped` on its own key (one with a range key is none:
    helper-95 F5), then that key checked against ``attribute``."""
    key = info.index_hash_keys.get(index)
    if info.sort_key is None or not marker_shaped(info, index, key):
        return False
    return attribute is None or key is None or key == attribute


def choose(
    method: str,
    info: TableInfo,
    index: str,
    attribute: str | None = None,
    *,
    own_items: bool = False,
) -> Choice | None:
    """The method to list with, decided from the table's description alone; None when the
    marker index is to be read, or proven (which takes its record and the stream). With
    ``own_items`` (``include_own_items``), ``auto`` never reads the index, which marks only
    collections holding your items."""
    table = info.name
    if method == "auto":
        if info.sort_key is None:
            return Choice(ScanMethod(info), "the table has no sort key: a scan reads each key once")
        if own_items:
            return Choice(
                PagedSkipMethod(info),
                "include_own_items: the marker index marks only collections holding your items",
            )
        if not index_ready(info, index):
            return Choice(PagedSkipMethod(info), f"the table has no marker index {index!r}")
        if not index_ready(info, index, attribute):
            return Choice(
                PagedSkipMethod(info),
                f"index {index!r} is keyed on {info.index_hash_keys.get(index)!r}, not the "
                f"marker attribute {attribute!r}",
            )
        return None
    if method == "scan":
        return Choice(ScanMethod(info), "asked for")
    if method in ("skip", "skip-pages"):
        if info.sort_key is None:
            raise KeySchemaError(
                f"Table {table!r} has no sort key: every item is its own collection, so there "
                "is nothing to skip: list it with the scan method (or auto).",
                table=table,
            )
        return Choice(SkipMethod(info) if method == "skip" else PagedSkipMethod(info), "asked for")
    check_method(method)
    return None


def check_method(method: object) -> str:
    """One of ``METHODS``, or a ConfigurationError naming them."""
    if method not in METHODS:
        raise ConfigurationError(f"Unknown method {method!r}: choose one of {', '.join(METHODS)}.")
    return str(method)


def choose_flow(
    method: str,
    reader: Reader,
    info: TableInfo,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    *,
    margin: float,
    trust_index: bool,
    replay: dict[str, Any] | None,
    own_items: bool = False,
    marker_sort_key: Any = None,
    note: Callable[[str], None] | None = None,
) -> Flow[Choice]:
    """The method to list with, and why: :func:`choose` from the table's description, else the
    marker index (its core, with its record in ``state_table``), checked, resumed, or proven by
    its record and the table's stream (:mod:`ddbkeys.partition_keys._proof.replay`). One flow for
    both drivers; its Streams requests go to a Streams client the driver opens when one is sent.
    ``note`` is told, before the re-checks, when what the replay read makes ``method="index"``
    cost more than a scan, by its maintainer's lag or the margin's writes
    (:func:`~ddbkeys.partition_keys._proof.lag.lag_note`)."""
    planned = choose(method, info, index_name, marker_attribute, own_items=own_items)
    if planned is not None:
        return planned
    # The listing's one description: the marker index sends no DescribeTable of its own.
    index = MarkerCore(
        info.name,
        index_name=index_name,
        marker_attribute=marker_attribute,
        marker_sort_key=marker_sort_key,
        deadline=reader.deadline,
        info=info,
        read_timeout=read_timeout(reader.client),
    )
    if method == "index":
        yield from index.check()
        if trust_index:
            return read_as_is(info, index)
    if replay is not None:
        return resumed_replay(replay, info, index)
    why = not_active(info, index.name)
    if why is not None:
        return declined(method, info, index.name, why)
    records = StateCore(state_table, deadline=reader.deadline)
    now = records.clock()
    most: int | None = None  # (the collections auto would re-check, once the record is read)
    try:
        evidence, refused = yield from load_evidence(records, info, index, margin)
        if refused is not None:
            # A backfill at work is waited for, not run again (as `index status` says it).
            working = None
            if evidence is not None and evidence.corrupt is None:
                working = at_work(evidence, info.stream_arn, margin, now)
            choice = declined(
                method,
                info,
                index.name,
                working
                or _follower_backfills(refused.reason, evidence, info.stream_arn, margin, now),
                state_table=state_table,
            )
            choice.markers = recorded_markers(
                evidence, markers_key(index.attribute, index.sort_key(info))
            )
            if choice.markers is not None:
                choice.reason += (
                    f"; knowing ddbkeys' markers as the index's record does (attribute "
                    f"{choice.markers[0]!r} at sort key {choice.markers[1]!r})"
                )
            return choice
        most = most_keys(method, info, index.name)

        def lagging(read: Replay) -> None:
            said = lag_note(info, index.name, read, now)
            if said is not None and note is not None:
                note(said)

        result = yield from replay_flow(
            reader, index, info, evidence, margin, now, most, lagging if most is None else None
        )
    except DdbKeysError as exc:
        if method != "auto":
            raise
        result = Decline(proof_failed(exc))
    if isinstance(result, Decline):
        reason = result.reason
        if method == "auto" and most is not None:  # the figures it weighed
            plural = "s" if most > 1 else ""
            worth = f"at most {most:,} collection{plural}" if most else "not one collection"
            reason += f" ({index_weighed(info, index.name, None)}: {worth} worth re-checking)"
        if result.costly:
            reason += behind_or_busy(info.name, result.behind, margin, result.history)
        return declined(
            method, info, index.name, reason, costly=result.costly, state_table=state_table
        )
    return proven(info, index, result)


def not_active(info: TableInfo, index: str) -> str | None:
    """Why the index cannot be used from the table's description (IndexStatus), if so."""
    status = info.index_statuses.get(index)
    return None if status == "ACTIVE" else f"index {index!r} is not ACTIVE yet"


def recorded_markers(evidence: Evidence | None, markers: str) -> tuple[str, Any] | None:
    """The markers (attribute, sort key value) the index's last finished backfill knew (or
    one at work beside it), where ``markers`` (``state.markers_key``, the listing's) is not
    among them; else None. Pure."""
    said = known_markers(evidence)
    if not said or markers in said:
        return None
    attribute, sort_key = markers_of_key(said[-1])
    return attribute, plain_key(sort_key)


def declined(
    method: str,
    info: TableInfo,
    index: str,
    why: str,
    *,
    costly: bool = False,
    state_table: str | None = None,
) -> Choice:
    """``auto``'s choice when the index cannot be proven: the skip scan, and why (``costly``:
    proving it would cost more than listing another way). For ``method="index"``, an
    :class:`IndexUnprovenError` with the same reason. ``state_table``: the name given, which
    the ``index status`` it names is given too."""
    given = f" --state-table {state_table}" if state_table else ""
    status = f"`ddbkeys partition-keys index status -t {info.name}{given}` says what to run"
    if NO_MAINTAINER in why:
        # (helper-87 F2: a follower given another state table runs, and the fix named it)
        status += (
            f"; read in state table {state_table_name(state_table)!r}: a maintainer given "
            + RECORDS_ELSEWHERE
        )
    if method == "auto" and costly:
        return Choice(
            PagedSkipMethod(info),
            f"not using the marker index {index!r}: proving it complete now costs more than "
            f"listing another way: {why}",
            False,
        )
    if method == "auto":
        return Choice(
            PagedSkipMethod(info),
            f"not using the marker index {index!r}, which cannot be proven complete now: {why} "
            f"({status})",
            False,
        )
    raise IndexUnprovenError(
        f"The marker index {index!r} of table {info.name!r} cannot be proven complete now: "
        f"{why} ({status}). List with method='auto', or read the index as it is with "
        "trust_index=True.",
        table=info.name,
    )


def behind_or_busy(table: str, behind: float | None, margin: float, history: int = 0) -> str:
    """Why the re-checks cost so much, in words: the maintainer behind (a record older than
    the replay ``margin`` not applied: is it running?), records written just before a
    follower began (``history`` of them, re-checked until it has said where the stream's tip
    was a margin ago: see ``evidence``'s rule), or a table changing fast within the margin,
    which every listing reads again whoever keeps the index."""
    if behind is not None and behind > margin:
        return (
            f" (its maintainer has not applied a record written {behind:,.0f} s ago or more: is "
            f"`ddbkeys partition-keys index follow -t {table}` running? `index status` says "
            "how far behind it is)"
        )
    if history:
        # (until a tip read with nothing new, less the margin and the rounding of the records'
        # times, is past them, a tip said every half margin and held back a margin)
        return (
            f" ({history:,} of the records came just before its maintainer began: history the "
            f"backfill covers, which listings leave out once it has read the stream's tip with "
            f"nothing new, within about {2.5 * margin + CREATED_ROUNDING:g} s of their writing)"
        )
    return (
        f" (they changed within the replay margin, {margin:g} s, which every listing reads "
        f"again; `ddbkeys partition-keys index status -t {table}` says whether its maintainer "
        "keeps up)"
    )


def proof_failed(exc: BaseException) -> str:
    """``auto``'s reason when the evidence could not be read (the stream or the state table
    throttled, failing or slow past the deadline): the error's first line."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"reading its evidence failed: {first.rstrip('.')}"


def read_as_is(info: TableInfo, marker: MarkerCore) -> Choice:
    """``method="index"`` with ``trust_index``: the index as it is, unproven (said)."""
    return Choice(
        IndexMethod(info, marker),
        "asked for, and read as it is (trust_index=True): nothing proves it complete; it is as "
        "right as whatever keeps its markers",
        False,
    )


def proven(info: TableInfo, marker: MarkerCore, replay: Replay) -> Choice:
    """The index, proven by ``replay``."""
    return Choice(
        ReplayedIndexMethod(info, marker, replay),
        f"the marker index, proven complete: {replay.records:,} stream record(s) read past the "
        f"maintainer's positions held back {replay.margin:g} s{replay.of_history()}, "
        f"{replay.rechecked:,} collection(s) re-checked"
        + (f" ({replay.pending:,} pending)" if replay.pending else "")
        + f"; {index_weighed(info, marker.name, len(replay.touched))}",
        True,
        replay,
    )


def resumed_replay(raw: dict[str, Any] | None, info: TableInfo, marker: MarkerCore) -> Choice:
    """A resumed listing of the proven index: the replay its token carries."""
    assert raw is not None
    replay = Replay.from_json(raw)
    return Choice(
        ReplayedIndexMethod(info, marker, replay), "resumed (the index proven at the start)", True
    )


def most_keys(method: str, info: TableInfo, index: str) -> int | None:
    """For ``auto``: the most collections worth re-checking before the index costs more than
    listing another way (a scan's read units, the most the skip scan reads). None: no limit."""
    if method != "auto":
        return None
    scan, index_scan, per_key = estimate(info, index)
    return max(0, int((scan - index_scan) / per_key))


def check_margin(margin: object, table: str | None = None) -> float:
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 3600:
        raise ConfigurationError(
            f"replay_margin must be a number of seconds from 0 to 3600, not {margin!r}.",
            table=table,
        )
    return float(margin)


def _follower_backfills(
    reason: str, evidence: Evidence | None, stream: str | None, margin: float, now: float
) -> str:
    """``reason``, with what a listing adds where ``index follow --backfill`` may be waiting out
    its margin, and then nothing is to be run (``report.follower_may_backfill``: the rule
    ``index status`` says it by; helper-70 F6, helper-73 F2, helper-74 F4)."""
    if evidence is None:
        return reason
    backfill = evidence.backfill
    if not follower_may_backfill(
        re.search(r"run `(ddbkeys partition-keys )?index backfill", reason) is not None,
        evidence.maintainer,
        backfill is not None
        and backfill.maintained_since is not None
        and backfill.stream == stream,
        readiness(evidence.table, evidence, stream, now, margin).left,
    ):
        return reason
    if reason.endswith(")"):  # (the advice in parentheses: said within them)
        return f"{reason[:-1]}; or {FOLLOWER_BACKFILLS})"
    return f"{reason} (or {FOLLOWER_BACKFILLS})"
