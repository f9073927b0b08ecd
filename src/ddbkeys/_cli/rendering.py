"""One JSON document as the AWS CLI would print it: ``--output json|table|text`` and ``--query``.

The commands that print one document (``ids next``, ``index verify``, ``estimate``, ...) build
it once; this module filters it with a JMESPath ``--query`` (the language of the AWS CLI, which
botocore already installs) and renders it:

- ``json``: the document (or the query's result), indented, keys sorted;
- ``table``: boxed tables, as the AWS CLI's ``--output table``: a mapping as rows of key and
  value, a list of mappings as one row each, nested values as compact JSON in their cell;
- ``text`` with a query: the result as the AWS CLI's text output does (a scalar as it is, a
  list of scalars tab-separated on one line, a list of lists or mappings a line each).

Which format applies when ``--output`` is not given: ``AWS_DEFAULT_OUTPUT``, then ``output`` of
the AWS profile, where it is one of these three; else ``text``. The listing of partition keys
never takes its format from there: a user with ``output = json`` in their AWS config still
gets one key per line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import click
import jmespath
from jmespath.exceptions import JMESPathError

from ddbkeys._key_json import escaped

__all__ = [
    "FORMATS",
    "apply_query",
    "check_query",
    "configured_output",
    "render",
    "render_table",
    "render_text",
]

#: The formats of the commands that print one document.
FORMATS = ("text", "json", "table")


def configured_output(
    environ: Mapping[str, str] | None = None, profile: str | None = None
) -> str | None:
    """The format the AWS CLI would use here when none is given (``AWS_DEFAULT_OUTPUT``, then
    ``output`` of ``profile``, by default the one in use), when it is one ddbkeys has; else
    None."""
    env = os.environ if environ is None else environ
    wanted = env.get("AWS_DEFAULT_OUTPUT") or _profile_output(profile)
    wanted = (wanted or "").strip().lower()
    return wanted if wanted in FORMATS else None


def _profile_output(profile: str | None = None) -> str | None:
    """``output`` of ``profile`` (by default the AWS profile in use) in the AWS config file,
    or None."""
    try:
        import botocore.session  # noqa: PLC0415 (only when a command prints a document)

        session = botocore.session.Session(profile=profile)
        value = session.get_scoped_config().get("output")
    except Exception:  # a missing or broken profile: no preference (the client will say why)
        return None
    return str(value) if value else None


def check_query(text: str | None) -> jmespath.parser.ParsedResult | None:
    """``--query`` compiled, or a usage error that says where it is wrong."""
    if text is None:
        return None
    try:
        return jmespath.compile(text)
    except JMESPathError as exc:
        why = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise click.BadParameter(f"{text!r} is not a JMESPath expression ({why})") from exc


def apply_query(document: Any, query: str | None) -> Any:
    """The part of ``document`` that ``query`` selects (all of it without one)."""
    compiled = check_query(query)
    if compiled is None:
        return document
    plain = json.loads(json.dumps(document, default=str))  # (Decimal and the like as JSON has)
    return compiled.search(plain)


def render(document: Any, output: str, query: str | None = None, title: str = "") -> str:
    """``document`` filtered by ``query`` and rendered as ``output``."""
    found = apply_query(document, query)
    if output == "table":
        return render_table(found, title)
    if output == "text":
        return render_text(found)
    return json.dumps(found, indent=2, sort_keys=True, default=str)


def _cell(value: Any) -> str:
    """One value as a cell: one line, its line breaks escaped as in text output (a key holding
    a newline made two rows of a table, a helper found)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return "None" if value is None else escaped(str(value))


def render_table(value: Any, title: str = "") -> str:
    """``value`` as boxed tables (ASCII, as the AWS CLI draws them). A value wider than the
    table is folded over more lines of its cell, never cut short (rich's default drew
    ``ids next -n 20000`` as its first 27 ids and an ellipsis)."""
    from rich import box  # noqa: PLC0415 (rich: only when a table is drawn)
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    table = Table(box=box.ASCII, show_lines=False)

    def column(name: str) -> None:
        table.add_column(name, overflow="fold")

    if isinstance(value, dict):
        column("key")
        column("value")
        for key in sorted(value):
            table.add_row(str(key), _cell(value[key]))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        columns = sorted({k for row in value for k in row})
        for name in columns:
            column(name)
        for row in value:
            table.add_row(*(_cell(row.get(c, "")) for c in columns))
    elif isinstance(value, list):
        column("value")
        for item in value:
            table.add_row(_cell(item))
    else:
        column("value")
        table.add_row(_cell(value))
    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    with console.file:
        console.print(table)
    drawn = console.export_text().rstrip("\n")
    return f"{title}\n{drawn}" if title else drawn  # (a title above: never wrapped)


def render_text(value: Any) -> str:
    """``value`` as the AWS CLI's text output: tab-separated values, a row a line."""
    if isinstance(value, dict):
        return "\t".join(_cell(value[k]) for k in sorted(value))
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "\t".join(_cell(v) for v in value)
        return "\n".join(render_text(v) for v in value)
    return _cell(value)
