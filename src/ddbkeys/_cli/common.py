"""What every command shares: the connection options, --output, and turning errors into messages."""

from __future__ import annotations

import base64
import binascii
import errno
import functools
import json
import math
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, TypeVar

import click
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner

from ddbkeys._cli.rendering import FORMATS, check_query, configured_output, render
from ddbkeys._connect import make_client
from ddbkeys._errors import DdbKeysError
from ddbkeys._local import DynamoDBLocal
from ddbkeys._retry import DEFAULT_DEADLINE
from ddbkeys._translate import one_line, translate_error
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_CHOICE = click.Choice(list(FORMATS))
#: Where --query is kept for the command being run (ctx.meta).
QUERY_KEY = "ddbkeys.query"


@dataclass
class Connection:
    """The connection options of one command invocation."""

    endpoint_url: str | None
    region: str | None
    profile: str | None
    local: bool
    server: DynamoDBLocal | None = None
    #: --timeout: the deadline of each call (seconds, above 0); the clients' timeouts fit in it.
    timeout: float = DEFAULT_DEADLINE

    def client(self) -> DynamoDBClient:
        """A client on the chosen endpoint; with --local, on a throwaway embedded DynamoDB Local
        that is stopped when the command ends. Its connect and read timeouts fit in
        ``timeout``, and botocore does not retry: the library's loops do, within it."""
        if self.local:
            ctx = click.get_current_context()
            err_console_note("Starting an embedded DynamoDB Local (--local)...")
            if self.server is None:
                self.server = ctx.with_resource(DynamoDBLocal())
            return make_client(self.server.endpoint_url, timeout=self.timeout)
        return make_client(self.endpoint_url, self.region, self.profile, timeout=self.timeout)


class StatusLine:
    """A spinner and one line of text on a terminal's stderr that never captures stdout (rich's
    own ``Console.status`` redirects stdout into the display, which would send piped keys and
    ids to the terminal instead of the pipe)."""

    def __init__(self, console: Console, text: str) -> None:
        self._live = Live(
            Spinner("dots", text),
            console=console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
            refresh_per_second=8,
        )

    def start(self) -> None:
        self._live.start()

    def update(self, text: str) -> None:
        self._live.update(Spinner("dots", text))

    def stop(self) -> None:
        self._live.stop()


def err_console_note(message: str) -> None:
    """A note on stderr, kept out of the way of piped output."""
    click.echo(message, err=True)


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A number of seconds: not NaN (which every range check lets through)."""
    if value is not None and math.isnan(value):
        raise click.BadParameter(f"{value} is not a number of seconds.", ctx, param)
    return value


ENDPOINT_HELP = (
    "DynamoDB endpoint, e.g. http://127.0.0.1:8000. "
    "Default: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, your AWS config, then AWS."
)


def connection_options(func: F, endpoint_help: str = ENDPOINT_HELP, local: bool = False) -> F:
    """Add --endpoint-url, --region, --profile, --local and --timeout, passed as
    ``connection``. --local (a throwaway, empty DynamoDB Local) is offered only where
    ``local``: on the other commands, whose table must exist already, it is hidden and says
    so when given."""
    offered = local

    @click.option("--endpoint-url", metavar="URL", help=endpoint_help)
    @click.option(
        "--region", metavar="REGION", help="AWS region. Default: AWS_REGION, AWS_DEFAULT_REGION."
    )
    @click.option("--profile", metavar="NAME", help="AWS profile. Default: AWS_PROFILE.")
    @click.option(
        "--local",
        is_flag=True,
        hidden=not offered,
        help="Run against a throwaway embedded DynamoDB Local (no AWS account needed).",
    )
    @click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True, max=86_400),
        callback=_finite,
        metavar="SECONDS",
        default=DEFAULT_DEADLINE,
        show_default=True,
        help="Give up on a call (retries included) that has not succeeded in this time; for "
        "listings, on any one page.",
    )
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        endpoint_url: str | None,
        region: str | None,
        profile: str | None,
        local: bool,
        timeout: float,
        **kwargs: Any,
    ) -> Any:
        if local and not offered:
            raise click.UsageError(
                "--local starts an empty, throwaway DynamoDB Local, where no table of yours "
                "exists: run `ddbkeys local` in another shell and pass the --endpoint-url it "
                "prints (or export AWS_ENDPOINT_URL_DYNAMODB)."
            )
        if local and endpoint_url:
            raise click.UsageError("--local and --endpoint-url cannot be used together.")
        kwargs["connection"] = Connection(endpoint_url, region, profile, local, timeout=timeout)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def table_option(func: F) -> F:
    """Add the required --table-name / -t."""
    return click.option(
        "--table-name", "-t", required=True, metavar="TABLE", help="The DynamoDB table."
    )(func)


def _default_output() -> str:
    ctx = click.get_current_context(silent=True)
    profile = None
    if ctx is not None:  # --profile, after the command's name or before it (not yet parsed:
        # click's placeholder, not a string)
        for given in (ctx.params.get("profile"), (ctx.default_map or {}).get("profile")):
            if isinstance(given, str):
                profile = given
                break
    return configured_output(profile=profile) or "text"


def _keep_query(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    check_query(value)
    if value is not None:
        ctx.meta[QUERY_KEY] = value
    return value


def output_option(func: F) -> F:
    """Add --output text|json|table and --query (JMESPath), as the AWS CLI has them."""
    func = click.option(
        "--query",
        metavar="JMESPATH",
        expose_value=False,
        callback=_keep_query,
        help="Print only this part of the JSON document (a JMESPath expression, as in the AWS "
        "CLI), e.g. --query 'ids[0]'.",
    )(func)
    return click.option(
        "--output",
        type=OUTPUT_CHOICE,
        default=_default_output,
        show_default="AWS_DEFAULT_OUTPUT or your AWS profile's output, else text",
        help="text for people and pipes, json for programs, table for a boxed table.",
    )(func)


def structured(output: str) -> bool:
    """Whether the command prints its JSON document (--output json or table, or a --query)."""
    ctx = click.get_current_context(silent=True)
    return output != "text" or (ctx is not None and QUERY_KEY in ctx.meta)


def json_text(value: Any) -> str:
    """A JSON document as the CLI prints it."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def echo_json(value: Any) -> None:
    """Print the command's one JSON document as --output and --query say."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        click.echo(json_text(value))
        return
    output = str(ctx.params.get("output") or "json")
    title = ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip()
    click.echo(render(value, output, ctx.meta.get(QUERY_KEY), title))


def error_text(exc: BaseException) -> str:
    """The one-line message for an error that reached the CLI."""
    translated = translate_error(exc)
    if isinstance(translated, DdbKeysError):
        return translated.message
    return one_line(exc)


DEBUG_ENV = "DDBKEYS_DEBUG"


def internal_error_text(exc: BaseException) -> str:
    """The line for an error nobody foresaw: what it was, and how to see the traceback."""
    detail = one_line(exc)
    if len(detail) > 300:
        detail = detail[:297] + "..."
    kind = type(exc).__name__
    return (
        f"internal error ({kind}: {detail}); please report it. Set {DEBUG_ENV}=1 for the traceback."
        if detail
        else f"internal error ({kind}); please report it. Set {DEBUG_ENV}=1 for the traceback."
    )


def os_error_text(exc: OSError) -> str:
    """The line for what the machine refused (a full disk, a read-only or missing folder, no
    permission): what and where, in the system's words."""
    what = exc.strerror or one_line(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno or 0)
    code = f" ({name})" if name else ""
    if exc.filename is not None:
        return f"{what}{code}: {os.fsdecode(exc.filename)!r}."
    return f"{what}{code}, writing the output (standard output, or the file it goes to)."


class DdbKeysGroup(click.Group):
    """A click group that turns every error into one ``Error: ...`` line, exit code 1: library
    and botocore errors by their message, anything else as an internal error (its traceback
    on stderr only with DDBKEYS_DEBUG=1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (DdbKeysError, BotoCoreError, ClientError) as exc:
            raise click.ClickException(error_text(exc)) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as exc:  # a full disk, a read-only folder: the machine's, not ours
            raise click.ClickException(os_error_text(exc)) from exc
        except KeyboardInterrupt:  # Ctrl-C: 130, as a shell expects (click would say 1)
            click.echo("Interrupted (a request already sent may still be applied).", err=True)
            ctx.exit(130)
        except Exception as exc:  # the last resort: no traceback for any input
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
            raise click.ClickException(internal_error_text(exc)) from exc


def parse_key(
    text: str, key_type: str, table: str, param_hint: str = "--partition-key"
) -> str | Decimal | bytes:
    """A partition key value given on the command line, in the table's key type."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.BadParameter(
            f"{text.encode('utf-8', 'backslashreplace').decode()!r} is not valid UTF-8 text",
            param_hint=param_hint,
        ) from exc
    if key_type == "N":
        try:
            return Decimal(text)
        except InvalidOperation as exc:
            raise click.BadParameter(
                f"table {table!r} has a number partition key; {text!r} is not a number",
                param_hint=param_hint,
            ) from exc
    if key_type == "B":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error as exc:
            raise click.BadParameter(
                f"table {table!r} has a binary partition key: give it as base64",
                param_hint=param_hint,
            ) from exc
    return text


def state_table_option(func: F) -> F:
    """Add --state-table (also $DDBKEYS_STATE_TABLE): where the marker index's evidence lives."""
    return click.option(
        "--state-table",
        envvar="DDBKEYS_STATE_TABLE",
        default=None,
        metavar="NAME",
        help="The table that holds the marker index's evidence (backfill, maintainer's "
        "positions).  [default: $DDBKEYS_STATE_TABLE, else ddbkeys-state]",
    )(func)


def proof_options(func: F) -> F:
    """Add --replay-margin and --trust-index: how the marker index's proof reads the stream,
    and reading the index as it is."""
    func = click.option(
        "--trust-index",
        is_flag=True,
        help="With --method index: read the index as it is when it cannot be proven complete "
        "(an index your application keeps itself with `index mark`/`unmark`), with a warning.",
    )(func)
    return replay_margin_option(
        "How far back the marker index's proof reads the stream before the maintainer's "
        "positions: writes reach the index and the stream within it (the proof's assumption)."
    )(func)


def replay_margin_option(help_text: str) -> Callable[[F], F]:
    """--replay-margin (seconds, from 0 to under an hour; 60 by default), said as ``help_text``."""
    return click.option(
        "--replay-margin",
        type=click.FloatRange(0, 3600, max_open=True),
        default=DEFAULT_REPLAY_MARGIN,
        show_default=True,
        metavar="SECONDS",
        help=help_text,
    )


def index_options(func: F) -> F:
    func = click.option(
        "--marker-attribute",
        default=DEFAULT_MARKER_ATTRIBUTE,
        show_default=True,
        help="The attribute that keys the marker index.",
    )(func)
    return index_name_option(func)


def index_name_option(func: F) -> F:
    return click.option(
        "--index-name", default=DEFAULT_INDEX, show_default=True, help="The marker index."
    )(func)
