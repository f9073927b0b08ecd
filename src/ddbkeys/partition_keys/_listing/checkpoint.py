"""Resume tokens: where a listing stood, bound to the table, key schema and method it describes.

A token is ``<payload>.<check>``: the payload is URL-safe base64 of a JSON object holding the
token's version, the table's name, its key schema (``pk:S,sk:N``), the listing method and, per
Scan segment, the last key handed out (``null``: not started, ``true``: done; a run of done
segments is written ``{"done": n}``, so that a task's token stays short whatever the number of
tasks); the check is the
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

from ddbkeys._errors import ResumeTokenError

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._listing.base import Position

__all__ = [
    "FILE_VERSION",
    "MAX_TOKEN_SEGMENTS",
    "TOKEN_VERSION",
    "Checkpoint",
    "CheckpointFile",
    "check_binding",
    "check_output",
    "decode_file",
    "decode_token",
    "digest",
    "encode_file",
    "encode_token",
    "key_schema",
    "task_token",
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
    #: When the table was created ("" if unknown): a table created again is another table.
    created: str = ""
    #: A listing of the proven marker index: the collections it re-checked and their state
    #: (``replay.Replay.to_json``), handed out by its last segment.
    replay: dict[str, Any] | None = None
    #: A listing that hands out keys holding only ddbkeys' own items too (include_own_items).
    own_items: bool = False


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
    assert isinstance(position, dict)  # a key (a position is never False)
    kind, raw = next(iter(position.items()))
    return {kind: base64.b64encode(raw).decode() if kind == "B" else raw}


def _done(count: int) -> list[Any]:
    """``count`` segments done, as a token writes them."""
    return [] if count <= 0 else [True] if count == 1 else [{"done": count}]


def encode_token(checkpoint: Checkpoint) -> str:
    """The resume token of ``checkpoint``."""
    written: list[Any] = []
    run = 0
    for position in checkpoint.positions:
        if position is True:
            run += 1
            continue
        written += [*_done(run), _one(position)]
        run = 0
    return _encoded(checkpoint, [*written, *_done(run)])


def task_token(checkpoint: Checkpoint, segment: int, segments: int) -> str:
    """The token of ``checkpoint`` with segment ``segment`` of ``segments`` not started and
    every other done (a listing's task), made without a list as long as ``segments``."""
    return _encoded(checkpoint, [*_done(segment), None, *_done(segments - segment - 1)])


def _encoded(checkpoint: Checkpoint, positions: list[Any]) -> str:
    payload = {
        "v": TOKEN_VERSION,
        "table": checkpoint.table,
        "keys": checkpoint.key_schema,
        "method": checkpoint.method,
        "positions": positions,
    }
    if checkpoint.created:
        payload["created"] = checkpoint.created
    if checkpoint.replay is not None:
        payload["replay"] = checkpoint.replay
    if checkpoint.own_items:
        payload["own"] = True
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


def _positions(written: list[Any]) -> list[Position]:
    """The positions a token wrote, its runs of done segments (``{"done": n}``) spelt out."""
    positions: list[Position] = []
    for p in written:
        count = p.get("done") if isinstance(p, dict) and len(p) == 1 else None
        if count is None:
            positions.append(_position(p))
        elif isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise ValueError(f"not a run of done segments: {p!r}")
        elif len(positions) + count > MAX_TOKEN_SEGMENTS:
            raise ValueError(f"more than {MAX_TOKEN_SEGMENTS} segments")
        else:
            positions += [True] * count
    return positions


def _position(p: Any) -> Position:
    if p is None or p is True:
        return p
    ((kind, raw),) = p.items()
    if kind not in ("S", "N", "B") or not isinstance(raw, str):
        raise ValueError(f"not a key: {p!r}")
    return {kind: base64.b64decode(raw, validate=True) if kind == "B" else raw}


def decode_token(token: str) -> Checkpoint:
    """The checkpoint a token holds, or a :class:`~ddbkeys.ResumeTokenError` saying what
    is wrong with it (not ddbkeys', cut short or changed, another version)."""
    payload = _payload(token)
    try:
        positions = _positions(payload["positions"])
        table, keys, method = payload["table"], payload["keys"], payload["method"]
        if not all(isinstance(x, str) for x in (table, keys, method)):
            raise ValueError("table, keys and method must be strings")
        if not 1 <= len(positions) <= MAX_TOKEN_SEGMENTS:
            raise ValueError(f"{len(positions)} segments")
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise _not_ours(token, str(exc) or type(exc).__name__, exc) from exc
    created = payload.get("created", "")
    if not isinstance(created, str):
        raise _not_ours(token, "created must be a string")
    replay = payload.get("replay")
    if replay is not None and not (
        isinstance(replay, dict)
        and isinstance(replay.get("margin"), (int, float))
        and isinstance(replay.get("keys"), list)
        and all(
            isinstance(k, list) and len(k) == 3 and k[0] in ("S", "N", "B") for k in replay["keys"]
        )
        and len(positions) >= 2
    ):
        raise _not_ours(token, "its replay is not one ddbkeys wrote")
    own = payload.get("own", False)
    if not isinstance(own, bool):
        raise _not_ours(token, "own must be true or false")
    return Checkpoint(table, keys, method, positions, created, replay, own)


def check_binding(
    checkpoint: Checkpoint, info: TableInfo, method: str, own_items: bool = False
) -> str:
    """The method to go on with, once ``checkpoint`` is found to describe a listing of table
    ``info`` (same name, same key schema) by ``method`` (``auto`` takes the token's), with
    ``include_own_items`` as ``own_items``. Else a :class:`~ddbkeys.ResumeTokenError` naming
    both."""
    if checkpoint.table != info.name:
        raise ResumeTokenError(
            f"The resume token is for table {checkpoint.table!r}, not {info.name!r}: resume "
            f"with -t {checkpoint.table}, or start the listing of {info.name!r} without it.",
            table=info.name,
        )
    if checkpoint.created and info.created and checkpoint.created != info.created:
        raise ResumeTokenError(
            f"The resume token is for table {info.name!r} as created at {checkpoint.created}, "
            f"but the table was deleted and created again (at {info.created}): start the "
            "listing again (with --checkpoint, delete the checkpoint file).",
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
    if own_items != checkpoint.own_items:
        given, wanted = ("with", "without") if own_items else ("without", "with")
        raise ResumeTokenError(
            f"The resume token is for a listing of table {info.name!r} {wanted} "
            f"--include-own-items (include_own_items), not {given}: resume {wanted} it.",
            table=info.name,
        )
    return checkpoint.method


#: The version of the checkpoint file format (``--checkpoint FILE``).
FILE_VERSION = 1
_FILE_KIND = "ddbkeys partition-keys checkpoint"


@dataclass(frozen=True)
class CheckpointFile:
    """What ``--checkpoint FILE`` holds: the resume token, and the output it goes with (the
    absolute path of ``--output-file``, or None for stdout; its format; its length in bytes
    when the token was written; how many keys were written to it)."""

    token: str
    output: str | None
    format: str
    output_bytes: int = 0
    keys: int = 0
    #: The SHA-256 (hex) of OUT's first ``output_bytes`` bytes: a resume checks them.
    output_sha256: str = ""


def encode_file(saved: CheckpointFile) -> str:
    """The text of a checkpoint file: JSON, with a check over the rest."""
    body = {
        "kind": _FILE_KIND,
        "version": FILE_VERSION,
        "token": saved.token,
        "output": saved.output,
        "format": saved.format,
        "output_bytes": saved.output_bytes,
        "keys": saved.keys,
        "output_sha256": saved.output_sha256,
    }
    check = digest(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    return json.dumps({**body, "check": check}, indent=1) + "\n"


def decode_file(text: str, name: str) -> CheckpointFile:
    """The checkpoint a file holds, or a ResumeTokenError naming the file and what is wrong."""

    def broken(why: str) -> ResumeTokenError:
        return ResumeTokenError(
            f"The checkpoint file {name} is not one ddbkeys wrote, or it was cut short or "
            f"changed ({why}): delete it to start the listing again."
        )

    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise broken("not JSON") from exc
    if not isinstance(body, dict) or body.get("kind") != _FILE_KIND:
        raise broken("not a ddbkeys checkpoint")
    check = body.pop("check", None)
    if check != digest(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()):
        raise broken("its check does not match")
    if body.get("version") != FILE_VERSION:
        raise ResumeTokenError(
            f"The checkpoint file {name} is of version {body.get('version')!r}, and this "
            f"ddbkeys reads version {FILE_VERSION} only: delete it to start the listing again."
        )
    try:
        saved = CheckpointFile(
            str(body["token"]),
            None if body["output"] is None else str(body["output"]),
            str(body["format"]),
            int(body["output_bytes"]),
            int(body["keys"]),
            str(body.get("output_sha256", "")),
        )
    except KeyError as exc:
        raise broken(f"no {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise broken("a field of the wrong type") from exc
    return saved


def check_output(saved: CheckpointFile, name: str, output: str | None, output_format: str) -> None:
    """Refuse to go on from ``saved`` into another output than the one it was written for."""
    if saved.output != output or saved.format != output_format:
        was = f"--output-file {saved.output}" if saved.output else "stdout"
        now = f"--output-file {output}" if output else "stdout"
        raise ResumeTokenError(
            f"The checkpoint file {name} is of a listing to {was} ({saved.format}), not to "
            f"{now} ({output_format}): run the same command again, or delete {name} to start "
            "over."
        )
