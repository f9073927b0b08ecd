"""What every command shares: the connection options, --output, and turning errors into messages."""

from __future__ import annotations

import binascii
import contextlib
import functools
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from ddbkeys._cli.rendering import FORMATS, check_query, configured_output, render
from ddbkeys._key_json import key_of_text
from ddbkeys._retry import DEFAULT_DEADLINE

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from rich.console import Console

    from ddbkeys._local import DynamoDBLocal

F = TypeVar("F", bound=Callable[..., Any])


class IntRange(click.IntRange):
    """click's IntRange, whose wrong value reads "'1e3' is not a valid integer" (click's
    own says "integer range", which a newcomer takes for a range to give)."""

    name = "integer"


class FloatRange(click.FloatRange):
    """click's FloatRange, whose wrong value reads "... is not a valid number"."""

    name = "number"


class NumberArgument(click.Command):
    """A command whose first argument is a number of 0 or more: a negative one (``ids set
    -5``) is judged as that argument's value ("-5 is not in the range 0<=x<=..."), where
    click took it for an option and said "No such option '-5'"."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # (click's parser takes from ``args`` as it reads)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            # (click reads "-1.5" as the options -1 and -.: the token as written)
            name = next((a for a in given if a.startswith(exc.option_name)), exc.option_name)
            argument = next((p for p in self.params if isinstance(p, click.Argument)), None)
            if argument is None or not _negative(name):
                raise
            argument.type.convert(name, argument, ctx)  # (its own BadParameter: no negatives)
            raise


def _negative(text: str) -> bool:
    """Whether ``text`` is written as a negative number (-5, -1.5, -1e3)."""
    try:
        return text.startswith("-") and math.isfinite(float(text))
    except ValueError:
        return False


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
        from ddbkeys._connect import make_client  # noqa: PLC0415

        if self.local:
            from ddbkeys._local import DynamoDBLocal  # noqa: PLC0415

            ctx = click.get_current_context()
            err_console_note("Starting an embedded DynamoDB Local (--local)...")
            if self.server is None:
                self.server = ctx.with_resource(DynamoDBLocal())
            return make_client(self.server.endpoint_url, timeout=self.timeout)
        return make_client(self.endpoint_url, self.region, self.profile, timeout=self.timeout)


def _spinner(text: str) -> Any:
    from rich.spinner import Spinner  # noqa: PLC0415 (rich: only for the commands that show one)

    return Spinner("dots", text)


class StatusLine:
    """A spinner and one line of text on a terminal's stderr that never captures stdout (rich's
    own ``Console.status`` redirects stdout into the display, which would send piped keys and
    ids to the terminal instead of the pipe)."""

    def __init__(self, console: Console, text: str) -> None:
        from rich.live import Live  # noqa: PLC0415

        self._live = Live(
            _spinner(text),
            console=console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
            refresh_per_second=8,
        )

    def start(self) -> None:
        self._live.start()

    def update(self, text: str) -> None:
        self._live.update(_spinner(text))

    def stop(self) -> None:
        self._live.stop()


#: What the estimate's spinner says it waits for (on a terminal; helper-86: a sample of a
#: slow endpoint took minutes with no word).
SAMPLING = "sampling {table} for the estimate (about 32 read units)..."


@contextlib.contextmanager
def waiting(text: str) -> Iterator[StatusLine | None]:
    """A spinner and ``text`` on a terminal's stderr while the block runs (none off a terminal),
    for work that may take long with nothing else to show: what it waits for. The block is
    given the line (to update), or None off a terminal."""
    from ddbkeys._cli.group import rich_console  # noqa: PLC0415 (rich: only once a command runs)

    stderr = rich_console(stderr=True)
    status = StatusLine(stderr, text) if stderr.is_terminal else None
    if status is not None:
        status.start()
    try:
        yield status
    finally:
        if status is not None:
            status.stop()


def err_console_note(message: str) -> None:
    """A note on stderr, kept out of the way of piped output."""
    click.echo(message, err=True)


@contextlib.contextmanager
def warnings_said(category: type[Warning]) -> Iterator[list[str]]:
    """While it lasts, each warning of ``category`` the library gives is printed on stderr as
    it comes (``Warning: ...``, one line), every time, instead of Python's default form; the
    block is handed the list of those said."""
    said: list[str] = []

    def show(message: Warning | str, *_: Any, **__: Any) -> None:
        from ddbkeys._cli.errors import cli_words  # noqa: PLC0415 (only once one comes)

        said.append(cli_words(str(message)))
        click.echo(f"Warning: {said[-1]}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", category)
        warnings.showwarning = show
        yield said


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
        type=FloatRange(min=0, min_open=True, max=86_400),
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


def table_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A table's name DynamoDB would refuse is a usage error (exit 2), said before any request."""
    return _named(ctx, param, value, "a table's name")


def index_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An index's name DynamoDB would refuse (the same rule as a table's) is a usage error."""
    return _named(ctx, param, value, "an index's name")


def _named(ctx: click.Context, param: click.Parameter, value: str | None, what: str) -> str | None:
    # (botocore, which _schema loads, is not for --help: loaded when a name is given)
    from ddbkeys._schema import _TABLE_NAME, TABLE_NAME_RULE  # noqa: PLC0415

    if value is not None and not _TABLE_NAME.match(value):
        given = f"{value!r}"
        if ctx.get_parameter_source(param.name or "") is ParameterSource.ENVIRONMENT:
            given = f"{param.envvar}={value!r} (from the environment)"
        raise click.BadParameter(f"{given} is not {what}: those are {TABLE_NAME_RULE}.")
    return value


def table_option(func: F) -> F:
    """Add the required --table-name / -t."""
    return click.option(
        "--table-name",
        "-t",
        required=True,
        metavar="TABLE",
        callback=table_name,
        help="The DynamoDB table.",
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
        "CLI; --output json shows the whole document).",
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
        echo_whole(json_text(value))
        return
    output = str(ctx.params.get("output") or "json")
    title = ctx.command_path.removeprefix(ctx.find_root().info_name or "").strip()
    echo_whole(render(value, output, ctx.meta.get(QUERY_KEY), title))


def echo_whole(text: str) -> None:
    """``text`` and a newline on standard output: every byte, or ``BrokenPipeError``.

    Python's buffered standard output takes a write cut short by a pipe whose reader went away
    for a whole one (``ids next -n 100000 | head -1`` had exited 0, its ids unread), so the
    bytes go out here with ``os.write`` until all are written; a stream that is no file (a
    test's) takes ``click.echo``."""
    stream = sys.stdout
    try:
        descriptor = stream.fileno() if os.name == "posix" else -1
    except (AttributeError, OSError, ValueError):
        descriptor = -1
    if descriptor < 0:
        click.echo(text)
        return
    stream.flush()
    left = memoryview(f"{text}\n".encode(stream.encoding or "utf-8", stream.errors or "strict"))
    while left:
        left = left[os.write(descriptor, left) :]


def stored_number(value: Decimal) -> Decimal:
    """A number as DynamoDB keeps it: 1.0 and 1e0 are 1, 1.50 is 1.5, 1E+2 is 100 (the same
    key), so that what a command says names the key as the table holds it (helper-89 C7:
    "collection Decimal('1.0')" for the key 1). InvalidOperation where it is no finite
    number."""
    if not value.is_finite():
        raise InvalidOperation(value)
    with localcontext() as context:
        context.prec = 200  # (DynamoDB: 38 significant digits, exponents -130 to +125)
        reduced = value.normalize() if value else Decimal(0)  # (-0.0 is 0)
        return reduced.quantize(Decimal(1)) if reduced == reduced.to_integral_value() else reduced


def parse_key(
    text: str,
    key_type: str,
    table: str,
    param_hint: str = "--partition-key",
    which: str = "partition",
) -> str | Decimal | bytes:
    """A key value given on the command line, in the table's key type (``which``: the
    partition or the sort key, for the error)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.BadParameter(
            f"{text.encode('utf-8', 'backslashreplace').decode()!r} is not valid UTF-8 text",
            param_hint=param_hint,
        ) from exc
    try:
        value = key_of_text(text, key_type)
        return stored_number(value) if isinstance(value, Decimal) else value
    except InvalidOperation as exc:
        raise click.BadParameter(
            f"table {table!r} has a number {which} key; {text!r} is not a number",
            param_hint=param_hint,
        ) from exc
    except binascii.Error as exc:
        raise click.BadParameter(
            f"table {table!r} has a binary {which} key: give it as base64",
            param_hint=param_hint,
        ) from exc


def state_table_option(func: F) -> F:
    """Add --state-table (also $DDBKEYS_STATE_TABLE): where the marker index's evidence lives."""
    return click.option(
        "--state-table",
        envvar="DDBKEYS_STATE_TABLE",
        default=None,
        metavar="NAME",
        callback=table_name,
        help="The table that holds the marker index's evidence (backfill, maintainer's "
        "positions).  [default: $DDBKEYS_STATE_TABLE, else ddbkeys-state]",
    )(func)
