"""The package as users get it: ``python -m build`` makes a wheel whose page has absolute links,
its licence, classifiers and project URLs; installed into a clean virtual environment (from the
package index, nothing of this checkout), ``ddbkeys demo --quick`` runs and keeps its promises."""

from __future__ import annotations

import email
import json
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A markdown link or picture whose target is not absolute: it breaks off the repository.
RELATIVE = re.compile(r"\]\((?!https?://|#|mailto:)[^)]+\)")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = out.glob("ddbkeys-*.whl")
    return found


def test_the_package_page_and_its_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
    page = metadata.get_payload()
    assert isinstance(page, str) and page.startswith("# ddbkeys")
    assert RELATIVE.findall(page) == []  # every link works on the package page
    assert "](https://github.com/ddbkeys/ddbkeys/blob/main/docs/ids/blocks.md)" in page
    assert "](https://raw.githubusercontent.com/ddbkeys/ddbkeys/main/docs/" in page
    assert metadata["License-Expression"] == "Apache-2.0"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and "Framework :: AsyncIO" in classifiers
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    assert "ddbkeys/py.typed" in names
    requires = metadata.get_all("Requires-Dist") or []
    base = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith(("dask", "pyspark", "distributed", "aiobotocore")) for r in base)


@pytest.mark.embedded
def test_the_wheel_in_a_clean_environment_runs_the_demo(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = subprocess.run(
        [str(python), "-c", "import ddbkeys; print(ddbkeys.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(env_dir)), where  # the wheel's, not this checkout's
    demo = subprocess.run(
        [str(env_dir / "bin" / "ddbkeys"), "demo", "--quick", "--output", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    report = json.loads(demo.stdout)
    assert report["ok"] is True  # every promise kept, every listing exact
    methods = {m["method"].split(" ")[0] for m in report["partition_keys"]["methods"]}
    assert methods >= {"scan", "skip", "auto"}, methods
