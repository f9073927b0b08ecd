"""Text output keeps every key on one line, reversibly; JSON lines are unchanged (pure)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from ddbkeys.partition_keys._listing.text import ESCAPES, jsonl_line, read_text_key, text_line


@pytest.mark.parametrize(
    ("key", "line"),
    [
        ("plain", "plain"),
        ("two\nlines", "two\\nlines"),
        ("cr\r", "cr\\r"),
        ("crlf\r\n", "crlf\\r\\n"),
        ("ls\u2028ps\u2029nel\x85", "ls\\u2028ps\\u2029nel\\x85"),
        ("vt\vff\f", "vt\\vff\\f"),
        ("fs\x1cgs\x1drs\x1e", "fs\\x1cgs\\x1drs\\x1e"),
        ("C:\\dir\\new", "C:\\\\dir\\\\new"),  # a backslash is escaped, so \\n stays two chars
        ("\\n", "\\\\n"),
        ("tab\tstays", "tab\tstays"),
        ("é𝄞 日本", "é𝄞 日本"),
        (42, "42"),
        (Decimal("-1E-100"), "-1E-100"),
        (b"\n\xff", "Cv8="),
    ],
)
def test_text_lines(key: object, line: str) -> None:
    assert text_line(key) == line
    assert len(line.splitlines()) == 1
    if isinstance(key, str):
        assert read_text_key(line) == key


def test_every_line_break_is_escaped_and_reversible() -> None:
    breaks = "".join(c for c in map(chr, range(0x3000)) if len(f"a{c}b".splitlines()) > 1)
    assert set(breaks) | {"\\"} == set(ESCAPES)
    nasty = "\\".join(breaks) + "\\\\n\\x85\\"
    assert text_line(nasty).splitlines() == [text_line(nasty)]
    assert read_text_key(text_line(nasty)) == nasty


def test_jsonl_is_unchanged() -> None:
    assert jsonl_line("a\nb\u2028") == '{"key": "a\\nb\\u2028"}'
    assert json.loads(jsonl_line("a\nb\u2028"))["key"] == "a\nb\u2028"
    assert jsonl_line(b"\x01") == '{"key": {"B": "AQ=="}}'
