"""The request threads :func:`ddbkeys._clients.send` waits on when a request may outlast what
is left of its deadline: reused, never waited for past the deadline, ended when idle, and
forgotten in a forked child. Played with a stand-in client whose timeouts are unknown (so
every request goes to a thread), most with request threads of their own (``send``'s
``threads``)."""

from __future__ import annotations

import contextvars
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from ddbkeys import DdbKeysError
from ddbkeys._clients import RequestThreads, deadline_scope, send
from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._errors import NoAnswerInTime
from ddbkeys._retry import Deadline

TAG: contextvars.ContextVar[str] = contextvars.ContextVar("tag", default="none")


#: Where a stand-in says it sends: a port that listens (a request given up at its deadline is
#: probed there, and a refusal would be said as one: see ddbkeys._probe).
_LISTENING = socket.create_server(("127.0.0.1", 0))


def stand_in(call: Callable[[], Any]) -> Any:
    """A client whose one operation, ``op``, is ``call()``, with no timeouts it would say."""
    port = _LISTENING.getsockname()[1]
    meta = SimpleNamespace(config=None, endpoint_url=f"http://127.0.0.1:{port}")
    return SimpleNamespace(meta=meta, op=call)


def within(
    call: Callable[[], Any], seconds: float = 5.0, threads: RequestThreads | None = None
) -> Any:
    with deadline_scope(Deadline(seconds)):
        return send(stand_in(call), "op", {}, threads)


def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_one_caller_after_another_reuses_one_thread() -> None:
    # A pool of its own: the process's may hold idle threads that earlier tests' requests
    # left (then any of them may answer; it failed so in a loaded run, 5 threads).
    threads = RequestThreads()
    senders = {within(threading.get_ident, threads=threads) for _ in range(200)}
    assert len(senders) == 1 and senders != {threading.get_ident()}


def test_the_answer_the_error_and_the_callers_context() -> None:
    TAG.set("caller's")
    assert within(TAG.get) == "caller's"
    failure = KeyError("no such table")

    def fails() -> None:
        raise failure

    with pytest.raises(KeyError) as raised:
        within(fails)
    assert raised.value is failure


def test_a_request_that_does_not_end_is_left_to_its_thread() -> None:
    threads = RequestThreads()
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(NoAnswerInTime):
        within(lambda: release.wait(30), 0.2, threads)
    # (A generous ceiling: it fails only a call that waits for the 30 s request, not load.)
    assert 0.2 <= time.monotonic() - started < 10.0
    assert within(lambda: "second", threads=threads) == "second"  # another thread answers
    release.set()  # the first request ends: its thread waits for work again
    assert wait_for(lambda: threads.idle == 2)
    assert within(lambda: "third", threads=threads) == "third"
    assert threads.idle == 2  # no third thread


def test_many_callers_at_once_each_get_their_own_answer() -> None:
    errors: list[str] = []
    threads = RequestThreads()

    def caller(n: int) -> None:
        for i in range(50):
            got = within(lambda i=i: (n, i), threads=threads)  # type: ignore[misc]
            if got != (n, i):
                errors.append(f"{n}/{i}: {got}")

    callers = [threading.Thread(target=caller, args=(n,)) for n in range(16)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    assert errors == []
    assert threads.idle <= 16


def test_threads_with_nothing_to_send_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_lifecycle, "IDLE_SECONDS", 0.05)
    threads = RequestThreads()
    before = threading.active_count()
    for _ in range(3):
        threading.Thread(target=lambda: within(lambda: time.sleep(0.05), threads=threads)).start()
    assert wait_for(lambda: threading.active_count() <= before)
    assert threads.idle == 0
    assert within(lambda: "again", threads=threads) == "again"  # a new one starts


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_starts_threads_of_its_own() -> None:
    sender = within(threading.current_thread)  # that thread now waits
    assert sender.is_alive()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's waiting thread is not here
        try:
            os.write(write, str(within(lambda: "child", 2.0)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    assert said == "child", said
    # The waiting thread ended before the fork (Python 3.12 warns of a fork with threads).
    assert not sender.is_alive()


if sys.version_info >= (3, 12):  # fork() in a process with threads warns from 3.12 on
    pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_no_room_for_a_thread_is_a_ddbkeys_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def start(thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(DdbKeysError, match=r"Could not start a thread .*can't start new thread"):
        within(lambda: "never", threads=RequestThreads())
