"""What the marker index's commands share: opening the index from the options, KEYS as given, the
error for collections that cannot be marked, and what ``follow`` says of a stream off or held."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ddbkeys._cli.common import Connection, parse_key
from ddbkeys._cli.index_options import given_sort_key, replay_margin_option
from ddbkeys._key_json import cut
from ddbkeys.partition_keys import (
    MarkerIndex,
    StateStore,
    plain_key,
)
from ddbkeys.partition_keys._index.backfill_wait import same_markers
from ddbkeys.partition_keys._listing.text import show_key

if TYPE_CHECKING:
    from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = [
    "clash_error",
    "held",
    "margin_option",
    "markers_as_recorded",
    "open_index",
    "parse_keys",
    "stream_off",
]

#: --replay-margin of backfill and follow --backfill.
margin_option = replay_margin_option(
    "The replay margin of the listings that will prove the index: the backfill begins at "
    "least this long after the maintainer's first position (waiting if needed)."
)


def stream_off(table: str) -> str:
    """What ``follow`` says of a table whose stream it found off (it waits for a new one)."""
    turn_on = f"ddbkeys partition-keys index stream -t {table}"
    return f"the table's stream is off: waiting for it to be turned on (`{turn_on}`)"


def held(table: str) -> str:
    """What ``follow`` says when a shard's position stops advancing (the pending set full)."""
    return (
        f"the pending set of {table}'s index is full (collections whose markers did not settle "
        "because they change fast): the position in a shard stops advancing until they settle; "
        "markers are still kept, and listings read the stream from the held position"
    )


def open_index(
    connection: Connection, table_name: str, index_name: str, marker_attribute: str | None
) -> MarkerIndex:
    return MarkerIndex(
        connection.client(),
        table_name,
        index_name=index_name,
        marker_attribute=marker_attribute,
        marker_sort_key=given_sort_key(connection, table_name),
        deadline=connection.timeout,
    )


def markers_as_recorded(index: MarkerIndex, state_table: str | None) -> Evidence | None:
    """Refuse (nothing written) where the index's record in ``state_table`` knows its markers
    otherwise (another --marker-sort-key or --marker-attribute): a marker written or looked
    for at another sort key would be a second set, read as data (``index mark``, ``unmark``
    by hand, as ``repair`` and the maintainers). The record (None: none)."""
    saved = StateStore(index.client, state_table, deadline=index.core.deadline).load(
        index.table, index.name
    )
    return same_markers(saved, index.core, index.table_info())


def parse_keys(index: MarkerIndex, keys: tuple[str, ...], table_name: str) -> list[Any]:
    """KEYS as given on the command line, in the table's partition key type."""
    key_type = index.table_info().partition_key.type
    return [parse_key(k, key_type, table_name, "KEYS") for k in keys]


def clash_error(table_name: str, clashes: list[Any], index: MarkerIndex) -> click.ClickException:
    """The error (exit 1) for collections that cannot be marked."""
    shown = ", ".join(cut(show_key(plain_key(k))) for k in clashes[:20])
    more = f" and {len(clashes) - 20} more" if len(clashes) > 20 else ""
    return click.ClickException(
        f"{len(clashes)} collection(s) of table {table_name!r} cannot be marked: {shown}{more}. "
        "Each holds a data item at the marker's sort key (its "
        f"{index.attribute!r} is not its own partition key), left as it is; give the markers "
        "another sort key value (--marker-sort-key)."
    )
