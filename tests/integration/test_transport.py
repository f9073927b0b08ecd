"""No hangs, and every kind of boto3 object, against real servers: a TCP port that accepts and
never answers, a closed port, the fault proxy throttling every Scan, and DynamoDB Local through
boto3's resource layer."""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from aiobotocore.session import get_session
from botocore.exceptions import ClientError
from click.testing import CliRunner

from ddbkeys import (
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    UnexpectedAnswerError,
    aio,
    make_client,
)
from ddbkeys._cli import cli
from ddbkeys._clients import ResourceClient, as_client
from ddbkeys._retry import MAX_REFUSED_ATTEMPTS
from ddbkeys.ids import AtomicCounter
from ddbkeys.partition_keys import distinct_partition_keys
from ddbkeys.testing import FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.conftest import ServerURL
from tests.support.resources import resource
from tests.support.slack import LATE

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def test_cli_gives_up_on_a_silent_endpoint(silent_endpoint: str) -> None:
    started = time.monotonic()
    result = CliRunner().invoke(
        cli,
        ["partition-keys", "-t", "orders", "--endpoint-url", silent_endpoint, "--timeout", "3"],
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == 1
    # The client's read timeout is the --timeout too: whichever of the two ends the wait
    # first (a race under load: the read timeout won once in a loaded run) is said, each as
    # true as the other (as test_ids_transport's CLI commands).
    said = (
        "Error: Gave up on listing the partition keys on table 'orders' after 3.0 s (the "
        "deadline; raise it with --timeout): the DynamoDB endpoint "
        f"{silent_endpoint}"
    )
    assert result.stderr in (
        f"{said} had not answered when the deadline came (3.0 s), 1 attempt.\n",
        f"{said}/ did not answer within 3 s (read timeout), 1 attempt.\n",
    )
    assert 3 <= elapsed < 3 + LATE  # (a hang: the stderr above says the deadline ended it)


def test_index_stream_keeps_to_the_timeout_on_a_silent_endpoint(silent_endpoint: str) -> None:
    """`index stream` kept a deadline of its own (60 s) whatever --timeout said, a helper found
    (19 attempts in 60.5 s with --timeout 3, then "raise it with --timeout")."""
    started = time.monotonic()
    command = ["partition-keys", "index", "stream", "-t", "orders", "--timeout", "2"]
    result = CliRunner().invoke(cli, [*command, "--endpoint-url", silent_endpoint])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: Gave up on DescribeTable on table 'orders' after 2.0 s (the deadline; raise it "
        "with --timeout): "
    ), result.stderr
    assert 2 <= time.monotonic() - started < 2 + LATE


def test_a_web_page_for_an_answer_is_named_in_one_line_after_a_few_tries(
    web_page_endpoint: ServerURL,
) -> None:
    """A web server's HTML error page (a proxy, the wrong port) is not DynamoDB: at most
    MAX_REFUSED_ATTEMPTS tries (a 5xx was retried 25 times), then one line naming the status
    and the page's title, never the page itself."""
    client = make_client(web_page_endpoint)
    with pytest.raises(UnexpectedAnswerError) as raised:
        AtomicCounter(client, "orders", "order", deadline=20).next()
    said = str(raised.value)
    assert "\n" not in said and "<" not in said, said
    # (botocore keeps a 4xx page, which gives its title; of a 5xx, only the status's name)
    gist = r"(404 and a text/html page \('Not here'\)|502 and a text/html page \('Bad Gateway'\))"
    assert re.search("with HTTP " + gist, said), said
    assert said.endswith(
        "is the endpoint DynamoDB? (check endpoint_url= and AWS_ENDPOINT_URL_DYNAMODB)"
    )
    assert 1 <= len(web_page_endpoint.requests) <= MAX_REFUSED_ATTEMPTS
    command = ["ids", "next", "-t", "orders", "--counter", "order"]
    result = CliRunner().invoke(cli, [*command, "--endpoint-url", web_page_endpoint])
    cli_said = said.replace("endpoint_url=", "--endpoint-url")  # (the CLI names its option)
    assert result.exit_code == 1 and result.stderr == f"Error: {cli_said}\n"


def test_an_endpoint_that_is_not_dynamodb_is_named_as_such(not_dynamodb_endpoint: str) -> None:
    """HTTP 200 without DynamoDB's answer (a web server on the wrong port): a one-line
    UnexpectedAnswerError from the library, the asyncio form and the CLI (it was a KeyError,
    and "internal error" on the command line)."""
    said = (
        "The endpoint's answer to DescribeTable of table 'orders' holds no table description "
        "with its keys (it said {}): is the endpoint DynamoDB?"
    )
    client = make_client(not_dynamodb_endpoint)
    with pytest.raises(UnexpectedAnswerError) as raised:
        AtomicCounter(client, "orders", "order", deadline=3).next()
    assert str(raised.value) == said
    with pytest.raises(UnexpectedAnswerError, match=re.escape(said)):
        list(distinct_partition_keys(client, "orders", deadline=3))

    async def aio_next() -> int:
        async with aio.make_client(not_dynamodb_endpoint) as client:
            return await aio.AtomicCounter(client, "orders", "order", deadline=3).next()

    with pytest.raises(UnexpectedAnswerError, match=re.escape(said)):
        asyncio.run(aio_next())
    command = ["ids", "next", "-t", "orders", "--counter", "order"]
    result = CliRunner().invoke(cli, [*command, "--endpoint-url", not_dynamodb_endpoint])
    assert (result.exit_code, result.stderr) == (1, f"Error: {said}\n")
    # An audit sends only Scans: an answer without items was an empty table, "OK", exit 0.
    audit = ["ids", "audit", "-t", "orders", "--strict", "--endpoint-url", not_dynamodb_endpoint]
    result = CliRunner().invoke(cli, audit)
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: The endpoint's answer to Scan of table 'orders' holds no Items (it said {}): is "
        "the endpoint DynamoDB?\n",
    )


def test_library_gives_up_on_a_silent_endpoint(silent_endpoint: str) -> None:
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        distinct_partition_keys(make_client(silent_endpoint, timeout=30), "orders", deadline=2)
    assert time.monotonic() - started < 2 + LATE  # (not the 30 s read timeout)
    assert raised.value.seconds == 2 and raised.value.attempts == 1
    assert f"{silent_endpoint} had not answered when the deadline came (2.0 s)" in str(raised.value)


def test_a_client_whose_timeouts_fit_the_deadline_gives_up_on_a_trickle_at_the_deadline(
    trickling_endpoint: str,
) -> None:
    """helper-70 F3: the CLI's own client (timeouts within the deadline) was sent from the
    caller's thread, so an answer trickling in byte by byte, which no read timeout ends, held
    `ids next` 178 s past its 60 s deadline, and a listing longer. Here: 1 s timeouts, a 3 s
    deadline, a byte every 0.5 s."""
    client = make_client(endpoint_url=trickling_endpoint, region="us-east-1", timeout=1)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        distinct_partition_keys(client, "orders", deadline=3)
    assert 3 <= time.monotonic() - started < 3 + LATE  # (a hang: the answer would take hours)
    assert "had not answered when the deadline came" in str(raised.value), raised.value


def test_own_client_keeps_to_the_deadline_too(
    silent_endpoint: str,
) -> None:
    """A client built with boto3's defaults (read timeout 60 s, 3 attempts in standard mode):
    botocore would wait 3 x 60 s; the listing's page gives up at its 1 s deadline (the request
    is waited for in a worker thread, as less time is left than it may take)."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=silent_endpoint,
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
    config: Any = client.meta.config
    read_timeout = config.read_timeout
    assert read_timeout == 60
    assert (config.retries or {}).get("total_max_attempts") != 1  # botocore does retry
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        distinct_partition_keys(client, "orders", deadline=1)
    assert str(raised.value).endswith(
        f"{silent_endpoint} had not answered when the deadline came (1.0 s), 1 attempt."
    )
    elapsed = time.monotonic() - started
    assert 1 <= elapsed < 1 + LATE  # (not botocore's 3 x 60 s)


def test_closed_port(closed_endpoint: str) -> None:
    result = CliRunner().invoke(
        cli, ["partition-keys", "-t", "orders", "--endpoint-url", closed_endpoint]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: Could not connect to the DynamoDB endpoint {closed_endpoint}/: is it running, "
        "and is the URL right? Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.\n"
    )
    with pytest.raises(EndpointUnreachableError, match="Could not connect"):
        distinct_partition_keys(make_client(closed_endpoint), "orders")


def test_https_to_a_plain_http_endpoint_says_to_give_http(ddb_endpoint_url: str) -> None:
    # (F12: an https URL on DynamoDB Local's port said "boto3 failed (SSLError): SSL
    # validation failed ...", naming no fix)
    https = ddb_endpoint_url.replace("http://", "https://", 1)
    result = CliRunner().invoke(cli, ["ids", "current", "-t", "orders", "--endpoint-url", https])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: No TLS (https) connection to the DynamoDB endpoint {https}/: "
    ) and result.stderr.endswith(
        "Where it speaks plain http, as DynamoDB Local does, give an http:// URL: check "
        "--endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.\n"
    ), result.stderr
    with pytest.raises(EndpointUnreachableError, match="give an http:// URL"):
        AtomicCounter(make_client(https), "orders").current()


def test_plain_clients_at_a_closed_port_are_said_unreachable(closed_endpoint: str) -> None:
    """A plain boto3 or aiobotocore client tries a refused connection again on its own (backing
    off for about 25 s): a shorter deadline came first and was said as "had not answered, raise
    the deadline" (helper-66's F7). One connect at the deadline tells a refusal apart."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=closed_endpoint,
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
    started = time.monotonic()
    with pytest.raises(EndpointUnreachableError) as raised:
        distinct_partition_keys(client, "orders", deadline=3)
    assert time.monotonic() - started < 3 + LATE  # (not boto3's 25 s of backing off)
    assert str(raised.value) == (
        f"Could not connect to the DynamoDB endpoint {closed_endpoint}: is it running, and is "
        "the URL right? Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB."
    )
    # A counter's first call: its DescribeTable was refused, so no write was sent, and the
    # message says none may yet be applied (helper-77 F1: it did; a write that boto3's own
    # retries may yet send is said so: tests/unit/test_attempts.py).
    with pytest.raises(EndpointUnreachableError) as raised:
        AtomicCounter(client, "orders", "order", deadline=3).next()
    assert str(raised.value).endswith("AWS_ENDPOINT_URL_DYNAMODB."), raised.value

    async def main() -> None:
        session = get_session()
        async with session.create_client(
            "dynamodb",
            endpoint_url=closed_endpoint,
            region_name="us-east-1",
            aws_access_key_id="a",
            aws_secret_access_key="b",
        ) as aio_client:
            with pytest.raises(EndpointUnreachableError, match="Could not connect"):
                await aio.distinct_partition_keys(aio_client, "orders", deadline=3)

    asyncio.run(main())


def throttled_table(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> str:
    """A table of one item, behind a proxy that throttles every Scan."""
    table = ddb_table_factory(("pk", "S"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}})
    fault_proxy.set_faults(Faults(throttle=1.0, operations=frozenset({"Scan"})))
    return table


def test_throttled_listing_gives_up_within_its_deadline(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = throttled_table(fault_proxy, ddb_client, ddb_table_factory)
    listing = distinct_partition_keys(
        make_client(fault_proxy.endpoint_url, timeout=2), table, deadline=2
    )
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        list(listing)
    assert time.monotonic() - started < 2 + LATE  # (a hang; the exact message below says why)
    # Each answer the call got was a throttle; the last attempt may have been cut short by
    # the deadline, before or after the proxy saw it (then it is an attempt, not a throttle).
    said = re.search(r"\) (\d+) times", str(raised.value))
    assert said is not None
    throttles = int(said.group(1))
    assert 3 < throttles <= raised.value.attempts <= throttles + 1
    seen = fault_proxy.counts_by_operation[("Scan", "throttle")]
    assert throttles <= seen <= raised.value.attempts
    assert fault_proxy.counts["throttle"] == seen
    assert str(raised.value) == (
        f"Gave up on listing the partition keys on table {table!r} after 2.0 s (the deadline; "
        "raise it with deadline=): throttled (ProvisionedThroughputExceededException) "
        f"{throttles} times, {raised.value.attempts} attempts."
    )
    assert raised.value.code == "ProvisionedThroughputExceededException"


def test_cli_prints_the_resume_token_when_a_page_fails(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = throttled_table(fault_proxy, ddb_client, ddb_table_factory)
    result = CliRunner().invoke(
        cli,
        ["partition-keys", "-t", table, "--endpoint-url", fault_proxy.endpoint_url, "--timeout=3"],
    )
    assert result.exit_code == 1
    # (3 s, not 1: in CI's 6 workers on 2 cores, 1 s ran out once before the first page,
    # with only the error said)
    lines = result.stderr.splitlines()
    assert len(lines) == 3, result.stderr
    stopped, resume, error = lines
    assert stopped == "Stopped after 0 keys (scan): 0 requests, 0 items read, 0 RCU."
    assert resume.startswith("Resume with: --resume ")
    assert error.startswith(f"Error: Gave up on listing the partition keys on table {table!r}")
    fault_proxy.set_faults(Faults())
    url = fault_proxy.endpoint_url
    again = CliRunner().invoke(
        cli,
        [
            "partition-keys",
            "-t",
            table,
            "-q",
            "--resume",
            resume.split()[-1],
            "--endpoint-url",
            url,
        ],
    )
    assert (again.exit_code, again.stdout) == (0, "a\n")


# --- boto3's resource layer -------------------------------------------------------------------

ITEM: dict[str, Any] = {
    "pk": {"S": "k1"},
    "sk": {"N": "7"},
    "s": {"S": "x"},
    "n": {"N": "12345678901234567890123456789012345678"},
    "f": {"N": "-0.000000000000000000000000000000000001"},
    "b": {"B": b"\x00\xff"},
    "m": {"M": {"S": {"S": "looks typed"}, "inner": {"L": [{"N": "1"}, {"NULL": True}]}}},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "yes": {"BOOL": True},
}


def sets_sorted(item: dict[str, Any]) -> dict[str, Any]:
    return {
        k: {t: sorted(v)} if t in ("SS", "NS", "BS") else {t: v}
        for k, value in item.items()
        for t, v in value.items()
    }


@pytest.mark.parametrize("kind", ["resource", "table", "resource client", "table client"])
def test_every_resource_object_lists_and_round_trips(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, kind: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    service = resource(ddb_endpoint_url)
    given: Any = {
        "resource": service,
        "table": service.Table(table),
        "resource client": service.meta.client,
        "table client": service.Table(table).meta.client,
    }[kind]
    client, name = as_client(given, None if kind == "table" else table)
    assert name == table
    assert isinstance(client, ResourceClient)
    client.put_item(TableName=table, Item=ITEM)
    for pk in ("k2", "k3"):
        for sk in range(3):
            client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"N": str(sk)}})
    got = client.get_item(TableName=table, Key={"pk": {"S": "k1"}, "sk": {"N": "7"}})["Item"]
    assert sets_sorted(got) == sets_sorted(ITEM)
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    stored = ddb_client.get_item(TableName=table, Key=key)["Item"]
    assert sets_sorted(dict(stored)) == sets_sorted(ITEM)  # stored as given, typed
    queried = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk AND sk >= :low",
        ExpressionAttributeValues={":pk": {"S": "k2"}, ":low": {"N": "1"}},
    )
    assert [i["sk"] for i in queried["Items"]] == [{"N": "1"}, {"N": "2"}]
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {"pk": {"S": "k4"}, "sk": {"N": "0"}}}},
            {
                "Update": {
                    "TableName": table,
                    "Key": {"pk": {"S": "k1"}, "sk": {"N": "7"}},
                    "UpdateExpression": "ADD ns :more",
                    "ExpressionAttributeValues": {":more": {"NS": ["3"]}},
                }
            },
        ]
    )
    low_level = ddb_client.get_item(TableName=table, Key=key)["Item"]
    assert sorted(low_level["ns"]["NS"]) == ["1", "2.5", "3"]
    assert low_level["m"] == ITEM["m"]  # not a map of maps
    listing = distinct_partition_keys(given, None if kind == "table" else table, "skip")
    assert sorted(listing) == ["k1", "k2", "k3", "k4"]
    assert listing.usage.requests >= 4


def test_resource_client_errors_stay_typed(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"))
    client, _ = as_client(resource(ddb_endpoint_url).meta.client)
    client.put_item(TableName=table, Item={"pk": {"S": "a"}, "n": {"N": "5"}})
    with pytest.raises(ClientError) as raised:
        client.put_item(
            TableName=table,
            Item={"pk": {"S": "a"}},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert raised.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    error: Any = raised.value.response
    assert error["Item"] == {"pk": {"S": "a"}, "n": {"N": "5"}}


def test_greatest_number_through_the_resource_layer(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """DynamoDB Local answers the greatest number in 126 digits, which boto3's resource layer
    cannot read (decimal.Rounded, raised by its own handler on the client, where ddbkeys
    registers nothing): a one-line DdbKeysError that says so, naming the operation. (DynamoDB
    itself answers 9.9999999999999999999999999999999999999E+125, which the resource layer
    reads; a low-level client reads both.)"""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    greatest = "9.9999999999999999999999999999999999999E+125"
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": greatest}})
    raw = ddb_client.scan(TableName=table)["Items"][0]["sk"]["N"]
    assert len(raw) == 126  # DynamoDB Local writes it out in full
    client, _ = as_client(resource(ddb_endpoint_url).meta.client)
    said = f"Scan of table {table!r} carried a number boto3's resource layer cannot read (more"
    with pytest.raises(DdbKeysError, match=re.escape(said)) as raised:
        client.scan(TableName=table)
    assert raised.value.table == table and "a low-level client reads it" in str(raised.value)
    assert list(distinct_partition_keys(ddb_client, table, "skip-pages")) == ["a"]
