"""The least skip-pages may cost where what the sample drew stands for fewer collections than
its share says: the items it missed, in one collection (:func:`unseen_in_one`), or the large
collections it cut, the only ones of the table (:func:`cut_once`). The orders of
``simulate.skip_pages_range`` lay each drawn segment again for each pass over the drawn share
(a collection drawn once stands for ``1 / p`` like it), and the sample cannot tell one from
many: each is drawn with the same odds. Pure."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import NamedTuple

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._tasks.missed import TAIL
from ddbkeys.partition_keys._tasks.ranges import Range
from ddbkeys.partition_keys._tasks.sampled import Collection, Sample
from ddbkeys.partition_keys._tasks.simulate import LONE_ORDERS, UNDER, Simulated, _Laid

__all__ = ["Layouts", "cut_once", "unseen_in_one"]


class Layouts(NamedTuple):
    """What skip-pages may cost over layouts of the table the sample cannot tell apart:
    ``UNDER`` of the least (pages read on at the scan's low end), and the most (at its high
    end)."""

    least: float
    most: float


def _laid_out(sims: Sequence[Simulated | None], scan: Range) -> Layouts | None:
    """The least and the most of ``sims`` (None: there are none)."""
    low = [sim.skip_rcu + sim.through * scan.low for sim in sims if sim is not None]
    high = [sim.skip_rcu + sim.through * scan.high for sim in sims if sim is not None]
    return Layouts(max(0.5, UNDER * min(low)), max(high)) if low else None


def _places() -> list[float]:
    """Where a collection laid once goes in the stream: first, last, and drawn."""
    rng = random.Random(0)
    return [0.0, 1.0, *(rng.random() for _ in range(LONE_ORDERS - 2))]


def _undrawn(sample: Sample) -> list[float]:
    """Where what no drawn segment held may lie: the first and the last segment not drawn, and
    others drawn among them (``_places`` where the sample does not say where its segments lie)."""
    total = sample.total_segments
    if len(sample.places) != len(sample.runs) or not total:
        return _places()
    drawn = {round(at * total) for at in sample.places}
    left = [k / total for k in range(total) if k not in drawn]
    if not left:
        return _places()
    rng = random.Random(0)
    return [left[0], left[-1], *(rng.choice(left) for _ in range(LONE_ORDERS - 2))]


def unseen_in_one(info: TableInfo, keys: Range, scan: Range, sample: Sample) -> Layouts | None:
    """What skip-pages may cost where the items the sample missed (``_unseen``: more items in
    the drawn segments' share of DescribeTable's count than they held) lie in one collection,
    at least, or in as many as the draw could miss every one of but ``TAIL`` of the time
    (``(1 - p) ** k``), at most (None: it missed none, or holds no collections). The orders of
    :func:`skip_pages_range` lay them as one collection in each pass over the drawn segments
    (a table whose large keys are as many as the passes), and the sample cannot tell one from
    many: each is missed with the same odds. Where they are large items in a few collections,
    they decide what the listing pays: on 4,000 single-item keys of 100 B and one of 8,000
    items of 4 KB (68 segments of 989 drawn), every order met 14 such collections: 369-738
    RCU, where the listing read 53.5 (the collection came first, while it skipped). The least
    over ``LONE_ORDERS`` places for it (first, last, drawn), ``UNDER`` of it. Several such
    collections laid together each cost a page at the page size the listing has reached
    there, up to their bytes (helper-78: on 2,000 single-item keys and three of 3,000 items of
    100 B last in scan order, 21 segments of 40 drew none of the three; the orders laid what
    they missed as one collection a pass and said up to 43.6 RCU, where the listing read 64.5,
    its pages grown to a scan's over the small keys): the most over 2 to that many of them, at
    places no drawn segment holds (the first and the last such, and drawn ones)."""
    if not any(sample.runs) or not info.item_count or not keys.value:
        return None
    laid = _Laid.of(info, keys, sample)
    if laid.lone is None:
        return None
    one = _laid_out([laid.run_lone(seed, at) for seed, at in enumerate(_places())], scan)
    if one is None or laid.p >= 1:
        return one
    sizes, sampled = laid.lone.sizes, laid.runs[: laid.sampled]
    most = min(len(sizes), math.floor(math.log(TAIL) / math.log(1 - laid.p)))
    sims = []
    for k in sorted({k for k in (2, 3, 5, 8, most) if 2 <= k <= most}):
        each = math.ceil(len(sizes) / k)
        many = [Collection(sizes[at : at + each]) for at in range(0, len(sizes), each)]
        sims += [laid.once([*sampled, many], seed, at) for seed, at in enumerate(_undrawn(sample))]
    several = _laid_out(sims, scan)
    return one if several is None else Layouts(one.least, max(one.most, several.most))


def cut_once(info: TableInfo, keys: Range, scan: Range, sample: Sample) -> float | None:
    """The least skip-pages may cost where the collections the sample cut (read in part: a
    page of each, their rest skipped) are the table's only ones like them: laid once each, not
    once for each pass over the drawn segments' share. On 3,000 small collections and one of
    60 items of 390 KB, a draw that cut it said 1,714-3,372 RCU, where the listing read 230.5
    (it met the one, a page). The least over ``LONE_ORDERS`` places for them (first, last,
    drawn), ``UNDER`` of it (None: none was cut, or the sample is the whole table). Not the
    most: laid once with all the table's unread items, a cut collection can cost a scan's
    where the table's own cost a page each (helper-83: three collections of 600 x 4 KB items
    in the middle of 500 small keys, one cut by the draw: up to 666-1,045 RCU said, 160 read,
    where the orders' 214-235 held)."""
    if sample.whole_table or not sample.cut or not info.item_count or not keys.value:
        return None
    laid = _Laid.of(info, keys, sample)
    sampled = laid.runs[: laid.sampled]
    cut = [c for run in sampled for c in run if c.cut]
    if not cut:
        return None
    kept: list[list[Collection]] = [[c for c in run if not c.cut] for run in sampled]
    sims = [laid.once([*kept, cut], seed, at) for seed, at in enumerate(_places())]
    found = _laid_out(sims, scan)
    return None if found is None else found.least
