"""benchmarks/partition_keys.py on three shapes it does not generate, made up as a new user
would (issue 35: "a shape it does not generate, tried as a new user would, keeps auto's
promise"):

    python benchmarks/new_user_shapes.py --endpoint-url URL --only growing --only pairs-30k

- growing: 2,000 number keys of 1-3 items each, each item's payload 2 x its key's rank (0 B to
  4 KB: item sizes grow with the key);
- pairs-30k: 600 collections of exactly 2 items, one of 30 KB (first or second at random), the
  other of 50 B;
- halves: 600 keys; in scan order, 300 single tiny items, then 300 collections of 100 items of
  200 B (one run each, where ``runs`` alternates 150).

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

    made.update({"growing": growing, "pairs-30k": pairs, "halves": halves})
    return made


if __name__ == "__main__":
    partition_keys.shapes = with_new_shapes  # type: ignore[attr-defined]
    sys.exit(partition_keys.main())
