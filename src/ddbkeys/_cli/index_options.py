"""The options of the commands that use the marker index or its proof (kept apart from
:mod:`ddbkeys._cli.common` so that the other commands do not load the index's code)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import click

from ddbkeys._cli.common import Connection, FloatRange, index_name, parse_key
from ddbkeys._schema import describe
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN

__all__ = [
    "estimated_own_items_option",
    "given_sort_key",
    "given_text",
    "index_name_option",
    "index_options",
    "own_items_option",
    "proof_options",
    "replay_margin_option",
]

F = TypeVar("F", bound=Callable[..., Any])


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
        type=FloatRange(0, 3600, max_open=True),
        default=DEFAULT_REPLAY_MARGIN,
        show_default=True,
        metavar="SECONDS",
        help=help_text,
    )


def index_options(func: F) -> F:
    func = marker_sort_key_option(func)
    func = click.option(
        "--marker-attribute",
        default=DEFAULT_MARKER_ATTRIBUTE,
        show_default=True,
        help="The attribute that keys the marker index.",
    )(func)
    return index_name_option(func)


#: Where --marker-sort-key leaves its text (ctx.meta), for :func:`given_sort_key`.
SORT_KEY_META = "ddbkeys.marker_sort_key"


def marker_sort_key_option(func: F) -> F:
    """--marker-sort-key: kept in the context (read against the table's sort key type where
    the index or the listing is opened), not passed to the command."""

    def keep(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        ctx.meta[SORT_KEY_META] = value

    return click.option(
        "--marker-sort-key",
        metavar="VALUE",
        expose_value=False,
        callback=keep,
        help="The markers' sort key value, where the index was made with another than the "
        "default (marker_sort_key= in Python): a number for a number sort key, base64 for a "
        "binary one. Give it to every command on that index and to its listings.",
    )(func)


def index_name_option(func: F) -> F:
    return click.option(
        "--index-name",
        default=DEFAULT_INDEX,
        show_default=True,
        callback=index_name,
        help="The marker index.",
    )(func)


OWN_ITEMS = (
    "List a key that holds only ddbkeys' own items too (its markers, and the counter items of "
    "`ddbkeys ids`: ddbkeys_type = counter), which are left out by default."
)


def _own_items(help_text: str) -> Callable[[F], F]:
    return click.option("--include-own-items", is_flag=True, help=help_text)


#: --include-own-items: list the keys that hold only ddbkeys' own items too.
own_items_option = _own_items(
    f"{OWN_ITEMS} Not with --method index (the marker index marks only collections holding your "
    "items)."
)
#: --include-own-items of ``estimate``: the keys it counts (it has no --method).
estimated_own_items_option = _own_items(
    f"Estimate a listing with --include-own-items: {OWN_ITEMS[0].lower()}{OWN_ITEMS[1:]} Auto "
    "would then not use the marker index."
)


def given_text() -> str | None:
    """--marker-sort-key as written (None: not given)."""
    text: str | None = click.get_current_context().meta.get(SORT_KEY_META)
    return text


def given_sort_key(connection: Connection, table_name: str | None) -> str | Decimal | bytes | None:
    """--marker-sort-key in the table's sort key type (None: not given), read against the
    table's description; a usage error naming the value where it is not of that type."""
    text = given_text()
    if text is None or table_name is None:
        return text
    sort_key = describe(connection.client(), table_name).sort_key
    if sort_key is None:  # (the command's own error says so, naming the table)
        return text
    return parse_key(text, sort_key.type, table_name, "--marker-sort-key", "sort")
