"""Every code example in the README and docs/ runs, against the test endpoint, and so does
every example command in the CLI's --help (docs/cli.md is generated from it).

Rules, so that no example can escape:
- a ```python block is executed; the blocks of one page share a namespace, in order, like a
  notebook. A function it defines whose name starts with ``test_`` is called with the pytest
  fixtures it names (``ddb_client``, ``ddb_table_factory``).
- a ```sh block is run line by line with bash (``\\`` continues a line), in a scratch folder,
  with ``AWS_ENDPOINT_URL_DYNAMODB`` pointing at the test endpoint; each line must exit 0.
  Three kinds of line are handled differently, and each is accounted for: ``make demo`` and
  ``make test`` are the README's two commands, which CI runs itself (``make test`` *is* CI; the
  demo is run by tests/cli/test_demo.py); ``ddbkeys local`` without ``--fetch-only`` runs until
  Ctrl-C, so it is started, its first lines checked, and interrupted.
- a ```python block whose first line is a comment naming a file (``# glue_listing.py``) is a
  script the page tells the reader to save (a Glue job's): it is saved in the scratch folder
  under that name instead of being run in the namespace, and a later ```sh line of the page must
  run it.
- ```text and ```json blocks are output, shown to the reader; any other language fails the test.
- a page declares the tables its examples use in a comment, ``<!-- doc-tables: orders=pk:S,sk:N
  -->``; each is created under a unique name for the run, and the name is substituted where a
  table name stands (a quoted string in Python, after ``-t``/``--table-name`` in a shell).
"""

from __future__ import annotations

import inspect
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.connect import is_loopback
from ddbkeys.testing.plugin import ENDPOINT_ENV

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing.tables import TableFactory

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli.md"),
]
BLOCK = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.M | re.S)
TABLES = re.compile(r"<!-- doc-tables: (.*?) -->")
RUN_ELSEWHERE = {"make demo", "make test"}
SAVED_SCRIPT = re.compile(r"\A# ([\w-]+\.py)\n")
#: What examples that build boto3 objects themselves (``boto3.resource("dynamodb")``) need on
#: DynamoDB Local, where a developer's AWS profile would give them: set unless already set.
LOCAL_SETTINGS = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
}


def blocks(text: str) -> list[tuple[str, int, str]]:
    """(language, line number, code) of each fenced block."""
    return [(m[1], text[: m.start()].count("\n") + 2, m[2]) for m in BLOCK.finditer(text)]


def declared_tables(text: str) -> dict[str, list[tuple[str, str]]]:
    """name -> [(attribute, type), ...] (partition key first)."""
    tables: dict[str, list[tuple[str, str]]] = {}
    for declaration in TABLES.findall(text):
        for entry in declaration.split():
            name, keys = entry.split("=")
            tables[name] = [tuple(k.split(":")) for k in keys.split(",")]
    return tables


def substitute(code: str, language: str, names: dict[str, str]) -> str:
    for name, real in names.items():
        if language == "python":
            code = re.sub(rf"([\"']){re.escape(name)}\1", f'"{real}"', code)
        else:
            code = re.sub(rf"(-t|--table-name)(\s+){re.escape(name)}\b", rf"\g<1>\g<2>{real}", code)
    return code


def shell_lines(code: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in code.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def run_shell(line: str, env: dict[str, str], cwd: Path, where: str) -> None:
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{where}: {line}\n{result.stderr}"


def shell_env(endpoint_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint_url,
    }


def run_local_until_interrupted(line: str, env: dict[str, str], cwd: Path) -> None:
    process = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("DynamoDB Local is running on http://127.0.0.1:"), first
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(
    page: Path,
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = page.read_text(encoding="utf-8")
    names = {name: ddb_table_factory(*keys) for name, keys in declared_tables(text).items()}
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_endpoint_url)
    if is_loopback(ddb_endpoint_url):  # as a developer's AWS profile would give boto3
        for name, value in LOCAL_SETTINGS.items():
            monkeypatch.setenv(name, os.environ.get(name, value))
    monkeypatch.chdir(tmp_path)
    env = shell_env(ddb_endpoint_url)
    fixtures: dict[str, Any] = {"ddb_client": ddb_client, "ddb_table_factory": ddb_table_factory}
    namespace: dict[str, Any] = {"__name__": f"doc_{page.stem}"}
    ran = 0
    saved: list[str] = []  # scripts saved, each run by a shell line that names it
    for language, line_no, original in blocks(text):
        where = f"{page.relative_to(ROOT)}:{line_no}"
        code = substitute(original, language, names)
        if language in ("text", "json"):
            continue
        if language == "python" and (script := SAVED_SCRIPT.match(code)):
            (tmp_path / script[1]).write_text(code, encoding="utf-8")
            saved.append(script[1])
            continue
        if language == "python":
            if "DynamoDBLocal(" in code and os.environ.get(ENDPOINT_ENV):
                continue  # needs Java and the jar, which another endpoint does not
            before = set(namespace)
            exec(compile(code, where, "exec"), namespace)
            for name in sorted(set(namespace) - before):
                func = namespace[name]
                if name.startswith("test_") and callable(func):
                    func(**{p: fixtures[p] for p in inspect.signature(func).parameters})
            ran += 1
        elif language == "sh":
            for line in shell_lines(code):
                if line.split("#")[0].strip() in RUN_ELSEWHERE:
                    continue
                if line.startswith("ddbkeys local") and "--fetch-only" not in line:
                    if not os.environ.get(ENDPOINT_ENV):
                        run_local_until_interrupted(line, env, tmp_path)
                    continue
                run_shell(line, env, tmp_path, where)
                saved = [name for name in saved if name not in line]
            ran += 1
        else:
            pytest.fail(f"{where}: a ```{language} block: use python or sh (run), text or json")
    assert ran, f"{page.name} has no runnable example"
    assert not saved, f"{page.name}: no shell line runs {', '.join(saved)}"


def test_every_page_is_collected() -> None:
    assert ROOT / "README.md" in PAGES
    assert len([p for p in PAGES if "docs" in p.parts]) >= 9


# The examples in --help (docs/cli.md is --help) use these tables.
HELP_TABLES: dict[str, list[tuple[str, str]]] = {
    "orders": [("pk", "S")],
    "users": [("pk", "S")],
    "issues": [("pk", "S"), ("sk", "N")],
    "customers": [("pk", "S"), ("sk", "S")],
}
# Run by their own tests: tests/cli/test_demo.py and test_cli.py (until Ctrl-C).
HELP_RUN_ELSEWHERE = ("ddbkeys demo", "ddbkeys local")


def help_examples() -> list[str]:
    """The example command lines of every command's --help, as docs/cli.md holds them."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    return [
        line.strip()
        for _, _, code in blocks(text)
        for line in code.splitlines()
        if line.strip().startswith("ddbkeys ") or "| ddbkeys " in line
    ]


def test_help_examples_run(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    names = {name: ddb_table_factory(*keys) for name, keys in HELP_TABLES.items()}
    env = shell_env(ddb_endpoint_url)
    ran = []
    for line in help_examples():
        if line.startswith(HELP_RUN_ELSEWHERE) or re.search(r"-t T\b", line):
            continue  # the second kind: a synopsis with placeholders (T, KEY...)
        run_shell(substitute(line, "sh", names), env, tmp_path, "docs/cli.md")
        ran.append(line)
    assert len(ran) >= 12, ran
