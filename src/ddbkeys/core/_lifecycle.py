"""The process's lifecycle, in one place: how long a daemon thread with nothing to do waits
before it ends (:data:`IDLE_SECONDS`), how one is started (:func:`start_thread`), what is done
before a fork and reset in a forked child (:func:`at_fork`), and what is done at interpreter
exit (:func:`at_exit`). The request threads of :mod:`ddbkeys.clients`, the block allocators, the
writer slots and the task clients register here; nothing else calls ``os.register_at_fork`` or
``atexit``."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from ddbkeys.errors import DdbKeysError

__all__ = ["IDLE_SECONDS", "at_exit", "at_fork", "exit_hooks", "fork_hooks", "start_thread"]

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
