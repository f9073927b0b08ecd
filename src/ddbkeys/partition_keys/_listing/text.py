"""How ``ddbkeys partition-keys`` writes one key: a line of text, or a line of JSON. Pure.

In text output every key is one line. A string key is written as it is, except that a
backslash and every character that would break or end a line are escaped:

==========================  ===========
character                   written as
==========================  ===========
backslash ``\\``            ``\\\\``
line feed (U+000A)          ``\\n``
carriage return (U+000D)    ``\\r``
vertical tab (U+000B)       ``\\v``
form feed (U+000C)          ``\\f``
U+001C, U+001D, U+001E      ``\\x1c``, ``\\x1d``, ``\\x1e``
next line (U+0085)          ``\\x85``
line separator (U+2028)     ``\\u2028``
paragraph separator         ``\\u2029``
==========================  ===========

(every character Python's ``str.splitlines`` splits at). :func:`read_text_key` undoes it.
Numbers are written as DynamoDB holds them, binary keys in base64: neither needs escaping.
JSON lines (``--output jsonl``) are unchanged: JSON escapes these characters itself.
"""

from __future__ import annotations

import json
import re

from ddbkeys._key_json import ESCAPES, escaped, json_key, show_key

__all__ = ["ESCAPES", "json_key", "jsonl_line", "read_text_key", "show_key", "text_line"]

_UNESCAPES = {escaped: plain for plain, escaped in ESCAPES.items()}
_ESCAPED = re.compile("|".join(re.escape(e) for e in sorted(_UNESCAPES, key=len, reverse=True)))


def text_line(value: object) -> str:
    """The line of text output for a partition key's value (without the newline that ends it)."""
    shown = show_key(value)
    if isinstance(value, str):
        return escaped(shown)
    return shown


def read_text_key(line: str) -> str:
    """The string key a line of text output stands for (the line without its newline)."""
    return _ESCAPED.sub(lambda m: _UNESCAPES[m[0]], line)


def jsonl_line(key: object) -> str:
    """The line of JSON-lines output for a key (without the newline)."""
    return json.dumps({"key": json_key(key)})
