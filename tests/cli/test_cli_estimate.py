"""``ddbkeys partition-keys estimate`` (text and json), the estimate ``plan`` says on stderr,
and the listing's progress line with its share of the table and the time left."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from ddbkeys._cli import cli
from ddbkeys.partition_keys._tasks.estimate import REFRESHED
from tests.support.terminal import run_with_terminal_stderr

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: A figure as the estimate prints it (``0.5``, ``12.5``, ``1,004``), and a range of them:
#: ``~N`` when it is a point, else ``low-high``.
FIGURE = r"[\d,]+(?:\.\d+)?"
SPAN = rf"(?:~{FIGURE}|{FIGURE}-{FIGURE})"


def run(endpoint: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["partition-keys", *args, "--endpoint-url", endpoint])


def filled(
    client: DynamoDBClient,
    factory: TableFactory,
    keys: int = 300,
    pad: int = 280,
    name: str | None = None,
) -> str:
    """A table of ``keys`` collections of 4 items of about ``pad`` + 20 bytes (named ``name``,
    by default at random)."""
    table = factory(("pk", "S"), ("sk", "N"), name=name)
    for start in range(0, keys * 4, 25):
        batch: list[Any] = [
            {"PutRequest": {"Item": {"pk": {"S": f"k{n // 4:04}"}, "sk": {"N": str(n % 4)},
                                     "pad": {"S": "x" * pad}}}}
            for n in range(start, min(start + 25, keys * 4))
        ]  # fmt: skip
        client.batch_write_item(RequestItems={table: batch})
    return table


def test_estimate_as_text_and_json(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # A fixed name: the sample's segments are drawn by the table's name, so each run checks the
    # same draw. Its ranges hold 99 draws in 100 by design; with a random name one fresh-clone
    # run of .ci/run drew a key count of 301-... for these 300 keys (40 draws in a loop: lows
    # 224-295). How often the ranges hold is measured over many draws in test_estimate_ranges.
    # (items of about 1 KB: 1.2 MB, which the estimate samples; it reads a table of a MB or
    # less whole)
    table = filled(ddb_client, ddb_table_factory, pad=1000, name="ddbkeys-test-estimate-cli")
    text = run(ddb_endpoint_url, "estimate", "-t", table)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert re.fullmatch(
        rf"Table {table}: ~[\d.]+ MB, ~1,200 items, {SPAN} partition keys "
        r"\(size and items from DescribeTable, partition keys from the sample\)\.",
        lines[0],
    ), lines[0]
    rows = {line.split()[0]: line for line in lines if re.match(r"(scan|skip|index|export)", line)}
    assert set(rows) == {"scan", "skip", "skip-pages", "index", "export"}
    assert re.match(r"export +0 +- +- +-  --from-export: ~[\d.]+ MB written to S3", rows["export"])
    assert re.match(rf"scan +{SPAN} +~\d+ +[\d.]+ m?s +1 ", rows["scan"]), rows["scan"]
    assert "not available: the table has no marker index" in rows["index"]
    assert "auto would likely list with skip-pages: the table has no marker index" in text.stdout
    assert re.search(rf"skip-pages, ~{FIGURE} RCU against a scan's ~{FIGURE} RCU\.", text.stdout)
    assert "markers would add" in rows["index"]
    assert f"Note: {REFRESHED}." in text.stdout
    assert "The ranges rest on: " in text.stdout and "Scan segments drawn at random" in text.stdout
    assert "?/s" not in text.stdout
    document = run(
        ddb_endpoint_url, "estimate", "-t", table, "--output", "json", "--read-percent", "0.5"
    )
    assert document.exit_code == 0, document.output
    found = json.loads(document.stdout)
    assert found["items"] == 1200 and found["rate"] == 0.5 * found["read_capacity"]
    assert found["keys_low"] <= 300 <= found["keys_high"] <= 2 * found["keys_low"]
    assert found["keys_low"] <= found["keys"] <= found["keys_high"]
    by_method = {m["method"]: m for m in found["methods"]}
    for method in ("scan", "skip", "skip-pages"):
        line = by_method[method]
        assert line["rcu_low"] <= line["rcu"] <= line["rcu_high"], line
    assert by_method["skip"]["rcu_low"] <= 0.5 * 300 <= by_method["skip"]["rcu_high"]
    assert by_method["scan"]["rcu"] == found["size_bytes"] / 4096 * 0.5
    assert found["markers"]["markers_low"] <= 300 <= found["markers"]["markers_high"]
    assert found["basis"] and found["warning"] is None
    assert found["export"]["rcu"] == 0 and found["export"]["bytes"] == found["size_bytes"]


def test_estimate_refuses_what_it_cannot_use(ddb_endpoint_url: str) -> None:
    bad = run(ddb_endpoint_url, "estimate", "-t", "orders", "--read-percent", "3")
    assert bad.exit_code == 2 and "0.1<=x<=1.5" in bad.output
    missing = run(ddb_endpoint_url, "estimate", "-t", "no-such-table")
    assert missing.exit_code == 1
    assert missing.stderr.startswith("Error: ") and "no-such-table" in missing.stderr


def test_plan_says_what_it_will_cost_on_stderr(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = filled(ddb_client, ddb_table_factory)
    planned = run(ddb_endpoint_url, "plan", "-t", table, "--tasks", "3", "--method", "scan")
    assert planned.exit_code == 0, planned.output
    tasks = [json.loads(line) for line in planned.stdout.splitlines()]  # only tasks on stdout
    assert [t["segment"] for t in tasks] == [0, 1, 2]
    said = planned.stderr.splitlines()
    assert said[0] == "3 task(s), method scan: asked for"
    assert re.fullmatch(
        rf"Estimate for {table}: ~\d+ KB, ~1,200 items, {SPAN} keys; scan: {SPAN} RCU, "
        rf"~[\d.]+ m?s; 1 task\(s\) suggested \({REFRESHED}\)\.",
        said[1],
    ), said[1]


def test_the_progress_line_shows_the_share_of_the_table_and_the_time_left(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A scan of 5 segments of a page each (5,000 items: one page would hold them all), kept to
    6 RCU a second (about 45 RCU in all, some 7 s): the line says
    ~N% of the table's estimated size, never over 100%, and the time left once there is
    something to go by."""
    table = filled(ddb_client, ddb_table_factory, keys=1250, pad=60)
    command = [sys.executable, "-m", "ddbkeys", "partition-keys", "-t", table, "--method", "scan"]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}
    limited = ["--scan-segments", "5", "--max-rcu-per-second", "6"]
    result, terminal = run_with_terminal_stderr(
        [*command, *limited, "--endpoint-url", ddb_endpoint_url], env
    )
    assert result.returncode == 0, terminal
    assert len(result.stdout.splitlines()) == 1250
    shares = [int(n) for n in re.findall(r"; ~(\d+)% of ~\d+ KB", terminal)]
    assert shares and all(0 <= n <= 100 for n in shares), terminal[-2000:]
    assert any(0 < n < 100 for n in shares), terminal[-2000:]
    assert re.search(r"% of ~\d+ KB, ~[\d.]+ s left", terminal), terminal[-2000:]
    # A skip scan in one segment reads an unknown part of the table: nothing is said.
    skip, drawn = run_with_terminal_stderr(
        [*command[:-1], "skip", "--endpoint-url", ddb_endpoint_url], env
    )
    assert skip.returncode == 0 and "keys (skip): " in drawn
    assert "%" not in drawn and " left" not in drawn


def tiny_binary_keys(client: DynamoDBClient, table: str) -> None:
    """400 single-item collections with 4-byte binary keys: a marker is larger than its item."""
    for start in range(0, 400, 25):
        batch: list[Any] = [
            {"PutRequest": {"Item": {"pk": {"B": n.to_bytes(4, "big")}, "sk": {"B": b"\x01"}}}}
            for n in range(start, start + 25)
        ]
        client.batch_write_item(RequestItems={table: batch})


def test_index_create_says_what_markers_add_and_warns_when_the_index_costs_more(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Single-item collections with 4-byte binary keys: a marker is larger than the item it
    marks, so a listing from the index would cost more than today's scan: said in one line
    before anything is created (--dry-run creates nothing); larger collections: no warning."""
    table = ddb_table_factory(("pk", "B"), ("sk", "B"))
    tiny_binary_keys(ddb_client, table)
    dry = run(ddb_endpoint_url, "index", "create", "-t", table, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert re.fullmatch(
        rf"Index ddbkeys-partition-keys of table {table}: markers would add {SPAN} items of "
        rf"~\d+ B \({SPAN} KB in all\): a scan would read {SPAN} RCU instead of ~{FIGURE}, and "
        rf"a listing from the index cost {SPAN} RCU against today's scan of ~{FIGURE}; the "
        rf"backfill that writes them costs once {SPAN} WCU and {SPAN} RCU \(reconcile mode\)\.\n",
        dry.stdout,
    ), dry.stdout
    said = dry.stderr.splitlines()  # (a binary sort key: first, where markers go)
    assert said[0].startswith("Note: markers take the sort key 0x00 (one zero byte)"), said
    warning = said[1:]
    assert len(warning) == 1 and warning[0].startswith(
        f"Warning: a listing from the marker index of {table!r} would cost ~"
    ), dry.stderr
    assert "more than the ~" in warning[0] and "dearer" in warning[0]
    assert not ddb_client.describe_table(TableName=table)["Table"].get("GlobalSecondaryIndexes")
    document = run(
        ddb_endpoint_url, "index", "create", "-t", table, "--dry-run", "--output", "json"
    )
    found = json.loads(document.stdout)
    assert found["dry_run"] and found["markers"]["markers_low"] <= 400
    assert found["markers"]["markers_high"] >= 400 and found["markers"]["warning"]
    assert found["markers"]["index_rcu"] > found["markers"]["scan_now"]
    # 400 markers, each written to the table and to the index: 800 write units, once.
    assert found["markers"]["backfill_wcu_low"] <= 800 <= found["markers"]["backfill_wcu_high"]
    # Created anyway: the next step says how to take it away first, on the endpoint given
    # (pasted as printed, it must not reach another table of that name), then how to go on
    # (a helper's `index create` warned, then led on to the backfill without a word).
    created = run(ddb_endpoint_url, "index", "create", "-t", table)
    assert created.exit_code == 0, created.output
    assert created.stderr.splitlines()[-1] == (
        "Next: as warned, listings from this index would cost more than a scan; take it away "
        f"with `ddbkeys partition-keys index drop -t {table} --endpoint-url {ddb_endpoint_url} "
        f"--yes`, or go on anyway: `ddbkeys partition-keys index stream -t {table}`, then "
        f"`index follow -t {table} --backfill` (or the Lambda handler)."
    ), created.stderr
    # The stream on first (`table create --stream`, or `index stream` before `index create`):
    # the same, then the follower.
    streamed = ddb_table_factory(("pk", "B"), ("sk", "B"))
    tiny_binary_keys(ddb_client, streamed)
    stream = run(ddb_endpoint_url, "index", "stream", "-t", streamed)
    assert stream.exit_code == 0, stream.output
    assert stream.stderr.splitlines()[-1] == (  # (helper-81 F6: it said no next step)
        f"Next: `ddbkeys partition-keys index follow -t {streamed} --backfill` (or the Lambda "
        f"handler) keeps the markers right and backfills them (`index create -t {streamed}` "
        "first, if the table has no marker index yet)."
    )
    created = run(ddb_endpoint_url, "index", "create", "-t", streamed)
    assert created.exit_code == 0, created.output
    assert created.stderr.splitlines()[-1].endswith(
        f"--endpoint-url {ddb_endpoint_url} --yes`, or go on anyway: `ddbkeys partition-keys index "
        f"follow -t {streamed} --backfill` (or the Lambda handler)."
    ), created.stderr
    # Created again (a setup script run twice): nothing created, and the same warning, since
    # no marker is there yet (helper-66: the second said nothing, its estimate saw the index).
    again = run(ddb_endpoint_url, "index", "create", "-t", streamed)
    assert again.exit_code == 0, again.output
    assert again.stdout == (
        f"Index ddbkeys-partition-keys of table {streamed}: ACTIVE (there already: nothing "
        "created)\n"
    )
    assert [line.split(" ", 1)[0] for line in again.stderr.splitlines()] == [
        "Note:",
        "Index",
        "Warning:",
        "Next:",
    ], again.stderr
    assert again.stderr.splitlines()[-1] == created.stderr.splitlines()[-1]
    document = run(ddb_endpoint_url, "index", "create", "-t", streamed, "--output", "json")
    found = json.loads(document.stdout)
    assert found["created"] is False and found["status"] == "ACTIVE"
    assert found["markers"]["markers_low"] <= 400 <= found["markers"]["markers_high"]
    # Its markers written, created again: still warned, now of what the index costs (helper-67:
    # the warning went away once the markers were there, as the scan grew ~10x dearer).
    filled = run(ddb_endpoint_url, "index", "backfill", "-t", streamed, "--no-wait")
    assert filled.exit_code == 0, filled.output
    again = run(ddb_endpoint_url, "index", "create", "-t", streamed)
    warned = [line for line in again.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warned) == 1 and f"index of {streamed!r} costs ~" in warned[0], again.stderr
    assert "the markers make every scan of it" in warned[0]
    # ... and in JSON too (helper-69: `markers` was null and the warning nowhere)
    document = run(ddb_endpoint_url, "index", "create", "-t", streamed, "--output", "json")
    found = json.loads(document.stdout)
    assert found["markers"] is None and f"{found['warning']}." == warned[0]
    assert again.stderr.splitlines()[-1].startswith("Next: as warned"), again.stderr


def test_index_create_on_collections_the_index_serves_well(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Collections of 4 items of 300 bytes: the index costs far less than a scan."""
    calm = run(
        ddb_endpoint_url,
        "index",
        "create",
        "-t",
        filled(ddb_client, ddb_table_factory),
        "--dry-run",
    )
    assert calm.exit_code == 0 and "markers would add" in calm.stdout and not calm.stderr
    calm_table = filled(ddb_client, ddb_table_factory)
    created = run(ddb_endpoint_url, "index", "create", "-t", calm_table)
    assert created.exit_code == 0 and created.stderr.splitlines()[-1] == (
        f"Next: `ddbkeys partition-keys index stream -t {calm_table}`, then `index follow -t "
        f"{calm_table} --backfill` (or the Lambda handler)."
    ), created.stderr
    # Its markers all there, with the stream on, created again: nothing to add, no warning;
    # no maintainer follows the stream yet, so that is next (helper-67: it said `index
    # status`, which then failed, exit 2, for want of a state table); once one has run, the
    # next step is to ask whether a listing can prove it.
    assert run(ddb_endpoint_url, "index", "stream", "-t", calm_table).exit_code == 0
    marked = run(ddb_endpoint_url, "index", "repair", "-t", calm_table)
    assert marked.exit_code == 0, marked.output
    again = run(ddb_endpoint_url, "index", "create", "-t", calm_table, "--output", "json")
    found = json.loads(again.stdout)
    assert (found["created"], found["markers"], found["warning"]) == (False, None, None), (
        again.output
    )
    again = run(ddb_endpoint_url, "index", "create", "-t", calm_table)
    assert again.stderr == (
        f"Next: `ddbkeys partition-keys index follow -t {calm_table} --backfill` (or the Lambda "
        "handler).\n"
    ), again.output
    followed = run(ddb_endpoint_url, "index", "follow", "-t", calm_table, "--until-caught-up")
    assert followed.exit_code == 0, followed.output
    again = run(ddb_endpoint_url, "index", "create", "-t", calm_table)
    assert again.stderr == (
        f"Next: `ddbkeys partition-keys index status -t {calm_table}` says whether a listing "
        "can prove it, and what to do if not.\n"
    ), again.output
    # Created with the stream on already (helper-67: no Next: line at all).
    streamed = filled(ddb_client, ddb_table_factory)
    assert run(ddb_endpoint_url, "index", "stream", "-t", streamed).exit_code == 0
    created = run(ddb_endpoint_url, "index", "create", "-t", streamed)
    assert created.exit_code == 0 and created.stderr.splitlines()[-1] == (
        f"Next: `ddbkeys partition-keys index follow -t {streamed} --backfill` (or the Lambda "
        "handler)."
    ), created.output


def test_index_create_dry_run_says_why_it_adds_nothing_or_refuses_as_create_does(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    """A helper's --dry-run printed nothing, with exit 0, on a table without a sort key (where
    create refuses) and on an empty one."""
    hash_only = ddb_table_factory(("pk", "S"))
    refused = run(ddb_endpoint_url, "index", "create", "-t", hash_only, "--dry-run")
    assert refused.exit_code == 1 and "has no sort key" in refused.stderr, refused.output
    estimated = run(ddb_endpoint_url, "estimate", "-t", hash_only)  # (it said: no index)
    assert "index not available: the table has no sort key, so it has no markers" in (
        " ".join(estimated.stdout.split())
    ), estimated.output
    empty = ddb_table_factory(("pk", "S"), ("sk", "S"))
    said = run(ddb_endpoint_url, "index", "create", "-t", empty, "--dry-run")
    assert said.exit_code == 0, said.output
    assert said.stdout == (
        f"Index ddbkeys-partition-keys of table {empty}: the table holds no collection yet: "
        "markers would add none now, one a collection later.\n"
    )


def test_estimate_counts_the_keys_the_listing_gives(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The counter item of `ids next` is not a key, unless --include-own-items, as in the
    listing (a table sampled whole: the counts are exact)."""
    table = filled(ddb_client, ddb_table_factory, keys=20, pad=10)
    counter = json.dumps({"pk": "order-counter", "sk": 0})
    made = CliRunner().invoke(
        cli, ["ids", "next", "-t", table, "--counter-key", counter, "--endpoint-url",
              ddb_endpoint_url],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    for flag, keys in (((), 20), (("--include-own-items",), 21)):
        found = run(ddb_endpoint_url, "estimate", "-t", table, "--output", "json", *flag)
        assert found.exit_code == 0, found.output
        document = json.loads(found.stdout)
        assert (document["keys_low"], document["keys"], document["keys_high"]) == (keys,) * 3
        listed = run(ddb_endpoint_url, "-t", table, "-q", *flag)
        assert len(listed.stdout.split()) == keys
