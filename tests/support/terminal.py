"""Run a command with its stderr on a pseudo-terminal, as a user at a shell sees it."""

from __future__ import annotations

import os
import pty
import select
import subprocess


def run_with_terminal_stderr(
    command: list[str], env: dict[str, str], timeout: float = 300.0
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``command`` with stdout on a pipe and stderr on a pty; return the completed process
    (its stdout) and everything written to the terminal."""
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env, text=True)
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                process.kill()
                raise TimeoutError(f"{command} wrote nothing for {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert process.stdout is not None
        stdout = process.stdout.read()
        process.wait(timeout=timeout)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    completed = subprocess.CompletedProcess(command, process.returncode, stdout, "")
    return completed, b"".join(chunks).decode("utf-8", "replace")
