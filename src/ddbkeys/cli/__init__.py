"""The ``ddbkeys`` command: thin click commands over the library."""

from __future__ import annotations

import click

from ddbkeys import __version__
from ddbkeys.cli.common import DdbKeysGroup
from ddbkeys.cli.demo import demo_command
from ddbkeys.cli.iam_cmd import iam_policy_command
from ddbkeys.cli.ids import ids_group
from ddbkeys.cli.listing_estimate import estimate_command
from ddbkeys.cli.listing_tasks import plan_command, run_task_command
from ddbkeys.cli.local_cmd import local_command
from ddbkeys.cli.marker_index import index_group
from ddbkeys.cli.partition_keys import partition_keys_group

__all__ = ["cli", "main"]


@click.group("ddbkeys", cls=DdbKeysGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ddbkeys")
def cli() -> None:
    """Ever-increasing ids and distinct partition keys for Amazon DynamoDB.

    Every command takes --endpoint-url, --region, --profile (or the standard AWS_* environment
    variables) and --local, which runs it against a throwaway embedded DynamoDB Local.
    Errors print `Error: ...` on stderr: exit code 2 for usage errors, 1 for the rest.

    \b
    Examples:
      ddbkeys ids next -t orders --counter order
      ddbkeys partition-keys -t orders
      ddbkeys partition-keys --help
    """


cli.add_command(demo_command)
cli.add_command(local_command)
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
