"""The process's one lifecycle policy (:mod:`ddbkeys._core.lifecycle`): every fork and exit hook
of ddbkeys is registered there, in order, and a forked child runs its resets (played in a real
fork, in a subprocess, so this process's registry stays as it is); one pool of threads serves
the requests and the block allocators."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest

import ddbkeys.ids._blocks
import ddbkeys.ids._slots
import ddbkeys.partition_keys._tasks.tasks
from ddbkeys import _clients as clients
from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._retry import Deadline
from tests.support.blocks_counter import Counter, allocator, until


def test_every_fork_hook_of_ddbkeys_is_in_the_one_registry() -> None:
    before, child = _lifecycle.fork_hooks()
    assert _lifecycle.POOL.end_idle in before
    assert ddbkeys.ids._slots.SLOTS.forget in child
    assert ddbkeys.partition_keys._tasks.tasks._forget_clients in child
    assert ddbkeys.ids._blocks._after_fork_in_child in child


def test_an_exit_hook_registered_again_moves_ahead_of_those_since() -> None:
    program = textwrap.dedent(
        """
        import atexit
        from ddbkeys._core import lifecycle as _lifecycle

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
        from ddbkeys._core import lifecycle as _lifecycle

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


def test_one_pool_sends_the_requests_and_an_allocators_reservations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread left waiting by a request sends a block allocator's reservation, and goes back
    to wait for the next request when the allocator is closed."""
    monkeypatch.setattr(_lifecycle, "POOL", pool := _lifecycle.Pool())  # (none waiting)
    meta = SimpleNamespace(config=None, endpoint_url="http://127.0.0.1:1")  # (timeouts unknown)
    client = SimpleNamespace(meta=meta, op=threading.current_thread)
    with clients.deadline_scope(Deadline(5.0)):
        sender = clients.send(client, "op", {})
    assert sender.name == "ddbkeys-request (MainThread)" and pool.idle == 1
    counter = Counter()
    blocks = allocator(counter)
    assert blocks.next() == 1
    until(lambda: len(counter.senders) == 1)
    assert counter.senders == [sender] and sender.name == "ddbkeys-blocks"
    blocks.close()
    until(lambda: pool.idle == 1)
    with clients.deadline_scope(Deadline(5.0)):
        assert clients.send(client, "op", {}) is sender  # (the same thread again)
    pool.end_idle()
    sender.join(timeout=5)
    assert not sender.is_alive()
