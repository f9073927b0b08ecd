"""The table of actions in docs/iam.md is the catalog in ddbkeys.iam, row for row."""

from __future__ import annotations

from pathlib import Path

from ddbkeys.iam import COMMANDS, Need

PAGE = Path(__file__).resolve().parents[2] / "docs" / "iam.md"
PLACES = {
    "table": "",
    "index": "on the index",
    "state": "on the state table",
    "stream": "on the stream",
    "streams": "on *",
    "triggers": "on * (Lambda)",
    "export": "on the table's exports",
    "bucket": "on the bucket (S3)",
    "objects": "on the export's folder (S3)",
    "key": "on the export's key (KMS, with --kms-key)",
}


def actions(needs: frozenset[Need]) -> str:
    parts = []
    for on, label in PLACES.items():
        names = sorted(n.action for n in needs if n.on == on)
        if names:
            parts.append(" ".join(filter(None, [", ".join(names), label])))
    return "; ".join(parts)


def rows() -> list[str]:
    out = []
    for command in COMMANDS:
        for variant in sorted(COMMANDS[command]):
            name = f"`{command}`" if variant == sorted(COMMANDS[command])[0] else ""
            shown = f"`{variant}`" if variant else ""
            out.append(f"| {name} | {shown} | {actions(COMMANDS[command][variant])} |")
    return out


def test_the_page_lists_every_command_as_the_catalog_does() -> None:
    text = PAGE.read_text(encoding="utf-8")
    on_page = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert on_page[1:] == rows(), "\n".join(rows())
