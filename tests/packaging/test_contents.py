"""What the two archives hold, against the files git tracks: the source archive every one of
them (a packager runs the tests from it: without ``public-api.txt`` and ``scripts/`` three
tests of ``tests/unit/test_public_api.py`` failed there), the wheel every module of
``src/ddbkeys`` and nothing else (no module left behind by a move, such as the removed
``partition_keys/stopping.py``), with its two entry points naming modules it holds."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the files git tracks)")
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [name for name in listed.splitlines() if (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (sdist,) = out.glob("ddbkeys-*.tar.gz")
    (wheel,) = out.glob("ddbkeys-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_source_archive_holds_every_tracked_file(archives: dict[str, Path]) -> None:
    with tarfile.open(archives["sdist"]) as archive:
        held = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = sorted(set(_tracked()) - held)
    assert missing == []


def test_the_wheel_holds_the_package_and_nothing_else(archives: dict[str, Path]) -> None:
    source = {name[len("src/") :] for name in _tracked() if name.startswith("src/ddbkeys/")}
    with zipfile.ZipFile(archives["wheel"]) as archive:
        names = archive.namelist()
        held = {name for name in names if name.startswith("ddbkeys/")}
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entries = archive.read(entry_points).decode()
    # A file the wheel holds that git does not track: left behind by a move, or not yet added.
    assert sorted(held - source) == [], "untracked files in src/ddbkeys: git add or delete them"
    assert sorted(source - held) == []  # nothing missing
    # The console script and the pytest plugin name modules the wheel holds.
    assert "ddbkeys = ddbkeys._cli:main" in entries
    assert "ddbkeys = ddbkeys.testing._plugin" in entries
    assert {"ddbkeys/_cli/__init__.py", "ddbkeys/testing/_plugin.py"} <= held
