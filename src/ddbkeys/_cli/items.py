"""Items and keys given on the command line: plain JSON or DynamoDB JSON (as the AWS CLI writes
it, binary in base64), from an option, a file or standard input. Every problem is one line,
``Error: Invalid value for SOURCE: ...`` (exit code 2), found before any request is sent."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from ddbkeys._attributes import get_item_answer
from ddbkeys._cli.common import F
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import (
    MAX_NESTING,
    from_attributes,
    looks_typed,
    serialize_plain,
    to_attributes,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [
    "Item",
    "counter_fields",
    "counter_key_of",
    "given",
    "item_format_option",
    "parse_counter_key",
    "parse_items",
    "read_item_text",
]

Item = dict[str, "AttributeValueTypeDef"]


class _BadItem(Exception):
    """A problem with one item, to be prefixed with where it is."""


def item_format_option(func: F) -> F:
    """Add --item-format auto|plain|dynamodb."""
    return click.option(
        "--item-format",
        type=click.Choice(["auto", "plain", "dynamodb"]),
        default="auto",
        show_default=True,
        help="How to read the item. dynamodb: DynamoDB JSON as the AWS CLI and PynamoDB's "
        'serialize() write it ({"name": {"S": "x"}}, binary in base64). plain: every JSON '
        'value as it is, so {"unit": {"S": "x"}} stores a map. auto: an object whose values '
        "are all typed is DynamoDB JSON, one with none is plain; a mix is refused. The AWS "
        'CLI\'s get-item output ({"Item": {...}}) is the item it holds (refused with plain).',
    )(func)


def read_item_text(item_text: str | None, item_file: Path | None) -> tuple[str, str]:
    """The item's JSON text and where it came from: --item, --item-file or standard input."""
    if item_text is not None and item_file is not None:
        raise click.UsageError("Give the item with --item or --item-file, not both.")
    if item_text is not None:
        return item_text, "--item"
    if item_file is not None:
        try:
            data = item_file.read_bytes()
        except OSError as exc:
            _bad("--item-file", f"cannot read {str(item_file)!r}: {exc.strerror or exc}")
        return _decode(data, "--item-file"), "--item-file"
    if sys.stdin.isatty():
        raise click.UsageError("Give the item with --item JSON, --item-file FILE or on stdin.")
    text = _decode(sys.stdin.buffer.read(), "standard input")
    if not text.strip():
        raise click.UsageError(
            "No item on standard input (it was empty): give the item with --item JSON, "
            "--item-file FILE or as JSON on stdin."
        )
    return text, "standard input"


def _bad(source: str, message: str) -> NoReturn:
    raise click.BadParameter(message, param_hint=source)


def _decode(data: bytes, source: str) -> str:
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a byte order mark is allowed
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = start + exc.start
        _bad(source, f"not UTF-8 text (byte 0x{data[at]:02x} at position {at})")


def _number(text: str) -> Decimal:
    try:
        return Decimal(text)
    except ArithmeticError:
        raise ValueError(f"the number {text[:40]} is too large to read") from None


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number, and DynamoDB has no NaN or Infinity")


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "a number" if isinstance(value, Decimal) else "an object"


def parse_json(text: str, source: str) -> Any:
    """JSON with exact numbers; NaN, Infinity, unreadable numbers, nesting too deep for Python
    and lone surrogates (not Unicode) refused as one line."""
    try:
        value = json.loads(text, parse_float=_number, parse_int=_number, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        _bad(source, f"not valid JSON ({exc})")
    except RecursionError:
        _bad(source, f"JSON nested too deeply (DynamoDB allows {MAX_NESTING + 1} levels)")
    except ValueError as exc:
        _bad(source, f"not valid JSON ({exc})")
    try:
        json.dumps(value, default=str, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        _bad(source, f"not valid Unicode (a lone surrogate {exc.object[exc.start]!a})")
    except RecursionError:  # pragma: no cover - json.loads refuses such nesting first
        _bad(source, "JSON nested too deeply")
    return value


def parse_items(
    text: str, source: str, item_format: str, *, table: str, most: int | None = None
) -> list[Item]:
    """The items in ``text`` (an object, or an array of 1 to ``most`` objects), each in
    DynamoDB's typed form and checked like the library checks items."""
    value = parse_json(text, source)
    if isinstance(value, list):
        if not value:
            _bad(source, "an empty array: give at least one item")
        if most is not None and len(value) > most:
            _bad(
                source,
                f"an array of {len(value)} items: --strategy gapless writes 1 to {most} items, "
                "in one transaction",
            )
        elements = value
    elif isinstance(value, dict):
        elements = [value]
    else:
        _bad(source, f"must be a JSON object, or an array of objects, not {_kind(value)}")
    items: list[Item] = []
    for n, element in enumerate(elements, 1):
        where = f"item {n} of {len(elements)}: " if isinstance(value, list) else ""
        if not isinstance(element, dict):
            _bad(source, f"{where}{_kind(element)}, not an object")
        inner, inner_format = _unwrapped(element, item_format, source, where)
        try:
            items.append(_typed_item(inner, inner_format, table))
        except (_BadItem, DdbKeysError) as exc:
            _bad(source, f"{where}{exc}")
    return items


#: ... a counter's key (--counter-key takes no --item-format): binary values are DynamoDB
#: JSON alone.
KEY_FIX = (
    'write each value in DynamoDB JSON, like {"pk": {"B": "AAE="}, "sk": {"N": "1"}}, or '
    'each plain, like {"pk": "ctr", "sk": 1} (a binary value only as DynamoDB JSON)'
)


def parse_counter_key(text: str, table: str) -> dict[str, Any]:
    """--counter-key: the counter item's whole key, plain or DynamoDB JSON, as plain values."""
    source = "--counter-key"
    value = parse_json(text, source)
    if not isinstance(value, dict) or not value:
        _bad(source, 'give the counter item\'s whole key as a JSON object, like {"pk": "ctr"}')
    try:
        key = _typed_item(value, "auto", table, what="key", fix=KEY_FIX)
        return from_attributes(key)
    except (_BadItem, DdbKeysError) as exc:
        _bad(source, str(exc))


def given(name: str) -> bool:
    """Whether the option ``name`` was given, not left at its default."""
    source = click.get_current_context().get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def counter_key_of(text: str | None, table: str, *, instead_of: str) -> dict[str, Any] | None:
    """--counter-key parsed, or None; an error when the option it replaces was also given."""
    if text is None:
        return None
    if given(instead_of):
        raise click.UsageError(
            f"--counter-key and --{instead_of} cannot be used together: --{instead_of} names "
            "the counter by its partition key value, --counter-key gives its whole key."
        )
    return parse_counter_key(text, table)


def ids_said(ids: list[int]) -> str:
    """How a note names ids: ``Id 7``, or ``3 ids, 7 to 9,``."""
    if len(ids) == 1:
        return f"Id {ids[0]}"
    return f"{len(ids)} ids, {ids[0]} to {ids[-1]},"


def counter_fields(name: str, key: dict[str, Any] | None) -> dict[str, Any]:
    """How JSON output names the counter: its name, or its whole key."""
    if key is None:
        return {"counter": name}
    plain = {k: _plain_value(v) for k, v in key.items()}
    if all(v is not None for v in plain.values()):
        return {"counter_key": plain}
    # (a fraction or bytes: the whole key in DynamoDB JSON, which --counter-key reads back
    # exactly, and refuses mixed with plain values: helper-79 F3)
    return {"counter_key": {k: _typed_value(v) for k, v in key.items()}}


def _plain_value(value: Any) -> Any:
    """A counter key's value as plain JSON that --counter-key reads back as it is: a string,
    or a whole number as a number (helper-77 F3: printed "0", it was read back as a string);
    None for any other (a fraction, bytes)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, Decimal)) and value == int(value):
        return int(value)
    return None


def _typed_value(value: Any) -> dict[str, str]:
    """A counter key's value in DynamoDB JSON."""
    if isinstance(value, (bytes, bytearray)):
        return {"B": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, (int, Decimal)):
        return {"N": str(value)}
    return {"S": str(value)}


def _unwrapped(
    element: dict[str, Any], item_format: str, source: str, where: str
) -> tuple[dict[str, Any], str]:
    """The item ``element`` holds when it is ``aws dynamodb get-item``'s output
    (``{"Item": {<DynamoDB JSON>}}``), read as DynamoDB JSON; else ``element`` as it is. With
    --item-format plain it is refused: it would be stored as one attribute ``Item``."""
    answer = get_item_answer(element)
    if answer is None:
        return element, item_format
    if item_format == "plain":
        _bad(
            source,
            f'{where}this is the AWS CLI\'s get-item output ({{"Item": {{...}}}}), which '
            "--item-format plain would store as one attribute 'Item': leave --item-format out "
            "(or pass dynamodb) to write the item it holds",
        )
    return dict(answer), "dynamodb"


#: How to tell an item that mixes DynamoDB JSON with plain values which one it is.
MIXED_FIX = "pass --item-format dynamodb or --item-format plain"


def _typed_item(
    item: dict[str, Any], item_format: str, table: str, *, what: str = "item", fix: str = MIXED_FIX
) -> Item:
    if item_format == "auto":
        typed = [name for name, value in item.items() if looks_typed(value)]
        plain = [name for name in item if name not in typed]
        if typed and plain:
            raise _BadItem(
                f"the {what} mixes DynamoDB JSON (attribute {typed[0]!r}) with plain values "
                f"(attribute {plain[0]!r}): {fix}."
            )
        item_format = "dynamodb" if typed else "plain"
    if item_format == "plain":
        return serialize_plain(item, table=table)
    decoded = {name: _binary(value, str(name), 0) for name, value in item.items()}
    return to_attributes(decoded, table=table, typed=True)


def _binary(value: Any, path: str, depth: int) -> Any:
    """DynamoDB JSON with its base64 binary (B, BS, inside M and L) decoded to bytes; anything
    malformed is left for the library's check to name."""
    if depth > MAX_NESTING or not looks_typed(value):
        return value
    kind, raw = next(iter(value.items()))
    if kind == "B":
        return {"B": _base64(raw, path)}
    if kind == "BS" and isinstance(raw, list):
        return {"BS": [_base64(member, path) for member in raw]}
    if kind == "M" and isinstance(raw, dict):
        return {"M": {k: _binary(v, f"{path}.{k}", depth + 1) for k, v in raw.items()}}
    if kind == "L" and isinstance(raw, list):
        return {"L": [_binary(v, f"{path}[{n}]", depth + 1) for n, v in enumerate(raw)]}
    return value


def _base64(raw: object, path: str) -> bytes:
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw, validate=True)
        except binascii.Error:
            pass
    shown = str(raw) if isinstance(raw, Decimal) else json.dumps(raw, default=str)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise _BadItem(
        f"Attribute {path!r} holds the binary value {shown}, which is not base64: DynamoDB "
        "JSON gives binary values (B, BS) in base64."
    )
