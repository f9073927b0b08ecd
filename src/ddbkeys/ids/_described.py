"""The tables the id strategies have described, kept once per process.

A Lambda handler builds its id objects in every invocation; each object reads its table's
key schema before its first write. Kept here, keyed by the endpoint, the region and the table,
the description is read once per process instead of once per object. What the strategies take
from it, the key schema and the replicas, changes only when the table is deleted and made
again, or made global: a write that finds the table gone (ResourceNotFoundException) or its key
not matching (a key-schema ValidationException) drops the table's entry, so the next object
reads it afresh. (The listings do not use this: they describe the table once per listing, for
its current stream and indexes.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ddbkeys._schema import TableInfo

__all__ = ["MOST_TABLES", "TableKey", "forget", "forget_all", "keep", "known", "table_key"]

#: How many descriptions a process keeps (the least recently used goes first).
MOST_TABLES = 256

TableKey = tuple[str, str, str]

_lock = threading.Lock()
_tables: OrderedDict[TableKey, TableInfo] = OrderedDict()


def table_key(client: Any, table: str) -> TableKey:
    """Where a table is: the client's endpoint and region, and the table's name."""
    meta = getattr(client, "meta", None)
    return (
        str(getattr(meta, "endpoint_url", "") or ""),
        str(getattr(meta, "region_name", "") or ""),
        table,
    )


def known(key: TableKey) -> TableInfo | None:
    """The table's description if this process has read it (no request)."""
    with _lock:
        info = _tables.get(key)
        if info is not None:
            _tables.move_to_end(key)
        return info


def keep(key: TableKey, info: TableInfo) -> None:
    """Keep a description this process has read."""
    with _lock:
        _tables[key] = info
        _tables.move_to_end(key)
        while len(_tables) > MOST_TABLES:
            _tables.popitem(last=False)


def forget(key: TableKey) -> None:
    """Drop a table's description: the next object describes it again."""
    with _lock:
        _tables.pop(key, None)


def forget_all() -> None:
    """Drop every description (tests, or a process that knows its tables were made again)."""
    with _lock:
        _tables.clear()
