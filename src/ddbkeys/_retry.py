"""Bounded retries with jitter, and the split between contention and unavailability.

Two kinds of failure are retried, each its own way (the split tenacity's docs draw):

- **contention** (an optimistic lock lost to another writer, a TransactionConflict): full jitter,
  ``uniform(0, min(cap, base * 2**attempt))``, which spreads competing processes apart;
- **unavailability** (throttling, HTTP 5xx, a dropped connection that botocore's own retries did
  not get past): exponential backoff with half jitter up to ``max_unavailable_delay`` (5 s),
  which waits for the resource to recover: 25 attempts span about 40-75 s, about the default
  deadline, so that throttling of half a minute is ridden out (helper-86 F2: capped at
  ``max_delay``, 0.5 s, they spanned 9 s, and `ids next` gave up under a 30 s throttle).

Every loop is bounded by ``max_attempts``. ``sleep`` and ``random`` are parameters, so tests record
the waits instead of sleeping.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from ddbkeys._errors import DdbKeysError, error_code

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_REFUSED_ATTEMPTS",
    "Deadline",
    "RetriesExhaustedError",
    "RetryPolicy",
    "is_refused",
    "is_unavailable",
]

_UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "TransactionInProgressException",
        "InternalFailure",
        "ServiceUnavailable",
        "LimitExceededException",
    }
)


#: Attempts at most when the connection is refused: nothing listens there, and waiting for the
#: deadline would only make a mistyped endpoint slower to report.
MAX_REFUSED_ATTEMPTS = 3

#: Seconds one call may take in all, retries and waits included, unless the caller says otherwise.
DEFAULT_DEADLINE = 60.0


class Deadline:
    """The end of one call's total time: every attempt and every wait of the call fits in it.

    ``seconds=None`` means no deadline. ``clock`` is injectable (``time.monotonic`` by default),
    so tests move time by hand.
    """

    def __init__(
        self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if seconds is not None and not seconds > 0:
            raise ValueError(f"a deadline must be above 0 seconds, not {seconds!r}")
        self.seconds = seconds
        self._clock = clock
        self._start = clock()
        self._end = None if seconds is None else self._start + seconds

    def elapsed(self) -> float:
        """Seconds since the call began (a request in flight can carry it past the deadline)."""
        return self._clock() - self._start

    def remaining(self) -> float:
        """Seconds left (``math.inf`` without a deadline, 0.0 once it has passed)."""
        if self._end is None:
            return float("inf")
        return max(0.0, self._end - self._clock())

    def expired(self) -> bool:
        return self._end is not None and self._clock() >= self._end

    def allows(self, wait: float) -> bool:
        """Whether a wait of ``wait`` seconds still ends before the deadline."""
        return self._end is None or self._clock() + wait < self._end


class RetriesExhaustedError(DdbKeysError):
    """An operation still failed after its last allowed attempt; ``cause`` is the last failure."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        table: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, table=table, cause=cause)
        self.attempts = attempts


def is_unavailable(exc: BaseException) -> bool:
    """Throttling, a 5xx or a lost connection: worth the same request again, after a wait."""
    if isinstance(exc, (ConnectionClosedError, EndpointConnectionError, ReadTimeoutError)):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error_code(exc) in _UNAVAILABLE_CODES or int(status) >= 500
    return False


def is_refused(exc: BaseException) -> bool:
    """The endpoint refused the connection (or its name did not resolve): retried at most
    :data:`MAX_REFUSED_ATTEMPTS` times, then reported as unreachable."""
    return isinstance(exc, EndpointConnectionError)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait. Immutable; share one between strategies freely."""

    max_attempts: int = 25
    base_delay: float = 0.005
    max_delay: float = 0.5
    #: The longest wait after throttling, a 5xx or a dropped connection (``max_delay`` bounds
    #: the waits after a lost race, where a long wait only loses the next one too).
    max_unavailable_delay: float = 5.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    random: Callable[[], float] = field(default=_random.random, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise ValueError("need 0 <= base_delay <= max_delay")
        if self.max_unavailable_delay < self.base_delay:
            raise ValueError("need base_delay <= max_unavailable_delay")

    def _ceiling(self, attempt: int, most: float | None = None) -> float:
        top = self.max_delay if most is None else most
        return float(min(top, self.base_delay * (2 ** min(attempt, 30))))

    def full_jitter(self, attempt: int) -> float:
        """The wait after the ``attempt``-th (0-based) lost race: uniform in [0, ceiling]."""
        return self.random() * self._ceiling(attempt)

    def exponential(self, attempt: int) -> float:
        """The wait after the ``attempt``-th unavailability: half the ceiling plus half jitter
        (the ceiling grows to ``max_unavailable_delay``)."""
        ceiling = self._ceiling(attempt, self.max_unavailable_delay)
        return ceiling / 2 + self.random() * ceiling / 2

    def wait_contention(self, attempt: int) -> None:
        self.sleep(self.full_jitter(attempt))

    def wait_unavailable(self, attempt: int) -> None:
        self.sleep(self.exponential(attempt))
