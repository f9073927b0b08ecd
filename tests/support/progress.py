"""Waiting for a sign of progress rather than for a time: a test that kills a process mid-work
waits until the process shows it got somewhere (a file it writes has changed), so that a busy
machine, where starting Python and importing boto3 can take seconds, only makes it wait longer.
The ceiling is generous and only there so that a hang fails with a clear message."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

#: How long a sign of progress may take before the test fails: far above what a loaded 2-core
#: machine takes (a few seconds), so only a hang reaches it.
PROGRESS_CEILING = 120.0


def contents(path: Path) -> bytes | None:
    """The bytes of ``path`` now, or None when it does not exist (read whole: the files waited
    on here are replaced atomically)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def wait_for_change(
    path: Path,
    before: bytes | None,
    process: subprocess.Popen[bytes],
    what: str,
    ceiling: float = PROGRESS_CEILING,
) -> bool:
    """Wait until ``path`` holds something other than ``before`` and exists (True), or until
    ``process`` has ended without that (False). Fails, naming ``what``, after ``ceiling`` s."""
    deadline = time.monotonic() + ceiling
    while True:
        now = contents(path)
        if now is not None and now != before:
            return True
        if process.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"{what}: {path} did not change in {ceiling:.0f} s"
        time.sleep(0.02)
