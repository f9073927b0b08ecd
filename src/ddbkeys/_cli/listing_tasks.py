"""``ddbkeys partition-keys plan`` and ``run-task``: a listing as tasks, one JSON line each, for
a shell loop, ``xargs -P``, AWS Batch or Step Functions to run (see
:mod:`ddbkeys.partition_keys._tasks.tasks`)."""

from __future__ import annotations

import dataclasses
import functools
import sys

import click

from ddbkeys._cli.common import (
    SAMPLING,
    Connection,
    IntRange,
    connection_options,
    state_table_option,
    table_option,
    waiting,
    warnings_said,
)
from ddbkeys._cli.errors import cli_words, error_text
from ddbkeys._cli.group import rich_console
from ddbkeys._cli.index_options import (
    given_sort_key,
    index_options,
    own_items_option,
    proof_options,
)
from ddbkeys._cli.listing_estimate import ProgressLine, budget_options
from ddbkeys._cli.listing_sink import KeySink, check_options, listing_query_option
from ddbkeys._cli.listing_stream import before_keys, say_strays, stream_keys, usage_line
from ddbkeys._cli.partition_keys import DEFAULTS
from ddbkeys._cli.rendering import render, render_table
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys import (
    METHODS,
    IndexReplayWarning,
    ListingOptions,
    ListingTask,
    estimate_listing,
    open_task,
    plan_listing,
)
from ddbkeys.partition_keys._tasks.tasks import not_this_task

__all__ = ["plan_command", "run_task_command"]


@click.command("plan")
@table_option
@click.option(
    "--tasks",
    type=IntRange(1, 1_000_000),
    default=4,
    show_default=True,
    help="How many tasks: Scan segments of the table, one task each (the proven marker index "
    "adds one). `partition-keys estimate` suggests how many.",
)
@click.option(
    "--method",
    "-m",
    type=click.Choice(METHODS),
    default=DEFAULTS.method,
    show_default=True,
    help="As the listing's --method, settled here once for every task (auto: its choice now).",
)
@click.option(
    "--concurrency",
    type=IntRange(1),
    metavar="N",
    help="How many tasks run at once: the read budget is shared among them.  [default: all]",
)
@budget_options
@own_items_option
@index_options
@state_table_option
@proof_options
@connection_options
def plan_command(
    table_name: str,
    tasks: int,
    method: str,
    concurrency: int | None,
    read_percent: float | None,
    max_rcu_per_second: float | None,
    include_own_items: bool,
    index_name: str,
    marker_attribute: str,
    state_table: str | None,
    replay_margin: float,
    trust_index: bool,
    connection: Connection,
) -> None:
    """Plan a listing as TASKS tasks, one JSON line each on stdout (the method settled once:
    auto's choice, the marker index's proof). Run each with `ddbkeys partition-keys run-task`:
    their keys together are the listing, each key in one task. On stderr: the plan, and what
    it will likely cost (see `partition-keys estimate`).

    \b
    Example:
      ddbkeys partition-keys plan -t orders --tasks 4 > tasks.jsonl
    """
    options = ListingOptions(
        method=method,
        read_percent=read_percent,
        max_rcu_per_second=max_rcu_per_second,
        index_name=index_name,
        marker_attribute=marker_attribute,
        marker_sort_key=given_sort_key(connection, table_name),
        state_table=state_table,
        replay_margin=replay_margin,
        trust_index=trust_index,
        include_own_items=include_own_items,
        deadline=connection.timeout,
    )
    with warnings_said(IndexReplayWarning):  # (a lagging maintainer: said as it is found)
        planned = plan_listing(
            connection.client(),
            table_name,
            options=options,
            tasks=tasks,
            concurrency=concurrency,
            endpoint_url=connection.endpoint_url,
            region=connection.region,
            profile=connection.profile,
        )
    for task in planned:
        click.echo(task.to_json())
    settled = planned[0].options.method
    said = cli_words(planned[0].reason)
    click.echo(f"{len(planned)} task(s), method {settled}: {said}", err=True)
    try:
        with waiting(SAMPLING.format(table=table_name)):
            found = estimate_listing(
                connection.client(),
                table_name,
                options=options,
                concurrency=min(concurrency or tasks, tasks),
            )
    except DdbKeysError as exc:  # the tasks stand; the estimate is advice
        click.echo(f"No estimate: {error_text(exc)}", err=True)
        return
    click.echo(found.summary(settled), err=True)


#: --endpoint-url of run-task: the task says how to reach its table; these say otherwise.
RUN_TASK_ENDPOINT_HELP = (
    "DynamoDB endpoint to list the task's table at, instead of the one its plan was made "
    "with (so --region and --profile: a worker that reaches the table another way)."
)


def _reached_by(task: ListingTask, connection: Connection) -> ListingTask:
    """``task``, reaching its table by the --endpoint-url, --region, --profile and --timeout
    given (before the command's name too), where given."""
    ctx = click.get_current_context()
    given = ctx.get_parameter_source("timeout") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    )
    return dataclasses.replace(
        task,
        endpoint_url=connection.endpoint_url or task.endpoint_url,
        region=connection.region or task.region,
        profile=connection.profile or task.profile,
        options=task.options.replace(deadline=connection.timeout) if given else task.options,
    )


@click.command("run-task")
@click.option(
    "--output",
    type=click.Choice(["text", "json", "jsonl", "table"]),
    default="text",
    show_default=True,
    help="As the listing's: text: one key per line; jsonl: a JSON object per key; json: one "
    "document at the end (the task's table, segment, method, keys and read units); table: the "
    "keys in a boxed table at the end. A checkpoint goes with text and jsonl.",
)
@listing_query_option
@click.option(
    "--checkpoint",
    "checkpoint_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Keep the task's position in FILE (as the listing's --checkpoint): after a kill, even "
    "kill -9, the same command goes on from there; with --output-file, every key exactly "
    "once. A checkpoint of another task is refused.",
)
@click.option(
    "--output-file",
    metavar="OUT",
    type=click.Path(dir_okay=False),
    help="Write the keys to OUT instead of stdout (with --checkpoint, a resume first cuts OUT "
    "back to what the checkpoint recorded).",
)
@functools.partial(connection_options, endpoint_help=RUN_TASK_ENDPOINT_HELP)
@click.pass_context
def run_task_command(
    ctx: click.Context,
    output: str,
    query: str | None,
    checkpoint_file: str | None,
    output_file: str | None,
    connection: Connection,
) -> None:
    """Run one task of `ddbkeys partition-keys plan` (its JSON line on stdin) and write its
    keys on stdout. Run again from its start, a task writes the same keys; with --checkpoint
    it goes on from where a killed run stopped instead. Ctrl-C, SIGTERM and SIGHUP stop it
    after the key being written, with a checkpoint saved.

    \b
    Examples:
      ddbkeys partition-keys plan -t orders --tasks 1 | ddbkeys partition-keys run-task
      ddbkeys partition-keys plan -t orders --tasks 2 > tasks.jsonl
      head -1 tasks.jsonl | ddbkeys partition-keys run-task --checkpoint t0.ckpt --output-file t0
    """
    lines = [line for line in sys.stdin.read().splitlines() if line.strip()]
    if not lines:
        raise click.UsageError("No task on stdin: pipe one line of `partition-keys plan` in.")
    if len(lines) > 1:  # (running the first alone would answer a part of the listing)
        raise click.UsageError(
            f"stdin holds {len(lines)} tasks; run-task runs one: give each line to its own "
            "run-task (a shell loop, xargs -P), or run them all with list_tasks() in Python."
        )
    line = lines[0]
    task = _reached_by(ListingTask.from_json(line), connection)
    check_options(task.table, output, query, checkpoint_file, output_file)
    before_keys(ctx, "task", "run the task line again")
    sink = KeySink(output, output_file, checkpoint_file)
    if sink.resume_token is not None:
        why = not_this_task(task, sink.resume_token)  # (another task's checkpoint)
        if why is not None:  # (said in the command's words, not the Python API's)
            raise click.ClickException(
                f"--checkpoint {checkpoint_file} is not {why}: give each task its own "
                "checkpoint file, or remove this one to run the task from its start."
            )
        task = task.going_on(sink.resume_token)
    listing = open_task(task)
    progress = ProgressLine(rich_console(stderr=True))  # (helper-82 F1: it said nothing)
    if progress.status is not None:  # (its own figures: the other segments are not done)
        listing.on_key = progress
        progress.watch(listing, task_of=task.segments)
    sink.open(listing)
    if sink.resumed:
        click.echo(f"Going on from {checkpoint_file} ({sink.keys} keys written before).", err=True)
    collected = stream_keys(ctx, listing, output, sink, progress.status)
    if output == "json" or (output == "table" and query is not None):
        document = {
            "table": task.table,
            "segment": task.segment,
            "segments": task.segments,
            "method": listing.method_name,
            "warnings": [cli_words(listing.stray_note)] if listing.stray_note else [],
            "keys": collected,
            "usage": listing.usage.snapshot(),
        }
        sink.write_document(render(document, output, query, "run-task"))
    elif output == "table":
        title = f"partition keys of {task.table}, segment {task.segment} of {task.segments}"
        sink.write_document(render_table(collected, title))
    sink.finish()
    click.echo(usage_line(listing), err=True)  # (as a listing's: "1 request", not "1 requests")
    say_strays(listing)
