"""The process's one lifecycle policy (:mod:`ddbkeys.core._lifecycle`): every fork and exit hook
of ddbkeys is registered there, in order, and a forked child runs its resets (played in a real
fork, in a subprocess, so this process's registry stays as it is)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import ddbkeys.ids.blocks
import ddbkeys.ids.slots
import ddbkeys.partition_keys.tasks
from ddbkeys import clients
from ddbkeys.core import _lifecycle


def test_every_fork_hook_of_ddbkeys_is_in_the_one_registry() -> None:
    before, child = _lifecycle.fork_hooks()
    assert clients.THREADS.end_idle in before
    assert ddbkeys.ids.slots.SLOTS.forget in child
    assert ddbkeys.partition_keys.tasks._forget_clients in child
    assert ddbkeys.ids.blocks._after_fork_in_child in child


def test_an_exit_hook_registered_again_moves_ahead_of_those_since() -> None:
    program = textwrap.dedent(
        """
        import atexit
        from ddbkeys.core import _lifecycle

        def first(): print("first")
        def second(): print("second")
        _lifecycle.at_exit(first)
        _lifecycle.at_exit(second)
        atexit.register(lambda: print("user's"))
        _lifecycle.at_exit(first)  # again: it runs before the others
        assert _lifecycle.exit_hooks()[-2:] == [second, first]
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    ran = done.stdout.split()
    assert ran == ["first", "user's", "second"], done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_runs_the_resets_in_order_and_a_failing_one_stops_none() -> None:
    program = textwrap.dedent(
        """
        import os
        from ddbkeys.core import _lifecycle

        def failing(): raise ValueError("broken hook")
        _lifecycle.at_fork(before=lambda: print("before 1", flush=True))
        _lifecycle.at_fork(before=lambda: print("before 2", flush=True), after_in_child=failing)
        _lifecycle.at_fork(after_in_child=lambda: print("child", os.getpid() != PARENT, flush=True))
        PARENT = os.getpid()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == ["before 2", "before 1", "child True"], done.stderr
    assert "Exception ignored in a ddbkeys fork hook" in done.stderr
    assert "ValueError: broken hook" in done.stderr
