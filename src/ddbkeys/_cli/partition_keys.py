"""``ddbkeys partition-keys``: list the distinct partition keys; manage the marker index."""

from __future__ import annotations

import contextlib
from typing import Any

import click

from ddbkeys._cli.common import (
    Connection,
    FloatRange,
    IntRange,
    connection_options,
    state_table_option,
    table_name,
    warnings_said,
)
from ddbkeys._cli.errors import cli_words
from ddbkeys._cli.group import LazyGroup, rich_console
from ddbkeys._cli.index_options import (
    given_sort_key,
    index_options,
    own_items_option,
    proof_options,
)
from ddbkeys._cli.listing_estimate import ProgressLine
from ddbkeys._cli.listing_export import (
    check_export_options,
    export_fields,
    from_export_option,
)
from ddbkeys._cli.listing_sink import (
    CHECKPOINT_KEYS,
    KeySink,
    check_options,
    listing_query_option,
    resume_from,
)
from ddbkeys._cli.listing_stream import before_keys, say_strays, stream_keys, usage_line
from ddbkeys._cli.rendering import render, render_table
from ddbkeys.partition_keys import (
    MAX_READERS,
    METHODS,
    IndexReplayWarning,
    Listing,
    ListingOptions,
    distinct_partition_keys,
)
from ddbkeys.partition_keys._listing.options import AUTO_READERS


def _replay_fields(listing: Listing) -> dict[str, Any] | None:
    """What the proof of the marker index read and re-checked (None: no proof)."""
    replay = listing.replay
    if replay is None:
        return None
    return {
        "margin": replay.margin,
        "records": replay.records,
        "rechecked": replay.rechecked,
        "existing": sum(replay.exists.values()),
    }


#: The defaults of the listing's options (--method, --segments, ...): ListingOptions' own.
DEFAULTS = ListingOptions()


def _trust_note(listing: Listing, method: str) -> str:
    """Why the marker index was not used (auto) or not proven (--method index)."""
    reason = cli_words(listing.method_reason)  # (the library's words are for Python)
    if method == "index":
        return f"Warning: {reason}."
    return f"Note: {reason[:1].upper()}{reason[1:]}; listing with {listing.method_name}."


@click.group(
    "partition-keys",
    cls=LazyGroup,  # (its commands: ddbkeys._cli.COMMANDS)
    invoke_without_command=True,
    subcommand_metavar="[index COMMAND | export COMMAND | estimate | plan | run-task]",
)
@click.option(
    "--table-name", "-t", metavar="TABLE", callback=table_name, help="The DynamoDB table."
)
@click.option(
    "--method",
    "-m",
    type=click.Choice(METHODS),
    default=DEFAULTS.method,
    show_default=True,
    help="auto picks: no sort key -> scan; a marker index proven complete now -> index; else "
    "the adaptive skip scan.",
)
@click.option(
    "--segments",
    type=IntRange(1, MAX_READERS),
    metavar="N",
    default=DEFAULTS.segments,
    help=f"Read N Scan segments at once, with N reader threads (at most {MAX_READERS}). Above "
    "1, the table is split into up to 4 x N segments (at most one a MB) that the readers take "
    "in turn.  [default: 1; auto listing by skipping: one, and up to one every 2 MB of the "
    f"table (up to {AUTO_READERS}) join as segments show skipping sends many requests]",
)
@click.option(
    "--scan-segments",
    type=IntRange(1, 1_000_000),
    metavar="S",
    help="Split the table into exactly S Scan segments (TotalSegments). Each costs at least "
    "one request.  [default: 1; with N readers (--segments N, or auto's), 4 x N but at most "
    "one a MB of the table, and at least N]",
)
@click.option(
    "--output",
    type=click.Choice(["text", "json", "jsonl", "table"]),
    default="text",
    show_default=True,
    help="text: one key per line (binary keys in base64; in strings a backslash, newline, CR "
    "and the other line breaks are escaped as \\\\, \\n, \\r, \\u2028, ...); jsonl: a JSON "
    "object per key; json: one document at the end; table: the keys in a boxed table at the "
    "end. Never taken from AWS_DEFAULT_OUTPUT or your AWS profile: keys stay one a line.",
)
@listing_query_option
@click.option(
    "--max-rcu-per-second",
    type=FloatRange(min=0.1),
    metavar="R",
    help="Spread the reads: at most R read units a second (a page, up to 128 RCU, is read at "
    "once: after the answer, the command waits off what the last pages read beyond R).",
)
@click.option(
    "--read-percent",
    type=FloatRange(0.1, 1.5),
    metavar="P",
    help="Spread the reads: at most P (0.1 to 1.5) of the table's read capacity (provisioned; "
    "on demand its maximum, else its warm throughput, else 40,000 RCU). With "
    "--max-rcu-per-second, the lower wins.",
)
@click.option("--resume", metavar="TOKEN", help="Go on from where a stopped listing was.")
@click.option(
    "--checkpoint",
    "checkpoint_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Keep the listing's position in FILE (replaced atomically after each flush of output, "
    f"at least every second and every {CHECKPOINT_KEYS} keys): after a kill, even kill -9, "
    "the same command goes on from there. Removed once the listing ends. On stdout a resume may "
    f"repeat up to {CHECKPOINT_KEYS} keys; with --output-file, none.",
)
@click.option(
    "--output-file",
    metavar="OUT",
    type=click.Path(dir_okay=False),
    help="Write the keys to OUT instead of stdout (truncated at the start). With --checkpoint, a "
    "resume first cuts OUT back to what the checkpoint recorded: every key exactly once.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress and no summary on stderr. What puts the answer's trust at stake is said "
    "all the same: a marker index not used or not proven, keys listed at markers of other "
    "settings.",
)
@from_export_option
@own_items_option
@index_options
@state_table_option
@proof_options
@connection_options
@click.pass_context
def partition_keys_group(
    ctx: click.Context,
    table_name: str | None,
    method: str,
    segments: int,
    scan_segments: int | None,
    output: str,
    query: str | None,
    max_rcu_per_second: float | None,
    read_percent: float | None,
    resume: str | None,
    checkpoint_file: str | None,
    output_file: str | None,
    quiet: bool,
    from_export: str | None,
    include_own_items: bool,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    replay_margin: float,
    trust_index: bool,
    connection: Connection,
) -> None:
    """List the distinct partition keys of a table, at a small part of a full scan's cost.

    Keys go to stdout (or --output-file), one per line, so the output pipes; progress and a
    summary (requests, items read, read units) go to stderr. Ctrl-C, SIGTERM, SIGHUP, or an
    error once keys are coming (a page that got no answer within --timeout, say), prints a
    --resume token that goes on without repeating or missing a key. For long listings that may
    be killed outright, --checkpoint FILE: run the same command again to go on.

    \b
    Methods (--method):
      scan        read every item's key: best with no sort key or tiny collections
      skip        the skip scan: one item per request, jump past the rest of the collection
      skip-pages  pages of 4 KB that jump past large collections, growing to a
                  scan's pages where collections prove small
      index       scan the sparse marker index (see `partition-keys index --help`),
                  proven complete now from the table's stream, or an error saying why
      auto        the cheapest that applies (default); the index only when proven

    \b
    Examples:
      ddbkeys partition-keys -t orders > keys.txt
      ddbkeys partition-keys -t orders --segments 4 --max-rcu-per-second 200
      ddbkeys partition-keys -t orders --output jsonl | head -5
      ddbkeys partition-keys -t orders --checkpoint orders.ckpt --output-file keys.txt
      ddbkeys partition-keys -t T --from-export s3://BUCKET/PREFIX/AWSDynamoDB/EXPORT_ID/
    """
    if ctx.invoked_subcommand is not None:
        return
    check_options(table_name, output, query, checkpoint_file, output_file)
    if from_export is not None:
        check_export_options(
            method,
            DEFAULTS.method,
            resume,
            checkpoint_file,
            (segments, scan_segments, trust_index),
        )
    before_keys(ctx, "listing", "run the same command again", resume)
    sink = KeySink(output, output_file, checkpoint_file)
    resume = resume_from(sink, resume, checkpoint_file)
    client = connection.client()
    progress = ProgressLine(rich_console(stderr=True), quiet)

    options = ListingOptions(
        method=method,
        segments=segments,
        scan_segments=scan_segments,
        index_name=index_name,
        marker_attribute=marker_attribute,
        marker_sort_key=given_sort_key(connection, table_name),
        max_rcu_per_second=max_rcu_per_second,
        read_percent=read_percent,
        deadline=connection.timeout,
        state_table=state_table,
        replay_margin=replay_margin,
        trust_index=trust_index,
        include_own_items=include_own_items,
        from_export=from_export,
    )
    with warnings_said(IndexReplayWarning):  # said before the listing reads
        listing = distinct_partition_keys(
            client,
            table_name,
            options=options,
            resume=resume,
            on_key=progress if progress.status is not None else None,
        )
    progress.watch(listing)
    sink.open(listing)
    if sink.resumed and not quiet:
        click.echo(f"Going on from {checkpoint_file} ({sink.keys} keys written before).", err=True)
    if listing.index_trusted is False:  # said even with --quiet: the answer's trust is at stake
        click.echo(_trust_note(listing, method), err=True)
    collected = stream_keys(ctx, listing, output, sink, progress.status)
    if output == "json" or (output == "table" and query is not None):
        document = {
            "table": table_name,
            "method": listing.method_name,
            "method_reason": cli_words(listing.method_reason),
            "method_note": cli_words(listing.method_note),
            # (what it said before it read too: helper-91 F6, [] beside a warning on stderr)
            "warnings": [cli_words(line) for line in listing.notes]
            + ([cli_words(listing.stray_note)] if listing.stray_note else []),
            "readers": listing.readers,
            "replay": _replay_fields(listing),
            "export": export_fields(listing),
            "keys": collected,
            "usage": listing.usage.snapshot(),
        }
        sink.write_document(render(document, output, query, "partition-keys"))
    elif output == "table":
        sink.write_document(render_table(collected, f"partition keys of {table_name}"))
    sink.finish()
    if not quiet:
        click.echo(usage_line(listing), err=True)
    say_strays(listing)
    _waited_off(listing, quiet)


def _waited_off(listing: Listing, quiet: bool) -> None:
    """After the answer is out, the read budget's debt waited off (the last page, up to 128
    RCU, read at once), so that the command keeps to it over its time, however short, and a
    listing run after it too; said in one line (helper-89: 96 RCU read in 0.8 s at 5 a second;
    helper-91: a wait before the answer looked like a hang, and Ctrl-C in it lost the
    answer). Ctrl-C ends the wait: the answer is whole."""
    budget = listing.reader.budget
    if budget is None or (seconds := budget.wait_time()) <= 0:
        return
    if not quiet and seconds >= 1:
        click.echo(
            f"All keys read; waiting {seconds:,.0f} s to keep to {budget.rate:g} RCU a second "
            "(Ctrl-C ends the wait: the answer is whole).",
            err=True,
        )
    with contextlib.suppress(KeyboardInterrupt):
        budget.acquire()
