"""How the estimate's figures read: read units, counts, ranges, bytes and times as a person
reads them (``0.5 RCU``, ``12.5-25``, ``1,004``, ``47 B``, ``3 min``). Pure text."""

from __future__ import annotations

__all__ = ["count", "duration", "figure", "plural", "size", "span"]


def figure(value: float) -> str:
    """Read units (or a rate): three significant digits under 100 (``0.5``, ``12.5``), whole
    with separators from 100 (``1,004``); a cost of half a unit does not read as ``0``."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def count(value: float) -> str:
    """A count (keys, items): whole, with separators."""
    return f"{value:,.0f}"


def plural(n: float, noun: str = "item", *, grouped: bool = True) -> str:
    """``n`` things, the noun in the plural unless ``n`` reads as one: ``1 item``, ``0 items``,
    ``4,168 items`` (``grouped=False``: ``4168 items``, as a listing's summary has them)."""
    shown = count(n) if grouped else f"{n:.0f}"
    return f"{shown} {noun}" if shown == "1" else f"{shown} {noun}s"


def span(low: float | None, value: float | None, high: float | None, *, whole: bool = False) -> str:
    """``~value`` when the range reads as a point, else ``low-high`` (``?``: unknown); read
    units by :func:`figure`, counts (``whole``) by :func:`count`."""
    if value is None:
        return "?"
    shown = count if whole else figure
    if low is None or high is None or shown(low) == shown(high):
        return f"~{shown(value)}"
    return f"{shown(low)}-{shown(high)}"


def size(n: float | None) -> str:
    """Bytes for a reader: 47 B, 613 KB, 1.2 GB."""
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def duration(seconds: float | None) -> str:
    """Seconds for a reader: 4 s, 3 min, 2.5 h, 3 days."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{max(seconds, 0.1):.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.2g} h"
    return f"{seconds / 86400:.3g} days"
