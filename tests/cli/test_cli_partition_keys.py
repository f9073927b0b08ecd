"""``ddbkeys partition-keys`` as a user meets it, against DynamoDB."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from itertools import islice
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner, Result

from ddbkeys import ResumeTokenError
from ddbkeys._cli import cli
from ddbkeys._demo_keys import load_items
from ddbkeys.partition_keys import distinct_partition_keys
from ddbkeys.partition_keys._listing.text import read_text_key
from ddbkeys.testing._tables import TableFactory
from tests.support.terminal import run_with_terminal_stderr

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def run(endpoint: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["partition-keys", *args, "--endpoint-url", endpoint])


def fill(client: DynamoDBClient, table: str, keys: int, per_key: int = 3) -> None:
    for k in range(keys):
        for i in range(per_key):
            client.put_item(TableName=table, Item={"pk": {"S": f"k{k:03}"}, "sk": {"N": str(i)}})


def test_list_text_json_jsonl(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 25)
    expected = [f"k{k:03}" for k in range(25)]
    for method in ("auto", "scan", "skip", "skip-pages"):
        text = run(ddb_endpoint_url, "-t", table, "--method", method)
        assert text.exit_code == 0, text.output
        assert sorted(text.stdout.split()) == expected
        assert text.stderr.startswith("25 keys (")  # the summary, on stderr
        assert re.search(r" \d+ requests?, ", text.stderr) and "RCU" in text.stderr
    jsonl = run(ddb_endpoint_url, "-t", table, "--output", "jsonl", "--quiet", "--segments", "3")
    assert sorted(json.loads(line)["key"] for line in jsonl.stdout.splitlines()) == expected
    assert jsonl.stderr == ""
    document = json.loads(run(ddb_endpoint_url, "-t", table, "--output", "json", "-q").stdout)
    assert sorted(document["keys"]) == expected
    assert document["usage"]["requests"] >= 1


def unit_sized_collections(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, keys: int
) -> str:
    """A table of ``keys`` collections of 9 items of about 470 bytes (a 4 KB page holds 8)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    items = [
        {"pk": {"S": f"u{k:04}"}, "sk": {"N": str(i)}, "p": {"S": "x" * 430}}
        for k in range(keys)
        for i in range(9)
    ]
    load_items(ddb_client, table, items)
    return table


def test_the_summary_says_where_skip_pages_went_on_as_a_scan(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Collections of 9 items of about 470 bytes (a 4 KB page holds 8): skipping past each
    saves an item of nine, so skip-pages goes on as a scan, and its summary line and the JSON
    document say after how many keys and why."""
    table = unit_sized_collections(ddb_client, ddb_table_factory, 300)
    text = run(ddb_endpoint_url, "-t", table, "--method", "skip-pages")
    assert text.exit_code == 0, text.output
    assert len(text.stdout.split()) == 300
    note = re.search(r"; (skip-pages read on as a scan after [\d,]+ keys: .*)$", text.stderr)
    assert note is not None, text.stderr
    assert re.search(
        r"skipping saved under 5%, as far as [\d,]+ pages showed \(a page read on still skips "
        r"the rest of the collection it ends in\)$",
        note[1],
    )
    document = json.loads(
        run(ddb_endpoint_url, "-t", table, "-m", "skip-pages", "--output", "json", "-q").stdout
    )
    assert document["method_note"] == note[1]
    plain = run(ddb_endpoint_url, "-t", table, "-m", "scan", "--output", "json", "-q")
    assert json.loads(plain.stdout)["method_note"] == ""  # nothing to say


def test_the_summary_says_how_many_readers_ran(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """auto lists a table of 5 MB (up to one reader every 2 MB) by skipping, a request a key
    (600 collections of two 4 KB items): the first segment shows it, a second reader joins,
    and its summary line and the JSON document say so, as does a listing with --segments; one
    reader says nothing (a table where none joins: tests/integration/test_partition_keys.py)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    load_items(
        ddb_client,
        table,
        [
            {"pk": {"S": f"w{k:04}"}, "sk": {"N": str(i)}, "p": {"S": "x" * 4000}}
            for k in range(600)
            for i in range(2)
        ],
    )
    text = run(ddb_endpoint_url, "-t", table)
    assert text.exit_code == 0, text.output
    assert len(text.stdout.split()) == 600
    assert text.stderr.startswith("600 keys (skip-pages, 2 readers): "), text.stderr
    document = json.loads(run(ddb_endpoint_url, "-t", table, "--output", "json", "-q").stdout)
    assert document["readers"] == 2 and "up to 2 at once" in document["method_reason"]
    three = run(ddb_endpoint_url, "-t", table, "-m", "scan", "--segments", "3")
    assert three.stderr.startswith("600 keys (scan, 3 readers): "), three.stderr
    one = run(ddb_endpoint_url, "-t", table, "--segments", "1", "--output", "json")
    assert one.stderr.startswith("600 keys (skip-pages): "), one.stderr
    assert json.loads(one.stdout)["readers"] == 1


def test_binary_and_number_keys(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "S"))
    for raw_key in (b"\x00\x01", b"\xff"):
        ddb_client.put_item(TableName=table, Item={"pk": {"B": raw_key}, "sk": {"S": "x"}})
    out = run(ddb_endpoint_url, "-t", table, "-q").stdout.split()
    assert sorted(base64.b64decode(k) for k in out) == [b"\x00\x01", b"\xff"]
    numbers = ddb_table_factory(("pk", "N"), ("sk", "S"))
    for number in ("1", "2.5", "-3"):
        ddb_client.put_item(TableName=numbers, Item={"pk": {"N": number}, "sk": {"S": "x"}})
    assert sorted(run(ddb_endpoint_url, "-t", numbers, "-q").stdout.split()) == ["-3", "1", "2.5"]


def test_index_commands(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 5)
    create = run(ddb_endpoint_url, "index", "create", "-t", table)
    assert create.exit_code == 0, create.output
    assert create.stdout == f"Index ddbkeys-partition-keys of table {table}: ACTIVE\n"
    verify = run(ddb_endpoint_url, "index", "verify", "-t", table)
    assert verify.exit_code == 1
    # (helper-89 C9: with the stream off, "run `index repair`" alone: it fixes one moment)
    assert verify.stdout.splitlines()[-1] == (
        "NOT HEALTHY: `index repair` fixes the markers once; the table's stream is off, so "
        "nothing keeps them right as the table is written: turn it on (`ddbkeys partition-keys "
        f"index stream -t {table}`) and start `ddbkeys partition-keys index follow -t {table} "
        "--backfill` (or the Lambda handler)"
    )
    assert run(ddb_endpoint_url, "index", "mark", "-t", table, "k000").stdout == (
        "1 marker(s) written, 0 already there\n"
    )
    backfill = run(ddb_endpoint_url, "index", "backfill", "-t", table)
    assert backfill.stdout == "4 marker(s) written, 1 already there\n"
    assert run(ddb_endpoint_url, "index", "verify", "-t", table).exit_code == 0
    # Nothing keeps the markers from a stream: the index cannot be proven complete.
    unproven = run(ddb_endpoint_url, "-t", table, "--method", "index")
    assert unproven.exit_code == 1 and unproven.stdout == ""
    assert unproven.output.splitlines()[-1] == (
        "Error: The marker index 'ddbkeys-partition-keys' of table "
        f"{table!r} cannot be proven complete now: the table's stream is off, so the "
        "changes since the index's snapshot cannot be read (`ddbkeys partition-keys index "
        f"status -t {table}` says what to run). List with --method auto, or read the index as "
        "it is with --trust-index."
    )
    listed = run(ddb_endpoint_url, "-t", table, "--method", "index", "--trust-index")
    assert sorted(listed.stdout.split()) == [f"k{k:03}" for k in range(5)]
    assert "(index)" in listed.stderr
    assert "Warning: asked for, and read as it is (--trust-index): nothing" in listed.stderr
    # JSON's reason is in the CLI's words too, as the stderr line is.
    as_json = run(ddb_endpoint_url, "-t", table, "-m", "index", "--trust-index", "--output", "json")
    reason = json.loads(as_json.stdout)["method_reason"]
    assert "(--trust-index)" in reason and "trust_index" not in reason
    # The same from a plan: the tasks read the index as it is, and together list every key.
    planned = run(
        ddb_endpoint_url, "plan", "-t", table, "-m", "index", "--trust-index", "--tasks", "2"
    )
    assert planned.exit_code == 0, planned.output
    lines = planned.stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["options"]["trust_index"] for line in lines)
    said = planned.stderr.splitlines()[0]  # (helper-69: it said trust_index=True there)
    assert "(--trust-index)" in said and "trust_index" not in said, planned.stderr
    keys = []
    for line in lines:
        ran = CliRunner().invoke(cli, ["partition-keys", "run-task"], input=line)
        assert ran.exit_code == 0, ran.output
        keys += ran.stdout.split()
    assert sorted(keys) == [f"k{k:03}" for k in range(5)]
    margin = run(ddb_endpoint_url, "plan", "-t", table, "-m", "index", "--replay-margin", "5")
    assert margin.exit_code == 1 and "cannot be proven complete now" in margin.output
    assert run(ddb_endpoint_url, "index", "unmark", "-t", table, "k004", "k009").stdout == (
        "1 marker(s) removed, 1 not there\n"
    )
    repair = run(ddb_endpoint_url, "index", "repair", "-t", table)
    assert repair.exit_code == 0
    assert repair.stdout.splitlines()[1:] == [
        "missing markers: 1: k004",
        "orphaned markers: 0",
        "collections that cannot be marked (data at the marker's key): 0",
        "markers written: 1: k004",
        "orphaned markers removed: 0",
        "REPAIRED",
    ]
    assert run(ddb_endpoint_url, "index", "verify", "-t", table).stdout.splitlines()[-1] == "OK"


def test_errors(ddb_endpoint_url: str, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    missing = run(ddb_endpoint_url, "-t", "no-such-table")
    assert missing.exit_code == 1
    assert missing.output.splitlines()[-1].startswith("Error: Table 'no-such-table' not found")
    no_index = run(ddb_endpoint_url, "-t", table, "--method", "index")
    assert no_index.exit_code == 1
    assert no_index.output.splitlines()[-1].startswith(
        f"Error: Table {table!r} has no index 'ddbkeys-partition-keys'. Create it with"
    )
    zero = run(ddb_endpoint_url, "-t", table, "--segments", "0")
    assert zero.exit_code == 2
    million = run(ddb_endpoint_url, "-t", table, "--segments", "1000000")
    assert million.exit_code == 2
    assert million.output.splitlines()[-1] == (
        "Error: Invalid value for '--segments': 1000000 is not in the range 1<=x<=64."
    )
    no_rate = run(ddb_endpoint_url, "-t", table, "--max-rcu-per-second", "0")
    assert no_rate.exit_code == 2
    assert "'--max-rcu-per-second': 0.0 is not in the range x>=0.1" in no_rate.output
    no_table = run(ddb_endpoint_url)
    assert no_table.exit_code == 2
    assert no_table.output.splitlines()[-1] == "Error: Missing option '--table-name' / '-t'."
    bad_token = run(ddb_endpoint_url, "-t", table, "--resume", "nonsense")
    assert bad_token.exit_code == 1
    assert "is not one ddbkeys wrote" in bad_token.output
    unreachable = CliRunner().invoke(
        cli, ["partition-keys", "-t", table, "--endpoint-url", "http://127.0.0.1:9"]
    )
    assert unreachable.exit_code == 1
    assert unreachable.output.splitlines()[-1].startswith("Error: Could not connect")


def test_interrupt_prints_a_resume_token(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 40, per_key=1)
    # A slow listing (a read budget of 2 RCU/s), interrupted like a user's Ctrl-C.
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddbkeys",
            "partition-keys",
            "-t",
            table,
            "--method",
            "skip",
            "--max-rcu-per-second",
            "2",
            "--endpoint-url",
            ddb_endpoint_url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Unbuffered on our side too: communicate() reads the pipe itself, so a key that a
        # buffered readline() had taken in beyond its line would be lost to the test.
        bufsize=0,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert process.stdout is not None
    printed = process.stdout.readline()  # the listing runs (its signal handlers are in place)
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    out_bytes, err_bytes = process.communicate(timeout=30)
    out, err = out_bytes.decode(), err_bytes.decode()
    assert process.returncode == 130, err
    first = (printed.decode() + out).split()
    assert 0 < len(first) < 40
    token = err.split("Resume with: --resume ")[1].split()[0]
    rest = run(ddb_endpoint_url, "-t", table, "--method", "skip", "--resume", token, "-q")
    assert sorted(first + rest.stdout.split()) == [f"k{k:03}" for k in range(40)]


def test_a_read_budget_is_kept_over_a_listing_of_one_page(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """helper-89 F3: `--max-rcu-per-second 5` read a table's one page (96 RCU) in 0.8 s: the
    listing ended in debt. After the answer (whole, on stdout), the command now waits off
    what it read beyond the budget, and says so (a lower bound of the time, which a loaded
    machine only lengthens; the bucket holds a second's units at the start)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for k in range(60):
        item = {"pk": {"S": f"k{k:03}"}, "sk": {"N": "0"}, "pad": {"S": "x" * 400}}
        ddb_client.put_item(TableName=table, Item=item)
    rate = 1.0
    args = ["-t", table, "--method", "scan", "--max-rcu-per-second", str(rate)]
    began = time.monotonic()
    listed = run(ddb_endpoint_url, *args, "--output", "json")
    took = time.monotonic() - began
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.stdout)
    assert len(document["keys"]) == 60 and document["usage"]["requests"] == 1
    units = document["usage"]["read_units"]
    assert units >= 3, units  # (a page of 60 items of ~420 bytes: 3.5 RCU)
    assert took >= (units - rate) / rate * 0.98, (took, units)
    assert listed.stderr.splitlines()[-1].startswith("All keys read; waiting "), listed.stderr
    assert "to keep to 1 RCU a second (Ctrl-C ends the wait" in listed.stderr
    quiet = run(ddb_endpoint_url, *args, "-q")  # (quiet: the wait, without a word)
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr


def test_progress_is_drawn_on_a_terminal(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """With stderr on a terminal, a live line shows keys, requests and RCU so far; stdout still
    carries only the keys."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 300, per_key=1)
    command = [sys.executable, "-m", "ddbkeys", "partition-keys", "-t", table, "--method", "skip"]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    result, terminal = run_with_terminal_stderr([*command, "--endpoint-url", ddb_endpoint_url], env)
    assert result.returncode == 0, terminal
    assert len(result.stdout.splitlines()) == 300
    # Updates while listing (a count below the total), then the summary.
    drawn = [int(n) for n in re.findall(r"(\d+) keys \(skip\): ", terminal)]
    assert any(0 < n < 300 for n in drawn), terminal[-2000:]
    assert "300 keys (skip): 301 requests" in terminal
    quiet, silent = run_with_terminal_stderr(
        [*command, "--quiet", "--endpoint-url", ddb_endpoint_url], env
    )
    assert quiet.returncode == 0 and silent == ""
    # With parallel readers the line also says how many of the Scan segments are done.
    parallel, drawn_text = run_with_terminal_stderr(
        [*command, "--segments", "2", "--scan-segments", "8", "--endpoint-url", ddb_endpoint_url],
        env,
    )
    assert parallel.returncode == 0 and len(parallel.stdout.splitlines()) == 300
    assert re.search(r"; [0-7]/8 segments done", drawn_text), drawn_text[-2000:]
    assert "300 keys (skip, 2 readers): 308 requests" in drawn_text


def test_a_token_is_bound_to_its_table_and_method(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A token of another table (same key schema) is refused, in the CLI and the library, and
    so is a tampered one; the table's own token still resumes."""
    first, other = (ddb_table_factory(("pk", "S"), ("sk", "N")) for _ in range(2))
    fill(ddb_client, first, 5, per_key=1)
    fill(ddb_client, other, 5, per_key=1)
    listing = distinct_partition_keys(ddb_client, first, "skip")
    taken = list(islice(listing, 2))
    token = listing.checkpoint()
    refused = run(ddb_endpoint_url, "-t", other, "--resume", token)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr == (
        f"Error: The resume token is for table {first!r}, not {other!r}: resume with -t "
        f"{first}, or start the listing of {other!r} without it.\n"
    )
    with pytest.raises(ResumeTokenError, match=f"for table {first!r}, not {other!r}"):
        distinct_partition_keys(ddb_client, other, resume=token)
    wrong_method = run(ddb_endpoint_url, "-t", first, "--resume", token, "--method", "scan")
    assert wrong_method.exit_code == 1
    assert wrong_method.stderr == (
        "Error: The resume token is for method 'skip', not 'scan': resume with --method skip "
        "(or auto).\n"
    )
    data, _, check = token.rpartition(".")
    tampered = run(ddb_endpoint_url, "-t", first, "--resume", f"{data}.{check[::-1]}")
    assert tampered.exit_code == 1
    assert "(its check does not match)" in tampered.stderr
    rest = run(ddb_endpoint_url, "-t", first, "--resume", token, "-q")
    assert rest.exit_code == 0
    assert sorted([*map(str, taken), *rest.stdout.split()]) == [f"k{k:03}" for k in range(5)]


def test_a_key_with_line_breaks_stays_one_line(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Text output escapes backslashes and line breaks (reversibly); jsonl is unchanged."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    keys = ["two\nlines", "cr\rlf\r\n", "ls\u2028ps\u2029nel\x85", "C:\\new", "plain"]
    for key in keys:
        ddb_client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"N": "1"}})
    for method in ("scan", "skip-pages"):
        text = run(ddb_endpoint_url, "-t", table, "-q", "--method", method)
        assert text.exit_code == 0, text.output
        lines = text.stdout.split("\n")
        assert lines[-1] == "" and len(lines) == len(keys) + 1
        assert sorted(lines[:-1]) == sorted(
            ["two\\nlines", "cr\\rlf\\r\\n", "ls\\u2028ps\\u2029nel\\x85", "C:\\\\new", "plain"]
        )
        assert sorted(read_text_key(line) for line in lines[:-1]) == sorted(keys)
    jsonl = run(ddb_endpoint_url, "-t", table, "-q", "--output", "jsonl")
    assert sorted(json.loads(line)["key"] for line in jsonl.stdout.splitlines()) == sorted(keys)
