"""Stopping a listing from outside it (a signal handler, another thread) within a fraction of a
second, wherever it is waiting: between pages, in a read-budget wait, in a retry backoff."""

from __future__ import annotations

import time
from collections.abc import Callable

from ddbkeys._errors import ListingInterrupted

__all__ = ["STOP_SLICE", "StopFlag"]

#: The longest a listing sleeps without looking at its stop flag, in seconds.
STOP_SLICE = 0.1


class StopFlag:
    """Set once to ask a listing to stop. Setting it only assigns an attribute, so a signal
    handler may do it at any moment (a ``threading.Event`` could deadlock there)."""

    def __init__(self) -> None:
        self.requested = False

    def set(self) -> None:
        self.requested = True

    def check(self) -> None:
        """Raise :class:`~ddbkeys.ListingInterrupted` once the flag is set."""
        if self.requested:
            raise ListingInterrupted(
                "The listing was stopped (Listing.stop()): go on from Listing.checkpoint()."
            )

    def sleep(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> None:
        """Sleep ``seconds``, looking at the flag every ``STOP_SLICE`` seconds. An injected
        ``sleep`` (a test's recorder) is called once with the whole wait, as before."""
        self.check()
        if sleep is not time.sleep:
            sleep(seconds)
        else:
            end = time.monotonic() + seconds
            while (left := end - time.monotonic()) > 0:
                time.sleep(min(left, STOP_SLICE))
                self.check()
        self.check()
