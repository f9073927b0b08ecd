"""``ddbkeys iam-policy``: the least-privilege IAM policy of a command."""

from __future__ import annotations

import json

import click

from ddbkeys._cli.common import index_name, state_table_option, table_name
from ddbkeys._errors import ConfigurationError
from ddbkeys._names import DEFAULT_INDEX, state_table_name
from ddbkeys.iam import COMMANDS, policy


def _variants_help() -> str:
    lines = []
    for command, variants in COMMANDS.items():
        named = [v for v in variants if v]
        if named:
            lines.append(f"  {command:<16} --variant {'|'.join(named)}")
    return "\n".join(lines)


HELP = f"""Print the least-privilege IAM policy that COMMAND needs on one table.

Only the DynamoDB actions COMMAND really calls, on that table and, for the commands that read or
change it, on its marker index. Attach the JSON to the role that runs the command. The tests
check each policy against the requests each command sends.

COMMAND lambda-handler is the role of the Lambda function that keeps the marker index (what
deploy/marker-handler.yaml grants, but for the function's own logs).

The exports' commands act on S3 too: `partition-keys export start` (DynamoDB writes the export
with your permissions), `partition-keys --variant from-export` and `partition-keys index
backfill --variant from-export` (they read it) need --s3-bucket and --s3-prefix, and get S3
actions on the export's folder (PREFIX/AWSDynamoDB/*) only; --kms-key KEY_ARN adds kms:Decrypt
on the key an export was encrypted with (its manifest's s3SseKmsKeyId), for the readers.

\b
Variants, where the calls depend on an option:
{_variants_help()}

\b
Examples:
  ddbkeys iam-policy ids next -t orders --region eu-west-1 --account-id 123456789012
  ddbkeys iam-policy ids put -t users --variant gapless
  ddbkeys iam-policy partition-keys -t orders --variant index
  ddbkeys iam-policy lambda-handler -t orders --region eu-west-1
  ddbkeys iam-policy partition-keys export start -t orders --s3-bucket exports --s3-prefix ddbkeys
  ddbkeys iam-policy partition-keys -t orders --variant from-export --s3-bucket my-exports
  ddbkeys iam-policy demo   # the tables the demo makes, ddbkeys-demo-..., on a real DynamoDB
"""


@click.command("iam-policy", help=HELP)
@click.argument("command", nargs=-1, required=True)
@click.option(
    "--table-name",
    "-t",
    metavar="TABLE",
    callback=table_name,
    help="The DynamoDB table (required, except for demo, which makes its own tables).",
)
@click.option(
    "--variant",
    metavar="NAME",
    help="Narrow the policy to one way of running COMMAND (see below). Default: every way.",
)
@click.option(
    "--index-name",
    default=DEFAULT_INDEX,
    show_default=True,
    callback=index_name,
    help="The marker index, for the commands that read or change it.",
)
@state_table_option
@click.option("--region", default="*", show_default=True, help="Region in the resource ARNs.")
@click.option(
    "--account-id", default="*", show_default=True, help="AWS account id in the resource ARNs."
)
@click.option(
    "--partition",
    default="aws",
    show_default=True,
    help="ARN partition (aws-cn, aws-us-gov).",
)
@click.option("--s3-bucket", metavar="BUCKET", help="The exports' bucket (the export commands).")
@click.option("--s3-prefix", metavar="PREFIX", help="The exports' folder in the bucket.")
@click.option(
    "--kms-key",
    metavar="KEY_ARN",
    help="The KMS key an export was encrypted with (SSE-KMS), for --variant from-export.",
)
def iam_policy_command(
    command: tuple[str, ...],
    table_name: str | None,
    variant: str | None,
    index_name: str,
    state_table: str | None,
    region: str,
    account_id: str,
    partition: str,
    s3_bucket: str | None,
    s3_prefix: str | None,
    kms_key: str | None,
) -> None:
    try:
        document = policy(
            command,
            table_name,
            variant=variant,
            index_name=index_name,
            state_table=state_table_name(state_table),
            region=region,
            account_id=account_id,
            partition=partition,
            s3_bucket=s3_bucket,
            s3_prefix=s3_prefix,
            kms_key=kms_key,
        )
    except ConfigurationError as exc:  # (the arguments name what is not there: exit 2)
        raise click.UsageError(str(exc)) from exc
    click.echo(json.dumps(document, indent=2))
