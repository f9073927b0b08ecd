"""The options of the commands that use the marker index or its proof (kept apart from
:mod:`ddbkeys._cli.common` so that the other commands do not load the index's code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ddbkeys._cli.common import index_name
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN

__all__ = [
    "estimated_own_items_option",
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
