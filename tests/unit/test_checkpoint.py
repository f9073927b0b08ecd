"""Resume tokens are bound to the table, key schema and method, versioned and checked (pure: no
server)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ddbkeys import DdbKeysError, ResumeTokenError
from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._listing.base import Position
from ddbkeys.partition_keys._listing.checkpoint import (
    FILE_VERSION,
    Checkpoint,
    CheckpointFile,
    check_binding,
    check_output,
    decode_file,
    decode_token,
    digest,
    encode_file,
    encode_token,
    key_schema,
    task_token,
)

SORT_N = KeyAttribute("sk", "N")


def info(name: str = "orders", sort: KeyAttribute | None = SORT_N) -> TableInfo:
    return TableInfo(name, KeyAttribute("pk", "S"), sort, (), {}, 0, 0)


POSITIONS: list[Position] = [{"S": "é𝄞"}, {"N": "-1E-100"}, {"B": b"\x00\xff"}, None, True]
TOKEN = encode_token(Checkpoint("orders", "pk:S,sk:N", "skip", POSITIONS))


def signed(payload: Any) -> str:
    """A token with a valid check around any payload (what a careless edit cannot make)."""
    data = base64.urlsafe_b64encode(json.dumps(payload).encode())
    return f"{data.decode()}.{digest(data)}"


def v2(**change: Any) -> dict[str, Any]:
    payload = {"v": 2, "table": "orders", "keys": "pk:S", "method": "scan", "positions": [None]}
    payload.update(change)
    return payload


def test_round_trip_with_every_key_type() -> None:
    checkpoint = decode_token(TOKEN)
    assert checkpoint == Checkpoint("orders", "pk:S,sk:N", "skip", POSITIONS)
    assert check_binding(checkpoint, info(), "auto") == "skip"  # auto goes on with the token's
    assert check_binding(checkpoint, info(), "skip") == "skip"


def test_runs_of_done_segments_are_written_short() -> None:
    positions: list[Position] = [True, True, True, {"S": "a"}, True, None, True, True]
    token = encode_token(Checkpoint("orders", "pk:S", "scan", positions))
    written = json.loads(base64.urlsafe_b64decode(token.rpartition(".")[0]))["positions"]
    assert written == [{"done": 3}, {"S": "a"}, True, None, {"done": 2}]
    assert decode_token(token).positions == positions


@pytest.mark.parametrize(("segment", "segments"), [(0, 1), (0, 2), (1, 2), (1, 3), (7, 10**6)])
def test_a_tasks_token_stays_short_whatever_the_segments(segment: int, segments: int) -> None:
    token = task_token(Checkpoint("orders", "pk:S", "scan", [None]), segment, segments)
    assert len(token) < 200
    positions = decode_token(token).positions
    assert len(positions) == segments and positions[segment] is None
    assert positions.count(True) == segments - 1


def test_key_schema() -> None:
    assert key_schema(info()) == "pk:S,sk:N"
    assert key_schema(info(sort=None)) == "pk:S"


@pytest.mark.parametrize(
    ("table", "method", "message"),
    [
        (
            info("invoices"),
            "auto",
            "The resume token is for table 'orders', not 'invoices': resume with -t orders, or "
            "start the listing of 'invoices' without it.",
        ),
        (
            info(sort=KeyAttribute("sk", "S")),
            "auto",
            "The resume token is for table 'orders' keyed pk:S,sk:N, but the table is now keyed "
            "pk:S,sk:S (created again?): start the listing again.",
        ),
        (
            info(sort=None),
            "skip",
            "The resume token is for table 'orders' keyed pk:S,sk:N, but the table is now keyed "
            "pk:S (created again?): start the listing again.",
        ),
        (
            info(),
            "scan",
            "The resume token is for method 'skip', not 'scan': resume with --method skip (or "
            "auto).",
        ),
    ],
)
def test_a_token_for_something_else_is_refused(table: TableInfo, method: str, message: str) -> None:
    with pytest.raises(ResumeTokenError) as caught:
        check_binding(decode_token(TOKEN), table, method)
    assert str(caught.value) == message
    assert "\n" not in message


def _flip(token: str, at: int) -> str:
    changed = "A" if token[at] != "A" else "B"
    return token[:at] + changed + token[at + 1 :]


NOT_OURS = [
    ("garbage", "nonsense", "no check"),
    ("empty", "", "no check"),
    ("cut short", TOKEN[:-5], "its check does not match"),
    ("cut at the front", TOKEN[8:], "its check does not match"),
    ("payload changed", _flip(TOKEN, 20), "its check does not match"),
    ("check changed", _flip(TOKEN, len(TOKEN) - 1), "its check does not match"),
    ("no check", TOKEN.rpartition(".")[0], "no check"),
    ("json list", signed([1, 2]), "not a JSON object"),
    ("no segments", signed(v2(positions=[])), "0 segments"),
    ("bad key type", signed(v2(positions=[{"X": "a"}])), "not a key: {'X': 'a'}"),
    ("number as json number", signed(v2(positions=[{"N": 5}])), "not a key: {'N': 5}"),
    ("two types", signed(v2(positions=[{"S": "a", "N": "1"}])), "too many values to unpack"),
    ("no table", signed({k: v for k, v in v2().items() if k != "table"}), "'table'"),
    ("table not a string", signed(v2(table=5)), "table, keys and method must be strings"),
    ("bad base64 in a key", signed(v2(positions=[{"B": "@@"}])), "Only base64 data is allowed"),
    ("too deep", base64.urlsafe_b64encode(b"[" * 100_000).decode(), "no check"),
    ("a run of one", signed(v2(positions=[{"done": 1}, None])), "not a run of done segments"),
    ("a run of none", signed(v2(positions=[{"done": -3}, None])), "not a run of done segments"),
    ("a run of text", signed(v2(positions=[{"done": "2"}])), "not a run of done segments"),
    ("a run of true", signed(v2(positions=[{"done": True}])), "not a run of done segments"),
    ("runs too long", signed(v2(positions=[{"done": 10**9}])), "more than 1000000 segments"),
]


@pytest.mark.parametrize(("token", "why"), [c[1:] for c in NOT_OURS], ids=[c[0] for c in NOT_OURS])
def test_a_broken_token_is_refused(token: str, why: str) -> None:
    with pytest.raises(ResumeTokenError) as caught:
        decode_token(token)
    message = str(caught.value)
    assert message.startswith(f"The resume token {token[:40]!r}")
    assert "is not one ddbkeys wrote, or it was cut short or changed (" in message
    assert why in message
    assert message.endswith("): copy it whole from the listing that stopped.")
    assert isinstance(caught.value, ConfigurationError) and isinstance(caught.value, DdbKeysError)


@pytest.mark.parametrize(
    ("token", "version"),
    [
        (  # a token of ddbkeys 0.1 (no check, no table)
            base64.urlsafe_b64encode(b'{"v":1,"method":"scan","positions":[null]}').decode(),
            "1",
        ),
        (signed(v2(v=3)), "3"),
        (signed({"method": "scan"}), "None"),
    ],
)
def test_another_version_is_refused(token: str, version: str) -> None:
    with pytest.raises(ResumeTokenError) as caught:
        decode_token(token)
    assert str(caught.value) == (
        f"The resume token is of version {version}, and this ddbkeys reads version 2 only: the "
        "listing cannot go on from it; start it again."
    )


SAVED = CheckpointFile(TOKEN, "/data/keys.txt", "text", 1234, 99)


def test_checkpoint_file_round_trip() -> None:
    assert decode_file(encode_file(SAVED), "c.ckpt") == SAVED
    to_stdout = CheckpointFile(TOKEN, None, "jsonl")
    assert decode_file(encode_file(to_stdout), "c.ckpt") == to_stdout


def _edited(**change: Any) -> str:
    body = json.loads(encode_file(SAVED))
    body.update(change)
    return json.dumps(body)


_DROP = object()


def _resigned(**change: Any) -> str:
    """A checkpoint file with a valid check, changed (a field set to _DROP is left out)."""
    body = json.loads(encode_file(SAVED))
    del body["check"]
    body.update(change)
    body = {k: v for k, v in body.items() if v is not _DROP}
    check = digest(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    return json.dumps({**body, "check": check})


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "not JSON"),
        ("\udcff garbage", "not JSON"),
        ("[" * 100_000, "not JSON"),
        ("[1, 2]", "not a ddbkeys checkpoint"),
        ('{"kind": "something else"}', "not a ddbkeys checkpoint"),
        (_edited(output_bytes=1), "its check does not match"),
        (_edited(token=TOKEN[:-1]), "its check does not match"),
        (encode_file(SAVED)[:-20], "not JSON"),
        (_resigned(output_bytes="many"), "a field of the wrong type"),
        (_resigned(keys=None), "a field of the wrong type"),
        (_resigned(format=_DROP), "no 'format'"),
    ],
)
def test_a_broken_checkpoint_file_is_refused(text: str, why: str) -> None:
    with pytest.raises(ResumeTokenError) as caught:
        decode_file(text, "c.ckpt")
    assert caught.value.message == (
        f"The checkpoint file c.ckpt is not one ddbkeys wrote, or it was cut short or changed "
        f"({why}): delete it to start the listing again."
    )


def test_a_checkpoint_file_of_another_version_is_refused() -> None:
    with pytest.raises(ResumeTokenError) as caught:
        decode_file(_resigned(version=FILE_VERSION + 1), "c.ckpt")
    assert caught.value.message == (
        f"The checkpoint file c.ckpt is of version {FILE_VERSION + 1}, and this ddbkeys reads "
        f"version {FILE_VERSION} only: delete it to start the listing again."
    )


@pytest.mark.parametrize(
    ("output", "output_format", "said"),
    [
        (None, "text", "not to stdout (text)"),
        ("/data/other.txt", "text", "not to --output-file /data/other.txt (text)"),
        ("/data/keys.txt", "jsonl", "not to --output-file /data/keys.txt (jsonl)"),
    ],
)
def test_a_checkpoint_of_another_output_is_refused(
    output: str | None, output_format: str, said: str
) -> None:
    with pytest.raises(ResumeTokenError) as caught:
        check_output(SAVED, "c.ckpt", output, output_format)
    assert caught.value.message == (
        f"The checkpoint file c.ckpt is of a listing to --output-file /data/keys.txt (text), "
        f"{said}: run the same command again, or delete c.ckpt to start over."
    )
    check_output(SAVED, "c.ckpt", "/data/keys.txt", "text")  # the same output goes on
