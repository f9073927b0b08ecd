"""The CLI reference (docs/cli.md), generated from each command's ``--help``.

    python -m ddbkeys._cli.reference            # print it
    python -m ddbkeys._cli.reference --write    # write docs/cli.md

A test compares docs/cli.md with :func:`render`, so the reference cannot drift from the code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

WIDTH = 100
HEADER = """# CLI reference

Generated from `--help` by `python -m ddbkeys._cli.reference --write` (`make docs`); a test fails
when it no longer matches the code. Every command also takes `-h`.

"""


def _walk(
    command: click.Command, ctx: click.Context
) -> Iterator[tuple[click.Command, click.Context]]:
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                child = click.Context(
                    sub, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH
                )
                yield from _walk(sub, child)


def render() -> str:
    """The whole reference, as Markdown."""
    from ddbkeys._cli import cli  # noqa: PLC0415

    root = click.Context(
        cli,
        info_name="ddbkeys",
        terminal_width=WIDTH,
        max_content_width=WIDTH,
        **cli.context_settings,
    )
    commands = list(_walk(cli, root))
    out = [HEADER]
    out.append(
        "\n".join(f"- [`{c.command_path}`](#{_anchor(c.command_path)})" for _, c in commands)
    )
    out.append("\n")
    for command, ctx in commands:
        out.append(f"\n## {ctx.command_path}\n\n```text\n{command.get_help(ctx).rstrip()}\n```\n")
    return "".join(out)


def _anchor(title: str) -> str:
    return "".join(ch for ch in title.lower().replace(" ", "-") if ch.isalnum() or ch in "-_")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in args:
        target = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
