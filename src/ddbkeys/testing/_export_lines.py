"""An item as a line of a DynamoDB table export's data file, without I/O: DynamoDB JSON or Amazon
Ion text, as AWS documents them ("DynamoDB table export output format",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html):

- **DynamoDB JSON**: ``{"Item":{...}}``, each value an AttributeValue as the API writes it, a
  binary value (``B``, each of ``BS``) in base64;
- **Amazon Ion**: ``$ion_1_0 {Item:{...}}``, ``S`` an Ion string, ``N`` an Ion decimal (its
  digits and exponent as DynamoDB gave them: 38 digits stay exact; ``101.``, ``6d2``), ``B`` a
  blob, ``BOOL`` a bool, ``NULL`` ``null``, ``L`` a list, ``M`` a struct, and the sets
  ``SS``/``NS``/``BS`` lists annotated ``$dynamodb_SS``/``$dynamodb_NS``/``$dynamodb_BS``.

The Ion text is written here by hand (no amazon-ion needed to write an export), ASCII only:
other characters are escaped (``\\u``, ``\\U``), so that a line is a line for any reader.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

__all__ = ["EXTENSIONS", "FORMATS", "ExportFormat", "ion_line", "json_line", "line_of"]

ExportFormat = Literal["DYNAMODB_JSON", "ION"]
FORMATS: tuple[ExportFormat, ...] = ("DYNAMODB_JSON", "ION")
#: A data file's name ends with this, by format (then ``.gz``).
EXTENSIONS: dict[str, str] = {"DYNAMODB_JSON": "json", "ION": "ion"}

Item = Mapping[str, Mapping[str, Any]]  # an item as a low-level client returns it


def _b64(value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _json_value(value: Mapping[str, Any]) -> dict[str, Any]:
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": _b64(inner)}
    if kind == "BS":
        return {"BS": [_b64(v) for v in inner]}
    if kind == "L":
        return {"L": [_json_value(v) for v in inner]}
    if kind == "M":
        return {"M": {k: _json_value(v) for k, v in inner.items()}}
    if kind in ("SS", "NS"):
        return {kind: list(inner)}
    return {kind: inner}


def json_line(item: Item) -> str:
    """``item`` as a line of a DynamoDB JSON data file (without its newline)."""
    body = {"Item": {name: _json_value(value) for name, value in item.items()}}
    return json.dumps(body, separators=(",", ":"))


def _ion_text(text: str, quote: str) -> str:
    """``text`` between ``quote``s, escaped as Ion text escapes it, in ASCII."""
    out = [quote]
    for char in text:
        code = ord(char)
        if char in (quote, "\\"):
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append(quote)
    return "".join(out)


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = frozenset({"null", "true", "false", "nan"})


def _ion_field(name: str) -> str:
    """A struct's field name: a bare symbol where it can be one (``Authors``), else quoted."""
    if _SYMBOL.match(name) and name not in _KEYWORDS:
        return name
    return _ion_text(name, "'")


def ion_decimal(number: str) -> str:
    """A DynamoDB number (its text) as an Ion decimal with the same digits and exponent:
    ``101`` is ``101.``, ``2E+3`` is ``2d3``, ``0.001`` is ``1d-3``: exact at any length."""
    sign, digits, exponent = Decimal(number).as_tuple()
    if not isinstance(exponent, int):  # (NaN and infinities are no DynamoDB number)
        raise ValueError(f"{number!r} is not a DynamoDB number.")
    text = ("-" if sign else "") + "".join(map(str, digits))
    return text + "." if exponent == 0 else f"{text}d{exponent}"


def _ion_blob(value: Any) -> str:
    return "{{" + _b64(value) + "}}"


def _ion_value(value: Mapping[str, Any]) -> str:
    ((kind, inner),) = value.items()
    if kind == "S":
        return _ion_text(inner, '"')
    if kind == "N":
        return ion_decimal(inner)
    if kind == "B":
        return _ion_blob(inner)
    if kind == "BOOL":
        return "true" if inner else "false"
    if kind == "NULL":
        return "null"
    if kind == "L":
        return "[" + ",".join(_ion_value(v) for v in inner) + "]"
    if kind == "M":
        return _ion_struct(inner)
    if kind == "SS":
        return "$dynamodb_SS::[" + ",".join(_ion_text(v, '"') for v in inner) + "]"
    if kind == "NS":
        return "$dynamodb_NS::[" + ",".join(ion_decimal(v) for v in inner) + "]"
    if kind == "BS":
        return "$dynamodb_BS::[" + ",".join(_ion_blob(v) for v in inner) + "]"
    raise ValueError(f"{kind!r} is not a DynamoDB AttributeValue type.")


def _ion_struct(attributes: Item) -> str:
    fields = (f"{_ion_field(name)}:{_ion_value(value)}" for name, value in attributes.items())
    return "{" + ",".join(fields) + "}"


def ion_line(item: Item) -> str:
    """``item`` as a line of an Amazon Ion data file (without its newline)."""
    return "$ion_1_0 {Item:" + _ion_struct(item) + "}"


def line_of(item: Item, fmt: ExportFormat) -> str:
    """``item`` as a line of a data file in ``fmt``."""
    return ion_line(item) if fmt == "ION" else json_line(item)
