"""Writer slots: what makes the idempotent counter's plain UpdateItem safe to send again.

A **slot** is a name held by one call at a time: this process's token (72 random bits, drawn
at the first idempotent call of the process, and again in a child after ``fork``) and a
number. A call takes a free slot from the process's pool and gives it back when it ends, so a
process has as many slots as it ever had idempotent calls at once (one, for a Lambda function,
which handles one event at a time), however many calls it makes.

Each write of a slot stamps two attributes on the counter item: ``ddbkeys_w.<slot>``, the
call's **request number**, and ``ddbkeys_v.<slot>``, the counter value the write produced.
The request number is also the time, in milliseconds since 1970 on the writer's clock, until
which the slot must be kept: the end of the call's deadline plus :data:`CLOCK_MARGIN`. It
only grows within a slot (it is at least the slot's last number plus one), so a clock set
back keeps a slot longer, never shorter. A write is applied only while the slot holds a lower
number; so one call's write is applied once, however many times it is sent, and when it is
refused the item's old image shows the slot at the call's number and the value it wrote.

A slot whose number has passed is **stale**: its call has ended (assuming writers' clocks
agree within :data:`CLOCK_MARGIN`), and any writer may remove it, on condition that it is still
stale. Writers learn of stale slots from the item images their own writes return, kept per
process in :class:`SeenSlots`. Pure bookkeeping: no I/O here.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddbkeys._capacity import item_size
from ddbkeys._core import lifecycle as _lifecycle

__all__ = [
    "CLOCK_MARGIN",
    "MOST_DEADLINE",
    "MOST_REMOVED",
    "NUMBER_PREFIX",
    "VALUE_PREFIX",
    "SeenSlots",
    "Slot",
    "WriterSlots",
    "number_name",
    "slots_in",
    "value_name",
]

#: Seconds by which writers' clocks may disagree: a slot is kept this much past its call's end.
CLOCK_MARGIN = 60.0
#: The longest deadline an idempotent call may have (a Lambda function runs 15 minutes at
#: most): a slot is kept its call's deadline plus :data:`CLOCK_MARGIN`, and the slots of
#: writers that stopped stay in the counter item, and are written with it, that long.
MOST_DEADLINE = 900.0
#: Stale slots one write removes at most (the rest go with the next writes).
MOST_REMOVED = 8
NUMBER_PREFIX = "ddbkeys_w."
VALUE_PREFIX = "ddbkeys_v."


def number_name(slot: str) -> str:
    """The attribute that holds a slot's request number."""
    return NUMBER_PREFIX + slot


def value_name(slot: str) -> str:
    """The attribute that holds the counter value a slot's last write produced."""
    return VALUE_PREFIX + slot


@dataclass
class Slot:
    """One writer slot of this process: its name and the last request number it used."""

    name: str
    last: int = 0

    def number(self, keep_until_ms: int) -> int:
        """The request number of a call that must be kept until ``keep_until_ms``: that time,
        or the slot's last number plus one if that is higher (a clock set back)."""
        self.last = max(self.last + 1, keep_until_ms)
        return self.last


def keep_until(now: float, deadline_left: float, margin: float = CLOCK_MARGIN) -> int:
    """The time (ms since 1970) until which a call's slot is kept: the end of its deadline
    plus the clock margin, rounded up."""
    return math.ceil((now + deadline_left + margin) * 1000)


class WriterSlots:
    """The pool of this process's writer slots (thread-safe; a lock held for a few lines)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._token = ""
        self._free: list[Slot] = []
        self._made = 0

    def _fresh(self) -> None:
        """A new token (and no slots) for a new process: the first call, or a forked child."""
        self._pid = os.getpid()
        self._token = secrets.token_urlsafe(9)  # 12 characters, 72 random bits
        self._free = []
        self._made = 0

    def take(self) -> Slot:
        """A free slot, made if none is free."""
        with self._lock:
            if self._pid != os.getpid():
                self._fresh()
            if self._free:
                return self._free.pop()
            self._made += 1
            return Slot(f"{self._token}{self._made:x}")

    def give(self, slot: Slot) -> None:
        """Give a slot back (only one that :meth:`take` gave in this process)."""
        with self._lock:
            if slot.name.startswith(self._token) and self._pid == os.getpid():
                self._free.append(slot)

    def forget(self) -> None:
        """Draw a new token at the next call (after a snapshot restore: Lambda SnapStart
        would otherwise give every restored environment the same slots)."""
        with self._lock:
            self._pid = 0


#: This process's slots.
SLOTS = WriterSlots()
_lifecycle.at_fork(after_in_child=SLOTS.forget)
try:  # Lambda's Python runtimes have it: a SnapStart restore draws a new token.
    from snapshot_restore_py import register_after_restore  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - outside Lambda
    pass
else:  # pragma: no cover - in Lambda
    register_after_restore(SLOTS.forget)


def slots_in(image: Mapping[str, Any]) -> dict[str, int | None]:
    """The slots a counter item holds, by name, with their request numbers (None: not a
    whole number, which no writer of ddbkeys leaves)."""
    found: dict[str, int | None] = {}
    for name, value in image.items():
        if not name.startswith(NUMBER_PREFIX):
            continue
        raw = value.get("N") if isinstance(value, Mapping) else None
        found[name[len(NUMBER_PREFIX) :]] = (
            int(raw) if isinstance(raw, str) and raw.isdigit() else None
        )
    return found


@dataclass(frozen=True)
class Seen:
    """What the last image of one counter item showed: its slots and its size in bytes."""

    slots: Mapping[str, int | None]
    size: int


class SeenSlots:
    """The slots each counter item held when this process last saw it (the least recently
    used items are forgotten beyond ``size``). Forgetting only delays a stale slot's removal."""

    def __init__(self, size: int = 1000) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Seen] = OrderedDict()

    def saw(self, item: str, image: Mapping[str, Any]) -> None:
        """Remember what an image of ``item`` (a counter item's table and key) holds."""
        seen = Seen(slots_in(image), item_size(image))
        with self._lock:
            self._items[item] = seen
            self._items.move_to_end(item)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def get(self, item: str) -> Seen | None:
        with self._lock:
            return self._items.get(item)

    def stale(self, item: str, now_ms: int, *, skip: set[str]) -> list[str]:
        """Up to :data:`MOST_REMOVED` slots of ``item`` stale at ``now_ms``, oldest first,
        leaving out ``skip``."""
        seen = self.get(item)
        if seen is None:
            return []
        old = sorted(
            (number, name)
            for name, number in seen.slots.items()
            if number is not None and number < now_ms and name not in skip
        )
        return [name for _, name in old[:MOST_REMOVED]]


#: What this process has seen of each counter item.
SEEN = SeenSlots()
