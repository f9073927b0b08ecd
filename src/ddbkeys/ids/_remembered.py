"""The highest number a :class:`~ddbkeys.ids._collection.CollectionSequence` wrote in each item
collection, kept for the collections it used last only, so that a long-lived sequence writing
to ever new collections keeps a bounded memory."""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["REMEMBERED", "Remembered"]

#: How many collections' highest numbers a sequence remembers by default.
REMEMBERED = 10_000


class Remembered:
    """The highest number written per collection, for at most ``size`` collections: the one
    used least recently is forgotten first. What is remembered only spares a read (the
    collection's highest sort key, or its ``never_reuse`` counter) before the next write, and
    a write on a number that proved stale fails its condition and reads again; so forgetting
    a collection costs its next write that read, never a wrong number; all go with the
    table's description (:meth:`clear`: a table made again is empty). Thread-safe: its lock
    (``lock``, or one of its own) is held for a few lines, never across a wait."""

    def __init__(self, size: int = REMEMBERED, *, lock: threading.Lock | None = None) -> None:
        self.size = size
        self._lock = lock or threading.Lock()
        self._numbers: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._numbers)

    def get(self, collection: str) -> int | None:
        """The number remembered for ``collection`` (None: read it), now the latest used."""
        with self._lock:
            number = self._numbers.get(collection)
            if number is not None:
                self._numbers.move_to_end(collection)
            return number

    def raise_to(self, collection: str, number: int) -> None:
        """Remember ``number`` for ``collection`` unless a higher one is; forget the least
        recently used collections beyond ``size``."""
        with self._lock:
            known = self._numbers.get(collection)
            if known is None or known < number:
                self._numbers[collection] = number
            self._numbers.move_to_end(collection)
            while len(self._numbers) > self.size:
                self._numbers.popitem(last=False)

    def forget(self, collection: str) -> None:
        """Forget ``collection``'s number: its next write reads afresh."""
        with self._lock:
            self._numbers.pop(collection, None)

    def clear(self) -> None:
        """Forget every collection (the table's description went: it may have been made
        again, empty, where a number remembered from before would leave a gap)."""
        with self._lock:
            self._numbers.clear()
