"""One accounting of requests, items and capacity units, shared by every strategy and method.

Strategies send ``ReturnConsumedCapacity="TOTAL"`` and hand each response to :meth:`Usage.add`,
but the atomic counter, whose item is far under 1 KB: its writes are a unit each, counted in
``billed_write_units`` (its ``write_units``, what DynamoDB reports, stay 0).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["Usage", "item_size", "write_units"]


@dataclass
class Usage:
    """Running totals; thread-safe. ``retries`` counts attempts after the first, of any kind:
    our own after a lost race or an outage, and botocore's (throttling, 5xx, lost responses)
    as each response reports them; ``conflicts`` the races lost to other writers. It pickles
    (and copies) as its totals, with a lock of its own on the other side: a worker of another
    process can send one back."""

    requests: int = 0
    items: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    retries: int = 0
    conflicts: int = 0
    billed_write_units: float = 0.0
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {name: value for name, value in vars(self).items() if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()

    def add(
        self,
        response: Mapping[str, Any] | None,
        *,
        write: bool,
        items: int = 0,
        billed: float = 0.0,
    ) -> None:
        """Count one request and the capacity its response reports (if any).

        ``write`` says whether the operation was a write: with ``ReturnConsumedCapacity="TOTAL"``
        DynamoDB reports only a total, not which kind of units it was. ``billed`` is what the
        service charges for the write by its published rules (see :func:`write_units`), which
        is kept apart because DynamoDB Local under-reports transactions.
        """
        units = _consumed(response or {})
        # botocore's own retries (throttling, 5xx, lost connections) before this response.
        resent = int((response or {}).get("ResponseMetadata", {}).get("RetryAttempts", 0))
        with self._lock:
            self.requests += 1
            self.retries += resent
            self.items += items
            self.billed_write_units += billed
            if write:
                self.write_units += units
            else:
                self.read_units += units

    def count(self, *, retries: int = 0, conflicts: int = 0) -> None:
        with self._lock:
            self.retries += retries
            self.conflicts += conflicts

    def merge(self, totals: Mapping[str, float] | Usage) -> None:
        """Add another's :meth:`snapshot` (a worker's, sent back from its process), or another
        ``Usage`` (a listing's ``usage``, in this process)."""
        if isinstance(totals, Usage):  # (helper-82 F3: an AttributeError inside, 'get')
            totals = totals.snapshot()
        with self._lock:
            self.requests += int(totals.get("requests", 0))
            self.items += int(totals.get("items", 0))
            self.read_units += float(totals.get("read_units", 0.0))
            self.write_units += float(totals.get("write_units", 0.0))
            self.retries += int(totals.get("retries", 0))
            self.conflicts += int(totals.get("conflicts", 0))
            self.billed_write_units += float(totals.get("billed_write_units", 0.0))

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
                "billed_write_units": round(self.billed_write_units, 3),
            }


def _consumed(response: Mapping[str, Any]) -> float:
    consumed = response.get("ConsumedCapacity")
    if consumed is None:
        return 0.0
    entries = consumed if isinstance(consumed, list) else [consumed]
    return sum(float(entry.get("CapacityUnits", 0.0)) for entry in entries)


def _value_size(value: Mapping[str, Any]) -> int:
    kind, raw = next(iter(value.items()))
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":
        return number_size(str(raw))
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: v}) for v in raw)
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in raw)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in raw.items())
    return 0


def number_size(text: str) -> int:
    """A number's size as DynamoDB stores it: a byte for each pair of decimal digits, the
    pairs aligned on the decimal point (base 100), leading and trailing zero pairs dropped, a
    byte more, and one more for a negative number; zero is one byte (as DynamoDB Local counts
    them: "100" and "1E+10" are 2, "1.5" 3, "0" 1). Text that is not a number: by its digits.
    Plain decimals (``-12.50``) are read as text, others through :class:`~decimal.Decimal`:
    a page of 629 items of 100 numbers took 0.16 s of CPU through it alone."""
    body = text.removeprefix("-")
    whole, _, fraction = body.partition(".")
    digits = whole + fraction
    if digits.isascii() and digits.isdigit():
        return _stored(digits, -len(fraction), int(body != text))
    try:
        sign, figures, power = Decimal(text).as_tuple()
    except (InvalidOperation, ValueError):
        return (len([c for c in text if c.isdigit()]) + 1) // 2 + 1
    if not isinstance(power, int):
        return 1
    return _stored("".join(map(str, figures)), power, sign)


def _stored(digits: str, exponent: int, sign: int) -> int:
    """The bytes of a number of decimal ``digits``, the last of them at ``10 ** exponent``
    (leading and trailing zeros dropped here; none left: zero)."""
    trimmed = digits.rstrip("0")
    exponent += len(digits) - len(trimmed)
    kept = trimmed.lstrip("0")
    if not kept:
        return 1
    leading = len(kept) - 1 + exponent  # the power of ten of the first digit, of the last
    return (leading // 2 - exponent // 2 + 1) + 1 + sign


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size in bytes by DynamoDB's rules: attribute names plus values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def write_units(items: Sequence[Mapping[str, Any]], *, transactional: bool = False) -> float:
    """What the service charges to write these items: 1 unit per KB (rounded up) per item,
    twice that in a transaction."""
    units = sum(max(1, -(-item_size(item) // 1024)) for item in items)
    return float(units * (2 if transactional else 1))
