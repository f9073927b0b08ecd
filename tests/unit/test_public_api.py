"""The public surface is pinned: ``public-api.txt`` lists every name the package faces export,
with its signature, and this test fails when the code and the file differ (a public signature
changes only on purpose, the file changed in the same commit: ``python scripts/public_api.py
--write``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_public_api_file_is_the_codes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "public_api.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr


def test_the_file_names_every_face_and_a_known_signature() -> None:
    text = (ROOT / "public-api.txt").read_text()
    for face in ("ddbkeys", "ddbkeys.aio", "ddbkeys.ids", "ddbkeys.partition_keys"):
        assert f"\n## {face}\n" in text
    assert "def ddbkeys.partition_keys.distinct_partition_keys(client: object" in text


def test_a_changed_signature_is_caught(tmp_path: Path) -> None:
    """The negative control: a copy of the package with one keyword renamed differs."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "src", copy / "src")
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    shutil.copy(ROOT / "public-api.txt", copy / "public-api.txt")
    face = copy / "src" / "ddbkeys" / "partition_keys" / "_listing" / "opening.py"
    source = face.read_text()
    keyword = "    resume: str | None = None,"
    assert keyword in source
    face.write_text(source.replace(keyword, "    token: str | None = None,", 1))
    done = subprocess.run(
        [sys.executable, str(copy / "scripts" / "public_api.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "-def ddbkeys.partition_keys.distinct_partition_keys(" in done.stdout
    assert "+def ddbkeys.partition_keys.distinct_partition_keys(" in done.stdout
    assert "token: str | None = None" in done.stdout
