"""Threads that send a request for a caller who cannot wait as long as the request may take.

A client's own timeouts may let a request run longer than the deadline of the ddbkeys call
that sends it (a boto3 client waits up to 60 s to connect and 60 s for each read, and ddbkeys'
default deadline is 60 s). Such a request is sent from one of these daemon threads, and the
caller waits for it only until the deadline (:class:`~ddbkeys.clients.DeadlineBoundClient`).

Starting a thread for every request cost about 0.35 ms of CPU, a third more than the request
itself on a local server; so a thread that has sent its request waits for the next one, up to
:data:`IDLE_SECONDS`. One whose request never answers is left to it (daemon threads do not hold
up the exit); a caller finding no thread free starts a new one. After ``fork()`` the child's
list of waiting threads is emptied: none of them exists in the child; and before it, the
threads waiting for a request end, so that a fork does not see them (Python 3.12 warns when a
process with threads forks).
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any

from ddbkeys.errors import DdbKeysError

__all__ = ["IDLE_SECONDS", "KEEP", "RequestThreads", "send_within"]

#: How long a thread with nothing to send waits for the next request before it ends.
IDLE_SECONDS = 30.0
#: At most this many threads wait for requests; more end when their request does.
KEEP = 64


class _Job:
    """One request to send: what sends it (in the caller's context), then its outcome."""

    __slots__ = ("context", "done", "ok", "send", "value")

    def __init__(self, send: Callable[[], Any]) -> None:
        self.send = send
        self.context = contextvars.copy_context()
        self.done = threading.Lock()
        self.done.acquire()  # released by the thread once the outcome is in
        self.ok = False
        self.value: Any = None

    def run(self) -> None:
        """Send, keeping the answer or the exception for the caller (who is told by ``done``)."""
        try:
            self.value = self.context.run(self.send)
            self.ok = True
        except BaseException as exc:  # handed to the caller
            self.value = exc


class _Thread:
    """A daemon thread sending one job after another, given through ``go``."""

    def __init__(self, pool: RequestThreads) -> None:
        self.pool = pool
        self.job: _Job | None = None
        self.stop = False  # set (with no job) to end a waiting thread before a fork
        self.go = threading.Lock()
        self.go.acquire()  # released by the caller that hands this thread a job
        self.thread = threading.Thread(target=self._loop, name="ddbkeys-request", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        idle = self.pool.idle_seconds
        while True:
            # A caller that takes this thread releases ``go`` at once (or was interrupted, and
            # then it never does: the second wait ends the thread).
            if not self.go.acquire(timeout=idle) and (
                self.pool.retire(self) or not self.go.acquire(timeout=idle)
            ):
                return
            if self.stop:
                return
            job, self.job = self.job, None
            if job is not None:
                job.run()
            # Free again before the caller hears of it: a caller sending one request after
            # another finds this thread waiting, rather than starting a second one.
            keep = self.pool.rest(self)
            if job is not None:
                job.done.release()
            del job  # (its outcome is the caller's; nothing of it stays on this thread)
            if not keep:
                return


class RequestThreads:
    """Sends requests from threads kept for the purpose, waiting for each until a time limit."""

    def __init__(self, keep: int = KEEP, idle_seconds: float = IDLE_SECONDS) -> None:
        self.keep = keep
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[_Thread] = []
        self.started = 0  # threads started so far (for tests and curiosity)

    def send(self, send: Callable[[], Any], seconds: float) -> tuple[bool, Any]:
        """``send()`` from a thread, waited for ``seconds`` at most: ``(True, its answer)``,
        ``(False, the exception it raised)``, or ``(False, None)`` when it had not ended."""
        job = _Job(send)
        with self._lock:
            thread = self._idle.pop() if self._idle else None
        if thread is None:
            try:
                thread = _Thread(self)
                with self._lock:
                    self.started += 1
            except RuntimeError as exc:  # "can't start new thread": out of threads or memory
                raise DdbKeysError(
                    f"Could not start a thread to send a request within its deadline ({exc}): "
                    "the process has no room for another thread. Give the client timeouts "
                    "within the deadline (ddbkeys.make_client() does) to send from the "
                    "caller's thread.",
                    cause=exc,
                ) from exc
        handed = False
        try:
            thread.job = job
            handed = True
        finally:
            if not handed:  # interrupted (Ctrl-C): nothing is sent, the thread waits again
                thread.job = None
            thread.go.release()
        if not job.done.acquire(timeout=max(seconds, 0.0)):
            return False, None
        return job.ok, job.value

    def rest(self, thread: _Thread) -> bool:
        """``thread`` is free: whether it waits for the next request (else it ends)."""
        with self._lock:
            if len(self._idle) >= self.keep:
                return False
            self._idle.append(thread)
            return True

    def retire(self, thread: _Thread) -> bool:
        """``thread`` waited long enough for work: whether it ends (False when a caller has
        just taken it)."""
        with self._lock:
            if thread in self._idle:
                self._idle.remove(thread)
                return True
            return False

    def waiting(self) -> int:
        """How many threads wait for a request."""
        with self._lock:
            return len(self._idle)

    def _end_waiting(self) -> None:
        """Before a fork: the threads waiting for a request end (so that the child is forked
        from a process with no more threads than the caller's own), each waited for briefly."""
        with self._lock:
            waiting, self._idle = self._idle, []
        for thread in waiting:
            thread.stop = True
            thread.go.release()
        for thread in waiting:
            thread.thread.join(0.05)

    def _forget(self) -> None:
        """In a forked child: the parent's threads are not there."""
        self._lock = threading.Lock()
        self._idle = []


_THREADS = RequestThreads()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_THREADS._end_waiting, after_in_child=_THREADS._forget)


def send_within(send: Callable[[], Any], seconds: float) -> tuple[bool, Any]:
    """:meth:`RequestThreads.send` on the threads this process keeps for requests."""
    return _THREADS.send(send, seconds)
