"""``ddbkeys partition-keys``: list the distinct partition keys; manage the marker index."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import click
from rich.console import Console

from ddbkeys.cli.common import (
    Connection,
    StatusLine,
    connection_options,
    echo_json,
    index_options,
    json_key,
)
from ddbkeys.cli.listing_output import jsonl_line, text_line
from ddbkeys.errors import DdbKeysError
from ddbkeys.partition_keys import (
    MAX_READERS,
    METHODS,
    Listing,
    distinct_partition_keys,
    plain_key,
)


def usage_line(listing: Listing, *, progress: bool = False) -> str:
    u = listing.usage
    line = (
        f"{listing.keys_found} keys ({listing.method_name}): {u.requests} requests, "
        f"{u.items} items read, {u.read_units:g} RCU"
    )
    if progress and listing.scan_segments > 1:
        line += f"; {listing.segments_done}/{listing.scan_segments} segments done"
    return line


def write_keys(listing: Listing, output: str, collected: list[object], stop: list[int]) -> None:
    """Write each key as it comes (text, jsonl) or collect it (json); stop after the key being
    written once ``stop`` is set."""
    for raw in listing.raw():
        key = plain_key(raw)
        if output == "text":
            sys.stdout.write(text_line(key) + "\n")
        elif output == "jsonl":
            sys.stdout.write(jsonl_line(key) + "\n")
        else:
            collected.append(json_key(key))
        if stop:
            raise KeyboardInterrupt
    sys.stdout.flush()


def resume_note(verb: str, listing: Listing, status: StatusLine | None) -> None:
    """On stderr: how far the listing came, and the token that goes on from there."""
    if status is not None:
        status.stop()
    sys.stdout.flush()
    click.echo(
        f"{verb} after {usage_line(listing)}.\nResume with: --resume {listing.checkpoint()}",
        err=True,
    )


def stream_keys(
    ctx: click.Context, listing: Listing, output: str, status: StatusLine | None
) -> list[object]:
    """Write the keys; on Ctrl-C or an error, say how to resume. Returns the keys collected
    for ``--output json``."""
    collected: list[object] = []
    # The first Ctrl-C stops after the key being written, so the resume token is exact; a
    # second one interrupts at once.
    stop: list[int] = []

    def first_interrupt(signum: int, frame: object) -> None:
        stop.append(signum)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.getsignal(signal.SIGINT)
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGINT, first_interrupt)
    try:
        if status is not None:
            status.start()
        write_keys(listing, output, collected, stop)
    except KeyboardInterrupt:
        resume_note("Interrupted", listing, status)
        ctx.exit(130)
    except DdbKeysError:
        # The keys written so far stand: say how to go on from them, then the error itself.
        resume_note("Stopped", listing, status)
        raise
    except BrokenPipeError:
        # The reader went away (| head): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        ctx.exit(0)
    finally:
        if status is not None:
            status.stop()
        if in_main:
            signal.signal(signal.SIGINT, previous)
    return collected


@click.group(
    "partition-keys",
    invoke_without_command=True,
    subcommand_metavar="[index COMMAND]",
)
@click.option("--table-name", "-t", metavar="TABLE", help="The DynamoDB table.")
@click.option(
    "--method",
    "-m",
    type=click.Choice(METHODS),
    default="auto",
    show_default=True,
    help="auto picks: no sort key -> scan; healthy marker index -> index; else the "
    "adaptive skip scan.",
)
@click.option(
    "--segments",
    type=click.IntRange(1, MAX_READERS),
    metavar="N",
    default=1,
    show_default=True,
    help=f"Read N Scan segments at once, with N reader threads (at most {MAX_READERS}). Above "
    "1, the table is split into up to 4 x N segments (at most one a MB) that the readers take "
    "in turn.",
)
@click.option(
    "--scan-segments",
    type=click.IntRange(1, 1_000_000),
    metavar="S",
    help="Split the table into exactly S Scan segments (TotalSegments). Each costs at least "
    "one request.  [default: 1; with --segments N, 4 x N but at most one a MB of the table, "
    "and at least N]",
)
@click.option(
    "--output",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help="text: one key per line (binary keys in base64; in strings a backslash, newline, CR "
    "and the other line breaks are escaped as \\\\, \\n, \\r, \\u2028, ...); jsonl: a JSON "
    "object per key; json: one document at the end.",
)
@click.option(
    "--max-rcu-per-second",
    type=click.FloatRange(min=0.1),
    metavar="R",
    help="Spread the reads: at most R read units a second.",
)
@click.option("--resume", metavar="TOKEN", help="Go on from where a stopped listing was.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary on stderr.")
@index_options
@connection_options
@click.pass_context
def partition_keys_group(
    ctx: click.Context,
    table_name: str | None,
    method: str,
    segments: int,
    scan_segments: int | None,
    output: str,
    max_rcu_per_second: float | None,
    resume: str | None,
    quiet: bool,
    index_name: str,
    marker_attribute: str,
    connection: Connection,
) -> None:
    """List the distinct partition keys of a table, at a small part of a full scan's cost.

    Keys go to stdout, one per line, so the output pipes; progress and a summary (requests,
    items read, read units) go to stderr. Ctrl-C, or an error once keys are coming (a page
    that got no answer within --timeout, say), prints a --resume token that goes on without
    repeating or missing a key.

    \b
    Methods (--method):
      scan        read every item's key: best with no sort key or tiny collections
      skip        seed 004: one item per request, jump past the rest of the collection
      skip-pages  up to 4 KB per request, jump past the last key seen
      index       scan the sparse marker index (see `partition-keys index --help`)
      auto        the cheapest that applies (default)

    \b
    Examples:
      ddbkeys partition-keys -t orders > keys.txt
      ddbkeys partition-keys -t orders --segments 4 --max-rcu-per-second 200
      ddbkeys partition-keys -t orders --output jsonl | head -5
    """
    if ctx.invoked_subcommand is not None:
        return
    if table_name is None:
        raise click.UsageError("Missing option '--table-name' / '-t'.")
    client = connection.client()
    stderr = Console(stderr=True)
    show_progress = not quiet and stderr.is_terminal
    status = StatusLine(stderr, "listing...") if show_progress else None
    last_draw = [0.0]

    def progress(listing: Listing) -> None:
        now = time.monotonic()
        if status is not None and now - last_draw[0] > 0.2:
            last_draw[0] = now
            status.update(usage_line(listing, progress=True))

    listing = distinct_partition_keys(
        client,
        table_name,
        method,
        segments=segments,
        scan_segments=scan_segments,
        index=index_name,
        marker_attribute=marker_attribute,
        max_rcu_per_second=max_rcu_per_second,
        resume=resume,
        on_key=progress if show_progress else None,
        deadline=connection.timeout,
    )
    if listing.index_trusted is False:  # said even with --quiet: the answer's trust is at stake
        click.echo(
            f"Warning: {listing.method_reason}."
            if method == "index"
            else f"Note: {listing.method_reason[:1].upper()}{listing.method_reason[1:]}; "
            f"listing with {listing.method_name}.",
            err=True,
        )
    collected = stream_keys(ctx, listing, output, status)
    if output == "json":
        echo_json(
            {
                "table": table_name,
                "method": listing.method_name,
                "method_reason": listing.method_reason,
                "keys": collected,
                "usage": listing.usage.snapshot(),
            }
        )
    if not quiet:
        click.echo(usage_line(listing), err=True)
