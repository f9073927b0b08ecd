"""docs/cli.md is generated from --help and must match the code."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from ddbkeys._cli import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_up_to_date() -> None:
    # Rendered in a process of its own, as `make docs` does: click caches each command's help
    # option with the names of the first context that asks, and a test that builds a context
    # without the CLI's settings (-h) made this fail in CI with docs/cli.md up to date.
    now = subprocess.run(
        [sys.executable, "-m", "ddbkeys._cli.reference"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    ).stdout
    written = DOC.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(written.splitlines(True), now.splitlines(True), "docs", "now", n=1)
    )
    assert written == now, (
        "docs/cli.md is out of date: run `make docs` (python -m ddbkeys._cli.reference --write)\n"
        + diff[:3000]
    )


def test_reference_holds_each_commands_real_help() -> None:
    """The reference is --help itself, not a paraphrase: compare a few against the CLI."""
    text = DOC.read_text(encoding="utf-8")
    for path in (["ids", "next"], ["partition-keys", "index", "verify"], ["iam-policy"]):
        shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=100).output
        assert f"## ddbkeys {' '.join(path)}\n" in text
        # Wrapping may differ with the terminal; the words may not.
        words = shown.split()
        section = text.split(f"## ddbkeys {' '.join(path)}\n", 1)[1].split("\n## ", 1)[0]
        assert section.split()[1:-1] == words, path


def test_every_option_says_what_it_does() -> None:
    """A newcomer reads --help: every option of every command has its help text."""
    bare: list[str] = []

    def walk(command: click.Command, path: list[str], context: click.Context) -> None:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                bare.append(f"{' '.join(path)} {param.opts[0]}")
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                walk(sub, [*path, name], click.Context(sub, parent=context))

    walk(cli, ["ddbkeys"], click.Context(cli))
    assert not bare, f"options without help: {bare}"
