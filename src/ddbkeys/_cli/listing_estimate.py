"""``ddbkeys partition-keys estimate``: what a listing would cost, per method, before it runs
(see :mod:`ddbkeys.partition_keys._tasks.estimate`)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ddbkeys._cli.common import (
    SAMPLING,
    Connection,
    FloatRange,
    IntRange,
    StatusLine,
    connection_options,
    echo_json,
    output_option,
    state_table_option,
    structured,
    table_option,
    waiting,
)
from ddbkeys._cli.index_options import (
    estimated_own_items_option,
    given_sort_key,
    index_options,
    replay_margin_option,
)
from ddbkeys._cli.listing_stream import usage_line
from ddbkeys.partition_keys import Listing, ListingEstimate, ListingOptions, estimate_listing
from ddbkeys.partition_keys._listing.progress import Gauge
from ddbkeys.partition_keys._tasks.estimate import export_note
from ddbkeys.partition_keys._tasks.figures import duration, figure, plural, size, span

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["budget_options", "estimate_command", "estimate_text", "progress_note"]

F = TypeVar("F", bound=Callable[..., Any])


def budget_options(func: F) -> F:
    """Add --read-percent and --max-rcu-per-second: the whole listing's read budget."""
    func = click.option(
        "--max-rcu-per-second",
        type=FloatRange(min=0.1),
        metavar="R",
        help="The whole listing reads at most R read units a second (the lower limit wins).",
    )(func)
    return click.option(
        "--read-percent",
        type=FloatRange(0.1, 1.5),
        metavar="P",
        help="The whole listing reads at most P of the table's read capacity.",
    )(func)


def _speed(found: ListingEstimate) -> str:
    """The sample's requests, items, read units and measured speed (what it measured)."""
    sample = found.sample
    read = (
        f"{sample.segments:,} of {sample.total_segments:,} Scan segments"
        if not sample.whole_table
        else "the whole table"
    )
    ms = sample.latency * 1000
    shown = f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"  # (not "2e+03")
    took = f"; a request took {shown} ms" if sample.requests else ""
    if sample.bytes_per_second:
        took += f", reading {size(sample.bytes_per_second)}/s"
    elif sample.requests:
        took += " (no page was large enough to time the reading)"
    return (
        f"Sampled: {read}, {plural(sample.requests, 'request')}, {plural(sample.items)}, "
        f"{plural(sample.keys - sample.owned, 'key')}, {sample.read_units:g} RCU{took}."
    )


def _whence(found: ListingEstimate) -> str:
    """Where the table line's figures come from: the size and items from ``source``, the
    partition keys from the sample (DescribeTable counts no keys)."""
    if found.keys is None:
        return f"from {found.source}"
    return f"size and items from {found.source}, partition keys from the sample"


def estimate_text(found: ListingEstimate) -> str:
    """The estimate for people: the table, the budget, a row per method (read units as a
    range), auto's choice and the figures it used, what the marker index adds, the warning,
    the tasks suggested and the notes."""
    keys = span(found.keys_low, found.keys, found.keys_high, whole=True)
    what = (
        f"~{size(found.size_bytes)}, ~{plural(found.items)}, {keys} partition keys"
        if found.size_bytes is not None and found.items is not None and found.keys is not None
        else "size unknown"
    )
    budget = f"{figure(found.rate)} RCU/s" if found.rate is not None else "none"
    limit = (
        f"; the table serves at most {figure(found.limit)} RCU/s"
        if found.limit is not None
        else f"; capacity {figure(found.read_capacity)} RCU/s ({found.capacity_source})"
    )
    lines = [
        f"Table {found.table}: {what} ({_whence(found)}).",
        _speed(found),
        f"Read budget: {budget}{limit}; {found.concurrency} reader(s) at once.",
        "",
        f"{'method':<11} {'RCU':>15} {'requests':>11} {'time':>9} {'tasks':>6}",
    ]
    rows = [(method.method, method) for method in found.methods]
    if found.auto_line is not None:  # (auto reads otherwise than the method asked for)
        rows.append(("auto", found.auto_line))
    for name, method in rows:
        if not method.available:
            lines.append(f"{name:<11} not available: {method.note}")
            continue
        tasks = "?" if method.tasks is None else str(method.tasks)
        rcu = span(method.rcu_low, method.rcu, method.rcu_high)
        requests = span(method.requests_low, method.requests, method.requests_high, whole=True)
        lines.append(
            f"{name:<11} {rcu:>15} {requests:>11} "
            f"{duration(method.seconds):>9} {tasks:>6}  {method.note}"
        )
    exported = "the table's bytes" if found.size_bytes is None else f"~{size(found.size_bytes)}"
    lines.append(
        f"{'export':<11} {'0':>15} {'-':>11} {'-':>9} {'-':>6}  --from-export: {exported} "
        "written to S3 (billed per GB, PITR on); keys as of the export's time"
    )
    lines += [
        "",
        f"auto would likely list with {found.auto}: {found.auto_reason}.",
        *([f"{found.warning}."] if found.warning else []),
        f"Tasks suggested: {found.tasks_rule}.",
        f"The ranges rest on: {found.basis}.",
        *(f"Note: {note}." for note in found.notes),
    ]
    return "\n".join(lines)


@click.command("estimate")
@table_option
@budget_options
@click.option(
    "--concurrency",
    type=IntRange(1),
    metavar="N",
    default=1,
    show_default=True,
    help="How many readers run at once (--segments threads, or tasks): the budget is shared.",
)
@output_option
@estimated_own_items_option
@index_options
@state_table_option
@replay_margin_option(
    "As the listing's: how far back the marker index's proof reads the stream before the "
    "maintainer's positions (the index's line weighs the proof the listing would make)."
)
@connection_options
def estimate_command(
    table_name: str,
    read_percent: float | None,
    max_rcu_per_second: float | None,
    concurrency: int,
    output: str,
    include_own_items: bool,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    replay_margin: float,
    connection: Connection,
) -> None:
    """Say what listing a table would cost, before it runs: read units (a range) and the key
    count (a range), requests and time for each method, the one auto would likely choose and
    the figures it used, what the marker index would add, and how many tasks to plan. From
    DescribeTable's size and item count (refreshed about every six hours on AWS: an estimate,
    not a promise), a sample of whole Scan segments drawn at random (about 32 read units,
    or 5% of a scan's on a large table, up to 128; a table of a MB or less is read whole, in a
    request or two) and, where there is a marker index, what
    `index status` reads.

    \b
    Example:
      ddbkeys partition-keys estimate -t orders --read-percent 0.5
    """
    options = ListingOptions(
        read_percent=read_percent,
        max_rcu_per_second=max_rcu_per_second,
        index_name=index_name,
        marker_attribute=marker_attribute,
        marker_sort_key=given_sort_key(connection, table_name),
        include_own_items=include_own_items,
        state_table=state_table,
        replay_margin=replay_margin,
        deadline=connection.timeout,
    )
    with waiting(SAMPLING.format(table=table_name)):
        found = estimate_listing(
            connection.client(), table_name, options=options, concurrency=concurrency
        )
    if structured(output):
        document = json.loads(found.to_json())
        document["export"] = {
            "rcu": 0,
            "bytes": found.size_bytes,
            "note": export_note(found.size_bytes),
        }
        echo_json(document)
    else:
        click.echo(estimate_text(found))


class ProgressLine:
    """A listing's progress on a terminal's status line (None where stderr is no terminal, or
    with --quiet): keys, requests and read units, and once :meth:`watch` has the listing, the
    share read and the time left (``progress_note``). Called as the listing's ``on_key``."""

    def __init__(self, stderr: Console, quiet: bool = False) -> None:
        self.status = StatusLine(stderr, "listing...") if stderr.is_terminal and not quiet else None
        self.drawn = 0.0
        self.gauge: Gauge | None = None
        self.others = 0  # (segments other tasks list: a task's listing counts them done)

    def watch(self, listing: Listing, task_of: int = 0) -> None:
        """Made once the listing stands, before its first key (it reads the estimate);
        ``task_of``: the listing is a task's, one segment of that many: its figures alone (the
        other segments are not done, and its own share of the table is not known: segments
        differ in size, helper-83 F5)."""
        if task_of > 1:  # (no share: segments differ in size, a third said ~100% at 75%)
            self.others = listing.segments_done
        else:
            self.gauge = Gauge.of(listing)

    def __call__(self, listing: Listing) -> None:
        now = time.monotonic()
        if self.status is not None and now - self.drawn > 0.2:
            self.drawn = now
            line = usage_line(listing, progress=True, others=self.others)
            if self.gauge is not None:  # (a whole listing's: a task's has none)
                line += progress_note(self.gauge, listing)
            self.status.update(line)


def progress_note(gauge: Gauge, listing: Listing) -> str:
    """What the progress line adds: the share of the table's estimated size read (or of the
    segments done) and the time likely left, when they can be told."""
    found = gauge.read(listing.usage.read_units, listing.segments_done)
    if found.done is None:
        return ""
    left = f", ~{duration(found.seconds_left)} left" if found.seconds_left is not None else ""
    percent = math.floor(found.done * 100)
    if found.by == "segments":  # (after "k/N segments done")
        return f" ({percent}%){left}"
    if found.capped:
        return f"; ~100% of ~{size(gauge.scanned_bytes)}"  # past the estimate: no time left
    return f"; ~{percent}% of ~{size(gauge.scanned_bytes)}{left}"
