"""The embedded DynamoDB Local: start, readiness, stop, and no JVM left behind, ever."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ddbkeys._errors import LocalServerError
from ddbkeys._local import DynamoDBLocal

pytestmark = pytest.mark.embedded


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_start_ready_stop() -> None:
    server = DynamoDBLocal()
    with server:
        pid = server.pid
        assert pid is not None and alive(pid)
        assert server.endpoint_url.startswith("http://127.0.0.1:")
        assert server.startup_seconds is not None and server.startup_seconds > 0
        # Ready means it answers right away, with no retry needed.
        response = server.client(max_attempts=1).list_tables()
        assert response["TableNames"] == []
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        for flag in (b"-inMemory", b"-sharedDb", b"-disableTelemetry", b"-XX:-UsePerfData"):
            assert flag in cmdline
    assert not alive(pid)
    with pytest.raises(LocalServerError, match="not running"):
        _ = server.endpoint_url


def test_fixed_port_and_db_path_persist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with DynamoDBLocal(db_path=tmp_path / "data") as server:
        client = server.client()
        client.create_table(
            TableName="kept",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="kept", Item={"pk": {"S": "a"}})
        port = server.port
    assert port is not None
    # A relative path, as `ddbkeys local --db-path data` gives it (helper-76 F6: the server,
    # run in the jar's folder, refused it: "Invalid directory for database creation").
    monkeypatch.chdir(tmp_path)
    with DynamoDBLocal(port=port, db_path="data") as again:
        assert again.endpoint_url == f"http://127.0.0.1:{port}"
        item = again.client().get_item(TableName="kept", Key={"pk": {"S": "a"}})
        assert item["Item"] == {"pk": {"S": "a"}}


def test_another_server_on_the_port_is_never_taken_for_ours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A port picked free can be taken before the JVM binds it (CI: another worker's server, or a
    fault proxy in front of one): readiness came from that server, so the tests' server was
    another worker's, and a docs test deleted its tables. Now: a new free port, and a given port
    already answering is refused at once."""
    import ddbkeys._local as local  # noqa: PLC0415 - the one module patched

    with DynamoDBLocal() as first:
        taken = first.port
        assert taken is not None
        first.client().create_table(
            TableName="firsts",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        picks = iter([taken])
        real = local._free_port
        monkeypatch.setattr(local, "_free_port", lambda: next(picks, None) or real())
        with DynamoDBLocal() as second:
            assert second.port != taken
            assert second.client().list_tables()["TableNames"] == []  # not the first's
        with pytest.raises(LocalServerError, match=f"Port {taken} is in use"):
            DynamoDBLocal(port=taken).start()
    # A port held on IPv6 alone (a helper's find: the JVM's 29-line stack trace, not one line).
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as held:
        held.bind(("::1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(LocalServerError, match=f"^Port {port} is in use by another program"):
            DynamoDBLocal(port=port).start()


def test_bad_jar_fails_with_its_log(tmp_path: Path) -> None:
    bogus = tmp_path / "DynamoDBLocal.jar"
    bogus.write_bytes(b"not a jar")
    with pytest.raises(LocalServerError, match="exited with code"):
        DynamoDBLocal(jar=bogus, startup_timeout=20).start()


CHILD = textwrap.dedent(
    """
    import faulthandler, os, signal, sys, time
    from ddbkeys._local import DynamoDBLocal
    server = DynamoDBLocal().start()
    print(server.pid, flush=True)
    how = sys.argv[1]
    sys.stdin.readline()  # the test has seen the JVM alive: go on
    # Where this process still runs 45 s on, its threads' stacks go to stderr: the test shows
    # them (a loaded CI run once saw no exit within 60 s of SIGTERM, and nothing more).
    faulthandler.dump_traceback_later(45, exit=False)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "exit":
        sys.exit(0)   # no stop() called: atexit must do it
    elif how == "crash":
        raise RuntimeError("boom")
    time.sleep(60)    # "sigterm", "sigint": the test signals us
    """
)


@pytest.mark.parametrize("how", ["sigkill", "exit", "crash", "sigterm", "sigint"])
def test_no_jvm_outlives_its_parent(how: str, tmp_path: Path) -> None:
    errors = tmp_path / "child.err"
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, how],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip().isdigit(), f"child printed {line!r}"
    jvm = int(line)
    assert alive(jvm)
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    if how == "sigterm":
        child.send_signal(signal.SIGTERM)
    elif how == "sigint":
        child.send_signal(signal.SIGINT)
    try:
        # (It stops the JVM in at most 10 s; a loaded machine once needed more than 30 in all.)
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        said = errors.read_text(errors="replace")[-4000:]
        pytest.fail(f"the parent did not exit within 60 s after {how}; its stderr:\n{said}")
    try:
        assert wait_gone(jvm), f"JVM {jvm} outlived its parent ({how})"
    finally:
        if alive(jvm):
            os.kill(jvm, signal.SIGKILL)
