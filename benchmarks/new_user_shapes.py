"""benchmarks/partition_keys.py on shapes it does not generate, made up as a new user
would (issue 35: "a shape it does not generate, tried as a new user would, keeps auto's
promise"):

    python benchmarks/new_user_shapes.py --endpoint-url URL --only growing --only pairs-30k

- growing: 2,000 number keys of 1-3 items each, each item's payload 2 x its key's rank (0 B to
  4 KB: item sizes grow with the key);
- pairs-30k: 600 collections of exactly 2 items, one of 30 KB (first or second at random), the
  other of 50 B;
- halves: 600 keys; in scan order, 300 single tiny items, then 300 collections of 100 items of
  200 B (one run each, where ``runs`` alternates 150);
- timeseries: a time-series table: 20 sensors of 5,000 readings of 40 B (a number sort key,
  the reading's time) and 2,000 devices that reported once (one 40 B item each);
- numeric-30k: 30,000 number keys of one 100 B item, but 8 of them (one every 3,750) hold a
  300 KB item instead (an attachment): a few huge items among many tiny keys.
- documents: 1,000 keys of 3-12 items of 2-4 KB each (versions of a document): a page of one
  item costs a unit, more than its item, so reading on looks promising, and it is not (a
  helper's table: trials every 8 pages read 1.12x skipping's units).
- lottery: 2,500 keys of 6 items of 1 KB whose first is 30 KB for 15% of them (a profile with
  a photo, say): a skipping page of a key costs 1 unit or 8, so skipping's own pages take
  hundreds to show it saves 19% (a helper's table: auto read on after 8 keys, 1.24x the skip
  scan's units, before pages read on read whole items).
- heavy-3k: 3,000 keys of Pareto item counts (shape 0.7, 1-400) and sizes (shape 1.0, 50 B-40
  KB), about 50,000 items and 20 MB: collection counts heavier-tailed than heavy-tailed's, so
  a trial's two small pages pass where the larger pages read on after fail (auto's readers
  all read on at once after each: 1.01-1.18x one reader's units, four such tables).

Every argument is benchmarks/partition_keys.py's; these shapes are added to its ``--only``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

import partition_keys
import shapes
from shapes import Key, Shape

GENERATED = shapes.shapes


def with_new_shapes(scale: float) -> dict[str, Callable[[], Shape]]:
    made = dict(GENERATED(scale))

    def n(x: int) -> int:
        return max(2, int(x * scale))

    def growing() -> Shape:
        collections: list[tuple[Key, list[int]]] = [
            (str(k * 7 + 1), [2 * k] * (1 + k % 3)) for k in range(n(2000))
        ]
        return Shape("growing", collections, pk_type="N", sort_type="N")

    def pairs() -> Shape:
        rng = random.Random(3)
        collections: list[tuple[Key, list[int]]] = [
            (f"p{k:04}", [30_000, 50] if rng.random() < 0.5 else [50, 30_000])
            for k in range(n(600))
        ]
        return Shape("pairs-30k", collections, sort_type="S")

    def halves() -> Shape:
        keys = n(600)
        collections: list[tuple[Key, list[int]]] = [(f"h{k:04}", [30]) for k in range(keys)]
        return Shape("halves", collections, runs=keys // 2, run_items=(100, 200))

    def timeseries() -> Shape:
        collections: list[tuple[Key, list[int]]] = [
            (f"sensor-{k:02}", [40] * n(5000)) for k in range(20)
        ]
        collections += [(f"device-{k:04}", [40]) for k in range(n(2000))]
        return Shape("timeseries", collections)

    def numeric() -> Shape:
        keys = n(30_000)
        every = max(1, keys // 8)
        collections: list[tuple[Key, list[int]]] = [
            (str(k * 13 + 5), [300_000 if k % every == every // 2 else 100]) for k in range(keys)
        ]
        return Shape("numeric-30k", collections, pk_type="N")

    def documents() -> Shape:
        rng = random.Random(6)
        collections: list[tuple[Key, list[int]]] = [
            (f"doc-{k:04}", [rng.randint(2000, 4000) for _ in range(rng.randint(3, 12))])
            for k in range(n(1000))
        ]
        return Shape("documents", collections)

    def lottery() -> Shape:
        rng = random.Random(130)
        collections: list[tuple[Key, list[int]]] = [
            (f"lot-{k:04}", [30_000 if rng.random() < 0.15 else 1000] + [1000] * 5)
            for k in range(n(2500))
        ]
        return Shape("lottery", collections)

    def heavy_3k() -> Shape:
        rng = random.Random(3)
        collections: list[tuple[Key, list[int]]] = [
            (
                f"h3-{k:05}",
                [
                    shapes.pareto(rng, 1.0, 50, 40_000)
                    for _ in range(shapes.pareto(rng, 0.7, 1, 400))
                ],
            )
            for k in range(n(3000))
        ]
        return Shape("heavy-3k", collections)

    made.update(
        {
            "heavy-3k": heavy_3k,
            "documents": documents,
            "lottery": lottery,
            "growing": growing,
            "pairs-30k": pairs,
            "halves": halves,
            "timeseries": timeseries,
            "numeric-30k": numeric,
        }
    )
    return made


if __name__ == "__main__":
    partition_keys.shapes = with_new_shapes  # type: ignore[attr-defined]
    sys.exit(partition_keys.main())
