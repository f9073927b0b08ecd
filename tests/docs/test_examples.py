"""Every code example in the README and docs/ runs, against the test endpoint, and so does
every example command in the CLI's --help (docs/cli.md is generated from it).

Rules, so that no example can escape:
- a ```python block is executed; the blocks of one page share a namespace, in order, like a
  notebook. A function it defines whose name starts with ``test_`` is called with the pytest
  fixtures it names (``ddb_client``, ``ddb_table_factory``).
- a ```sh block is run line by line with bash (``\\`` continues a line), in a scratch folder,
  with ``AWS_ENDPOINT_URL_DYNAMODB`` pointing at the test endpoint; each line must exit 0.
  Four kinds of line are handled differently, and each is accounted for: ``make demo`` and
  ``make test`` are the README's two commands, which CI runs itself (``make test`` *is* CI; the
  demo is run by tests/cli/test_demo.py); ``ddbkeys local`` without ``--fetch-only`` runs until
  Ctrl-C, so it is started, its first lines checked, and interrupted; ``export NAME=value ...``
  holds for the page's later lines and Python blocks, as in the reader's terminal (plain boto3's
  region and credentials for DynamoDB Local), unless the test's environment sets NAME already.
- a ```python block whose first line is a comment naming a file (``# glue_listing.py``) is a
  script the page tells the reader to save (a Glue job's): it is saved in the scratch folder
  under that name instead of being run in the namespace, and a later ```sh line of the page must
  run it.
- ```text and ```json blocks are output, shown to the reader; any other language fails the test.
- a page of :data:`ON_MOTO` (exports, which DynamoDB Local does not have) runs against moto's
  server instead (tests/support/moto_server.py), which is then its DynamoDB and its S3, with
  the endpoint, region and credentials set as for the rest; its tables are checked the same way.
- nothing is made or set for a page: as far as it can tell it starts from an empty
  server, and its own visible commands make the tables it uses (``ddbkeys table create -t
  orders ...`` in a ```sh block, ``create_table_for(client, "orders", ...)`` in Python, or a
  PynamoDB model's ``table_name = "orders"`` with its ``create_table()``). Those names, and only
  those, are substituted for the run by unique ones where a table name stands (a quoted string
  in Python, after ``-t``/``--table-name`` in a shell), and checked absent before the page runs;
  so a snippet that uses a table its page never makes fails (not found). On the embedded server,
  a table the page made under any other name (an unsubstituted one, which a later page would
  find there) fails the test too; the marker index's state table, which ddbkeys makes itself, is
  allowed.
- no table name is made by two pages (:func:`test_no_table_is_made_by_two_pages`): a reader runs
  the README and then the pages in the site's order on one server or AWS account, where the
  substitution above does not happen.
"""

from __future__ import annotations

import inspect
import os
import re
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._errors import TableNotFoundError
from ddbkeys.partition_keys._index.state import state_table_name
from ddbkeys.testing._plugin import ENDPOINT_ENV
from tests.support.moto_server import MOTO_REGION, moto_client, moto_url

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

__all__ = ["moto_url"]  # (the fixture, for the pages of ON_MOTO)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli.md"),
]
BLOCK = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.M | re.S)
#: How a page makes a table, by language: the names found are the ones substituted.
MADE = {
    "sh": re.compile(r"\bddbkeys table create\b.*?(?:-t|--table-name)[\s=]+([\w.-]+)"),
    "python": re.compile(
        r"\bcreate_table_for\([^\"']*[\"']([\w.-]+)[\"']"  # ddbkeys._table_setup: its first string
        r"|^\s*table_name = [\"']([\w.-]+)[\"']",  # a PynamoDB model's Meta: create_table()
        re.M,
    ),
}
RUN_ELSEWHERE = {"make demo", "make test"}
#: Pages whose examples start exports (ExportTableToPointInTime, S3): DynamoDB Local has none,
#: so they run against moto's server, for DynamoDB and S3 alike.
ON_MOTO = {"docs/partition-keys/exports.md"}
SAVED_SCRIPT = re.compile(r"\A# ([\w-]+\.py)\n")
#: ``export NAME=value ...``: the reader's terminal keeps it for the page's later lines.
EXPORT = re.compile(r"export(\s+\w+=\S+)+\s*(#.*)?")


def blocks(text: str) -> list[tuple[str, int, str]]:
    """(language, line number, code) of each fenced block."""
    return [(m[1], text[: m.start()].count("\n") + 2, m[2]) for m in BLOCK.finditer(text)]


def made_tables(text: str) -> list[str]:
    """The tables a page makes with its own visible commands, in page order."""
    names: list[str] = []
    for language, _, code in blocks(text):
        if language not in MADE:
            continue
        lines = "\n".join(shell_lines(code)) if language == "sh" else code
        for found in MADE[language].finditer(lines):
            name = next(group for group in found.groups() if group)
            if name not in names:
                names.append(name)
    return names


def substitute(code: str, language: str, names: dict[str, str]) -> str:
    for name, real in names.items():
        if language == "python":
            code = re.sub(rf"([\"']){re.escape(name)}\1", f'"{real}"', code)
        else:
            code = re.sub(
                rf"(-t|--table-name)([\s=]+){re.escape(name)}(?![\w.-])", rf"\g<1>\g<2>{real}", code
            )
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


def run_left_running(line: str, env: dict[str, str], cwd: Path, where: str) -> None:
    """An example its comment says is left running (a follower): it still runs after a few
    seconds, then stops cleanly on Ctrl-C (a traceback or an ``Error:`` line fails)."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    try:
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        assert process.poll() is None, f"{where}: {line}\n{process.communicate()}"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert "Stopped by SIGINT" in stderr, f"{where}: {line}\n{stderr}"
        assert "Error:" not in stderr and "Traceback" not in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()


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


def table_names(client: DynamoDBClient) -> set[str]:
    pages = client.get_paginator("list_tables").paginate()
    return {name for page in pages for name in page["TableNames"]}


@dataclass
class Reader:
    """What a reader of the page has: a terminal (its environment, a scratch folder), a Python
    session in the same environment, and the pytest fixtures a ``test_`` function asks for."""

    client: DynamoDBClient
    env: dict[str, str]
    folder: Path
    fixtures: dict[str, Any]
    monkeypatch: pytest.MonkeyPatch
    #: The server is shared with other workers (DDBKEYS_TEST_ENDPOINT_URL): tables made
    #: meanwhile are not the page's alone.
    shared: bool = False

    def export(self, line: str) -> bool:
        """Apply an ``export NAME=value ...`` line, as the reader's terminal keeps it, unless
        the test's own environment sets NAME (a real endpoint's credentials win)."""
        if not EXPORT.fullmatch(line):
            return False
        for name, value in re.findall(r"(\w+)=(\S+)", line.partition("#")[0]):
            if name not in os.environ:
                self.env[name] = value
                self.monkeypatch.setenv(name, value)
        return True


@pytest.fixture
def reader(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Reader:
    """A reader pointed at the test endpoint, as `ddbkeys local`'s export line points them."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_endpoint_url)
    monkeypatch.chdir(tmp_path)
    fixtures: dict[str, Any] = {"ddb_client": ddb_client, "ddb_table_factory": ddb_table_factory}
    env = shell_env(ddb_endpoint_url)
    return Reader(
        ddb_client, env, tmp_path, fixtures, monkeypatch, shared=bool(os.environ.get(ENDPOINT_ENV))
    )


def moto_reader(url: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Reader:
    """A reader whose DynamoDB and S3 are moto's server (see :data:`ON_MOTO`)."""
    settings = {
        "AWS_ENDPOINT_URL_DYNAMODB": url,
        "AWS_ENDPOINT_URL_S3": url,
        "AWS_ACCESS_KEY_ID": "moto",
        "AWS_SECRET_ACCESS_KEY": "moto",
        "AWS_DEFAULT_REGION": MOTO_REGION,
        "AWS_REGION": MOTO_REGION,
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    env = {k: v for k, v in shell_env(url).items() if k not in ("AWS_PROFILE", "AWS_ENDPOINT_URL")}
    return Reader(moto_client(url), {**env, **settings}, folder, {}, monkeypatch)


def run_page(text: str, page: str, reader: Reader) -> None:
    """Run a page's examples in order, as the module's docstring says, on tables of its own."""
    client = reader.client
    run = uuid.uuid4().hex[:8]
    names = {name: f"doc-{name}-{run}" for name in made_tables(text)}
    for real in names.values():
        with pytest.raises(client.exceptions.ResourceNotFoundException):
            client.describe_table(TableName=real)  # the page starts with none of its tables
    embedded = not reader.shared  # a server of this worker's alone
    before = table_names(client) if embedded else set()
    try:
        run_blocks(text, page, names, reader)
    finally:
        made = table_names(client) - before if embedded else set(names.values())
        factory = reader.fixtures.get("ddb_table_factory")
        kept = {state_table_name(), *(factory.created if factory is not None else ())}
        for table in made - kept:
            with suppress(client.exceptions.ResourceNotFoundException):
                client.delete_table(TableName=table)
    stray = sorted(made - kept - set(names.values()))
    assert not stray, f"{page} made {stray}, not by a command the module's docstring names"


def run_blocks(text: str, page: str, names: dict[str, str], reader: Reader) -> None:
    namespace: dict[str, Any] = {"__name__": f"doc_{Path(page).stem}"}
    env, folder = reader.env, reader.folder
    ran = 0
    saved: list[str] = []  # scripts saved, each run by a shell line that names it
    for language, line_no, original in blocks(text):
        where = f"{page}:{line_no}"
        code = substitute(original, language, names)
        if language in ("text", "json"):
            continue
        if language == "python" and (script := SAVED_SCRIPT.match(code)):
            (folder / script[1]).write_text(code, encoding="utf-8")
            saved.append(script[1])
            continue
        if language == "python":
            if "DynamoDBLocal(" in code and os.environ.get(ENDPOINT_ENV):
                continue  # needs Java and the jar, which another endpoint does not
            known = set(namespace)
            exec(compile(code, where, "exec"), namespace)
            for name in sorted(set(namespace) - known):
                func = namespace[name]
                if name.startswith("test_") and callable(func):
                    func(**{p: reader.fixtures[p] for p in inspect.signature(func).parameters})
            ran += 1
        elif language == "sh":
            for line in shell_lines(code):
                if line.split("#")[0].strip() in RUN_ELSEWHERE or reader.export(line):
                    continue
                if line.startswith("ddbkeys local") and "--fetch-only" not in line:
                    if not os.environ.get(ENDPOINT_ENV):
                        run_local_until_interrupted(line, env, folder)
                    continue
                run_shell(line, env, folder, where)
                saved = [name for name in saved if name not in line]
            ran += 1
        else:
            pytest.fail(f"{where}: a ```{language} block: use python or sh (run), text or json")
    assert ran, f"{page} has no runnable example"
    assert not saved, f"{page}: no shell line runs {', '.join(saved)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page: Path, reader: Reader, request: pytest.FixtureRequest) -> None:
    name = str(page.relative_to(ROOT))
    if name in ON_MOTO:
        reader = moto_reader(request.getfixturevalue("moto_url"), reader.folder, reader.monkeypatch)
    run_page(page.read_text(encoding="utf-8"), name, reader)


NEXT_ID = "```sh\nddbkeys ids next -t orders --counter order\n```\n"
NEXT_ID_PY = (
    "```python\nimport ddbkeys\nfrom ddbkeys.ids import AtomicCounter\n\n"
    'AtomicCounter(ddbkeys.make_client(), "orders", "order").next()\n```\n'
)
MAKE_ORDERS = "```sh\nddbkeys table create -t orders --for counter\n```\n"
MAKE_ORDERS_PY = (
    "```python\nimport ddbkeys\nfrom ddbkeys._table_setup import create_table_for\n\n"
    'create_table_for(ddbkeys.make_client(), "orders", "counter")\n```\n'
)


@pytest.mark.parametrize("made", [MAKE_ORDERS, MAKE_ORDERS_PY], ids=["sh", "python"])
@pytest.mark.parametrize("uses", [NEXT_ID, NEXT_ID_PY], ids=["sh", "python"])
def test_a_page_runs_on_the_tables_it_makes_and_no_other(
    made: str, uses: str, reader: Reader
) -> None:
    """The rules' controls: a page that uses a table it does not make fails, wherever its
    snippets run; made by its own visible command, the table is the run's, not ``orders``."""
    missing = TableNotFoundError if uses == NEXT_ID_PY else AssertionError
    with pytest.raises(missing, match="Table 'orders' not found"):
        run_page(uses, "uses.md", reader)
    run_page(made + uses, "makes.md", reader)
    assert "orders" not in table_names(reader.client)


def test_a_table_made_another_way_fails_the_page(reader: Reader) -> None:
    if os.environ.get(ENDPOINT_ENV):
        pytest.skip("the server is shared: tables made meanwhile are not the page's alone")
    page = (
        "```sh\nddbkeys table create -t other --for counter\n```\n"
        "```python\nimport ddbkeys\nfrom ddbkeys._table_setup import table_request\n\n"
        'ddbkeys.make_client().create_table(**table_request("orders"))\n```\n'
    )
    with pytest.raises(AssertionError, match=r"made \['orders'\]"):
        run_page(page, "other.md", reader)
    assert not {"orders", "other"} & table_names(reader.client)  # made, then deleted


def test_every_page_is_collected() -> None:
    assert ROOT / "README.md" in PAGES
    assert len([p for p in PAGES if "docs" in p.parts]) >= 9


def test_no_table_is_made_by_two_pages() -> None:
    """A reader runs the README, then the pages in the site's order, on one server or one AWS
    account, which cannot be started afresh for each page: a table name made by two pages
    meets the first page's items (or its other key schema) in the second, whose asserts of a
    fresh state then fail. :func:`run_page` cannot see it (it substitutes each page's names
    by unique ones), so each page makes tables of its own names."""
    makers: dict[str, list[str]] = {}
    for page in PAGES:
        for name in made_tables(page.read_text(encoding="utf-8")):
            makers.setdefault(name, []).append(str(page.relative_to(ROOT)))
    shared = {name: pages for name, pages in makers.items() if len(pages) > 1}
    assert not shared, f"tables made by more than one page: {shared}"


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
    runnable = [
        line
        for line in help_examples()
        # (the second kind: a synopsis with placeholders, T, KEY..., or an export's ARN, or an
        # export on S3: those need AWS, which DynamoDB Local is not; tests/integration/
        # test_export_start.py and test_export_listing.py run them against moto's server)
        if not line.startswith(HELP_RUN_ELSEWHERE)
        and not re.search(r"-t T\b|--export-arn ARN\b|--from-export s3://", line)
    ]
    # The marker index's examples (table issues) wait out the default replay margin, as a user
    # would: they run in order beside the others, which touch other tables and files.
    groups = [
        [line for line in runnable if "-t issues" in line],
        [line for line in runnable if "-t issues" not in line],
    ]

    def run_group(n: int) -> None:
        where = tmp_path / f"group{n}"
        where.mkdir()
        for line in groups[n]:
            run = run_left_running if "# left running" in line else run_shell
            run(substitute(line, "sh", names), env, where, "docs/cli.md")

    with ThreadPoolExecutor(len(groups)) as pool:
        list(pool.map(run_group, range(len(groups))))
    assert all(groups) and len(runnable) >= 12, runnable
