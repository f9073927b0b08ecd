"""The names ddbkeys gives its own things unless told otherwise: the marker index, the attribute
that keys it, and the state table of its evidence. Here, apart from
:mod:`ddbkeys.partition_keys`, so that what only names them (``ddbkeys iam-policy``, the ids
audits) does not load the listings."""

from __future__ import annotations

import os

from ddbkeys._errors import ConfigurationError

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "STATE_TABLE",
    "STATE_TABLE_ENV",
    "state_table_name",
]

DEFAULT_INDEX = "ddbkeys-partition-keys"
DEFAULT_MARKER_ATTRIBUTE = "ddbkeys_pk"
STATE_TABLE = "ddbkeys-state"
STATE_TABLE_ENV = "DDBKEYS_STATE_TABLE"


def state_table_name(given: str | None = None) -> str:
    """The state table: ``given``, else ``$DDBKEYS_STATE_TABLE``, else ``ddbkeys-state``."""
    name = given or os.environ.get(STATE_TABLE_ENV) or STATE_TABLE
    if not isinstance(name, str):
        raise ConfigurationError(f"The state table's name must be a string, not {name!r}.")
    return name
