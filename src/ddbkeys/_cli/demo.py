"""``ddbkeys demo``: the main job, on an embedded DynamoDB Local unless told otherwise."""

from __future__ import annotations

import functools
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from ddbkeys._cli.common import Connection, connection_options, echo_json, output_option, structured
from ddbkeys._cli.group import rich_console
from ddbkeys._demo import DemoReport, run_demo
from ddbkeys._demo_keys import Progress as ProgressCallback

if TYPE_CHECKING:
    from ddbkeys._demo_keys import MaintainedResult


@contextmanager
def progress_display(show: bool) -> Iterator[ProgressCallback | None]:
    """A progress callback: bars on a terminal, one line per phase otherwise."""
    if not show:
        yield None
        return
    console = rich_console(stderr=True)
    if not console.is_terminal:
        last: list[str] = [""]

        def line(phase: str, done: int, total: int) -> None:
            if phase != last[0]:
                last[0] = phase
                click.echo(f"  {phase} ...", err=True)

        yield line
        return
    bars = Progress(
        TextColumn("  {task.description:<40}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    tasks: dict[str, TaskID] = {}

    def bar(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bars.add_task(phase, total=total)
        bars.update(tasks[phase], completed=done, total=total)

    with bars:
        yield bar


def print_report(report: DemoReport, startup: float | None) -> None:
    """The demo's three sections (ids, listings, the marker index kept right) and a verdict."""
    console = rich_console()
    if not console.is_terminal:
        console = rich_console(width=130)
    where = "an embedded DynamoDB Local" if startup is not None else report.endpoint_url
    console.print(
        f"\n[bold]ddbkeys demo[/bold] on {where}"
        + (f" (started in {startup:.1f} s)" if startup is not None else "")
    )
    _print_ids(console, report)
    scan_units = _print_keys(console, report)
    if report.maintained is not None:
        _print_upkeep(console, report, report.maintained, scan_units)
    verdict = (
        "[green]every promise kept[/green]" if report.ok else "[red]A PROMISE WAS BROKEN[/red]"
    )
    console.print(f"\n{verdict}, in {report.seconds:.1f} s.")


def _print_ids(console: Console, report: DemoReport) -> None:
    faults = (
        f"through a fault proxy that lost {report.sizes.lose_response:.0%} of the write\n"
        f"   responses and throttled {report.sizes.throttle:.0%} of the writes"
        if report.faults
        else "without injected faults\n   (the proxy only sits in front of a loopback endpoint)"
    )
    console.print(
        f"\n[bold]1. Ids[/bold] from {report.sizes.writers} concurrent writers, {faults}:"
    )
    ids = Table(show_edge=False)
    for name, justify in (
        ("strategy", "left"),
        ("promise", "left"),
        ("ids", "right"),
        ("ids/s", "right"),
        ("gaps", "right"),
        ("dupes", "right"),
        ("retries", "right"),
        ("lost / thr.", "right"),
        ("WCU/id", "right"),
        ("kept?", "left"),
    ):
        ids.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in report.ids:
        kept = "[green]yes[/green]" if r.kept else "[red]NO[/red]"
        if r.strategy == "naive":
            kept = "[yellow]for contrast[/yellow]"
        ids.add_row(
            r.strategy,
            r.promise,
            str(r.ids),
            f"{r.ids_per_second:,.0f}",
            str(r.gaps),
            str(r.duplicates),
            str(r.retries),
            f"{r.lost_responses} / {r.throttled}",
            f"{r.write_units_per_id:.2f}",
            kept,
        )
    console.print(ids)
    for r in report.ids:
        if r.note:
            note = textwrap.fill(f"{r.strategy}: {r.note}.", 94, subsequent_indent="    ")
            console.print(textwrap.indent(note, "  "), markup=False)
    console.print(
        "  gaps: ids skipped below the highest one given out (counter, blocks: among the ids\n"
        "  callers got; collection, gapless: in the table). lost / thr.: responses the proxy\n"
        "  lost and writes it throttled. WCU/id: write units the service would bill, items\n"
        "  included where the strategy writes them."
    )


def _print_keys(console: Console, report: DemoReport) -> float:
    """Section 2; the scan's read units (0 when it did not run)."""
    console.print(
        f"\n[bold]2. Distinct partition keys[/bold] of a {report.table_items:,}-item table "
        f"({report.keys[0].keys if report.keys else 0:,} customers):"
    )
    scan_units = next((r.read_units for r in report.keys if r.method == "scan"), 0.0)
    keys = Table(show_edge=False)
    for name in ("method", "keys", "requests", "items read", "RCU", "RCU vs scan", "s", "right?"):
        keys.add_column(name, justify="left" if name == "method" else "right")
    for k in report.keys:
        keys.add_row(
            k.method,
            f"{k.keys:,}",
            f"{k.requests:,}",
            f"{k.items_read:,}",
            f"{k.read_units:,.1f}",
            f"{k.read_units / scan_units:.3f}" if scan_units else "-",
            f"{k.seconds:.2f}",
            "[green]yes[/green]" if k.correct else "[red]NO[/red]",
        )
    console.print(keys)
    setup = report.index_setup
    rows = {k.method: k.read_units for k in report.keys}
    cheaper = min(rows.get("scan", 0.0), rows.get("skip-pages", 0.0))
    against = (
        f" ({setup.get('read_units', 0) / cheaper:.2f}x the cheaper of a scan, "
        f"{rows.get('scan', 0.0):,.1f}, and skip-pages, {rows.get('skip-pages', 0.0):,.1f})"
        if cheaper
        else ""
    )
    console.print(
        f"  Backfilling the marker index cost {setup.get('requests', 0):.0f} requests, "
        f"{setup.get('read_units', 0):.1f} RCU{against}\n  and "
        f"{setup.get('write_units', 0):.1f} WCU, once (one read of the table and its index); "
        "after that, a maintainer keeps it right (section 3)."
    )
    return scan_units


def _print_upkeep(
    console: Console, report: DemoReport, upkeep: MaintainedResult, scan_units: float
) -> None:
    """Section 3: the listings before and after a follower caught up."""
    console.print("\n[bold]3. A marker index kept right from the table's stream[/bold]")
    console.print("  Backfilled with nothing following the stream, auto could not prove it:")
    reason = textwrap.fill(upkeep.refused_reason + ".", 96, initial_indent="    ")
    console.print(textwrap.indent(reason, "    ").removeprefix("    "), markup=False)
    console.print(
        f"  With `index follow` running and a new backfill, {report.sizes.changes} changes "
        f"from 4 writers\n  ({upkeep.added} collections added, {upkeep.emptied} emptied): "
        f"the follower handled {upkeep.records} stream records,\n  wrote {upkeep.marked} "
        f"markers and removed {upkeep.unmarked}."
    )
    healthy = "[green]healthy[/green]" if upkeep.healthy else "[red]NOT HEALTHY[/red]"
    for when, run in (
        ("Right after the changes", upkeep.right_after),
        ("Once the follower caught up", upkeep.settled),
    ):
        right = "[green]yes[/green]" if run.correct else "[red]NO[/red]"
        share = f" ({run.read_units / scan_units:.3f} of the scan)" if scan_units else ""
        proof = (
            f", proven by {run.records} stream records read past the follower's positions "
            f"and {run.rechecked} collections re-checked"
            if run.method == "index"
            else ""
        )
        line = (
            f"{when}, auto used {run.method}: {run.keys:,} keys, right? {right}; "
            f"{run.read_units:,.1f} RCU{share}{proof}."
        )
        console.print(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="    "))
    line = (
        f"(Replay margin {upkeep.margin:g} s: DynamoDB Local shows writes in its index at "
        f"once; on the service keep the default 60 s.) index verify: {healthy}."
    )
    console.print(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="  "))


@click.command("demo")
@click.option("--quick", is_flag=True, help="Fewer writers, ids and keys: about 15 seconds.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@functools.partial(
    connection_options,
    local=True,
    endpoint_help="Run against this endpoint, in tables of its own that it deletes afterwards. "
    "Default: an embedded DynamoDB Local (AWS_ENDPOINT_URL_DYNAMODB is not read here, so that "
    "the demo never makes tables where you did not say).",
)
@output_option
def demo_command(connection: Connection, output: str, quick: bool, quiet: bool) -> None:
    """Show every strategy and method working, with no AWS account needed.

    \b
    1. Mints ids with each strategy (atomic counter, the counter with shared writes and
       with idempotent writes, blocks, blocks of adaptive size closed and restarted
       halfway, item-collection sequence, gapless sequence, and a naive read-then-write
       for contrast) from many concurrent writers, through a fault proxy that loses some
       responses and throttles some writes; then checks the ids for gaps and duplicates
       (and that the restart lost no id).
    2. Loads a sample table and lists its distinct partition keys with every method (scan,
       skip, skip-pages, the marker index, auto), against the cost of a full scan.
    3. Shows auto refusing a marker index nothing keeps right, then a follower of the
       table's stream keeping it exact while writers add and empty collections, and auto
       using it once it can prove it complete.

    By default it starts an embedded DynamoDB Local and stops it at the end (about a minute;
    --quick about fifteen seconds). With --endpoint-url it runs against that endpoint instead,
    in tables of its own that it deletes afterwards. Exit status 1 if a promise was broken.

    \b
    Examples:
      ddbkeys demo --quick
      ddbkeys demo --output json > demo.json
    """
    if connection.endpoint_url is None:
        connection.local = True
    connection.client()  # starts the embedded server when --local
    server = connection.server
    endpoint = server.endpoint_url if server is not None else connection.endpoint_url
    assert endpoint is not None
    with progress_display(not quiet) as progress:
        report = run_demo(
            endpoint,
            quick=quick,
            progress=progress,
            region=connection.region,
            profile=connection.profile,
        )
    if structured(output):
        data = report.as_dict()
        data["startup_seconds"] = server.startup_seconds if server is not None else None
        echo_json(data)
    else:
        print_report(report, server.startup_seconds if server is not None else None)
    if not report.ok:
        sys.exit(1)
