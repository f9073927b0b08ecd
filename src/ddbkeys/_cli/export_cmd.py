"""``ddbkeys partition-keys export start|wait``: a table's export to S3, to list its keys from
(``--from-export``) at no read capacity; thin commands over
:func:`ddbkeys.partition_keys.start_export` and :func:`~ddbkeys.partition_keys.wait_export`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from ddbkeys._cli.common import (
    Connection,
    FloatRange,
    connection_options,
    echo_json,
    output_option,
    structured,
    table_option,
    waiting,
)

if TYPE_CHECKING:
    from ddbkeys.partition_keys._export.described import TableExport

__all__ = ["export_group"]

#: --format's choices, as AWS names them.
FORMATS = {"dynamodb-json": "DYNAMODB_JSON", "ion": "ION"}


@click.group("export")
def export_group() -> None:
    """Export a table to S3 (DynamoDB's ExportTableToPointInTime), to list its keys from.

    An export reads no capacity of the table: DynamoDB writes it from the table's
    point-in-time recovery (PITR) backup, which must be on. `export start` prints the export's
    folder, the URI `ddbkeys partition-keys --from-export` takes.

    \b
    Examples:
      ddbkeys partition-keys export start -t T --s3-bucket my-exports --wait
      ddbkeys partition-keys export wait --export-arn ARN
    """


def _poll_options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--max-wait",
        type=FloatRange(min=0, min_open=True),
        default=86_400.0,
        show_default=True,
        metavar="SECONDS",
        help="Give up waiting after this long (the export goes on: wait for it again).",
    )(func)
    return click.option(
        "--poll",
        type=FloatRange(min=0, min_open=True),
        default=10.0,
        show_default=True,
        metavar="SECONDS",
        help="Ask DynamoDB how the export stands this often.",
    )(func)


@export_group.command("start")
@table_option
@click.option("--s3-bucket", required=True, metavar="BUCKET", help="The bucket to export to.")
@click.option(
    "--s3-prefix",
    metavar="PREFIX",
    help="The folder in the bucket; the export goes to PREFIX/AWSDynamoDB/<export id>/.",
)
@click.option(
    "--format",
    "export_format",
    type=click.Choice(list(FORMATS)),
    default="dynamodb-json",
    show_default=True,
    help="The format of the export's data files (ion needs pip install 'ddbkeys[ion]' to read).",
)
@click.option(
    "--client-token",
    metavar="TOKEN",
    help="Send this ClientToken (default: a new one). The same command with the same token "
    "within 8 hours starts no second export; every retry of one command sends one token.",
)
@click.option("--wait", is_flag=True, help="Wait until the export is COMPLETED.")
@_poll_options
@connection_options
@output_option
def start_command(
    table_name: str,
    s3_bucket: str,
    s3_prefix: str | None,
    export_format: str,
    client_token: str | None,
    wait: bool,
    poll: float,
    max_wait: float,
    connection: Connection,
    output: str,
) -> None:
    """Start a full export of the table to S3 at the current time, and print its folder, the
    URI to pass to --from-export (with --wait, once the export is COMPLETED).

    The export reads no capacity of the table. It needs point-in-time recovery (PITR) on the
    table: with PITR off this is a one-line error saying how to turn it on, and nothing is
    started. AWS bills PITR by the table's size (per GB-month) and an export by the table's
    size at the export time (per GB): https://aws.amazon.com/dynamodb/pricing/.

    \b
    Examples:
      ddbkeys partition-keys export start -t T --s3-bucket my-exports --s3-prefix ddbkeys --wait
      ddbkeys partition-keys export start -t T --s3-bucket my-exports --format ion
      ddbkeys partition-keys export start -t T --s3-bucket B --output json --query export_arn
    """
    from ddbkeys.partition_keys._export.start import start_export  # noqa: PLC0415

    client = connection.client()
    export = start_export(
        client,
        table_name,
        s3_bucket,
        s3_prefix=s3_prefix,
        export_format="ION" if FORMATS[export_format] == "ION" else "DYNAMODB_JSON",
        client_token=client_token,
        deadline=connection.timeout,
    )
    if wait and export.status != "COMPLETED":
        click.echo(f"Export {export.export_arn} of table {export.table!r} started.", err=True)
        done = _waited(client, export.export_arn, poll, max_wait)
        export = replace(done, client_token=done.client_token or export.client_token)
    elif export.status != "COMPLETED":
        click.echo(
            f"Export {export.export_arn} of table {export.table!r} started ({export.status}): "
            f"`ddbkeys partition-keys export wait --export-arn {export.export_arn}` waits for it.",
            err=True,
        )
    _show(export, output)


def _arn(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from ddbkeys._errors import ConfigurationError  # noqa: PLC0415
    from ddbkeys.partition_keys._export.described import check_export_arn  # noqa: PLC0415

    try:
        return check_export_arn(value)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), ctx, param) from exc


@export_group.command("wait")
@click.option(
    "--export-arn",
    required=True,
    callback=_arn,
    metavar="ARN",
    help="The export, as `export start` printed it (arn:aws:dynamodb:...:table/T/export/ID).",
)
@_poll_options
@connection_options
@output_option
def wait_command(
    export_arn: str, poll: float, max_wait: float, connection: Connection, output: str
) -> None:
    """Wait until the export is COMPLETED (how it stands shows on stderr, on a terminal), then
    print its folder, the URI to pass to --from-export. An export DynamoDB says FAILED is a
    one-line error with DynamoDB's reason (exit 1). Reads no capacity.

    \b
    Examples:
      ddbkeys partition-keys export wait --export-arn ARN
      ddbkeys partition-keys export wait --export-arn ARN --poll 60 --output json
    """
    _show(_waited(connection.client(), export_arn, poll, max_wait), output)


def _waited(client: object, export_arn: str, poll: float, max_wait: float) -> TableExport:
    """The export once COMPLETED, a status line on a terminal's stderr meanwhile."""
    from ddbkeys.partition_keys._export.start import wait_export  # noqa: PLC0415

    began = time.monotonic()
    with waiting("waiting for the export...") as status:

        def progress(export: TableExport) -> None:
            if status is not None:
                status.update(_standing(export, time.monotonic() - began))

        return wait_export(client, export_arn, poll=poll, deadline=max_wait, on_progress=progress)


def _standing(export: TableExport, waited: float) -> str:
    minutes, seconds = divmod(int(waited), 60)
    return (
        f"export {export.export_id} of {export.table}: {export.status} "
        f"(waited {minutes}m {seconds:02d}s; Ctrl-C stops waiting, not the export)"
    )


def _show(export: TableExport, output: str) -> None:
    """The export's folder on stdout (its description with --output json), and on stderr,
    once it is COMPLETED, the command that lists its keys."""
    if structured(output):
        echo_json(export.as_dict())
    else:
        click.echo(export.uri)
    if export.status == "COMPLETED":
        click.echo(
            f"List its keys: ddbkeys partition-keys -t {export.table} --from-export {export.uri}",
            err=True,
        )
