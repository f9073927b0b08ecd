"""The targets of issue 35's points 1-3, as benchmarks/partition_keys.py checks them on one shape's
rows (each the median of its rounds), and the lines it prints about them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from measure import ARTICLE, Row, span

#: A row of several readers ("skip x16 of 16").
SEVERAL = re.compile(r" x\d+ of ")

#: Point 1: ``auto`` at most this times the cheapest method's read units...
AUTO_RCU = 1.05
#: ... and this times the fastest method's wall time (plus ``TIME_SLACK`` seconds, for timings
#: of a few requests, too short to compare).
AUTO_TIME = 2.0
TIME_SLACK = 0.05
#: Point 2: skip-pages' requests at most this times the plain Scan's plus ``PAGES_PLUS``...
PAGES_TIMES = 2.0
PAGES_PLUS = 10
#: ... and, where it saves at most ``SAVES_LITTLE`` of a scan's read units, its time behind the
#: 100 ms latency proxy at most ``PROXIED_TIME`` times a scan's there.
SAVES_LITTLE = 0.05
PROXIED_TIME = 1.5
#: Point 3: the estimate's range holds the actual figure, and high / low at most this.
RANGE_RATIO = 2.0
#: Existing targets: auto at most this times the article's requests (or skip's, which sends as
#: many, one a key); with the article's row, ``auto x4`` at most this share of its wall time.
ARTICLE_REQUESTS = 1.01
X4_SHARE = 0.25


def fmt(value: float) -> str:
    """A figure as printed: whole with separators from 1,000, else four significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def shown(row: Row, figure: float, unit: str = "") -> str:
    """A figure, marked as a lower bound when the row was stopped at its request cap."""
    return f"{'>=' if row.stopped else ''}{figure:g}{unit}"


def auto_lines(
    shape: str, auto: Row, others: Mapping[str, Row], phase: str = ""
) -> tuple[list[str], list[str]]:
    """Auto's ratio to the cheapest and the fastest of ``others`` (rows stopped at their cap
    left out; rows of several readers left out of the fastest): lines, and targets missed."""
    whole = [r for r in others.values() if not r.stopped]
    cheapest = min(whole, key=lambda r: r.rcu)
    fastest = min((r for r in whole if not SEVERAL.search(r.method)), key=lambda r: r.seconds)
    rcu = auto.rcu / cheapest.rcu if cheapest.rcu else 1.0
    slow = auto.seconds / fastest.seconds if fastest.seconds else 1.0
    lines = [
        f"  auto{phase}: {auto.method}: {rcu:.3f}x the cheapest RCU ({cheapest.method}, "
        f"{cheapest.rcu:g}; target <= {AUTO_RCU}), {slow:.2f}x the fastest time "
        f"({fastest.method}, {fastest.seconds:.2f} s; target <= {AUTO_TIME:g})"
    ]
    missed = []
    if auto.rcu > AUTO_RCU * cheapest.rcu:
        missed.append(
            f"{shape}: auto{phase} ({auto.method}) {shown(auto, round(auto.rcu, 1))} RCU = "
            f"{rcu:.2f}x {cheapest.method}'s {cheapest.rcu:g} (target <= {AUTO_RCU}x)"
        )
    if auto.seconds > AUTO_TIME * fastest.seconds + TIME_SLACK:
        missed.append(
            f"{shape}: auto{phase} ({auto.method}) {auto.seconds:.2f} s = {slow:.2f}x "
            f"{fastest.method}'s {fastest.seconds:.2f} s (target <= {AUTO_TIME:g}x)"
        )
    return lines, missed


def pages_lines(shape: str, pages: Row, plain: Row) -> tuple[list[str], list[str]]:
    """Skip-pages' requests against the plain Scan's, checked where it saves at most
    ``SAVES_LITTLE`` of its read units (point 2)."""
    bound = PAGES_TIMES * plain.requests + PAGES_PLUS
    checked = saves_little(pages, plain)
    lines = [
        f"  skip-pages: {shown(pages, pages.requests)} requests against a scan's "
        f"{plain.requests} (" + (f"target <= {bound:g}" if checked else "no target") + "); saves "
        f"{1 - pages.rcu / plain.rcu if plain.rcu else 0:.1%} of its RCU"
    ]
    missed = []
    if checked and pages.requests > bound:
        missed.append(
            f"{shape}: skip-pages {shown(pages, pages.requests)} requests > {PAGES_TIMES:g} x "
            f"the scan's {plain.requests} + {PAGES_PLUS} = {bound:g}"
            + (" (stopped at the cap)" if pages.stopped else "")
        )
    return lines, missed


def saves_little(pages: Row, scan: Row) -> bool:
    """Skip-pages saved at most ``SAVES_LITTLE`` of a scan's read units."""
    return pages.rcu >= (1 - SAVES_LITTLE) * scan.rcu


def proxied_lines(shape: str, pages: Row, scan: Row) -> tuple[list[str], list[str]]:
    """Skip-pages' time behind the latency proxy against a scan's there (point 2)."""
    ratio = pages.seconds / scan.seconds if scan.seconds else 1.0
    lines = [
        f"  behind the 100 ms proxy: skip-pages {shown(pages, round(pages.seconds, 2), ' s')} "
        f"({shown(pages, pages.requests)} requests), scan {scan.seconds:.2f} s "
        f"({scan.requests} requests): {ratio:.2f}x (target <= {PROXIED_TIME:g})"
    ]
    missed = []
    if pages.seconds > PROXIED_TIME * scan.seconds:
        missed.append(
            f"{shape}: skip-pages behind the 100 ms proxy {shown(pages, round(pages.seconds, 1))}"
            f" s = {'>=' if pages.stopped else ''}{ratio:.1f}x a scan's {scan.seconds:.2f} s "
            f"(target <= {PROXIED_TIME:g}x)"
        )
    return lines, missed


def markers_lines(
    shape: str,
    index: Row,
    before: Mapping[str, Row],
    now: Mapping[str, Row],
    warning: str | None,
) -> tuple[list[str], list[str]]:
    """What the markers cost (point 3): the cheapest listing of the table before them against
    the index's and the cheapest way now. Where the index costs more than listing the table
    did before, the estimate of the table without markers (``warning``, what ``index create``
    says too) must have warned."""
    was = min(before.values(), key=lambda r: r.rcu)
    cheapest = min((r for r in now.values() if r is not index), key=lambda r: r.rcu)
    dearer = index.rcu > AUTO_RCU * was.rcu
    said = "warned before index create" if warning else "no warning before index create"
    lines = [
        f"  markers: the index lists for {fmt(index.rcu)} RCU, listing the table now costs "
        f"{fmt(cheapest.rcu)} ({cheapest.method}); before the markers {fmt(was.rcu)} "
        f"({was.method}): " + (said if dearer else "the index saves")
    ]
    missed = []
    if dearer and not warning:
        missed.append(
            f"{shape}: the index lists for {fmt(index.rcu)} RCU, more than the "
            f"{fmt(was.rcu)} a listing cost before the markers, and nothing warned before"
        )
    return lines, missed


@dataclass
class Actual:
    """What an estimate's figure is checked against: its name, the estimate's source object
    and attribute, and the value measured."""

    what: str
    source: object
    attribute: str
    value: float
    #: Its range's width is a target (auto's own is not: point 3 names scan, skip-pages and
    #: the index).
    narrow: bool = True


def estimate_lines(shape: str, actuals: list[Actual]) -> tuple[list[str], list[str]]:
    """Each estimated range against the actual figure (point 3)."""
    lines, missed = [], []
    for actual in actuals:
        found = span(actual.source, actual.attribute)
        if found is None:
            lines.append(f"  estimate of {actual.what}: none (actual {fmt(actual.value)})")
            missed.append(f"{shape}: the estimate gives no {actual.what}")
            continue
        low, high = found
        inside = low <= actual.value <= high
        ratio = high / low if low > 0 else float("inf")
        point = "" if high > low else f" (a point: {actual.value / low if low else 0:.2f}x off)"
        lines.append(
            f"  estimate of {actual.what}: {fmt(low)}-{fmt(high)}, actual {fmt(actual.value)}: "
            f"{'inside' if inside else 'OUTSIDE'}, high/low {ratio:.2f}{point}"
        )
        if not inside:
            missed.append(
                f"{shape}: {actual.what} {fmt(actual.value)} outside the estimate "
                f"{fmt(low)}-{fmt(high)}"
                + (f" ({actual.value / low:.2f}x the point)" if high == low and low else "")
            )
        if ratio > RANGE_RATIO and actual.narrow:
            missed.append(
                f"{shape}: the estimate's {actual.what} range {fmt(low)}-{fmt(high)}: high/low "
                f"{ratio:.2f} > {RANGE_RATIO:g}"
            )
    return lines, missed


def article_missed(shape: str, rows: Mapping[str, Row]) -> list[str]:
    """The existing targets against the article's skip scan (or skip): auto within its
    requests, four readers in a quarter of its time."""
    article = rows.get(ARTICLE) or rows.get("skip")
    if article is None:
        return []
    missed = []
    auto = rows["auto"]
    if auto.requests > ARTICLE_REQUESTS * article.requests:
        missed.append(
            f"{shape}: {auto.method} {auto.requests} requests > {ARTICLE_REQUESTS} x "
            f"{article.method}'s {article.requests}"
        )
    for name in ("auto x4", "index auto x4"):
        if ARTICLE in rows and name in rows and rows[name].seconds > X4_SHARE * article.seconds:
            missed.append(
                f"{shape}: {rows[name].method} {rows[name].seconds:.2f} s > {X4_SHARE} of the "
                f"article's {article.seconds:.2f} s"
            )
    return missed
