"""The process's lifecycle, in one place: how long a daemon thread with nothing to do waits
before it ends (:data:`IDLE_SECONDS`), how one is started (:func:`start_thread`), the one pool
of them (:data:`POOL`: the requests of :mod:`ddbkeys._clients` and a block allocator's
reservations run in its threads), what is done
before a fork and reset in a forked child (:func:`at_fork`), and what is done at interpreter
exit (:func:`at_exit`). The request threads of :mod:`ddbkeys._clients`, the block allocators, the
writer slots and the task clients register here; nothing else calls ``os.register_at_fork`` or
``atexit``."""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from ddbkeys._errors import DdbKeysError

__all__ = [
    "IDLE_SECONDS",
    "POOL",
    "Pool",
    "Work",
    "at_exit",
    "at_fork",
    "exit_hooks",
    "fork_hooks",
    "start_thread",
]

#: How long a daemon thread of ddbkeys with nothing to do waits for work before it ends.
IDLE_SECONDS = 30.0

_BEFORE: list[Callable[[], object]] = []
_CHILD: list[Callable[[], object]] = []
_EXIT: list[Callable[[], object]] = []


def start_thread(target: Callable[..., None], name: str, why: str, *args: Any) -> None:
    """Start a daemon thread running ``target(*args)`` (the exit waits for none); a
    DdbKeysError saying ``why`` if the process can start no more."""
    try:
        threading.Thread(target=target, args=args, name=name, daemon=True).start()
    except RuntimeError as exc:  # "can't start new thread"
        raise DdbKeysError(f"Could not start a thread ({exc}): {why}.", cause=exc) from exc


Hook = Callable[[], object]


def at_fork(*, before: Hook | None = None, after_in_child: Hook | None = None) -> None:
    """Call ``before()`` before each fork (the latest registered first) and ``after_in_child()``
    in each forked child (the first registered first), as :func:`os.register_at_fork` does; a
    hook that fails is reported on stderr and the others still run."""
    if before is not None:
        _BEFORE.append(before)
    if after_in_child is not None:
        _CHILD.append(after_in_child)


def at_exit(hook: Callable[[], object]) -> None:
    """Call ``hook()`` at interpreter exit, before every exit hook registered until now
    (registering it again moves it ahead of those registered since: a block allocator's
    hand-back then runs before the DynamoDB Local it writes to is stopped)."""
    if hook in _EXIT:
        _EXIT.remove(hook)
    _EXIT.append(hook)
    atexit.unregister(hook)
    atexit.register(hook)


def fork_hooks() -> tuple[list[Callable[[], object]], list[Callable[[], object]]]:
    """What is registered: the hooks run before a fork, and those run in a forked child."""
    return list(_BEFORE), list(_CHILD)


def exit_hooks() -> list[Callable[[], object]]:
    """The exit hooks registered, the last to run first."""
    return list(_EXIT)


def _run(hooks: list[Callable[[], object]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:  # (as os.register_at_fork reports a failing hook)
            print(f"Exception ignored in a ddbkeys fork hook {hook!r}:", file=sys.stderr)
            traceback.print_exc()


def _before_fork() -> None:
    _run(_BEFORE[::-1])


def _after_fork_in_child() -> None:
    _run(list(_CHILD))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


class Work(Protocol):
    """What a :class:`Pool` thread runs: ``run()``, then ``finish()`` once the thread is free
    again (so that a caller told of the end in ``finish`` may have the thread at once)."""

    #: The thread's name while it runs this; why a thread is wanted (for the error if none starts).
    name: str
    why: str

    def run(self) -> None: ...

    def finish(self) -> None: ...


class _Stop:
    """Before a fork: the thread that takes it ends (and says which it was)."""

    name = why = "stop"

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.done = threading.Lock()
        self.done.acquire()

    def run(self) -> None:
        self.thread = threading.current_thread()

    def finish(self) -> None:
        self.done.release()


class Pool:
    """Daemon threads running one :class:`Work` after another (a new thread costs a third of a
    local request): handed to a thread that waits when there is one, else to a new thread;
    a thread ends after :data:`IDLE_SECONDS` with nothing to do; the exit waits for none."""

    def __init__(self) -> None:  # (again in a forked child: the parent's threads are not there)
        self.lock, self.jobs = threading.Lock(), queue.SimpleQueue[Work]()
        self.idle = 0  # threads waiting for work that no caller has claimed

    def hand(self, work: Work) -> None:
        """Have ``work`` run by a thread of the pool; a DdbKeysError if none can be started."""
        with self.lock:
            claimed, self.idle = self.idle > 0, max(self.idle - 1, 0)
        if not claimed:
            start_thread(self._work, work.name, work.why)
        self.jobs.put(work)

    def _work(self) -> None:
        waits = 0
        while True:
            try:
                work = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:  # none claimed ends one; a claim whose work never came (the
                    if self.idle > 0 or waits:  # caller interrupted) ends after a second wait
                        self.idle -= 1 if self.idle > 0 else 0
                        return
                waits += 1
                continue
            if isinstance(work, _Stop):
                work.run()
                work.finish()
                return
            thread = threading.current_thread()
            if thread.name != work.name:
                thread.name = work.name
            work.run()
            with self.lock:  # free again before the caller hears of it, to be reused at once
                self.idle += 1
            work.finish()
            del work
            waits = 0

    def end_idle(self) -> None:
        """Before a fork: the waiting threads end (a fork with threads is warned of)."""
        with self.lock:
            stops, self.idle = [_Stop() for _ in range(self.idle)], 0
        for stop in stops:
            self.jobs.put(stop)
        for stop in stops:
            if stop.done.acquire(timeout=0.05) and stop.thread is not None:
                stop.thread.join(0.05)


#: The process's pool.
POOL = Pool()
at_fork(before=POOL.end_idle, after_in_child=partial(Pool.__init__, POOL))
