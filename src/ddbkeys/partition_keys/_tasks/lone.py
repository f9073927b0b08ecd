"""The least skip-pages may cost where what the sample drew stands for fewer collections than
its share says: the items it missed, in one collection (:func:`unseen_in_one`), or the large
collections it cut, the only ones of the table (:func:`cut_once`). The orders of
``simulate.skip_pages_range`` lay each drawn segment again for each pass over the drawn share
(a collection drawn once stands for ``1 / p`` like it), and the sample cannot tell one from
many: each is drawn with the same odds. Pure."""

from __future__ import annotations

import random
from collections.abc import Sequence

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._tasks.ranges import Range
from ddbkeys.partition_keys._tasks.sampled import Collection, Sample
from ddbkeys.partition_keys._tasks.simulate import LONE_ORDERS, UNDER, Simulated, _Laid

__all__ = ["cut_once", "unseen_in_one"]


def _least(sims: Sequence[Simulated | None], scan: Range) -> float | None:
    """``UNDER`` of the least of ``sims`` (their pages read on at the scan's low end)."""
    costs = [sim.skip_rcu + sim.through * scan.low for sim in sims if sim is not None]
    return max(0.5, UNDER * min(costs)) if costs else None


def _places() -> list[float]:
    """Where a collection laid once goes in the stream: first, last, and drawn."""
    rng = random.Random(0)
    return [0.0, 1.0, *(rng.random() for _ in range(LONE_ORDERS - 2))]


def unseen_in_one(info: TableInfo, keys: Range, scan: Range, sample: Sample) -> float | None:
    """The least skip-pages may cost where the items the sample missed (``_unseen``: more
    items in the drawn segments' share of DescribeTable's count than they held) lie in one
    collection (None: it missed none, or holds no collections). The orders of
    :func:`skip_pages_range` lay them as one collection in each pass over the drawn segments
    (a table whose large keys are as many as the passes), and the sample cannot tell one from
    many: each is missed with the same odds. Where they are large items in a few collections,
    they decide what the listing pays: on 4,000 single-item keys of 100 B and one of 8,000
    items of 4 KB (68 segments of 989 drawn), every order met 14 such collections: 369-738
    RCU, where the listing read 53.5 (the collection came first, while it skipped). The least
    over ``LONE_ORDERS`` places for it (first, last, drawn), ``UNDER`` of it."""
    if not any(sample.runs) or not info.item_count or not keys.value:
        return None
    laid = _Laid.of(info, keys, sample)
    return _least([laid.run_lone(seed, at) for seed, at in enumerate(_places())], scan)


def cut_once(info: TableInfo, keys: Range, scan: Range, sample: Sample) -> float | None:
    """The least skip-pages may cost where the collections the sample cut (read in part: a
    page of each, their rest skipped) are the table's only ones like them: laid once each, not
    once for each pass over the drawn segments' share. On 3,000 small collections and one of
    60 items of 390 KB, a draw that cut it said 1,714-3,372 RCU, where the listing read 230.5
    (it met the one, a page). The least over ``LONE_ORDERS`` places for them (first, last,
    drawn), ``UNDER`` of it (None: none was cut, or the sample is the whole table)."""
    if sample.whole_table or not sample.cut or not info.item_count or not keys.value:
        return None
    laid = _Laid.of(info, keys, sample)
    sampled = laid.runs[: laid.sampled]
    cut = [c for run in sampled for c in run if c.cut]
    if not cut:
        return None
    kept: list[list[Collection]] = [[c for c in run if not c.cut] for run in sampled]
    sims = [laid.once([*kept, cut], seed, at) for seed, at in enumerate(_places())]
    return _least(sims, scan)
