"""How far a total read from a sample of whole Scan segments can be from the table's: the
range math of the estimate, pure (no client).

DynamoDB spreads a table's collections over the segments of a parallel Scan by a hash of the
partition key: a collection's items all land in one segment (checked on DynamoDB Local, and
what makes a parallel scan of a table with a sort key hand each key to one segment). Reading
``k`` whole segments of ``S`` at random therefore draws each collection with probability
``p = k / S``, about independently of the others (the hash), whatever the collections hold. For
a quantity ``f`` summed over the collections (1 for the key count, read units for a method):

- the total is about ``sum(f over the sampled collections) / p`` (Horvitz-Thompson);
- its spread is about ``sqrt((1 - p) * sum(f**2 over the sampled)) / p``; the key count (f = 1)
  uses the score interval of a binomial count instead, which holds for small counts too,
  widened to the spread the segments' own counts show where they differ more than a hash
  would spread them (cluster sampling: on DynamoDB Local, a skewed table's drawn segments
  showed 1.06-1.24x the binomial spread of keys);
- a collection the sample did not draw cannot be seen: a single very large term (a key whose
  first item is 400 KB) missed by the sample is the range's blind spot, said in its notes.

With ``p = 1`` (every segment read) the totals are exact and the range is a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Range", "Z", "count_range", "sum_range", "total_range", "uneven"]

#: Standard deviations a range spans either side: about 99% for a normal spread.
Z = 2.576


@dataclass(frozen=True)
class Range:
    """A quantity between ``low`` and ``high``, with ``value`` the likeliest (low <= value <=
    high)."""

    low: float
    value: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.value <= self.high:
            raise ValueError(f"not a range: {self.low} <= {self.value} <= {self.high}")

    @classmethod
    def exact(cls, value: float) -> Range:
        return cls(value, value, value)

    def scaled(self, factor: float, plus: float = 0.0) -> Range:
        """``factor * self + plus`` (factor >= 0)."""
        return Range(
            self.low * factor + plus, self.value * factor + plus, self.high * factor + plus
        )

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, self.value + other.value, self.high + other.high)

    @property
    def spread(self) -> float:
        """``high / low`` (1 for an exact value; infinite from a low of 0 and a high above)."""
        if self.high == self.low:
            return 1.0
        return math.inf if self.low <= 0 else self.high / self.low


def count_range(
    seen: int, drawn: int, of: int, z: float = Z, squares: float | None = None
) -> Range:
    """The table's collections when ``drawn`` whole segments of ``of`` held ``seen``: the score
    interval of a binomial count (each collection drawn with ``p = drawn / of``), with the
    finite-population correction ``1 - p``; never below ``seen``. ``squares``, the sum over
    the drawn segments of the square of each one's count, widens it to the normal spread of a
    total over whole segments (``of * sqrt((1 - p) * variance / drawn)``, the variance of the
    segments' counts) where that is the wider and the counts vary more than a hash would make
    them (:func:`uneven`): segments are not always even, and where they are, their own
    variance is only a noisier measure of the binomial's (on the aws-samples loader's binary
    table, 902 keys: 479-1,195 where the binomial held every one of 40 draws at 1.9x)."""
    if drawn <= 0 or of <= 0 or drawn > of:
        raise ValueError(f"drawn must be 1 to of ({drawn} of {of})")
    p = drawn / of
    if p >= 1:
        return Range.exact(seen)
    c = z * z * (1 - p)
    root = math.sqrt(c * seen + c * c / 4)
    low_mean, high_mean = seen + c / 2 - root, seen + c / 2 + root
    value = seen / p
    low, high = low_mean / p, high_mean / p
    if squares is not None and drawn > 1 and seen:
        variance = max(0.0, squares - seen * seen / drawn) / (drawn - 1)
        if variance / (seen / drawn) > uneven(drawn):
            spread = z * of * math.sqrt((1 - p) * variance / drawn)
            low, high = min(low, value - spread), max(high, value + spread)
    low = max(float(seen), low)
    return Range(low, max(low, value), max(low, high))


def uneven(drawn: int) -> float:
    """How many times their mean the counts of ``drawn`` segments may vary (their variance) and
    still be as even as a hash spreads collections (a Poisson count: once its mean), 99 times
    in 100 (the variance of ``drawn`` such counts, over their mean, is a chi-square over its
    degrees of freedom, about normal: 1 plus 2.33 of its standard deviations)."""
    return 1 + 2.326 * math.sqrt(2 / (drawn - 1))


def sum_range(total: float, squares: float, drawn: int, of: int, z: float = Z) -> Range:
    """The table's sum of a per-collection quantity (>= 0) whose sampled collections summed to
    ``total`` (and their squares to ``squares``) in ``drawn`` whole segments of ``of``; never
    below ``total``."""
    if drawn <= 0 or of <= 0 or drawn > of:
        raise ValueError(f"drawn must be 1 to of ({drawn} of {of})")
    p = drawn / of
    if p >= 1:
        return Range.exact(total)
    value = total / p
    spread = z * math.sqrt((1 - p) * squares) / p
    low = max(total, value - spread)
    return Range(low, max(low, value), max(low, value + spread))


def total_range(
    total: float, squares: float, seen: int, drawn: int, of: int, z: float = Z
) -> Range:
    """As :func:`sum_range`, from the ``seen`` sampled collections too: the table's
    collections (:func:`count_range`) times what one holds on average, each with its error, in
    quadrature (the normal spread of the sum is the same: ``(1 - p) / p**2`` times the sum of
    the squares is the count's relative variance plus the mean's). The count's part is its
    score interval, skewed high where few were seen: a quantity alike in every collection is as
    uncertain as the key count (2.5 RCU a key for skip, 28 keys in 4 segments of 195: the keys
    86-332, the sum's normal spread up to 713 RCU where the table's was 750). Never below
    ``total``."""
    if drawn <= 0 or of <= 0 or drawn > of:
        raise ValueError(f"drawn must be 1 to of ({drawn} of {of})")
    p = drawn / of
    if p >= 1:
        return Range.exact(total)
    if seen <= 0 or total <= 0:  # (no mean to take: the sum's normal spread)
        return sum_range(total, squares, drawn, of, z)
    keys = count_range(seen, drawn, of, z)
    value = total / p
    mean = total / seen
    error = z * math.sqrt((1 - p) * max(0.0, squares / seen - mean * mean) / seen) / mean
    high = value * (1 + math.hypot(keys.high / keys.value - 1, error))
    low = max(total, value * (1 - math.hypot(1 - keys.low / keys.value, error)))
    return Range(low, max(low, value), max(low, high))
