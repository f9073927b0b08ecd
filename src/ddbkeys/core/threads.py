"""Starting the daemon threads ddbkeys keeps (the request threads of :mod:`ddbkeys.clients`, a
block allocator's), with an error that says what to do when the process can start no more."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ddbkeys.errors import DdbKeysError

__all__ = ["start_thread"]


def start_thread(target: Callable[..., None], name: str, why: str, *args: Any) -> None:
    """Start a daemon thread running ``target(*args)``; a DdbKeysError saying ``why`` if the
    process can start no more."""
    try:
        threading.Thread(target=target, args=args, name=name, daemon=True).start()
    except RuntimeError as exc:  # "can't start new thread"
        raise DdbKeysError(f"Could not start a thread ({exc}): {why}.", cause=exc) from exc
