"""An export's data files read as items, without other I/O than the stream they are given:
each line of a DynamoDB JSON file, or each value of an Amazon Ion file, as the attributes a
listing looks at, typed as a Scan returns them.

What AWS writes ("DynamoDB table export output format", https://docs.aws.amazon.com/
amazondynamodb/latest/developerguide/S3DataExport.Output.html):

- **DynamoDB JSON**: a line per item, ``{"Item": {"Id": {"N": "101"}, ...}}``, each value an
  AttributeValue as the API writes it (a binary value in base64);
- **Amazon Ion**: a value per item, ``$ion_1_0 {Item:{Id:101.,...}}``, a string as an Ion
  string, a number as an Ion decimal, a binary value as a blob, a set as a list annotated
  ``$dynamodb_SS``, ``$dynamodb_NS`` or ``$dynamodb_BS``, a map as a struct, a list as a list.

Only the attributes ``wanted`` are made into AttributeValues (the keys, the marker attribute,
``ddbkeys_type``): a number as the text DynamoDB gives it back (no exponent, no trailing zero:
``2d3`` is ``"2000"``), so that a key read from an export is the same value, the same text,
that a Scan hands out.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import zlib
from collections.abc import Collection, Iterator, Mapping
from decimal import Context, Decimal
from typing import IO, Any

from ddbkeys.partition_keys._export.manifest import ExportError, ExportFormat

__all__ = ["Item", "ion_items", "items_of", "json_items", "number_text"]

Item = dict[str, dict[str, Any]]  # the wanted attributes, as AttributeValues


def number_text(number: Decimal) -> str:
    """``number`` as DynamoDB writes a number back: plain digits, no exponent, no leading or
    trailing zero (``Decimal("2E+3")`` is ``"2000"``, ``-0.0100`` is ``"-0.01"``, -0 is 0)."""
    if number.is_zero():
        return "0"
    exact = Context(prec=max(1, len(number.as_tuple().digits)))  # (normalize never rounds)
    return format(number.normalize(exact), "f")


def _json_value(value: object) -> dict[str, Any]:
    """An AttributeValue of DynamoDB JSON, with a binary value's base64 read as bytes (the rest
    as written: only S, N and B ever key or recognise an item)."""
    if not isinstance(value, dict) or len(value) != 1:
        return {"?": value}
    ((kind, inner),) = value.items()
    if kind == "B" and isinstance(inner, str):
        return {"B": base64.b64decode(inner, validate=True)}
    if kind == "N" and isinstance(inner, str):  # (as the Ion reader writes it: one text a number)
        try:
            number = Decimal(inner)
        except ArithmeticError:
            return {"?": inner}
        return {"N": number_text(number)} if number.is_finite() else {"?": inner}
    return {kind: inner}


def json_items(lines: Iterator[str], wanted: Collection[str], where: str) -> Iterator[Item]:
    """The items of a DynamoDB JSON data file (its lines), each with the ``wanted`` attributes
    it has; an :class:`ExportError` naming ``where`` and the line for one that is not an item."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            item = record["Item"]
            yield {name: _json_value(item[name]) for name in wanted if name in item}
        except (json.JSONDecodeError, KeyError, TypeError, binascii.Error) as exc:
            hint = " (it looks like Amazon Ion: is outputFormat right?)" if "$ion" in line else ""
            raise ExportError(
                f"{where} line {number} is not an item of DynamoDB JSON{hint}: "
                f"{type(exc).__name__} {exc}",
                where=where,
            ) from None


def _ion_value(value: Any) -> dict[str, Any]:
    """The AttributeValue of a scalar Ion value as an export writes it (a string, a decimal, a
    blob); anything else marked as no key (``{"?": ...}``)."""
    from amazon.ion.core import IonType  # noqa: PLC0415 (an extra: only for Ion exports)
    from amazon.ion.simple_types import IonPyNull  # noqa: PLC0415

    kind = getattr(value, "ion_type", None)
    if getattr(value, "ion_annotations", ()) or isinstance(value, IonPyNull):
        return {"?": None}  # (a set, or a typed null: null.string is no string)
    if kind is IonType.STRING:
        return {"S": str(value)}
    if kind is IonType.DECIMAL:
        return {"N": number_text(Decimal(value))}
    if kind is IonType.BLOB:
        return {"B": bytes(value)}
    return {"?": None}


def _ion_reader(stream: IO[bytes], where: str) -> Iterator[Any]:
    try:
        from amazon.ion import simpleion  # noqa: PLC0415 (an extra: only for Ion exports)
    except ImportError:
        raise ExportError(
            f"{where} is Amazon Ion, which needs the amazon-ion package: "
            "pip install 'ddbkeys[ion]'.",
            where=where,
        ) from None
    return iter(simpleion.load(stream, single_value=False, parse_eagerly=False))


def ion_items(stream: IO[bytes], wanted: Collection[str], where: str) -> Iterator[Item]:
    """The items of an Amazon Ion data file (its bytes, decompressed), each with the
    ``wanted`` attributes it has; an :class:`ExportError` naming ``where`` for a value that
    is not an item."""
    from amazon.ion.exceptions import IonException  # noqa: PLC0415

    number = 0
    values: Iterator[Any] | None = None
    while True:
        try:
            if values is None:  # (the reader reads its first chunk as it is made)
                values = _ion_reader(stream, where)
            record = next(values)
        except StopIteration:
            return
        except IonException as exc:
            raise ExportError(
                f"{where} value {number + 1} is not Amazon Ion ({exc}): is outputFormat right?",
                where=where,
            ) from None
        number += 1
        item = record.get("Item") if isinstance(record, Mapping) else None
        if not isinstance(item, Mapping):
            raise ExportError(f"{where} value {number} is not an {{Item: ...}}.", where=where)
        yield {name: _ion_value(item[name]) for name in wanted if name in item}


class _Gunzip(io.RawIOBase):
    """A gzip stream that remembers why it failed (a truncated or damaged file), which the
    Ion reader would report only as a read error."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._file = gzip.GzipFile(fileobj=raw)
        self.failure: BaseException | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self._file.readinto(buffer)
        except (EOFError, OSError, zlib.error) as exc:
            self.failure = exc
            raise


def items_of(
    raw: IO[bytes], fmt: ExportFormat, wanted: Collection[str], where: str
) -> Iterator[Item]:
    """The items of one gzip-compressed data file (``raw``, read as it streams) in ``fmt``;
    an :class:`ExportError` naming ``where`` for a file truncated, not gzip, or not ``fmt``."""
    gunzip = _Gunzip(raw)
    stream = io.BufferedReader(gunzip, buffer_size=1 << 16)
    try:
        if fmt == "ION":
            yield from ion_items(stream, wanted, where)
        else:
            yield from json_items(io.TextIOWrapper(stream, encoding="utf-8"), wanted, where)
    except (EOFError, OSError, zlib.error, UnicodeDecodeError, ExportError) as exc:
        failure = gunzip.failure or (exc if not isinstance(exc, ExportError) else None)
        if failure is None:
            raise
        raise ExportError(
            f"{where} is truncated or not gzip ({type(failure).__name__}: {failure}): "
            "copy the export again.",
            where=where,
        ) from None
