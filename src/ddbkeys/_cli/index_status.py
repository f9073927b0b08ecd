"""``ddbkeys partition-keys index status``: where the marker index stands against its proof
(``MarkerIndex.proof_status()``), for people (text) and programs (json, table). Exit 0 when a
listing can prove the index now, 1 when not, 2 when the status cannot be read."""

from __future__ import annotations

from datetime import UTC, datetime

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._cli.common import (
    Connection,
    FloatRange,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
)
from ddbkeys._cli.errors import cli_words, error_text
from ddbkeys._cli.index_common import open_index
from ddbkeys._cli.index_options import (
    index_options,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING, DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys._proof.precheck import MOVED, RECORDS_ELSEWHERE
from ddbkeys.partition_keys._proof.report import (
    FOLLOWER_BACKFILLS,
    ProofStatus,
    ShardStatus,
    follower_backfills,
)
from ddbkeys.partition_keys._tasks.figures import figure

__all__ = ["render_status", "status_command"]


class Unread(click.ClickException):
    """The status could not be read (no such table, index or state table, or a failure):
    exit 2, apart from 1 (read, and not provable)."""

    exit_code = 2


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _clock(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M:%S UTC")


def _at(moment: float, now: float) -> str:
    return f"{_clock(moment)} ({_span(now - moment)} {'ago' if moment <= now else 'from now'})"


def _shard(shard: ShardStatus) -> str:
    parts = ["open" if shard.open else "closed"]
    if not shard.listed:
        parts.append("no longer in the stream")
    if not shard.named:
        parts.append("no position recorded")
    else:
        parts.append(
            "positions recorded from its start"
            if shard.since == "start"
            else "positions recorded from its end at the time"
        )
        if shard.age is not None and shard.newest is None:
            parts.append(f"no record applied yet (said {_span(shard.age)} ago)")
        elif shard.age is not None:
            parts.append(f"newest {shard.newest}, saved {_span(shard.age)} ago")
    if shard.trigger_checked_age is not None:
        parts.append(
            f"Lambda trigger's ParallelizationFactor {shard.trigger_factor} read "
            f"{_span(shard.trigger_checked_age)} ago"
        )
    if shard.records is not None:
        parts.append(f"{shard.records:,} record(s) past the held-back position")
    return f"  {shard.shard}: " + ", ".join(parts)


def render_status(status: ProofStatus) -> list[str]:
    """The status as lines of text."""
    now = status.now
    lines = [
        f"Marker index {status.index} of table {status.table}: {status.index_status or 'missing'}",
        f"Stream: {status.stream} ({status.view_type})" if status.stream else "Stream: off",
    ]
    if status.maintainer or status.first_position is not None:
        first = (
            f", first position under this stream at {_at(status.first_position, now)}"
            if status.first_position is not None
            else ", no position under this stream"
        )
        lines.append(f"Maintainer: {status.maintainer or 'unknown'}{first}")
    else:
        lines.append(
            "Maintainer: none has recorded a position under this stream in state table "
            f"{status.state_table} (one given {RECORDS_ELSEWHERE})"
        )
    lines.append(f"Shards ({len(status.shards)}):")
    lines.extend(_shard(s) for s in status.shards)
    lines.append(_backfill(status))
    lines.extend(_verdict(status))
    if status.records is not None and status.rechecks is not None:
        lines.append(
            f"A listing now: {status.records:,} stream record(s) to read, {status.rechecks:,} "
            f"collection(s) to re-check: about {figure(status.listing_rcu or 0.0)} RCU, "
            f"against {figure(status.scan_rcu)} RCU for a scan"
            + ("" if status.auto_uses_index else " (auto lists another way: cheaper)")
        )
    if status.provable and not status.auto_uses_index:
        lines.append(_dear(status))
    elif status.provable and _stalled(status):
        lines.append(
            f"Stalled: its maintainer has not applied{_backlog(status)}: is `ddbkeys "
            f"partition-keys index follow -t {status.table}` running? Listings prove the index "
            "meanwhile, each re-checking more as the backlog grows, until auto lists another way"
        )
    return [cli_words(line) for line in lines]  # (helper-103 F7: "marker_sort_key=")


def _stalled(status: ProofStatus) -> bool:
    """Records past the maintainer's positions written more than a margin (and the stream's
    rounding of their time) ago: a maintainer that runs applies them within seconds (helper-87
    F6: a follower stopped showed only "saved 91 s ago" beside "Provable: yes" while auto still
    used the index). A quiet shard's mark is said again only hourly: its age alone says
    nothing."""
    return bool(status.unapplied) and (status.behind or 0.0) > status.margin + CREATED_ROUNDING


def _dear(status: ProofStatus) -> str:
    """Why a listing from the index costs more than a scan now, in one line: a maintainer
    that has saved nothing for over the margin (is it running?), or writes within the margin
    (the backfill's own among them), which every listing re-checks whoever keeps the index."""
    ages = [s.age for s in status.shards if s.listed and s.open and s.named and s.age is not None]
    if not ages or max(ages) > status.margin:
        return (
            f"Behind: each listing re-checks the last {status.margin:g} s of writes and what its "
            f"maintainer has not applied{_backlog(status, apart=True)}: is `ddbkeys partition-keys "
            f"index follow -t {status.table}` running?"
        )
    if status.history and not status.unapplied:
        # (helper-72 F3: "Recent: ... what was written in the last 60 s" of writes 2 minutes
        # old, from before the follower began)
        settles = 2.5 * status.margin + CREATED_ROUNDING
        return (
            f"History: each listing re-checks {status.history:,} stream record(s) written just "
            "before its maintainer began (history the backfill covers) until it has read the "
            f"stream's tip with nothing new: within about {settles:g} s of their writing, "
            "while it runs"
        )
    if status.unapplied:
        # (helper-71: "keeps up (it saved 4 s ago)" beside 20,358 records it had not applied)
        return (
            f"Backlog: its maintainer saved {max(ages):.0f} s ago but has not applied"
            f"{_backlog(status)}; each listing re-checks those and the last {status.margin:g} s "
            "of writes, so the index costs less than a scan once it has caught up and the table "
            "has been quieter for that long"
        )
    return (
        f"Recent: its maintainer keeps up (it saved {max(ages):.0f} s ago); each listing "
        f"re-checks what was written in the last {status.margin:g} s (a backfill's markers "
        "too), so the index costs less than a scan once the table has been quieter for that long"
    )


def _backlog(status: ProofStatus, *, apart: bool = False) -> str:
    """ " N stream record(s) (the oldest written at most S s ago)", where the status read some;
    ``apart``: " (N stream record(s), the oldest ...)", after "what its maintainer has not
    applied" (helper-89 C4: "... has not applied 173 stream record(s)" read garbled there)."""
    if not status.unapplied:
        return ""
    records = f"{status.unapplied:,} stream record(s)"
    oldest = f"the oldest written at most {status.behind:,.0f} s ago" if status.behind else ""
    if apart:
        return f" ({records}, {oldest})" if oldest else f" ({records})"
    return f" {records} ({oldest})" if oldest else f" {records}"


def _backfill(status: ProofStatus) -> str:
    """The backfill's record, in one line."""
    backfill, now = status.backfill, status.now
    if backfill is None:
        return f"Backfill: none recorded (in state table {status.state_table})"
    text = f"Backfill: began at {_at(backfill.started, now)}"
    if backfill.after_first is not None:
        text += f", {backfill.after_first:.0f} s after the maintainer's first position"
    else:
        text += ", before any maintainer's position"
    text += f" (a listing needs {status.margin:g} s)"
    if backfill.margin is not None:
        text += f"; begun for a replay margin of {backfill.margin:g} s"
    if backfill.finished is not None:
        text += f"; finished at {_at(backfill.finished, now)}"
    elif backfill.at_work:
        who = f" by {backfill.owner}" if backfill.owner else ""
        alive = backfill.alive if backfill.alive is not None else backfill.started
        handled = "" if backfill.handled is None else f", {backfill.handled} collection(s) handled"
        text += f"; at work{who} (alive {_span(max(now - alive, 0.0))} ago{handled})"
        if backfill.tip_at is not None:  # (helper-99 F3: it said nothing of this wait)
            text += (
                "; its markers are written: it waits out the replay margin and reads the "
                f"stream's records at {_at(backfill.tip_at, now)}, then finishes"
            )
    else:
        text += "; not finished"
    if status.stream is None:  # (helper-73 F5: "another stream" where there is none)
        text += "; the table's stream is off now"
    elif not backfill.current_stream:
        text += "; under another stream"
    text += f"; {len(backfill.clashes)} clash(es)"
    if backfill.kept_finished is not None:
        until = "until it finishes, " if backfill.finished is None else "as it proves nothing, "
        text += (
            f"; {until}listings prove the index from the backfill it replaced "
            f"(finished at {_at(backfill.kept_finished, now)})"
        )
    return text


def _verdict(status: ProofStatus) -> list[str]:
    """Whether it is provable; if not, why, the fix and when."""
    if status.provable:
        return [f"Provable: yes (replay margin {status.margin:g} s)"]
    lines = [f"Provable: no: {status.reason}"]
    if status.fix is not None:
        when = ""
        if status.fix_in and " backfill " in status.fix:
            when = (
                f" (it waits {_span(status.fix_in)}, the rest of the replay margin, until "
                f"{_clock(status.now + status.fix_in)}; provable once it finishes)"
            )
        lines.append(f"Fix: {status.fix}{when}")
        if follower_backfills(status):
            lines.append(f"Or {FOLLOWER_BACKFILLS}.")
        elif MOVED in (status.reason or ""):  # (helper-102 F5: the Fix alone starts a second)
            lines.append(f"{MOVED[0].upper()}{MOVED[1:]}.")
        elif " --wait-for-maintainer" in status.fix:  # (one waiting writes nothing: helper-72 F6)
            lines.append(
                "Or nothing, if that command runs already: it waits for the maintainer's first "
                "position, then the margin, and backfills."
            )
    if status.provable_in is not None:
        lines.append(f"Provable in {_span(status.provable_in)} with nothing done")
    return lines


@click.command("status")
@table_option
@index_options
@state_table_option
@click.option(
    "--replay-margin",
    type=FloatRange(0, 3600, max_open=True),
    default=DEFAULT_REPLAY_MARGIN,
    show_default=True,
    metavar="SECONDS",
    help="The listing's replay margin the status is judged by.",
)
@connection_options
@output_option
def status_command(
    table_name: str,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    replay_margin: float,
    connection: Connection,
    output: str,
) -> None:
    """Say whether a listing can prove the marker index complete now and, if not, why (in the
    listing's words), the one command that fixes it and when; with the stream, the
    maintainer's positions per shard, the backfill's record, and what a listing would pay now
    (stream records to read, collections to re-check) against a scan.

    It reads the table's description, the index's record in --state-table and the stream,
    never the table, and writes nothing. Exit code 0: provable; 1: not provable; 2: the
    status could not be read (no such table, index or state table, or a bad option).

    \b
    Example (on DynamoDB Local, which shows a write in its index at once):
      ddbkeys partition-keys index status -t issues --replay-margin 0 --output json
    """
    try:
        index = open_index(connection, table_name, index_name, marker_attribute)
        status = index.proof_status(state_table=state_table, replay_margin=replay_margin)
    except (DdbKeysError, BotoCoreError, ClientError) as exc:
        raise Unread(error_text(exc)) from exc
    if structured(output):
        echo_json(status.to_json())
    else:
        for line in render_status(status):
            click.echo(line)
    if not status.provable:
        raise click.exceptions.Exit(1)
