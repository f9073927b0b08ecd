"""``ddbkeys partition-keys`` killed at any moment: ``--checkpoint FILE`` goes on from where it
was, ``--output-file`` holds every key exactly once, and SIGTERM, SIGHUP and Ctrl-C stop it
cleanly within a second, even while a request is outstanding. The listings are slowed down by
the fault proxy (delayed Scan responses, counted) so that the kills land mid-listing."""

from __future__ import annotations

import fcntl
import hashlib
import random
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys import ResumeTokenError
from ddbkeys._cli.listing_sink import CHECKPOINT_KEYS, write_atomically
from ddbkeys.partition_keys import distinct_partition_keys
from ddbkeys.partition_keys._listing.checkpoint import (
    Checkpoint,
    CheckpointFile,
    encode_file,
    encode_token,
)
from ddbkeys.partition_keys._listing.text import text_line
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.support.progress import contents, wait_for_change

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from tests.conftest import ServerURL

pytestmark = pytest.mark.integration

KEYS = 300


def fill(client: DynamoDBClient, table: str, keys: int) -> list[str]:
    """``keys`` collections of 2 items each; every 50th key holds a newline."""
    names = [f"k{k:04}" + ("\nline" if k % 50 == 0 else "") for k in range(keys)]
    requests: list[Any] = [
        {"PutRequest": {"Item": {"pk": {"S": name}, "sk": {"N": str(i)}}}}
        for name in names
        for i in range(2)
    ]
    for start in range(0, len(requests), 25):
        client.batch_write_item(RequestItems={table: requests[start : start + 25]})
    return names


def listing_args(endpoint: str, table: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ddbkeys",
        "partition-keys",
        "-t",
        table,
        "--method",
        "skip",
        "--endpoint-url",
        endpoint,
        *args,
    ]


def text_keys(names: list[str]) -> list[str]:
    """The lines text output shows for ``names``."""
    return sorted(name.replace("\n", "\\n") for name in names)


def kill_at_random(
    command: list[str], checkpoint: Path, kills: int, rng: random.Random
) -> tuple[int, list[str]]:
    """Run ``command`` again and again, SIGKILLing it at a random moment once it has written a
    checkpoint of its own (a sign it got somewhere: on a busy machine its start alone can take
    seconds), until ``kills`` kills landed while it was running; then run it to its end.
    Returns the exit code of the last run and the stderr of every run."""
    landed = 0
    errors: list[str] = []
    while landed < kills:
        before = contents(checkpoint)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if wait_for_change(checkpoint, before, process, f"run {len(errors) + 1}"):
            time.sleep(rng.uniform(0.0, 0.5))  # a random moment past it: mid-request or mid-write
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            landed += 1
        _, err = process.communicate(timeout=60)
        errors.append(err.decode())
        assert landed or process.returncode == 0, err
    last = subprocess.run(command, check=False, capture_output=True, timeout=300)
    errors.append(last.stderr.decode())
    return last.returncode, errors


def test_kill9_at_random_then_the_same_command_writes_every_key_exactly_once(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    names = fill(ddb_client, table, KEYS)
    # Each Scan answered 20 ms late: about 40 keys a second, so a run lasts some seconds.
    fault_proxy.set_faults(
        Faults(delay=1.0, delay_seconds=0.02, operations=frozenset({"Scan"}), seed=11)
    )
    out, checkpoint = tmp_path / "keys.txt", tmp_path / "listing.ckpt"
    command = listing_args(
        fault_proxy.endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    code, errors = kill_at_random(command, checkpoint, kills=4, rng=random.Random(5))
    assert code == 0, errors[-1]
    lines = out.read_text().splitlines()
    assert sorted(lines) == text_keys(names)  # every key, and each exactly once
    assert not checkpoint.exists()  # removed once the listing ended
    assert any("Going on from" in err for err in errors[1:]), errors  # a run did resume
    assert fault_proxy.counts["delay"] > KEYS  # the proxy slowed every Scan


def test_kill9_on_stdout_repeats_at_most_what_came_since_the_last_checkpoint(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """Block-buffered stdout into a file: no key is lost across kills, and each kill repeats
    at most CHECKPOINT_KEYS keys."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    names = fill(ddb_client, table, KEYS)
    fault_proxy.set_faults(
        Faults(delay=1.0, delay_seconds=0.02, operations=frozenset({"Scan"}), seed=12)
    )
    checkpoint = tmp_path / "listing.ckpt"
    command = listing_args(fault_proxy.endpoint_url, table, "--checkpoint", str(checkpoint), "-q")
    rng = random.Random(6)
    written: list[str] = []
    kills = 0
    while True:
        with open(tmp_path / "run.txt", "wb") as sink:
            before = contents(checkpoint)
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE)
            # Killed at a random moment once it has checkpointed (not after a fixed time).
            if wait_for_change(checkpoint, before, process, f"run {kills + 1}"):
                time.sleep(rng.uniform(0.0, 0.5))
            killed = process.poll() is None and kills < 3
            if killed:
                process.send_signal(signal.SIGKILL)
                kills += 1
            _, err = process.communicate(timeout=300)
        written += (tmp_path / "run.txt").read_text().splitlines()
        if not killed:
            assert process.returncode == 0, err
            break
    assert kills >= 2
    counts = Counter(written)
    assert sorted(counts) == text_keys(names)  # none lost
    assert sum(counts.values()) - len(counts) <= kills * CHECKPOINT_KEYS
    assert not checkpoint.exists()
    assert fault_proxy.counts["delay"] > KEYS


@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [
        (signal.SIGTERM, 143, "Stopped by SIGTERM"),
        (signal.SIGHUP, 129, "Stopped by SIGHUP"),
        (signal.SIGINT, 130, "Interrupted"),
    ],
)
def test_a_stopping_signal_ends_a_listing_within_a_second_even_inside_a_request(
    stop: signal.Signals,
    code: int,
    said: str,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """The 6th Scan is answered only after 30 s: the signal comes while the listing waits on
    it. The listing stops within about a second, says how to go on, and going on (by the
    token, and by running the same command again) is exact."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    names = fill(ddb_client, table, 40)
    fault_proxy.set_faults(
        Faults(
            script=[Fault.FORWARD] * 5 + [Fault.DELAY],
            delay_seconds=30,
            operations=frozenset({"Scan"}),
        )
    )
    checkpoint, out = tmp_path / "listing.ckpt", tmp_path / "keys.txt"
    command = listing_args(
        fault_proxy.endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while fault_proxy.counts["delay"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fault_proxy.counts["delay"] == 1  # the listing now waits on the delayed answer
    time.sleep(0.3)
    sent = time.monotonic()
    process.send_signal(stop)
    _, err = process.communicate(timeout=30)
    took = time.monotonic() - sent
    assert process.returncode == code, err
    # (About a second on a quiet machine; 10 s leaves a busy one room, the answer takes 30 s.)
    assert took < 10, f"stopped {took:.1f} s after {stop.name}, while the answer takes 30 s"
    assert f"{said} after 5 keys (skip)" in err, err
    assert f"it goes on from {checkpoint}" in err
    token = err.split("Resume with: --resume ")[1].split()[0]
    assert out.read_text().count("\n") == 5
    assert checkpoint.exists()
    fault_proxy.set_faults(Faults())
    by_token = subprocess.run(
        listing_args(fault_proxy.endpoint_url, table, "--resume", token, "-q"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert by_token.returncode == 0, by_token.stderr
    first = out.read_text().splitlines()
    assert sorted(first + by_token.stdout.splitlines()) == text_keys(names)
    again = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "Going on from" in again.stderr
    assert sorted(out.read_text().splitlines()) == text_keys(names)
    assert not checkpoint.exists()


def run_cli(endpoint: str, table: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        listing_args(endpoint, table, *args),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_checkpoint_files_that_do_not_fit_are_refused(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    other = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 5)
    full = run_cli(ddb_endpoint_url, table, "-q").stdout.splitlines()  # in scan order
    checkpoint, out = tmp_path / "c.ckpt", tmp_path / "keys.txt"
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"\xff\xfe not a checkpoint")
    refused = run_cli(ddb_endpoint_url, table, "--checkpoint", str(garbage))
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == (
        f"Error: The checkpoint file {garbage} is not one ddbkeys wrote, or it was cut short or "
        f"changed (not JSON): delete it to start the listing again."
    )
    same = run_cli(ddb_endpoint_url, table, "--checkpoint", str(out), "--output-file", str(out))
    assert same.returncode == 2 and same.stderr.strip().splitlines()[-1] == (
        f"Error: --checkpoint and --output-file are the same file ({out}): name two files."
    )
    assert not out.exists()
    nowhere = tmp_path / "no-such-folder" / "c.ckpt"
    unwritable = run_cli(ddb_endpoint_url, table, "--checkpoint", str(nowhere))
    assert (unwritable.returncode, unwritable.stdout) == (1, "")  # said before any key
    assert unwritable.stderr.strip().splitlines()[-1] == (
        f"Error: Could not open file {str(nowhere)!r}: No such file or directory (its lock "
        f"file {nowhere}.lock beside it)"
    )
    # A checkpoint left by a stopped listing of `table` (written by the library's own parts).
    second = full[1].replace("\\n", "\n")
    token = encode_token(Checkpoint(table, "pk:S,sk:N", "skip", [{"S": second}]))
    head = "".join(line + "\n" for line in full[:2])
    out.write_text(head + "partial")
    write_atomically(
        str(checkpoint), encode_file(CheckpointFile(token, str(out), "text", len(head), 2))
    )
    wrong_table = run_cli(
        ddb_endpoint_url, other, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    assert wrong_table.returncode == 1
    assert f"The resume token is for table {table!r}, not {other!r}" in wrong_table.stderr
    to_stdout = run_cli(ddb_endpoint_url, table, "--checkpoint", str(checkpoint))
    assert to_stdout.returncode == 1
    assert f"is of a listing to --output-file {out} (text), not to stdout (text)" in (
        to_stdout.stderr
    )
    both = run_cli(
        ddb_endpoint_url,
        table,
        "--checkpoint",
        str(checkpoint),
        "--output-file",
        str(out),
        "--resume",
        token,
    )
    assert both.returncode == 2 and "--resume and the checkpoint file" in both.stderr
    assert out.read_text() == head + "partial"  # nothing touched by a refusal
    tampered = checkpoint.read_text().replace('"keys": 2', '"keys": 3')
    (tmp_path / "tampered.ckpt").write_text(tampered)
    changed = run_cli(
        ddb_endpoint_url,
        table,
        "--checkpoint",
        str(tmp_path / "tampered.ckpt"),
        "--output-file",
        str(out),
    )
    assert changed.returncode == 1 and "(its check does not match)" in changed.stderr
    json_output = run_cli(
        ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--output", "json"
    )
    assert json_output.returncode == 2 and "--checkpoint goes with --output text" in (
        json_output.stderr
    )
    # The right command goes on: the partial line is cut off, the other keys follow.
    resumed = run_cli(
        ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Going on from" in resumed.stderr and "(2 keys written before)" in resumed.stderr
    assert out.read_text().splitlines() == full
    assert not checkpoint.exists()
    assert not list(tmp_path.glob(".ddbkeys-checkpoint-*"))  # no temporary file left behind


def test_what_a_checkpoint_cannot_vouch_for_is_refused_or_forgotten(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """OUT changed inside what the checkpoint covers, a second run of the same listing, and a
    reader of stdout gone away (| head): never a wrong key set with exit 0."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    names = fill(ddb_client, table, 20)
    checkpoint, out = tmp_path / "c.ckpt", tmp_path / "keys.txt"
    # A checkpoint after 5 keys, with OUT as that run left it.
    listing = distinct_partition_keys(ddb_client, table, "skip")
    first = [next(iter_keys) for iter_keys in [iter(listing)] for _ in range(5)]
    head = "".join(text_line(k) + "\n" for k in first)
    out.write_text(head)
    write_atomically(
        str(checkpoint),
        encode_file(
            CheckpointFile(
                listing.checkpoint(),
                str(out),
                "text",
                len(head.encode()),
                5,
                hashlib.sha256(head.encode()).hexdigest(),
            )
        ),
    )
    out.write_text(head.replace("k", "K", 1))  # edited, same length
    edited = run_cli(
        ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    assert edited.returncode == 1
    assert edited.stderr.strip().splitlines()[-1] == (
        f"Error: The output file {out} was changed since the checkpoint file {checkpoint} was "
        f"written (its first {len(head.encode())} bytes differ): delete {checkpoint} to start "
        "the listing again."
    )
    out.write_text(head)
    # Another run of the same listing holds the lock: refused, nothing touched.
    with open(f"{checkpoint}.lock", "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        twice = run_cli(
            ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
        )
    assert twice.returncode == 1
    assert twice.stderr.strip().splitlines()[-1] == (
        f"Error: Another listing is using the checkpoint file {checkpoint} (it holds "
        f"{checkpoint}.lock): wait for it to end, or name another file."
    )
    assert out.read_text() == head
    done = run_cli(
        ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--output-file", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert sorted(out.read_text().splitlines()) == text_keys(names)
    assert not checkpoint.exists() and not Path(f"{checkpoint}.lock").exists()
    # A reader of stdout that goes away (| head, | true): what it threw away is unknown, so
    # the checkpoint is forgotten (the keys come at 8 a second: the pipe breaks mid-listing).
    arguments = listing_args(
        ddb_endpoint_url, table, "--checkpoint", str(checkpoint), "--max-rcu-per-second", "4"
    )
    command = " ".join(shlex.quote(a) for a in arguments)
    piped = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{command} | true"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode == 0, piped.stderr
    assert not checkpoint.exists() and not Path(f"{checkpoint}.lock").exists()


def test_a_table_created_again_is_another_table(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 6)
    listing = distinct_partition_keys(ddb_client, table, "skip")
    taken = [k for _, k in zip(range(3), listing, strict=False)]
    assert len(taken) == 3
    token = listing.checkpoint()
    ddb_client.delete_table(TableName=table)
    ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    time.sleep(1.1)  # a creation time of its own
    ddb_client.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    with pytest.raises(ResumeTokenError, match="was deleted and created again"):
        distinct_partition_keys(ddb_client, table, "skip", resume=token)


@pytest.mark.parametrize("output", ["json", "table"])
def test_a_stop_with_a_document_output_gives_no_token_past_keys_never_written(
    output: str,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    """--output json (or table) writes the keys once the listing ends: stopped after 5 keys, it
    wrote none, so a resume token (which goes on after those 5) would lose them (a new user
    found the two runs held 457-607 keys of 900). It says nothing was written and how to run
    so that a run can go on, and prints no token."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 40)
    fault_proxy.set_faults(
        Faults(
            script=[Fault.FORWARD] * 5 + [Fault.DELAY],
            delay_seconds=30,
            operations=frozenset({"Scan"}),
        )
    )
    command = listing_args(fault_proxy.endpoint_url, table, "--output", output)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while fault_proxy.counts["delay"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fault_proxy.counts["delay"] == 1
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert out == ""
    assert "Resume with" not in err and "--resume" not in err, err
    assert err.startswith("Interrupted after 5 keys (skip): "), err
    assert f"\nNothing was written (--output {output} writes the keys at the end)" in err


@pytest.mark.parametrize("resumed", [False, True], ids=["new", "resumed"])
def test_ctrl_c_before_the_first_key_says_nothing_was_written_and_to_run_again(
    resumed: bool,
    silent_endpoint: ServerURL,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    """Ctrl-C while the listing opens (its table's description: here, an endpoint that never
    answers) said "a request already sent may still be applied", of a listing that writes
    nothing, and nothing of a --resume token given (a new user's run: it still holds)."""
    args: list[str] = []
    if resumed:  # a real token, of a listing stopped after 3 keys
        table = ddb_table_factory(("pk", "S"), ("sk", "N"))
        fill(ddb_client, table, 10)
        listing = distinct_partition_keys(ddb_client, table, method="skip")
        keys = iter(listing)
        for _ in range(3):
            next(keys)
        args = ["--resume", listing.checkpoint()]
    command = listing_args(silent_endpoint, "orders", *args)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert silent_endpoint.connected.wait(30)  # (its DescribeTable waits: not Python starting)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert out == ""
    said = "Interrupted before the listing wrote a key: run the same command again"
    if resumed:
        said += " (its --resume token still goes on from where the stopped listing was)"
    assert err == said + ".\n"
