"""What each id strategy promises, written once: the docs (``docs/ids/*.md``, the table of
:mod:`ddbkeys.ids`) are checked against this table by ``tests/unit/test_promises.py``, and the
history checker (:func:`ddbkeys.testing.check_history`) checks recorded calls against it.

The words, as the checker reads them:

- **unique** in a scope: no id is returned by two calls of that scope;
- **increasing** in a scope: an id returned before another call of that scope began is smaller
  than every id that call returns (real-time order, whoever calls, as far as the scope goes);
- **gapless** in a scope: the ids returned in that scope are consecutive (1..N from a new
  sequence), with no id skipped, through lost responses and failed calls.

A scope is :attr:`Scope.EVERYWHERE` (every process and object on the same counter or
sequence), :attr:`Scope.OBJECT` (one allocator object: its threads or tasks, not another
process's) or :attr:`Scope.COLLECTION` (one collection of a table).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType


class Scope(Enum):
    """How far a promise reaches (the calls it compares with each other)."""

    EVERYWHERE = "across processes"
    OBJECT = "within an allocator"
    COLLECTION = "within each collection"

    @property
    def short(self) -> str:
        """The word of :mod:`ddbkeys.ids`' table: ``yes`` (everywhere) or ``per ...``."""
        return {"EVERYWHERE": "yes", "OBJECT": "per object", "COLLECTION": "per collection"}[
            self.name
        ]


@dataclass(frozen=True)
class Promise:
    """One strategy's promise: how far its ids are unique, increasing and gapless (``None``:
    not promised at all)."""

    strategy: str
    unique: Scope
    increasing: Scope | None
    gapless: Scope | None

    @property
    def phrase(self) -> str:
        """The promise in the words its docs page starts its promise cell with."""
        parts = [f"unique {self.unique.value}"]
        parts.append(f"increasing {self.increasing.value}" if self.increasing else "not increasing")
        parts.append(f"**gapless** {self.gapless.value}" if self.gapless else "**not gapless**")
        return "; ".join(parts)

    def short(self) -> tuple[str, str, str]:
        """The unique, increasing and gapless columns of :mod:`ddbkeys.ids`' table."""
        return (
            self.unique.short,
            self.increasing.short if self.increasing else "no",
            self.gapless.short if self.gapless else "no",
        )


#: Every strategy's promise, by class name (the same for :mod:`ddbkeys.aio`'s classes).
PROMISES: MappingProxyType[str, Promise] = MappingProxyType(
    {
        promise.strategy: promise
        for promise in (
            Promise("AtomicCounter", Scope.EVERYWHERE, Scope.EVERYWHERE, None),
            Promise("BlockAllocator", Scope.EVERYWHERE, Scope.OBJECT, None),
            Promise("CollectionSequence", Scope.COLLECTION, Scope.COLLECTION, Scope.COLLECTION),
            Promise("GaplessSequence", Scope.EVERYWHERE, Scope.EVERYWHERE, Scope.EVERYWHERE),
        )
    }
)
