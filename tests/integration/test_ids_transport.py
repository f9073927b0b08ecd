"""The id strategies with what boto3 users hold (a resource, a Table, a resource's client), and
with endpoints that never answer, refuse connections or throttle: every call ends within its
deadline, and the error says what the endpoint did."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from click.testing import CliRunner

from ddbkeys import (
    ConfigurationError,
    DeadlineExceededError,
    EndpointUnreachableError,
    make_client,
)
from ddbkeys._cli import cli
from ddbkeys.ids import (
    AtomicCounter,
    BlockAllocator,
    CollectionSequence,
    GaplessSequence,
    audit_attribute,
    audit_collection,
)
from ddbkeys.testing import FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver
from tests.support.resources import resource
from tests.support.slack import LATE

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from tests.conftest import ServerURL

pytestmark = pytest.mark.integration

KINDS = ["resource", "table", "resource client", "table client"]


def held(endpoint: str, table: str, kind: str) -> tuple[Any, str | None]:
    """What a boto3 user of that kind passes: the object, and the table name beside it (None
    for a Table, which names itself)."""
    service = resource(endpoint)
    given: Any = {
        "resource": service,
        "table": service.Table(table),
        "resource client": service.meta.client,
        "table client": service.Table(table).meta.client,
    }[kind]
    return given, None if kind == "table" else table


@pytest.mark.parametrize("kind", KINDS)
def test_counters_and_blocks_from_resource_objects(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, kind: str
) -> None:
    table = ddb_table_factory(("pk", "S"))
    given, name = held(ddb_endpoint_url, table, kind)
    counter = AtomicCounter(given, name, "orders")
    assert counter.table == table
    assert [counter.next(), counter.next()] == [1, 2]
    assert list(counter.reserve(3)) == [3, 4, 5]
    assert counter.current() == 5
    counter.set(41)
    assert AtomicCounter(given, name, "orders").next() == 42
    blocks = BlockAllocator(AtomicCounter(given, name, "tickets"), 10)
    assert [blocks.next() for _ in range(25)] == list(range(1, 26))


@pytest.mark.parametrize("kind", KINDS)
def test_gapless_from_resource_objects_stores_what_a_low_level_client_stores(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, kind: str
) -> None:
    table = ddb_table_factory(("pk", "S"))
    given, name = held(ddb_endpoint_url, table, kind)
    sequence = GaplessSequence(given, name, "users")
    plain = {"pk": "User#Kirk", "rank": Decimal("1.5"), "tags": {"a", "b"}, "raw": b"\x00"}
    assert sequence.put(plain) == 1
    typed = {"pk": {"S": "User#Spock"}, "m": {"M": {"S": {"S": "looks typed"}}}}
    assert sequence.put(typed, typed=True) == 2
    assert sequence.put_many([{"pk": "User#Uhura"}, {"pk": "User#Sulu"}]) == [3, 4]
    assert sequence.current() == 4
    kirk = ddb_client.get_item(TableName=table, Key={"pk": {"S": "User#Kirk"}})["Item"]
    assert kirk["rank"] == {"N": "1.5"} and kirk["raw"] == {"B": b"\x00"}
    assert sorted(kirk["tags"]["SS"]) == ["a", "b"] and kirk["id"] == {"N": "1"}
    spock = ddb_client.get_item(TableName=table, Key={"pk": {"S": "User#Spock"}})["Item"]
    assert spock["m"] == {"M": {"S": {"S": "looks typed"}}}  # a map, not a map of maps
    report = audit_attribute(given, name, "id")
    assert (report.count, report.gaps, report.duplicates) == (4, [], {})


@pytest.mark.parametrize("kind", KINDS)
def test_collections_from_resource_objects(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, kind: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    given, name = held(ddb_endpoint_url, table, kind)
    sequence = CollectionSequence(given, name, never_reuse=True)
    assert [sequence.put("projectA", {"title": "x"}) for _ in range(3)] == [1, 2, 3]
    assert sequence.put("projectB", {"title": {"S": "y"}}, typed=True) == 1
    items = ddb_client.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "projectB"}},
    )["Items"]
    assert [(i["sk"], i.get("title")) for i in items] == [
        ({"N": "0"}, None),  # the never_reuse counter item
        ({"N": "1"}, {"S": "y"}),
    ]
    report = audit_collection(given, name, "projectA")
    assert (report.count, report.gaps, report.duplicates) == (3, [], {})
    if name is None:  # (a Table names the table: the collection may come second, helper-88)
        assert audit_collection(given, "projectA").count == 3
        assert audit_collection(given, partition_key_value="projectB").count == 1
        with pytest.raises(ConfigurationError, match="No item collection given"):
            audit_collection(given)


def test_a_table_and_another_name_is_refused(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"))
    service = resource(ddb_endpoint_url)
    with pytest.raises(ConfigurationError) as raised:
        AtomicCounter(service.Table(table), "orders")
    assert str(raised.value) == (
        f"Two tables named: the Table object is {table!r} but table='orders' was given as "
        "well; pass one of them."
    )
    with pytest.raises(ConfigurationError) as no_table:
        GaplessSequence(service)
    assert str(no_table.value) == (
        "GaplessSequence needs a table: pass table= with its name, or a boto3 Table object as "
        "the client."
    )
    with pytest.raises(ConfigurationError, match="not the string 'orders'"):
        AtomicCounter("orders", table)


# --- endpoints that never answer, refuse, or throttle -----------------------------------------

PUT = ["ids", "put", "-t", "orders", "-s", "gapless", "--item", '{"pk": "a"}']
NEXT = ["ids", "next", "-t", "orders", "--counter", "order"]


@pytest.mark.parametrize("command", [NEXT, PUT], ids=["next", "put"])
def test_cli_id_commands_end_at_their_timeout_on_a_silent_endpoint(
    silent_endpoint: str, command: list[str]
) -> None:
    started = time.monotonic()
    arguments = [*command, "--endpoint-url", silent_endpoint, "--timeout", "2"]
    result = CliRunner().invoke(cli, arguments)
    elapsed = time.monotonic() - started
    assert result.exit_code == 1
    # The client's read timeout is the --timeout too: whichever of the two ends the wait
    # first (a race under load) is said, each as true as the other.
    said = (
        "Error: Gave up on DescribeTable on table 'orders' after 2.0 s (the deadline; raise it "
        f"with --timeout): the DynamoDB endpoint {silent_endpoint}"
    )
    assert result.stderr in (
        f"{said} had not answered when the deadline came (2.0 s), 1 attempt.\n",
        f"{said}/ did not answer within 2 s (read timeout), 1 attempt.\n",
    )
    assert 2 <= elapsed < 2 + LATE  # (a hang; the stderr above says the deadline ended it)


def users_client(endpoint_url: str, config: Config | None = None) -> Any:
    """A client as a user builds it: boto3's own configuration unless ``config`` is given."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
        config=config,
    )


def test_library_ends_at_its_deadline_on_a_client_of_its_own(silent_endpoint: str) -> None:
    """A client the caller built (read timeout 30 s, botocore's standard mode with 10
    attempts): botocore would wait 10 x 30 s; the call ends at its 1 s deadline, while the
    request it gave up on is still waiting for its read timeout (in a daemon thread)."""
    client = users_client(
        silent_endpoint,
        Config(read_timeout=30, retries={"mode": "standard", "total_max_attempts": 10}),
    )
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        GaplessSequence(client, "orders", deadline=1).put({"pk": "a"})
    elapsed = time.monotonic() - started
    assert 1 <= elapsed < 1 + LATE  # (not the read timeout, 30 s)
    assert raised.value.attempts == 1 and raised.value.seconds == 1
    assert str(raised.value) == (
        "Gave up on DescribeTable on table 'orders' after 1.0 s (the deadline; raise it with "
        f"deadline=): the DynamoDB endpoint {silent_endpoint} had not answered "
        "when the deadline came (1.0 s), 1 attempt."
    )


def test_a_retry_botocore_would_start_near_the_deadline_does_not_outrun_it(
    silent_endpoint: str,
) -> None:
    """Timeouts of 1 + 1 s, 30 attempts and a 3.5 s deadline: botocore's own retries would run
    past 30 s. The caller's client retries on its own, so its requests are sent from a request
    thread and waited for only until the deadline. (What a loaded machine's scheduler adds
    cannot be told apart from one attempt in flight, 1 s, on a wall clock: the ceiling is
    LATE, which a call waiting for botocore's retries passes; test_library_ends_at_its_deadline_
    on_a_client_of_its_own sees the wait end at the deadline with a 30 s read timeout.)"""
    client = users_client(
        silent_endpoint,
        Config(connect_timeout=1, read_timeout=1, retries={"mode": "standard", "max_attempts": 30}),
    )
    for _ in range(3):
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match=r"after 3\.5 s"):
            AtomicCounter(client, "orders", deadline=3.5).next()
        assert 3.5 <= time.monotonic() - started < 3.5 + LATE


def test_a_default_clients_throttles_end_at_the_deadline(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A client as boto3 makes it (its own retries, 60 s timeouts: every request is sent from
    a request thread): its own retries of the throttles are its own (ddbkeys registers nothing
    on a client the caller passed, so it does not see them); the call still ends at its
    deadline, saying it had no answer then. A client making one attempt (or make_client()'s)
    has each throttle told as such (test_throttled_counter_gives_up_within_its_deadline)."""
    table = ddb_table_factory(("pk", "S"))
    client = users_client(fault_proxy.endpoint_url)
    # (the first id with time to spare: under CI's load its DescribeTable alone once took
    # more than 1.5 s)
    assert AtomicCounter(client, table, deadline=30.0).next() == 1
    counter = AtomicCounter(client, table, deadline=1.5)
    fault_proxy.set_faults(Faults(throttle=1.0, operations=frozenset({"UpdateItem"})))
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        counter.next()
    assert 1.5 <= time.monotonic() - started < 1.5 + LATE  # (a hang: the message says why)
    assert fault_proxy.counts["throttle"] >= 1  # (how many fit in 1.5 s depends on the load)
    assert "had not answered when the deadline came (1.5 s)" in str(raised.value)
    one = users_client(fault_proxy.endpoint_url, Config(retries={"total_max_attempts": 1}))
    with pytest.raises(DeadlineExceededError) as raised:
        AtomicCounter(one, table, deadline=1.5).next()
    assert "throttled (ProvisionedThroughputExceededException)" in str(raised.value)


def test_callers_waiting_for_the_table_description_keep_their_deadline(
    silent_endpoint: str,
) -> None:
    """One counter, 16 threads calling on and on while the endpoint does not answer: a caller
    that finds another reading the table's description waits for it only until its own
    deadline (they queued on the lock: the last of 16 waited 15 x 0.5 s and more, with a
    0.5 s deadline)."""
    client = make_client(silent_endpoint, timeout=0.5)
    counter = AtomicCounter(client, "orders", deadline=0.5)
    took: list[float] = []

    def call() -> None:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            began = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                counter.next()
            took.append(time.monotonic() - began)

    threads = [threading.Thread(target=call) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(took) >= 16  # (each thread made a call at least)
    # Queued on the lock, a call took 7.5 s and more; 3.5 s of slack is for a busy machine,
    # whose scheduler adds to each call (1.09 s against 0.5 + 0.5 once on a loaded CI run).
    assert max(took) < 0.5 + 3.5


@pytest.mark.parametrize("command", [NEXT, PUT], ids=["next", "put"])
def test_cli_id_commands_on_a_closed_port(closed_endpoint: str, command: list[str]) -> None:
    started = time.monotonic()
    result = CliRunner().invoke(cli, [*command, "--endpoint-url", closed_endpoint])
    assert time.monotonic() - started < LATE  # (a hang: a closed port refuses at once)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: Could not connect to the DynamoDB endpoint {closed_endpoint}/: is it running, "
        "and is the URL right? Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.\n"
    )


def test_a_closed_port_is_unreachable(driver: Driver, closed_endpoint: str) -> None:
    started = time.monotonic()
    with pytest.raises(EndpointUnreachableError, match="Could not connect"):
        driver.make("AtomicCounter", make_client(closed_endpoint), "orders").next()
    assert time.monotonic() - started < LATE  # (a hang: a closed port refuses at once)


def test_throttled_counter_gives_up_within_its_deadline(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory(("pk", "S"))
    counter = driver.make(
        "AtomicCounter", make_client(fault_proxy.endpoint_url, timeout=2), table, deadline=2
    )
    assert counter.next() == 1
    fault_proxy.set_faults(Faults(throttle=1.0, operations=frozenset({"UpdateItem"})))
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        counter.next()
    assert time.monotonic() - started < 2 + LATE  # (a hang; the exact message below says why)
    # Each answer the call got was a throttle; the last attempt may have been cut short by
    # the deadline, before or after the proxy saw it (then it is an attempt, not a throttle).
    said = re.search(r"\) (\d+) times", str(raised.value))
    assert said is not None
    throttles = int(said.group(1))
    assert 3 < throttles <= raised.value.attempts <= throttles + 1
    seen = fault_proxy.counts_by_operation[("UpdateItem", "throttle")]
    assert throttles <= seen <= raised.value.attempts
    assert fault_proxy.counts["throttle"] == seen
    # A last attempt cut short by the deadline got no answer: the message says so.
    cut = (
        " A write of this call got no answer: it may still have been applied."
        if raised.value.attempts == throttles + 1
        else ""
    )
    assert str(raised.value) == (
        f"Gave up on moving counter 'counter' on table {table!r} after 2.0 s (the deadline; "
        "raise it with deadline=): throttled (ProvisionedThroughputExceededException) "
        f"{throttles} times, {raised.value.attempts} attempts.{cut}"
    )
    item = ddb_client.get_item(TableName=table, Key={"pk": {"S": "counter"}})["Item"]
    assert item["last_id"] == {"N": "1"}  # nothing moved


def test_throttled_gapless_put_through_the_cli(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"))
    fault_proxy.set_faults(Faults(throttle=1.0, operations=frozenset({"TransactWriteItems"})))
    url = fault_proxy.endpoint_url
    started = time.monotonic()
    put = ["ids", "put", "-t", table, "-s", "gapless", "--item", '{"pk": "a"}']
    result = CliRunner().invoke(cli, [*put, "--timeout", "2", "--endpoint-url", url])
    assert time.monotonic() - started < 2 + LATE  # (a hang; the message below says the deadline)
    assert result.exit_code == 1
    throttles = fault_proxy.counts_by_operation[("TransactWriteItems", "throttle")]
    assert throttles > 3
    assert result.stderr.startswith(
        f"Error: Gave up on writing 1 item(s) with sequence 'sequence' on table {table!r} after "
        "2.0 s (the deadline; raise it with --timeout): throttled "
        "(ProvisionedThroughputExceededException) "
    )
    assert ddb_client.scan(TableName=table)["Items"] == []  # nothing written


def test_a_make_client_client_keeps_to_a_shorter_deadline(
    driver: Driver, silent_endpoint: str
) -> None:
    """make_client()'s read timeout is 30 s; a call with deadline=2 still ends at 2 s (sync: the
    request is waited for in a worker thread once less time is left than it may take; async:
    the request is given up at its deadline on the event loop)."""
    client = make_client(endpoint_url=silent_endpoint, region="us-east-1")
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        driver.make("AtomicCounter", client, "orders", "order", deadline=2).next()
    assert time.monotonic() - started < 2 + LATE  # (not the 30 s read timeout)
    said = str(raised.value)
    tail = (
        f"the DynamoDB endpoint {silent_endpoint} had not answered when the deadline came "
        "(2.0 s), 1 attempt."
    )
    # (On a loaded machine the waiting thread may wake a second late: the message then says
    # the request outlived the deadline, as a CI run met.)
    assert said in (
        "Gave up on DescribeTable on table 'orders' after 2.0 s (the deadline; raise it with "
        f"deadline=): {tail}",
    ) or (
        said.startswith("Gave up on DescribeTable on table 'orders' after ")
        and said.endswith(
            "past its 2.0 s deadline (a request outlived it: give the client a read timeout "
            f"within the deadline, e.g. make_client(timeout=...)): {tail}"
        )
    ), said


@pytest.mark.parametrize("command", [NEXT, PUT], ids=["next", "put"])
def test_an_answer_trickling_in_byte_by_byte_ends_at_the_timeout(
    trickling_endpoint: str, command: list[str]
) -> None:
    """Each read gets a byte within its read timeout, so only the deadline can end it."""
    started = time.monotonic()
    arguments = [*command, "--endpoint-url", trickling_endpoint, "--timeout", "2"]
    result = CliRunner().invoke(cli, arguments)
    assert time.monotonic() - started < 2 + LATE  # (a hang: the answer would take hours)
    assert result.exit_code == 1
    # (The request waited what was left of the 2 s when it was sent: all of it on a quiet
    # machine, a little less on a loaded one, where building the client took its share.)
    assert "after 2.0 s (the deadline" in result.stderr
    assert re.search(
        rf"the DynamoDB endpoint {re.escape(trickling_endpoint)} had not answered when the "
        r"deadline came \((1\.[5-9]|2\.0) s\), 1 attempt\.\n$",
        result.stderr,
    ), result.stderr
    library = make_client(endpoint_url=trickling_endpoint, region="us-east-1")
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError):
        GaplessSequence(library, "orders", deadline=2).put({"pk": "a"})
    assert time.monotonic() - started < 2 + LATE  # (a hang: the answer would take hours)


def test_the_first_call_keeps_to_one_deadline_description_included(
    driver: Driver, fault_proxy: FaultProxy, ddb_table_factory: TableFactory
) -> None:
    """The first call of a strategy also describes the table: both requests share the call's
    one deadline (each had its own, so a 0.5 s call could take 1 s)."""
    table = ddb_table_factory(("pk", "S"))
    # Every answer 3 s late, a 5.5 s deadline: the DescribeTable leaves 2.5 s to send the
    # UpdateItem (room for a loaded machine: a CI run with 1.5 s of room once sent nothing),
    # which cannot answer before 6 s, so the deadline cuts it short at 5.5 s; a deadline each
    # would take 3 + 3 s and not raise.
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=3.0))
    client = make_client(endpoint_url=fault_proxy.endpoint_url)
    counter = driver.make("AtomicCounter", client, table, "order", deadline=5.5)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as raised:
        counter.next()
    # A deadline each would not raise at all (the UpdateItem answered 3 s into its own 5.5 s),
    # so the raise is the proof; the ceiling only fails a hang.
    assert time.monotonic() - started < 5.5 + LATE
    assert "after 5.5 s (the deadline" in str(raised.value)
    # The UpdateItem was sent: the counter may have moved (a gap), and the error says so.
    assert str(raised.value).endswith(
        "The last write got no answer: it may still have been applied."
    )
    # DescribeTable, then the UpdateItem cut short: the proxy's thread may read the latter a
    # moment after the client gave up, on a loaded machine (CI with 6 workers: 1 of 2).
    waited = time.monotonic() + 10
    while fault_proxy.counts["delay"] < 2 and time.monotonic() < waited:
        time.sleep(0.05)
    assert fault_proxy.counts["delay"] == 2


def test_ctrl_c_on_an_id_command_exits_130(silent_endpoint: ServerURL) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ddbkeys", *NEXT, "--endpoint-url", silent_endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Interrupt the command while its request waits (not while Python starts up).
    assert silent_endpoint.connected.wait(30)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err == "Interrupted (a request already sent may still be applied).\n"
