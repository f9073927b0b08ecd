"""Resume tokens: where a listing stood, bound to the table, key schema and method it describes.

A token is ``<payload>.<check>``: the payload is URL-safe base64 of a JSON object holding the
token's version, the table's name, its key schema (``pk:S,sk:N``), the listing method and, per
Scan segment, the last key handed out (``null``: not started, ``true``: done); the check is the
first 16 hex digits of the SHA-256 of the payload. The check is not a secret (anyone can compute
it): it catches a token cut short, mistyped or edited, not a forger. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys.errors import ResumeTokenError

if TYPE_CHECKING:
    from ddbkeys.partition_keys.base import Position
    from ddbkeys.schema import TableInfo

__all__ = [
    "MAX_TOKEN_SEGMENTS",
    "TOKEN_VERSION",
    "Checkpoint",
    "check_binding",
    "decode_token",
    "digest",
    "encode_token",
    "key_schema",
]

#: The version of the token format this ddbkeys writes and reads.
TOKEN_VERSION = 2
#: DynamoDB's limit on TotalSegments.
MAX_TOKEN_SEGMENTS = 1_000_000
_CHECK_DIGITS = 16


@dataclass(frozen=True)
class Checkpoint:
    """Where a listing stood: ``positions`` has one entry per Scan segment."""

    table: str
    key_schema: str
    method: str
    positions: list[Position]


def key_schema(info: TableInfo) -> str:
    """The key schema as a token records it: ``pk:S`` or ``pk:S,sk:N``."""
    keys = [info.partition_key, *([info.sort_key] if info.sort_key else [])]
    return ",".join(f"{k.name}:{k.type}" for k in keys)


def digest(data: bytes) -> str:
    """The integrity check of ``data``: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:_CHECK_DIGITS]


def _one(position: Position) -> Any:
    if position is None or position is True:
        return position
    kind, raw = next(iter(position.items()))  # type: ignore[union-attr]
    return {kind: base64.b64encode(raw).decode() if kind == "B" else raw}


def encode_token(checkpoint: Checkpoint) -> str:
    """The resume token of ``checkpoint``."""
    payload = {
        "v": TOKEN_VERSION,
        "table": checkpoint.table,
        "keys": checkpoint.key_schema,
        "method": checkpoint.method,
        "positions": [_one(p) for p in checkpoint.positions],
    }
    data = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode())
    return f"{data.decode()}.{digest(data)}"


def _shown(token: str) -> str:
    return repr(token[:40]) + ("..." if len(token) > 40 else "")


def _not_ours(token: str, why: str, cause: BaseException | None = None) -> ResumeTokenError:
    return ResumeTokenError(
        f"The resume token {_shown(token)} is not one ddbkeys wrote, or it was cut short or "
        f"changed ({why}): copy it whole from the listing that stopped.",
        cause=cause,
    )


def _payload(token: str) -> dict[str, Any]:
    if not isinstance(token, str):
        raise _not_ours(str(token), "not a string")
    data, dot, check = token.strip().rpartition(".")
    if not dot:  # version 1 tokens had no check: tell them apart from garbage
        try:
            old = json.loads(base64.urlsafe_b64decode(token.strip().encode()))
        except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
            raise _not_ours(token, "no check", exc) from exc
        if isinstance(old, dict) and "v" in old and old["v"] != TOKEN_VERSION:
            raise _old_version(old["v"])
        raise _not_ours(token, "no check")
    if digest(data.encode()) != check:
        raise _not_ours(token, "its check does not match")
    try:
        payload = json.loads(base64.urlsafe_b64decode(data.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
        raise _not_ours(token, "not base64 JSON", exc) from exc
    if not isinstance(payload, dict):
        raise _not_ours(token, "not a JSON object")
    if payload.get("v") != TOKEN_VERSION:
        raise _old_version(payload.get("v"))
    return payload


def _old_version(version: object) -> ResumeTokenError:
    return ResumeTokenError(
        f"The resume token is of version {version!r}, and this ddbkeys reads version "
        f"{TOKEN_VERSION} only: the listing cannot go on from it; start it again."
    )


def _position(p: Any) -> Position:
    if p is None or p is True:
        return p
    ((kind, raw),) = p.items()
    if kind not in ("S", "N", "B") or not isinstance(raw, str):
        raise ValueError(f"not a key: {p!r}")
    return {kind: base64.b64decode(raw, validate=True) if kind == "B" else raw}


def decode_token(token: str) -> Checkpoint:
    """The checkpoint a token holds, or a :class:`~ddbkeys.errors.ResumeTokenError` saying what
    is wrong with it (not ddbkeys', cut short or changed, another version)."""
    payload = _payload(token)
    try:
        positions = [_position(p) for p in payload["positions"]]
        table, keys, method = payload["table"], payload["keys"], payload["method"]
        if not all(isinstance(x, str) for x in (table, keys, method)):
            raise ValueError("table, keys and method must be strings")
        if not 1 <= len(positions) <= MAX_TOKEN_SEGMENTS:
            raise ValueError(f"{len(positions)} segments")
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise _not_ours(token, str(exc) or type(exc).__name__, exc) from exc
    return Checkpoint(table, keys, method, positions)


def check_binding(checkpoint: Checkpoint, info: TableInfo, method: str) -> str:
    """The method to go on with, once ``checkpoint`` is found to describe a listing of table
    ``info`` (same name, same key schema) by ``method`` (``auto`` takes the token's). Else a
    :class:`~ddbkeys.errors.ResumeTokenError` naming both."""
    if checkpoint.table != info.name:
        raise ResumeTokenError(
            f"The resume token is for table {checkpoint.table!r}, not {info.name!r}: resume "
            f"with -t {checkpoint.table}, or start the listing of {info.name!r} without it.",
            table=info.name,
        )
    schema = key_schema(info)
    if checkpoint.key_schema != schema:
        raise ResumeTokenError(
            f"The resume token is for table {info.name!r} keyed {checkpoint.key_schema}, but "
            f"the table is now keyed {schema} (created again?): start the listing again.",
            table=info.name,
        )
    if method not in ("auto", checkpoint.method):
        raise ResumeTokenError(
            f"The resume token is for method {checkpoint.method!r}, not {method!r}: resume "
            f"with --method {checkpoint.method} (or auto).",
            table=info.name,
        )
    return checkpoint.method
