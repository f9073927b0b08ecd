"""The CLI's click groups: errors as one ``Error: ...`` line, and commands loaded on demand.

Nothing here imports boto3, botocore or rich: ``ddbkeys --version`` and ``ddbkeys --help`` load
only click and this package, and each command loads what it needs when it runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "CUT_NOTE",
    "INTERRUPTED_NOTE",
    "DdbKeysGroup",
    "LazyCommand",
    "LazyGroup",
    "given_defaults",
    "open_standard_streams",
    "quiet_output",
    "rich_console",
    "stdout_closed",
]

#: ``ctx.meta`` key: what a command says when Ctrl-C interrupts it, where it knows better than
#: :data:`INTERRUPTED` (a listing before its first key: nothing written, run it again).
INTERRUPTED_NOTE = "ddbkeys.interrupted"
INTERRUPTED = "Interrupted (a request already sent may still be applied)."

#: ``ctx.meta`` key: what a command says on standard error when the reader of its output went
#: away before reading all of it, where that lost something (the ids ``ids next`` took).
CUT_NOTE = "ddbkeys.cut"


def _error_line(exc: Exception) -> str:
    """The one line for an error that reached the CLI (what it needs is loaded only then)."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    from ddbkeys._cli.errors import (  # noqa: PLC0415
        DEBUG_ENV,
        error_text,
        internal_error_text,
        os_error_text,
    )
    from ddbkeys._errors import DdbKeysError  # noqa: PLC0415

    if isinstance(exc, (DdbKeysError, BotoCoreError, ClientError)):
        return error_text(exc)
    if isinstance(exc, OSError):  # a full disk, a read-only folder: the machine's, not ours
        return os_error_text(exc)
    # the last resort: no traceback for any input
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
    return internal_error_text(exc)


#: The exit status of a command whose reader went away: 128 + SIGPIPE, as the shell's.
SIGPIPE_EXIT = 141


def open_standard_streams() -> None:
    """The standard streams a process began without (``>&-``, ``2>&-``, a service manager's
    closed descriptor), opened before any command runs:

    - each closed descriptor 0-2 onto os.devnull, so that a file or socket opened later does
      not take its number (a line meant for standard error would be written into it);
    - with standard error closed, click wrote its ``Error:`` line to standard output, into the
      ids or keys there: it goes nowhere now, and the exit status says it;
    - with standard output closed, what a command prints goes to standard error; a command
      that would take or read something only to print it (``ids next``, a listing without
      ``--output-file``) refuses first (:func:`stdout_closed`).
    """
    if os.name == "posix":
        for descriptor in (0, 1, 2):
            try:
                os.fstat(descriptor)
            except OSError:
                opened = os.open(os.devnull, os.O_RDWR)  # (the lowest free number: this one)
                if opened != descriptor:
                    os.dup2(opened, descriptor)
                    os.close(opened)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the process)
    if sys.stdout is None:
        sys.stdout = sys.stderr  # (how stdout_closed() knows it)


def stdout_closed() -> bool:
    """Whether standard output was closed when the process began: :func:`open_standard_streams`
    made it standard error itself (the one stream otherwise never is the other)."""
    return sys.stdout is None or sys.stdout is sys.stderr


def quiet_output(*streams: Any) -> None:
    """``streams`` (by default standard output and error) sent nowhere from now on: what is
    still buffered for a pipe no one reads would fail again as Python flushes it on exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in streams or (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def rich_console(**settings: Any) -> Console:
    """A rich ``Console(**settings)`` that writes as the CLI's other lines do:

    - into a pipe whose reader went away, it raises ``BrokenPipeError``, which
      :meth:`DdbKeysGroup.invoke` ends with 141 (rich's own handler exits 1, which ``demo``
      says means a broken promise);
    - off a terminal, a line is never wrapped at 80 columns (a log or ``grep`` gets one line).
    """
    from rich.console import Console  # noqa: PLC0415 (rich: only once a command runs)

    console = Console(**settings)

    def reader_gone() -> None:
        console.quiet = True  # nothing more for a pipe no one reads
        raise BrokenPipeError

    console.on_broken_pipe = reader_gone  # type: ignore[method-assign]
    if not console.is_terminal:
        console.soft_wrap = True
    return console


@dataclass(frozen=True)
class LazyCommand:
    """A command of a :class:`LazyGroup`: where it is defined (``module:attribute``), the first
    paragraph of its help, shown in the group's ``--help`` without loading it (a test checks it
    against the command's own), and, for a group, its own commands loaded on demand too."""

    target: str
    summary: str | None = None
    commands: Mapping[str, LazyCommand] = field(default_factory=dict)


class LazyGroup(click.Group):
    """A group whose commands are imported when first used (click's lazy subcommands), so that
    a command loads only its own modules. ``list_commands`` keeps click's alphabetical order."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.lazy.get(cmd_name)
        if cmd_name not in self.commands and entry is not None:
            module, _, attribute = entry.target.partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if entry.commands:
                if not isinstance(command, LazyGroup):
                    raise TypeError(f"{entry.target} is not a LazyGroup")
                command.lazy.update(entry.commands)
            if not isinstance(command, click.Command):
                raise TypeError(f"{entry.target} is not a click command")
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list of commands, from each one's summary where it has one (not loading it)."""
        rows = []
        for name in self.list_commands(ctx):
            entry = self.lazy.get(name)
            command: click.Command | None
            if name in self.commands or entry is None or entry.summary is None:
                command = self.get_command(ctx, name)
                if command is None or command.hidden:
                    continue
            else:
                command = click.Command(name, help=entry.summary)
            rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, c.get_short_help_str(limit)) for name, c in rows])


class DdbKeysGroup(LazyGroup):
    """A click group that turns every error into one ``Error: ...`` line, exit code 1: library
    and botocore errors by their message, anything else as an internal error (its traceback
    on stderr only with DDBKEYS_DEBUG=1)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, and for a command of a group under this one (`ddbkeys index`), the line
        that names it whole (`ddbkeys partition-keys index`)."""
        name = args[0] if args else ""
        if name and self.get_command(ctx, name) is None:
            for group, entry in sorted(self.lazy.items()):
                if name in entry.commands:
                    raise click.UsageError(
                        f"No such command {name!r}: did you mean `ddbkeys {group} {name}`?", ctx
                    )
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C: 130, as a shell expects (click would say 1)
            click.echo(ctx.meta.get(INTERRUPTED_NOTE) or INTERRUPTED, err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # The reader went away (| head, | true): no error line, and the output is cut, so
            # not 0 (a verdict such as verify's may not have been read): 141, as the shell
            # says of a writer SIGPIPE stopped. (A listing stops with 0 on its own: every key
            # it printed is right.) Where the command took something its output was to tell
            # (ids), standard error says what, if it still can.
            quiet_output(sys.stdout)
            if ctx.meta.get(CUT_NOTE):
                with contextlib.suppress(OSError, ValueError):
                    click.echo(ctx.meta[CUT_NOTE], err=True)
            quiet_output(sys.stderr)
            ctx.exit(SIGPIPE_EXIT)
        except Exception as exc:
            raise click.ClickException(_error_line(exc)) from exc


class _Defaults(Mapping[str, Any]):
    """click's default_map for ``command`` from the options ``given`` before a command's name:
    each option of the command by name, each subcommand's own map by its name, resolved when
    click asks (so that a lazy group loads only the command that runs)."""

    def __init__(self, command: click.Command, given: dict[str, Any]) -> None:
        self._command = command
        names = {param.name for param in command.params}
        self._own = {k: v for k, v in given.items() if k in names}
        self._given = given

    def _sub(self, name: str) -> click.Command | None:
        if not isinstance(self._command, click.Group):
            return None
        return self._command.get_command(click.Context(self._command), name)

    def __getitem__(self, key: str) -> Any:
        if key in self._own:
            return self._own[key]
        sub = self._sub(key)
        if sub is None:
            raise KeyError(key)
        return _Defaults(sub, self._given)

    def __iter__(self) -> Iterator[str]:
        yield from self._own
        if isinstance(self._command, click.Group):
            ctx = click.Context(self._command)
            yield from (n for n in self._command.list_commands(ctx) if n not in self._own)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def given_defaults(command: click.Command, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` as the defaults of ``command`` and of every command under it (click's
    default_map), the commands under it resolved only when click looks them up."""
    return _Defaults(command, given)  # type: ignore[return-value]
