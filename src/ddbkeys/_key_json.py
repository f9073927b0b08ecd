"""A partition key's value as the CLI and the listings show it: a line of text, or JSON. Pure,
and apart from :mod:`ddbkeys.partition_keys` so that the ids commands show their counters'
keys without loading the listings."""

from __future__ import annotations

import base64
from decimal import Decimal

__all__ = ["json_key", "show_key"]


def show_key(value: object) -> str:
    """A key for a line of text: strings as they are, numbers as written, bytes in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def json_key(value: object) -> object:
    """A key for JSON: whole numbers as numbers, other numbers as exact strings, bytes as
    ``{"B": base64}``."""
    if isinstance(value, bytes):
        return {"B": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return str(value)
    return value
