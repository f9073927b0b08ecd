"""A partition key's value as the CLI and the listings show it: a line of text, or JSON. Pure,
and apart from :mod:`ddbkeys.partition_keys` so that the ids commands show their counters'
keys without loading the listings."""

from __future__ import annotations

import base64
from decimal import Decimal

__all__ = ["ESCAPES", "brief_key", "cut", "escaped", "json_key", "key_of_text", "show_key"]


#: Each character that text output escapes, and how.
ESCAPES: dict[str, str] = {
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\v": "\\v",
    "\f": "\\f",
    "\x1c": "\\x1c",
    "\x1d": "\\x1d",
    "\x1e": "\\x1e",
    "\x85": "\\x85",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_TABLE = str.maketrans(ESCAPES)


def escaped(text: str) -> str:
    """``text`` with each character of :data:`ESCAPES` escaped: one line, whatever it holds."""
    return text.translate(_TABLE)


def show_key(value: object) -> str:
    """A key for a line of text: strings as they are, numbers as written, bytes in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def brief_key(value: object, most: int = 40) -> str:
    """A key for a message that lists keys: a number as written, else quoted (bytes in base64),
    cut to ``most`` characters (a 1 KB binary key made a line of several KB)."""
    return cut(str(value) if isinstance(value, (int, Decimal)) else repr(show_key(value)), most)


def cut(text: str, most: int = 40) -> str:
    """``text`` cut to ``most`` characters, ending in "..." where it was longer."""
    return text if len(text) <= most else text[: most - 3] + "..."


def key_of_text(text: str, kind: str) -> str | Decimal | bytes:
    """A key value of type ``kind`` written as :func:`show_key` writes it: a number as
    written (InvalidOperation where it is none), bytes in base64 (binascii.Error where they
    are not), a string as it is."""
    if kind == "N":
        return Decimal(text)
    if kind == "B":
        return base64.b64decode(text, validate=True)
    return text


def json_key(value: object) -> object:
    """A key for JSON: whole numbers as numbers, other numbers as exact strings, bytes as
    ``{"B": base64}``."""
    if isinstance(value, bytes):
        return {"B": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return str(value)
    return value
