"""The documents the CLI prints as tables and text (``--output table|text``): one line a row,
whatever a value holds."""

from __future__ import annotations

import json

from ddbkeys._cli.rendering import render_table, render_text
from ddbkeys._key_json import escaped
from ddbkeys.partition_keys._listing.text import read_text_key, text_line


def test_a_value_with_a_line_break_is_one_row_escaped_as_text_output_writes_it() -> None:
    """A key holding a newline made two rows of `partition-keys --output table` (a helper
    counted four rows for three keys)."""
    keys = ["a\nb", "1", "back\\slash", "x\u2028y"]
    drawn = render_table(keys, "partition keys of t")
    rows = [line for line in drawn.splitlines() if line.startswith("| ") and "value" not in line]
    assert len(rows) == len(keys)
    assert "| a\\nb " in drawn and "| x\\u2028y " in drawn and "| back\\\\slash " in drawn
    assert render_text(keys).split("\t") == [escaped(k) for k in keys]
    for key in keys:  # (the same escapes as a listing's text lines, read back exactly)
        assert escaped(key) == text_line(key) and read_text_key(text_line(key)) == key


def test_a_long_value_is_folded_in_its_cell_never_cut_short() -> None:
    # (helper-69: `ids next -n 20000 --output table` drew 27 ids and an ellipsis, exit 0)
    ids = list(range(400004, 420004))
    rows = [line.split("|")[1:3] for line in render_table({"ids": ids}).splitlines()]
    cell = "".join(value.strip() for key, value in rows[2:-1] if key.strip() in ("ids", ""))
    assert json.loads(cell) == ids
