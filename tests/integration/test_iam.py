"""Each IAM policy against the calls its command really makes.

Every command runs through the proxy, which records each request's operation, table and index.
The test then asks two things of the policy for that command (and variant): that it allows every
recorded call on the resource the call named, and that it grants no action the command never
made. A policy that promised less than the command needs, or more than it uses, fails.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._connect import make_client
from ddbkeys._errors import ConfigurationError
from ddbkeys.iam import COMMANDS, OWN_TABLES, policy
from ddbkeys.ids import _described as described
from ddbkeys.partition_keys._export.now import stream_began
from ddbkeys.partition_keys._index import marker_core
from ddbkeys.partition_keys._index.state import STATE_TABLE
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING
from ddbkeys.partition_keys._streams.lambda_events import parse_event
from ddbkeys.partition_keys._streams.streams import streams_client_for
from ddbkeys.testing import write_export
from ddbkeys.testing._proxy import Call, FaultProxy
from tests.support.moto_server import moto_client, moto_url
from tests.support.s3 import upload
from tests.support.stream_events import FUNCTION, InvokedHandler

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

__all__ = ["moto_url"]  # (the fixture, for the exports' scenarios)

pytestmark = pytest.mark.integration

Runner = Callable[..., list[Call]]


def allowed(document: dict[str, Any], call: Call, region: str, account: str) -> bool:
    """Does the policy allow this call? (IAM's Allow matching: action and resource ARN.)"""
    arn = f"arn:aws:dynamodb:{region}:{account}:table/{call.table or '*'}"
    if call.index is not None:
        arn += f"/index/{call.index}"
    if call.export:  # DescribeExport: the export's ARN, table/T/export/ID
        arn += "/export/01234567890123-a1b2c3d4"
    if call.stream:  # GetRecords names only a shard iterator: any stream of the policy's
        arn = f"{arn}/stream/2026-01-01T00:00:00.000"
        return any(
            statement["Effect"] == "Allow"
            and f"dynamodb:{call.operation}" in statement["Action"]
            and statement["Resource"].endswith("/stream/*")
            and (call.table is None or fnmatchcase(arn, statement["Resource"]))
            for statement in document["Statement"]
        )
    return any(
        statement["Effect"] == "Allow"
        and f"dynamodb:{call.operation}" in statement["Action"]
        and fnmatchcase(arn, statement["Resource"])
        for statement in document["Statement"]
    )


@pytest.fixture
def run(fault_proxy: FaultProxy) -> Runner:
    """Run a CLI command through the recording proxy; return the calls it made."""

    def invoke(
        *args: str,
        record: bool = True,
        exit_code: int | None = 0,
        stdin: str | None = None,
        stdout: list[str] | None = None,
    ) -> list[Call]:
        fault_proxy.reset()
        described.forget_all()  # (each command runs in a process of its own)
        given = [*args, "--endpoint-url", fault_proxy.endpoint_url]
        result = CliRunner().invoke(cli, given, input=stdin)
        if stdout is not None:
            stdout.append(result.stdout)
        if exit_code is None:  # (a verdict the scenario does not pin: 0 healthy, 1 not)
            assert result.exit_code in (0, 1), (args, result.output)
        else:
            assert result.exit_code == exit_code, (args, result.output)
        return list(fault_proxy.calls) if record else []

    return invoke


#: Entries of the catalog whose calls no command makes yet, with the grants left unused.
NOT_YET_CALLED: dict[tuple[str, str], frozenset[Any]] = {}


def export_scenarios(url: str) -> dict[tuple[str, str], tuple[str | None, list[Call]]]:
    """`export start` and `export wait` through the proxy in front of moto's server (DynamoDB
    Local has no exports): the DynamoDB calls they make. Their S3 grants are DynamoDB's own
    writes inside AWS, which no proxy here sees (see docs/iam.md)."""
    dynamodb, table = moto_client(url), f"iam-export-{uuid.uuid4().hex[:8]}"
    bucket = f"iam-exports-{uuid.uuid4().hex[:8]}"
    moto_client(url, "s3").create_bucket(Bucket=bucket)
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    seen: dict[tuple[str, str], tuple[str | None, list[Call]]] = {}
    with FaultProxy(url) as proxy:

        def export(*args: str) -> Any:
            given = ["partition-keys", "export", *args, "--endpoint-url", proxy.endpoint_url]
            return CliRunner().invoke(cli, given)

        started = export(
            "start", "-t", table, "--s3-bucket", bucket, "--s3-prefix", "p", "--output", "json"
        )
        assert started.exit_code == 0, started.output
        seen[("partition-keys export start", "")] = (table, list(proxy.calls))
        proxy.reset()
        arn = json.loads(started.stdout)["export_arn"]
        waited = export("wait", "--export-arn", arn, "--poll", "0.05")
        assert waited.exit_code == 0, waited.output
        seen[("partition-keys export wait", "")] = (table, list(proxy.calls))
    return seen


def scenarios(
    run: Runner, client: DynamoDBClient, factory: TableFactory, proxy: FaultProxy
) -> dict[tuple[str, str], tuple[str | None, list[Call]]]:
    """(command, variant) -> (table, the calls of every way that variant was run)."""
    plain = factory(("pk", "S"))
    coll = factory(("pk", "S"), ("sk", "N"))
    # (and "bad", a counter another tool left holding a string: `ids next` reads it to say so)
    client.batch_write_item(
        RequestItems={
            plain: [
                {"PutRequest": {"Item": {"pk": {"S": "x"}, "id": {"N": "1"}}}},
                {"PutRequest": {"Item": {"pk": {"S": "bad"}, "last_id": {"S": "x"}}}},
            ]
        }
    )
    for k in range(5):
        for n in range(1, 4):
            client.put_item(TableName=coll, Item={"pk": {"S": f"k{k}"}, "sk": {"N": str(n)}})
    seen: dict[tuple[str, str], tuple[str | None, list[Call]]] = {}

    def record(
        command: str, variant: str, table: str, *args: str, exit_code: int | None = 0
    ) -> None:
        calls = run(*command.split(), *args, "-t", table, exit_code=exit_code)
        seen.setdefault((command, variant), (table, []))[1].extend(calls)

    record("ids next", "", plain)
    record("ids next", "", plain, "--count", "3", "--maximum", "1000")
    record("ids next", "", plain, "--idempotent")
    record("ids next", "", plain, "--idempotent", "--count", "2")
    record("ids next", "", plain, "--counter", "bad", exit_code=1)
    record("ids current", "", plain)
    record("ids set", "", plain, "100")
    record("ids set", "", plain, "5", "--force")
    record("ids put", "gapless", plain, "-s", "gapless", "--item", '{"pk": "g1"}')
    record("ids put", "gapless", plain, "-s", "gapless", "--item", '[{"pk": "g2"}, {"pk": "g3"}]')
    record("ids put", "collection", coll, "-s", "collection", "-k", "k1", "--item", "{}")
    record("ids audit", "attribute", plain)
    record("ids audit", "collection", coll, "-k", "k1")
    for method in ("scan", "skip", "skip-pages", "auto"):
        record("partition-keys", method, coll, "--method", method)
    tasked(record, seen, run, coll, ("scan", "skip", "skip-pages"))
    record("partition-keys index create", "", coll)
    record("partition-keys index mark", "", coll, "k0")
    record("partition-keys index unmark", "", coll, "k0")
    orphan = {"pk": {"S": "orphan"}, "sk": {"N": "-" + "9" * 38}, "ddbkeys_pk": {"S": "orphan"}}
    client.put_item(TableName=coll, Item=orphan)  # a marker alone: the backfill removes it
    record("partition-keys index backfill", "table", coll)
    record("partition-keys index verify", "table", coll)
    run("partition-keys", "index", "unmark", "-t", coll, "k2", record=False)
    # k2 is missing (is its key free?): not healthy, exit 1
    record("partition-keys index verify", "table", coll, exit_code=1)
    marker_sk = {"N": "-" + "9" * 38}
    client.put_item(
        TableName=coll,
        Item={"pk": {"S": "gone"}, "sk": marker_sk, "ddbkeys_pk": {"S": "gone"}},
    )
    # A clash a maintainer recorded (k1's, resolved since): repair looks again and clears it.
    client.update_item(
        TableName="ddbkeys-state",
        Key={"id": {"S": f"{coll}/ddbkeys-partition-keys"}},
        UpdateExpression="ADD clashes :c",
        ExpressionAttributeValues={":c": {"SS": ['{"S":"k1"}']}},
    )
    record("partition-keys index repair", "", coll)
    # Backfilled, but no maintainer: auto lists another way; the index only as it is.
    record("partition-keys", "auto", coll, "--method", "auto")
    record("partition-keys", "index", coll, "--method", "index", "--trust-index")
    followed(record, client, coll)
    # Backfilled while a maintainer runs: now auto trusts the index and reads it.
    run("partition-keys", "index", "backfill", "-t", coll, record=False)
    run("partition-keys", "index", "follow", "-t", coll, "--until-caught-up", record=False)
    record("partition-keys", "auto", coll, "--method", "auto", "--replay-margin", "0")
    # Provable now: the stream read past the maintainer's positions (exit 0).
    record("partition-keys index status", "", coll, "--replay-margin", "0")
    replayed(record, run, client, coll)
    # With the index: the estimate reads its proof's evidence; the plan proves it (the write
    # nobody followed re-checked: Query), and a worker reads its part of the index.
    tasked(record, seen, run, coll, ("index",))
    from_export(record, client, coll)
    backfilled_from_export(record, client, coll)
    handled_then_dropped(seen, record, proxy, client, coll)
    # The demo makes its own tables (and puts its own fault proxy behind this one).
    seen[("demo", "")] = (None, run("demo", "--quick", "--quiet", "--output", "json"))
    return seen


def handled_then_dropped(
    seen: dict[tuple[str, str], tuple[str | None, list[Call]]],
    record: Callable[..., None],
    proxy: FaultProxy,
    client: DynamoDBClient,
    coll: str,
) -> None:
    """The Lambda handler's calls, then, last of the index's commands, the index and its
    markers taken away."""
    seen[("lambda-handler", "")] = (coll, lambda_handler_calls(proxy, client, coll))
    record("partition-keys index drop", "", coll, "--yes")  # (a follower ran: a note)


def tasked(
    record: Callable[..., None],
    seen: dict[tuple[str, str], tuple[str | None, list[Call]]],
    run: Runner,
    coll: str,
    methods: tuple[str, ...],
) -> None:
    """The estimate, then for each of ``methods`` a plan of one task (recorded as the plan's
    calls) and each of its tasks' run-task, given the task's line on stdin as a worker is."""
    record("partition-keys estimate", "", coll)
    for method in methods:
        planned(seen, run, coll, method)


def planned(
    seen: dict[tuple[str, str], tuple[str | None, list[Call]]],
    run: Runner,
    coll: str,
    method: str,
) -> None:
    printed: list[str] = []
    planned = ["partition-keys", "plan", "-t", coll, "--tasks", "1", "--method", method]
    planned += ["--replay-margin", "0"]
    calls = run(*planned, stdout=printed)
    seen.setdefault(("partition-keys plan", ""), (coll, []))[1].extend(calls)
    lines = printed[0].splitlines()  # (an index's plan: its replay's keys as a task too)
    assert lines and all(json.loads(line)["options"]["method"] == method for line in lines)
    for line in lines:
        calls = run("partition-keys", "run-task", stdin=line + "\n")
        assert all(c.table == coll for c in calls)
        seen.setdefault(("partition-keys run-task", method), (coll, []))[1].extend(calls)


def followed(record: Callable[..., None], client: DynamoDBClient, coll: str) -> None:
    """The stream turned on, and the follower's first start and a start after writes; the
    status between them (the backfill was made with the stream off: not provable, exit 1)."""
    record("partition-keys index stream", "", coll)
    record("partition-keys index follow", "", coll, "--until-caught-up")
    record("partition-keys index status", "", coll, exit_code=1)
    client.put_item(TableName=coll, Item={"pk": {"S": "new"}, "sk": {"N": "1"}})
    client.delete_item(TableName=coll, Key={"pk": {"S": "k0"}, "sk": {"N": "1"}})
    for n in (1, 2, 3):  # k0 emptied: its marker goes
        client.delete_item(TableName=coll, Key={"pk": {"S": "k0"}, "sk": {"N": str(n)}})
    record("partition-keys index follow", "", coll, "--until-caught-up")


def replayed(record: Callable[..., None], run: Runner, client: DynamoDBClient, coll: str) -> None:
    """The index and auto listings once a write nobody followed is in the stream: they read
    it and re-check it (auto too: the table is made big enough that one re-check costs less
    than a scan)."""
    for n in range(8):
        padded = {"pk": {"S": f"big{n % 2}"}, "sk": {"N": str(n)}, "pad": {"S": "x" * 4000}}
        client.put_item(TableName=coll, Item=padded)
    run("partition-keys", "index", "follow", "-t", coll, "--until-caught-up", record=False)
    client.put_item(TableName=coll, Item={"pk": {"S": "unfollowed"}, "sk": {"N": "1"}})
    for method in ("index", "auto"):
        record("partition-keys", method, coll, "--method", method, "--replay-margin", "0")


def from_export(record: Callable[..., None], client: DynamoDBClient, coll: str) -> None:
    """`partition-keys --from-export`, exact now: an export of the table on disk (in AWS's
    layout, ddbkeys.testing.write_export), a write after it, and the listing, which reads the export
    (no DynamoDB call: on S3 its grants are S3's, not checked here), the stream since the
    export, and re-checks the collection written (Query). The stream must have begun a minute
    (DynamoDB Local's rounding of a record's time) before the export: waited for if need be."""
    arn = client.describe_table(TableName=coll)["Table"]["LatestStreamArn"]
    began = stream_began(arn)
    assert began is not None
    time.sleep(max(0.0, began.timestamp() + CREATED_ROUNDING + 1 - time.time()))
    with tempfile.TemporaryDirectory() as root:
        folder = write_export(client, coll, root)
        client.put_item(TableName=coll, Item={"pk": {"S": "after-export"}, "sk": {"N": "1"}})
        record("partition-keys", "from-export", coll, "--from-export", str(folder))
        record(
            "partition-keys",
            "from-export",
            coll,
            "--from-export",
            str(folder),
            "--replay-margin",
            "0",
        )


def backfilled_from_export(record: Callable[..., None], client: DynamoDBClient, coll: str) -> None:
    """`index backfill --from-export`, as issue 36 has users run it (a maintainer at work, an
    export, changes): a marker left alone (an orphan, in the export: deleted), an export of the
    table on disk (ddbkeys.testing.write_export), a collection added since (named by the
    stream: reconciled), then the backfill from the export, which reads no item of the table."""
    orphan = {"pk": {"S": "lone"}, "sk": {"N": "-" + "9" * 38}, "ddbkeys_pk": {"S": "lone"}}
    client.put_item(TableName=coll, Item=orphan)
    with tempfile.TemporaryDirectory() as root:
        folder = write_export(client, coll, root)
        client.put_item(TableName=coll, Item={"pk": {"S": "since"}, "sk": {"N": "1"}})
        record(  # (what it finds depends on the scenario's earlier steps: not pinned)
            "partition-keys index verify",
            "from-export",
            coll,
            "--from-export",
            str(folder),
            "--replay-margin",
            "1",
            exit_code=None,
        )
        record(
            "partition-keys index backfill",
            "from-export",
            coll,
            "--from-export",
            str(folder),
            "--replay-margin",
            "1",
        )


def lambda_handler_calls(proxy: FaultProxy, client: DynamoDBClient, table: str) -> list[Call]:
    """The calls made with the Lambda handler's role: Lambda's poller finds the table's stream,
    reads each shard from its oldest record and hands the handler each shard's records as a
    tumbling window's event; the handler reconciles the collections they name."""
    for n in (1, 2):  # a new collection of two items, no marker yet: a GetItem looks for it
        client.put_item(TableName=table, Item={"pk": {"S": "fresh"}, "sk": {"N": str(n)}})
    for n in (1, 2, 3):  # an emptied collection: its marker goes
        client.delete_item(TableName=table, Key={"pk": {"S": "k3"}, "sk": {"N": str(n)}})
    proxy.reset()
    role = make_client(endpoint_url=proxy.endpoint_url)
    streams = streams_client_for(role)
    (arn,) = [s["StreamArn"] for s in streams.list_streams(TableName=table)["Streams"]]
    handler = InvokedHandler(role, arn)
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records: list[dict[str, Any]] = []
        while True:
            page = streams.get_records(ShardIterator=iterator)
            if not page["Records"]:
                break
            records.extend(dict(r, eventSourceARN=arn) for r in page["Records"])
            iterator = page["NextShardIterator"]
        event = {
            "Records": records,
            "window": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:01:00Z"},
            "state": {},
            "shardId": shard["ShardId"],
            "eventSourceARN": arn,
            "isFinalInvokeForWindow": False,
            "isWindowTerminatedEarly": False,
        }
        assert parse_event(event).tables == (table,)
        assert handler.handle(event)["batchItemFailures"] == []
    markers = client.scan(TableName=table, FilterExpression="attribute_exists(ddbkeys_pk)")
    assert {i["pk"]["S"] for i in markers["Items"]} >= {"fresh"}
    assert "k3" not in {i["pk"]["S"] for i in markers["Items"]}
    # Its Lambda call (no Lambda here: the handler's Lambda client is a stand-in that records
    # what it was sent): its trigger, read once, at its first batch; the role grants exactly
    # that, on * (the action takes no resource).
    requests = handler.lambda_service.requests
    assert requests == [{"EventSourceArn": arn, "FunctionName": FUNCTION}]
    document = policy("lambda-handler", table)
    lambda_grants = [s for s in document["Statement"] if s["Action"][0].startswith("lambda:")]
    assert lambda_grants == [
        {
            "Sid": "DdbkeysTriggers",
            "Effect": "Allow",
            "Action": ["lambda:ListEventSourceMappings"],
            "Resource": "*",
        }
    ]
    return list(proxy.calls)


def test_each_policy_allows_exactly_what_its_command_calls(
    run: Runner,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    moto_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (`index drop` waits RECHECK + 1 s for maintainers to look again: 1 s here, what it
    # calls is the same; the longest test of the suite)
    monkeypatch.setattr(marker_core, "RECHECK", 0.0)
    seen = scenarios(run, ddb_client, ddb_table_factory, fault_proxy) | export_scenarios(moto_url)
    every = {(c, v) for c, variants in COMMANDS.items() for v in variants}
    assert set(seen) == every, "each command and variant of the catalog was run"
    for (command, variant), (table, calls) in sorted(seen.items()):
        assert calls, f"{command} made no calls"
        if table is None:  # the demo: its own tables, several of them
            # (GetRecords names only a shard iterator: no table.)
            assert all(
                fnmatchcase(str(c.table), OWN_TABLES[command])
                for c in calls
                if not (c.stream and c.table is None)
            )
            assert len({c.table for c in calls}) > 1
        else:
            # Its table, the index's record in the state table, and the stream's GetRecords
            # (which names only a shard iterator).
            others = {c.table for c in calls} - {table, STATE_TABLE}
            assert others <= {None}, f"{command} touched another table: {others}"
            assert all(c.stream for c in calls if c.table is None)
        region, account = "eu-west-1", "123456789012"
        document = policy(
            command,
            table,
            variant=variant or None,
            region=region,
            account_id=account,
            s3_bucket="ddbkeys-exports" if "export" in f"{command} {variant}" else None,
        )
        refused = sorted({c for c in calls if not allowed(document, c, region, account)}, key=str)
        assert not refused, f"{command} {variant}: the policy refuses {refused}"
        granted = {  # (the Lambda action: see lambda_handler_calls)
            (a.removeprefix("dynamodb:"), "index" in s["Resource"])
            for s in document["Statement"]
            for a in s["Action"]
            if a.startswith("dynamodb:")
        }
        used = {(c.operation, c.index is not None) for c in calls}
        # The state table is made once, by whichever command comes first: CreateTable may
        # not have been called by this one.
        unused = granted - used - {("CreateTable", False)}
        unused -= {(n.action, False) for n in NOT_YET_CALLED.get((command, variant), ())}
        assert not unused, f"{command} {variant}: grants {unused} it never uses"


def test_the_default_variant_covers_every_variant() -> None:
    document = policy("partition-keys", "orders")
    actions = {a.removeprefix("dynamodb:") for s in document["Statement"] for a in s["Action"]}
    assert actions == {
        *("DescribeTable", "Scan", "GetItem", "Query"),
        *("DescribeStream", "GetShardIterator", "GetRecords"),  # a listing that replays
    }
    resources = [s["Resource"] for s in document["Statement"]]
    assert resources == [
        "arn:aws:dynamodb:*:*:table/orders",
        "arn:aws:dynamodb:*:*:table/orders/index/ddbkeys-partition-keys",
        "arn:aws:dynamodb:*:*:table/ddbkeys-state",  # the marker index's record, read by auto
        "arn:aws:dynamodb:*:*:table/orders/stream/*",
    ]


def test_cli_prints_a_policy_document_and_clear_errors() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["iam-policy", "ids", "put", "-t", "users", "--variant", "gapless"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["Version"] == "2012-10-17"
    assert document["Statement"][0]["Action"] == [
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Scan",  # (one page as a sequence begins: the note of another's ids)
        "dynamodb:UpdateItem",
    ]

    # Usage errors: exit 2, the usage line, then the error naming what is not there.
    def refused(*args: str) -> str:
        result = runner.invoke(cli, ["iam-policy", *args])
        assert result.exit_code == 2, result.output
        assert result.output.startswith("Usage: ddbkeys iam-policy")
        return result.output.strip().splitlines()[-1]

    assert refused("demo", "-t", "users").startswith("Error: `ddbkeys demo` makes its own tables")
    assert refused("ids", "next") == (
        "Error: `ddbkeys ids next` works on one table: give --table-name."
    )
    assert refused("ids", "nxt", "-t", "users").startswith(
        "Error: No IAM policy for 'ids nxt': ddbkeys knows 'ids next'"
    )
    assert refused("ids", "put", "-t", "users", "--variant", "x") == (
        "Error: 'ids put' has no variant 'x'; it has 'gapless', 'collection'."
    )
    assert refused("ids", "next", "-t", "users", "--variant", "x") == (
        "Error: 'ids next' has no variant 'x'; it has none: leave --variant out."
    )
    assert refused("ids", "next", "-t", "users", "--account-id", "1") == (
        "Error: '1' is not a 12-digit AWS account id."
    )


def test_export_policies_grant_s3_on_the_export_folder_only() -> None:
    """The S3 and KMS grants (no proxy sees them: see docs/iam.md): AWS's documented actions,
    on PREFIX/AWSDynamoDB/* of the one bucket, ListBucket under that folder only, kms:Decrypt
    only with the key given."""
    start = policy("partition-keys export start", "orders", s3_bucket="b-1", s3_prefix="/x/y/")
    assert start["Statement"][1] == {
        "Sid": "DdbkeysExportObjects",
        "Effect": "Allow",
        "Action": ["s3:AbortMultipartUpload", "s3:PutObject", "s3:PutObjectAcl"],
        "Resource": "arn:aws:s3:::b-1/x/y/AWSDynamoDB/*",
    }
    key = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    read = policy("partition-keys", "orders", variant="from-export", s3_bucket="b-1", kms_key=key)
    by_sid = {s["Sid"]: s for s in read["Statement"]}
    assert by_sid["DdbkeysExportObjects"]["Action"] == ["s3:GetObject"]
    assert by_sid["DdbkeysExportObjects"]["Resource"] == "arn:aws:s3:::b-1/AWSDynamoDB/*"
    assert by_sid["DdbkeysExportBucket"] == {
        "Sid": "DdbkeysExportBucket",
        "Effect": "Allow",
        "Action": ["s3:ListBucket"],
        "Resource": "arn:aws:s3:::b-1",
        "Condition": {"StringLike": {"s3:prefix": ["AWSDynamoDB/*"]}},
    }
    assert by_sid["DdbkeysExportKey"]["Action"] == ["kms:Decrypt"]
    assert by_sid["DdbkeysExportKey"]["Resource"] == key
    without_key = policy("partition-keys", "orders", variant="from-export", s3_bucket="b-1")
    assert "DdbkeysExportKey" not in {s["Sid"] for s in without_key["Statement"]}
    wait = policy("partition-keys export wait", "orders", region="eu-west-1", account_id="1" * 12)
    assert wait["Statement"] == [
        {
            "Sid": "DdbkeysTableExports",
            "Effect": "Allow",
            "Action": ["dynamodb:DescribeExport"],
            "Resource": "arn:aws:dynamodb:eu-west-1:111111111111:table/orders/export/*",
        }
    ]
    for bad, said in (
        ({}, "reads or writes an export in S3: give --s3-bucket"),
        ({"s3_bucket": "B"}, "'B' is not an S3 bucket name"),
        ({"s3_bucket": "b-1", "s3_prefix": "a*"}, "cannot be granted"),
    ):
        with pytest.raises(ConfigurationError, match=said):
            policy("partition-keys export start", "orders", **bad)
    with pytest.raises(ConfigurationError, match="is not a KMS key's ARN"):
        policy("partition-keys", "ord", variant="from-export", s3_bucket="b-1", kms_key="alias/x")
    with pytest.raises(ConfigurationError, match="decrypts nothing with KMS: leave out --kms-key"):
        policy("ids next", "orders", kms_key=key)


def test_the_readers_s3_requests_are_what_its_policy_grants(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    moto_url: str,
    tmp_path: Path,
) -> None:
    """`partition-keys --from-export s3://...`: its S3 requests, recorded by a proxy in front of
    moto's S3, each allowed by the from-export policy's S3 statements (GetObject on
    PREFIX/AWSDynamoDB/*). The reader lists nothing: ListBucket (under the folder only) is
    granted so that a data file the manifest names but S3 lacks reads as "not found" (S3 says
    "access denied" for a missing key to whoever may not list the bucket)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for k in range(3):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{k}"}, "sk": {"N": "1"}})
    folder = Path(write_export(ddb_client, table, tmp_path))
    bucket = f"iam-read-{uuid.uuid4().hex[:8]}"
    s3 = moto_client(moto_url, "s3")
    s3.create_bucket(Bucket=bucket)
    upload(s3, bucket, tmp_path)
    uri = f"s3://{bucket}/{folder.relative_to(tmp_path).as_posix()}/"
    with FaultProxy(moto_url) as proxy:
        env = {
            "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
            "AWS_ACCESS_KEY_ID": "moto",
            "AWS_SECRET_ACCESS_KEY": "moto",
        }
        listed = ["partition-keys", "-t", table, "--from-export", uri]
        result = CliRunner().invoke(cli, [*listed, "--endpoint-url", ddb_endpoint_url], env=env)
        assert result.exit_code == 0, result.output
        assert sorted(result.stdout.split()) == ["k0", "k1", "k2"]
        requests = list(proxy.requests)
    document = policy(
        "partition-keys", table, variant="from-export", s3_bucket=bucket, s3_prefix="exports"
    )
    grants = {s["Sid"]: s for s in document["Statement"]}
    objects = grants["DdbkeysExportObjects"]
    assert objects["Action"] == ["s3:GetObject"]
    gets = [unquote(path.split("?", 1)[0]) for method, path in requests]
    assert requests and all(method == "GET" for method, _ in requests), requests
    assert not [p for p in gets if p.rstrip("/") == f"/{bucket}"], "a listing of the bucket"
    assert {p.rsplit("/", 1)[-1] for p in gets} >= {"manifest-summary.json", "manifest-files.json"}
    refused = [p for p in gets if not fnmatchcase(f"arn:aws:s3:::{p[1:]}", objects["Resource"])]
    assert not refused, f"GetObject outside {objects['Resource']}: {refused}"
