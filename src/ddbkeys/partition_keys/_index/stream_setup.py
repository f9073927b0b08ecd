"""Turning a table's stream on for the marker index's maintainers (KEYS_ONLY), and waiting
until the table is ACTIVE again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddbkeys._core.steps import (
    Flow,
    Pause,
    describe_table,
    update_table,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline
from ddbkeys._schema import described
from ddbkeys.partition_keys._index.index import MarkerIndex
from ddbkeys.partition_keys._index.marker_core import MarkerCore, send

__all__ = ["enable_stream", "enable_stream_flow"]


def enable_stream_flow(index: MarkerCore) -> Flow[tuple[str, bool]]:
    """:func:`enable_stream` as a flow (each request within ``index``'s deadline)."""

    def describe() -> Flow[Mapping[str, Any]]:
        answer = yield from index.attempts(
            lambda _: send(describe_table({"TableName": index.table})),
            "DescribeTable",
            writes=False,
        )
        return described(answer, index.table)

    table = yield from describe()
    changed = not table.get("StreamSpecification", {}).get("StreamEnabled")
    # A table whose stream was on before (turned off, or the table made again under its name)
    # still names that stream: the new one is another ARN.
    before = table.get("LatestStreamArn") if changed else None
    if changed:
        request = update_table(
            {
                "TableName": index.table,
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
            }
        )
        try:
            yield from index.attempts(lambda _: send(request), "turning the stream on")
        except DdbKeysError:  # (an answer lost, tried again: "already has an enabled stream")
            table = yield from describe()
            if not _turned_on(table, before):
                raise
        else:
            table = yield from describe()
    pause, ends = 0.1, Deadline(600.0, clock=index.retry.clock)
    while not _streaming(table, before):
        if not ends.allows(pause):
            raise DdbKeysError(
                f"Table {index.table!r} is not ACTIVE with its stream on after 600 s.",
                table=index.table,
            )
        yield Pause(pause, index.retry.sleep)
        pause = min(pause * 1.5, 5.0)
        table = yield from describe()
    return str(table["LatestStreamArn"]), changed


def _turned_on(table: Mapping[str, Any], before: str | None) -> bool:
    """Its stream on, and not the one it named ``before``: this command's own change, whose
    answer was lost (the try again is refused)."""
    arn = table.get("LatestStreamArn")
    on = table.get("StreamSpecification", {}).get("StreamEnabled")
    return bool(on) and arn is not None and arn != before


def _streaming(table: Mapping[str, Any], before: str | None) -> bool:
    """ACTIVE, with its stream on, and that stream not the one it named ``before``."""
    return table.get("TableStatus") == "ACTIVE" and _turned_on(table, before)


def enable_stream(
    client: object, table: str | None = None, *, deadline: float | None = DEFAULT_DEADLINE
) -> tuple[str, bool]:
    """Turn ``table``'s stream on (KEYS_ONLY: a record names the item, which is all a maintainer
    needs) if it is off, and wait until the table is ACTIVE again, within ``deadline`` seconds
    in all (None: none). Returns the stream's ARN and whether it was turned on now (a stream
    already on is left as it is, whatever its view)."""
    index = MarkerIndex(client, table, deadline=deadline)
    return index._run(enable_stream_flow(index.core))
