"""The threads that send requests for callers with less time left than a request may take
(ddbkeys.request_threads): reused, never waited for past the limit, ended when idle, and
forgotten in a forked child."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time

import pytest

from ddbkeys import DdbKeysError, request_threads
from ddbkeys.request_threads import RequestThreads, send_within

TAG: contextvars.ContextVar[str] = contextvars.ContextVar("tag", default="none")


def wait_for(predicate: object, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return False


def test_one_caller_after_another_reuses_one_thread() -> None:
    threads = RequestThreads()
    names = set()
    for i in range(200):

        def send(i: int = i) -> tuple[int | None, int]:
            return threading.current_thread().ident, i

        ok, value = threads.send(send, 5.0)
        assert ok
        names.add(value[0])
        assert value[1] == i
    assert threads.started == 1
    assert names != {threading.current_thread().ident}
    assert len(names) == 1


def test_the_answer_the_error_and_the_callers_context() -> None:
    threads = RequestThreads()
    TAG.set("caller's")
    assert threads.send(TAG.get, 5.0) == (True, "caller's")
    failure = KeyError("no such table")

    def fails() -> None:
        raise failure

    assert threads.send(fails, 5.0) == (False, failure)


def test_a_request_that_does_not_end_is_left_to_its_thread() -> None:
    threads = RequestThreads()
    release = threading.Event()
    started = time.monotonic()
    assert threads.send(lambda: release.wait(30), 0.2) == (False, None)
    assert 0.2 <= time.monotonic() - started < 2.0
    # Meanwhile the next request gets a thread of its own, and the answer is its own.
    assert threads.send(lambda: "second", 5.0) == (True, "second")
    assert threads.started == 2
    release.set()  # the first request ends: its thread waits for work again
    assert wait_for(lambda: threads.waiting() == 2)
    assert threads.send(lambda: "third", 5.0) == (True, "third")
    assert threads.started == 2


def test_many_callers_at_once_each_get_their_own_answer() -> None:
    threads = RequestThreads(keep=4)
    errors: list[str] = []

    def caller(n: int) -> None:
        for i in range(50):

            def send(i: int = i) -> tuple[int, int]:
                return n, i

            ok, value = threads.send(send, 5.0)
            if not ok or value != (n, i):
                errors.append(f"{n}/{i}: {ok} {value}")

    callers = [threading.Thread(target=caller, args=(n,)) for n in range(16)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    assert errors == []
    assert threads.started >= 1
    assert wait_for(lambda: threads.waiting() <= 4)  # no more kept than asked


def test_threads_with_nothing_to_send_end() -> None:
    threads = RequestThreads(idle_seconds=0.05)
    before = threading.active_count()
    for _ in range(3):
        threading.Thread(target=lambda: threads.send(lambda: time.sleep(0.05), 5.0)).start()
    assert wait_for(lambda: threads.started == 3 and threads.waiting() == 0)
    assert wait_for(lambda: threading.active_count() <= before)
    assert threads.send(lambda: "again", 5.0) == (True, "again")  # a new one starts


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_starts_threads_of_its_own() -> None:
    ok, sender = send_within(threading.current_thread, 5.0)  # that thread now waits
    assert ok
    assert sender.is_alive()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's waiting thread is not here
        try:
            ok, value = send_within(lambda: "child", 2.0)
            os.write(write, f"{ok} {value}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    assert said == "True child", said
    # The waiting thread ended before the fork (Python 3.12 warns of a fork with threads).
    assert not sender.is_alive()


class Interrupt(BaseException):
    """Stands for the KeyboardInterrupt a signal handler raises between two bytecodes."""


@pytest.mark.parametrize("reused", [True, False], ids=["a waiting thread", "a new thread"])
def test_a_caller_interrupted_while_handing_over_leaves_no_thread_behind(
    monkeypatch: pytest.MonkeyPatch, reused: bool
) -> None:
    """Ctrl-C in the caller between taking a thread and handing it the request: nothing is
    sent, and the thread still ends once idle (it used to wait for that request forever)."""
    threads = RequestThreads(idle_seconds=0.2)
    if reused:
        assert threads.send(lambda: "warm", 5.0) == (True, "warm")
        assert threads.waiting() == 1
    seen: list[threading.Thread] = []
    if reused:  # the interrupt lands as the request is handed over

        def setattr_(self: object, name: str, value: object) -> None:
            if name == "job" and value is not None:
                seen.append(self.thread)  # type: ignore[attr-defined]
                raise Interrupt
            object.__setattr__(self, name, value)

        monkeypatch.setattr(request_threads._Thread, "__setattr__", setattr_)
    else:  # ... or as the new thread starts
        real = threading.Thread.start

        def start(thread: threading.Thread) -> None:
            real(thread)
            seen.append(thread)
            raise Interrupt

        monkeypatch.setattr(threading.Thread, "start", start)
    sent: list[str] = []
    with pytest.raises(Interrupt):
        threads.send(lambda: sent.append("sent"), 5.0)
    monkeypatch.undo()
    assert len(seen) == 1
    assert wait_for(lambda: not seen[0].is_alive(), 3.0), "the thread waits for good"
    assert sent == []
    assert threads.waiting() == 0


if sys.version_info >= (3, 12):  # fork() in a process with threads warns from 3.12 on
    pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_no_room_for_a_thread_is_a_ddbkeys_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def start(thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(DdbKeysError, match=r"Could not start a thread .*can't start new thread"):
        RequestThreads().send(lambda: "never", 5.0)
