"""One accounting of requests, items and capacity units, shared by every strategy and method.

Strategies send ``ReturnConsumedCapacity="TOTAL"`` and hand each response to :meth:`Usage.add`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Usage"]


@dataclass
class Usage:
    """Running totals; thread-safe. ``retries`` counts attempts after the first, of any kind;
    ``conflicts`` the races lost to other writers."""

    requests: int = 0
    items: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    retries: int = 0
    conflicts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, response: Mapping[str, Any] | None, *, write: bool, items: int = 0) -> None:
        """Count one request and the capacity its response reports (if any).

        ``write`` says whether the operation was a write: with ``ReturnConsumedCapacity="TOTAL"``
        DynamoDB reports only a total, not which kind of units it was.
        """
        units = _consumed(response or {})
        with self._lock:
            self.requests += 1
            self.items += items
            if write:
                self.write_units += units
            else:
                self.read_units += units

    def count(self, *, retries: int = 0, conflicts: int = 0) -> None:
        with self._lock:
            self.retries += retries
            self.conflicts += conflicts

    def snapshot(self) -> dict[str, float]:
        """A plain copy, for reports and JSON."""
        with self._lock:
            return {
                "requests": self.requests,
                "items": self.items,
                "read_units": round(self.read_units, 3),
                "write_units": round(self.write_units, 3),
                "retries": self.retries,
                "conflicts": self.conflicts,
            }


def _consumed(response: Mapping[str, Any]) -> float:
    consumed = response.get("ConsumedCapacity")
    if consumed is None:
        return 0.0
    entries = consumed if isinstance(consumed, list) else [consumed]
    return sum(float(entry.get("CapacityUnits", 0.0)) for entry in entries)
