"""What the ``ddbkeys`` command loads before it does anything: ``--version`` and ``--help`` load
neither boto3 nor botocore, each command only its own code, and ``import ddbkeys._cli`` costs
at most 1.3x ``import boto3`` (each measured by ``python -X importtime`` in fresh processes)."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import click
import pytest

import ddbkeys
from ddbkeys._cli import COMMANDS, cli

#: Runs the command with the given arguments, then prints the modules it loaded (as JSON).
RUN = """
import json, sys
from ddbkeys._cli import main
sys.argv = ["ddbkeys", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""

HEAVY = ("boto3", "botocore", "rich")


def loaded(*args: str) -> tuple[str, set[str]]:
    """What ``ddbkeys *args`` printed, and the modules it loaded, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    return done.stdout, modules


def under(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("-h",)], ids=" ".join)
def test_version_and_help_load_neither_boto3_nor_botocore(args: tuple[str, ...]) -> None:
    out, modules = loaded(*args)
    assert ddbkeys.__version__ in out if args == ("--version",) else "Commands:" in out
    assert under(modules, *HEAVY) == []
    # (and none of the commands: their summaries are in ddbkeys._cli.COMMANDS)
    assert under(modules, "ddbkeys") == [
        "ddbkeys",
        "ddbkeys._cli",
        "ddbkeys._cli.group",
        "ddbkeys._version",
    ]


#: What a command does not load: rich and the demo only for the commands that show them, the
#: listings (with the marker index's proof) only for the commands that list, audit or keep the
#: marker index.
NOT_LOADED = ("rich", "ddbkeys._demo", "ddbkeys._cli.demo")
LISTINGS = ("ddbkeys.partition_keys",)


CASES = [
    (("ids", "next", "--help"), NOT_LOADED + LISTINGS),
    (("table", "create", "--help"), NOT_LOADED + LISTINGS),
    (("local", "--help"), NOT_LOADED + LISTINGS),
    (("iam-policy", "--help"), NOT_LOADED + LISTINGS),
    (("partition-keys", "estimate", "--help"), NOT_LOADED),
    (("partition-keys", "index", "status", "--help"), NOT_LOADED),
]


@pytest.mark.parametrize(("args", "not_loaded"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_command_loads_only_what_it_needs(
    args: tuple[str, ...], not_loaded: tuple[str, ...]
) -> None:
    out, modules = loaded(*args)
    assert out.startswith(f"Usage: ddbkeys {' '.join(args[:-1])}")
    assert under(modules, *not_loaded) == []


def test_the_summaries_in_the_registry_are_the_commands_own() -> None:
    """``ddbkeys --help`` shows each command's summary from COMMANDS without loading it: the
    same words the command's own help gives, at any width."""
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name, entry in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and not command.hidden and not command.deprecated
        placeholder = click.Command(name, help=entry.summary)
        for limit in (20, 45, 60, 80, 200):
            assert placeholder.get_short_help_str(limit) == command.get_short_help_str(limit)
        for sub_name, sub in entry.commands.items():  # (a group's own commands, on demand)
            assert isinstance(command, click.Group)
            loaded_sub = command.get_command(ctx, sub_name)
            assert loaded_sub is not None and loaded_sub.name == sub_name, sub.target


def import_time(module: str, pycache: Path) -> int:
    """Microseconds ``import module`` took, cumulative (what ``-X importtime`` says), in a
    fresh process whose bytecode is kept in ``pycache``."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    line = re.compile(rf"^import time:\s+\d+ \|\s+(\d+) \| {re.escape(module)}$", re.MULTILINE)
    found = line.findall(done.stderr)
    assert found, done.stderr[-2000:]
    return int(found[-1])


#: The bound of issue 35: the CLI's import, against boto3's in the same run.
BOUND = 1.3


def test_importing_the_cli_costs_at_most_1_3x_importing_boto3(tmp_path: Path) -> None:
    """Both imports in fresh processes, interleaved (which goes first alternates), bytecode
    compiled once beforehand for both; the medians of 7 rounds compared, so a busy machine
    slows both alike."""
    for module in ("boto3", "ddbkeys._cli"):  # (compiles both, into tmp_path)
        import_time(module, tmp_path)
    cli_times: list[int] = []
    boto3_times: list[int] = []
    for round_ in range(7):
        order = ("boto3", "ddbkeys._cli") if round_ % 2 else ("ddbkeys._cli", "boto3")
        for module in order:
            (boto3_times if module == "boto3" else cli_times).append(import_time(module, tmp_path))
    ratio = statistics.median(cli_times) / statistics.median(boto3_times)
    assert ratio <= BOUND, (
        f"import ddbkeys._cli {statistics.median(cli_times)} us, import boto3 "
        f"{statistics.median(boto3_times)} us (medians of 7): {ratio:.2f}x > {BOUND}x"
    )
