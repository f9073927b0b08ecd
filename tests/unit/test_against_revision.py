"""benchmarks/against_revision.py runs its child with an earlier revision's ddbkeys too, so the
child imports only what every revision it measures has: names of the package faces. After the
1.0 layout (issue 34) its child imported ``ddbkeys._connect``, a module no earlier revision has,
and every run against one failed at its first row ("No module named 'ddbkeys._connect'")."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "against_revision.py"
#: The earliest revision the benchmark says it measures against.
EARLIEST = "764ee4e"


def _child() -> str:
    spec = importlib.util.spec_from_file_location("against_revision", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    child = module.CHILD
    assert isinstance(child, str)
    return child


def _ddbkeys_imports(code: str) -> list[ast.ImportFrom | ast.Import]:
    return [
        node
        for node in ast.walk(ast.parse(code))
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ddbkeys"))
        or (isinstance(node, ast.Import) and any(a.name.startswith("ddbkeys") for a in node.names))
    ]


def test_the_child_imports_from_the_package_faces_only() -> None:
    imports = _ddbkeys_imports(_child())
    assert imports  # it does import ddbkeys: the check below checks something
    private = [
        ast.unparse(node)
        for node in imports
        if any(
            part.startswith("_")
            for name in (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
            )
            for part in name.split(".")
        )
    ]
    assert private == []


def test_the_childs_imports_run_on_the_earliest_revision(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", EARLIEST, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:  # a shallow clone, or a source archive without history
        pytest.skip(f"revision {EARLIEST} is not in this checkout")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(tmp_path, filter="data")
    lines = "\n".join(ast.unparse(node) for node in _ddbkeys_imports(_child()))
    ran = subprocess.run(
        [sys.executable, "-c", f"{lines}\nimport ddbkeys; print(ddbkeys.__file__)"],
        env={"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.startswith(str(tmp_path))  # the revision's ddbkeys, not this tree's
