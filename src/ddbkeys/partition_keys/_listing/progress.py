"""How far a running listing has come, and when it will likely end: the decision apart from
the display (the command line draws it; see ``ListingCore.on_key``).

- A method that reads all of what it scans (``scan``, and ``index``, which scans the marker
  index) is measured by its read units against what that size costs by DescribeTable (the
  model of :func:`ddbkeys.partition_keys._proof.replay.estimate`, 0.5 read units per 4 KB). That
  size is an estimate, so the share is said with a "~" and never goes past 100%: once the listing
  has read more than the estimate, it says ~100% and no time left (it cannot know).
- The skip scans read an unknown part of the table, so they are measured by the Scan segments
  done, when there are more than readers (else every reader reads its one segment to the end,
  and "0 done" would stand until the end: nothing is said).
- The time left is the time so far times what is left over what was done since the start, and
  only once there is something to go by (``MIN_SECONDS`` and ``MIN_SHARE`` done): never made up.

A resumed listing counts the segments it had finished as done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ddbkeys.partition_keys._proof.replay import scan_units

__all__ = ["BY_SIZE", "MIN_SECONDS", "MIN_SHARE", "Gauge", "Progress"]

#: Methods that read all of what they scan: their read units say how far they are.
BY_SIZE = ("scan", "index")
#: No time left is said before this many seconds, or this share of the whole done since start.
MIN_SECONDS = 2.0
MIN_SHARE = 0.01


@dataclass(frozen=True)
class Progress:
    """``done``: the share of the listing done, 0 to 1 (None: it cannot be told); ``by``:
    "size" (read units against the estimated size: approximate) or "segments" (exact);
    ``capped``: the listing read more than the estimate (it says ~100%); ``seconds_left``: the
    likely time left (None: not known)."""

    done: float | None = None
    by: str = ""
    capped: bool = False
    seconds_left: float | None = None


class Gauge:
    """The progress of one listing, from where it stood when the gauge was made: the method,
    the size of what it scans (bytes, by DescribeTable; 0: unknown), its Scan segments, those
    done then and the read units spent then. ``clock`` is injectable."""

    def __init__(
        self,
        method: str,
        scanned_bytes: int,
        segments: int,
        done_at_start: int = 0,
        units_at_start: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        readers: int = 1,
    ) -> None:
        self.method = method
        self.scanned_bytes = scanned_bytes
        self.segments = segments
        self.done_at_start = done_at_start
        self.units_at_start = units_at_start
        self.clock = clock
        self.readers = readers
        self.started = clock()
        # (None: DescribeTable gave no size, or the method skips an unknown part of it.)
        self.expected = (
            scan_units(scanned_bytes) if method in BY_SIZE and scanned_bytes > 0 else None
        )

    @classmethod
    def of(cls, listing: object, clock: Callable[[], float] = time.monotonic) -> Gauge:
        """The gauge of ``listing`` (a :class:`~ddbkeys.partition_keys.Listing`) as it stands
        now, before it is iterated."""
        from ddbkeys.partition_keys._listing.listing import ListingCore  # noqa: PLC0415

        assert isinstance(listing, ListingCore)
        return cls(
            listing.method_name,
            listing.method.scanned_bytes(),
            listing.scan_segments,
            listing.segments_done,
            listing.usage.read_units,
            clock,
            listing.readers,
        )

    def read(self, units: float, segments_done: int) -> Progress:
        """The progress once ``units`` read units in all are spent and ``segments_done``
        segments are done."""
        if self.expected:
            start = self.done_at_start / self.segments
            raw = start + (units - self.units_at_start) / self.expected * (1 - start)
            if segments_done >= self.segments:
                raw = 1.0
            elif raw >= 1.0:
                return Progress(1.0, "size", capped=True)
            return Progress(raw, "size", seconds_left=self._left(start, raw))
        if self.segments > max(1, self.readers):
            start = self.done_at_start / self.segments
            done = segments_done / self.segments
            return Progress(done, "segments", seconds_left=self._left(start, done))
        return Progress()

    def _left(self, start: float, done: float) -> float | None:
        elapsed = self.clock() - self.started
        if done >= 1.0:
            return 0.0
        if elapsed < MIN_SECONDS or done - start < MIN_SHARE:
            return None
        return elapsed * (1.0 - done) / (done - start)
