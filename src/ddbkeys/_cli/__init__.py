"""The ``ddbkeys`` command: thin click commands over the library."""

from __future__ import annotations

import sys
from typing import Any

import click

from ddbkeys._cli.group import (
    SIGPIPE_EXIT,
    DdbKeysGroup,
    LazyCommand,
    given_defaults,
    open_standard_streams,
    quiet_output,
)
from ddbkeys._version import __version__

__all__ = ["cli", "main"]

#: The commands, each imported when it runs (so that ``ddbkeys --help`` and ``--version`` load
#: neither boto3 nor rich, and a command only its own code), with the summary ``--help`` shows.
COMMANDS = {
    "demo": LazyCommand(
        "ddbkeys._cli.demo:demo_command",
        "Show every strategy and method working, with no AWS account needed.",
    ),
    "iam-policy": LazyCommand(
        "ddbkeys._cli.iam_cmd:iam_policy_command",
        "Print the least-privilege IAM policy that COMMAND needs on one table.",
    ),
    "ids": LazyCommand(
        "ddbkeys._cli.ids:ids_group", "Ever-increasing numeric ids: counters, sequences, audits."
    ),
    "local": LazyCommand(
        "ddbkeys._cli.local_cmd:local_command",
        "Run Amazon DynamoDB Local in the foreground until Ctrl-C.",
    ),
    "partition-keys": LazyCommand(
        "ddbkeys._cli.partition_keys:partition_keys_group",
        "List the distinct partition keys of a table, at a small part of a full scan's cost.",
        {
            "estimate": LazyCommand("ddbkeys._cli.listing_estimate:estimate_command"),
            "export": LazyCommand("ddbkeys._cli.export_cmd:export_group"),
            "index": LazyCommand("ddbkeys._cli.marker_index:index_group"),
            "plan": LazyCommand("ddbkeys._cli.listing_tasks:plan_command"),
            "run-task": LazyCommand("ddbkeys._cli.listing_tasks:run_task_command"),
        },
    ),
    "table": LazyCommand(
        "ddbkeys._cli.table_cmd:table_group",
        "Tables for ddbkeys: one command makes a table fit for a strategy.",
    ),
}


#: The options every command takes that may also come before the command's name, as with the
#: AWS CLI (``ddbkeys --region eu-west-1 ids next ...``); given after it, they win.
GLOBAL_OPTIONS = ("endpoint_url", "region", "profile", "timeout", "output", "query")


@click.group(
    "ddbkeys",
    cls=DdbKeysGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="ddbkeys")
@click.option("--endpoint-url", metavar="URL", help="As after the command (see its --help).")
@click.option("--region", metavar="REGION", help="As after the command.")
@click.option("--profile", metavar="NAME", help="As after the command.")
@click.option("--timeout", type=float, metavar="SECONDS", help="As after the command.")
@click.option("--output", metavar="FORMAT", help="As after the command (its choices).")
@click.option("--query", metavar="JMESPATH", help="As after the command.")
@click.pass_context
def cli(ctx: click.Context, /, **given: Any) -> None:
    """Ever-increasing ids and distinct partition keys for Amazon DynamoDB.

    Every command takes --endpoint-url, --region, --profile (or the standard AWS_* environment
    variables, resolved as boto3 resolves them), --timeout, and where it prints a JSON
    document --output json|table|text and --query; before the command's name too, as with the
    AWS CLI (after it, they win). `ddbkeys local` runs a DynamoDB Local to point them at.
    Errors print `Error: ...` on stderr: exit code 2 for usage errors, 1 for the rest; 130
    after Ctrl-C, and 141 where the reader of the output went away (`| head`), but for a
    listing of keys one a line, whose every line printed is right (0). With stdout closed
    (`>&-`), what a command prints goes to stderr; `ids next` and a listing refuse instead.

    \b
    Examples:
      ddbkeys ids next -t orders --counter order
      ddbkeys --output json ids current -t orders --counter order
      ddbkeys partition-keys -t orders
      ddbkeys partition-keys --help
    """
    chosen = {k: v for k, v in given.items() if v is not None}
    if chosen:
        ctx.default_map = given_defaults(ctx.command, chosen)


def main() -> None:
    """Entry point of the ``ddbkeys`` console script and ``python -m ddbkeys``."""
    open_standard_streams()
    try:
        cli(prog_name="ddbkeys")
    except BrokenPipeError:  # click's own Error or usage line met a reader gone (2>&1 | true)
        quiet_output()
        sys.exit(SIGPIPE_EXIT)
