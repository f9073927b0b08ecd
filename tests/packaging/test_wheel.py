"""The package as users get it: ``python -m build`` makes a wheel whose page has absolute links,
its licence, classifiers and project URLs; installed into a clean virtual environment (from the
package index, nothing of this checkout), ``ddbkeys demo --quick`` runs and keeps its promises."""

from __future__ import annotations

import email
import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from ddbkeys._demo_ids import Sizes
from tests.cli.test_demo import STRATEGIES
from tests.support.terminal import run_with_terminal_stderr

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
    # The README's main job as a user runs it (``make demo`` runs it without --quick), on its
    # own embedded server, with stderr on a terminal, where progress is drawn as bars. (One
    # run for both: the demo is the suite's dearest command, run four times before.)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env.update(TERM="xterm-256color", COLUMNS="120")
    demo, terminal = run_with_terminal_stderr(
        [str(env_dir / "bin" / "ddbkeys"), "demo", "--quick", "--output", "json"], env, 600
    )
    assert demo.returncode == 0, terminal[-3000:]
    report = json.loads(demo.stdout)
    assert report["ok"] is True and report["faults"] is True  # every promise kept, exact
    assert report["startup_seconds"] > 0
    assert [r["strategy"] for r in report["ids"]] == STRATEGIES
    assert all(m["correct"] for m in report["partition_keys"]["methods"])
    methods = {m["method"].split(" ")[0] for m in report["partition_keys"]["methods"]}
    assert methods >= {"scan", "skip", "auto"}, methods
    # The bars: each phase with its count done out of its total.
    quick = Sizes.quick()
    assert "ids: counter" in terminal and f"{quick.counter}/{quick.counter}" in terminal
    assert "keys: auto x4" in terminal and f"{quick.keys}/{quick.keys}" in terminal
