"""The ``ddbkeys`` command: thin click commands over the library."""

from __future__ import annotations

from typing import Any

import click

from ddbkeys._cli.common import DdbKeysGroup
from ddbkeys._cli.demo import demo_command
from ddbkeys._cli.iam_cmd import iam_policy_command
from ddbkeys._cli.ids import ids_group
from ddbkeys._cli.listing_estimate import estimate_command
from ddbkeys._cli.listing_tasks import plan_command, run_task_command
from ddbkeys._cli.local_cmd import local_command
from ddbkeys._cli.marker_index import index_group
from ddbkeys._cli.partition_keys import partition_keys_group
from ddbkeys._cli.table_cmd import table_group
from ddbkeys._version import __version__

__all__ = ["cli", "main"]


#: The options every command takes that may also come before the command's name, as with the
#: AWS CLI (``ddbkeys --region eu-west-1 ids next ...``); given after it, they win.
GLOBAL_OPTIONS = ("endpoint_url", "region", "profile", "timeout", "output", "query")


def _defaults_for(command: click.Command, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` as the defaults of ``command`` and of every command under it (click's
    default_map: a command's own options by name, its subcommands' by command name)."""
    names = {param.name for param in command.params}
    defaults: dict[str, Any] = {k: v for k, v in given.items() if k in names}
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            defaults[name] = _defaults_for(sub, given)
    return defaults


@click.group("ddbkeys", cls=DdbKeysGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    Errors print `Error: ...` on stderr: exit code 2 for usage errors, 1 for the rest.

    \b
    Examples:
      ddbkeys ids next -t orders --counter order
      ddbkeys --output json ids current -t orders --counter order
      ddbkeys partition-keys -t orders
      ddbkeys partition-keys --help
    """
    chosen = {k: v for k, v in given.items() if v is not None}
    if chosen:
        ctx.default_map = _defaults_for(ctx.command, chosen)


cli.add_command(demo_command)
cli.add_command(local_command)
cli.add_command(table_group)
cli.add_command(ids_group)
partition_keys_group.add_command(index_group)
partition_keys_group.add_command(estimate_command)
partition_keys_group.add_command(plan_command)
partition_keys_group.add_command(run_task_command)
cli.add_command(partition_keys_group)
cli.add_command(iam_policy_command)


def main() -> None:
    """Entry point of the ``ddbkeys`` console script and ``python -m ddbkeys``."""
    cli(prog_name="ddbkeys")
