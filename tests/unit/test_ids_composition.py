"""The id strategies are built by composition (issue 34): each public class, sync and asyncio, is
its core (a value of its settings), a link, a driver and, where it shares writes, a group; none
inherits behaviour: the sync ones' one base is ``IdStrategy``, an abstract shape with no behaviour.
(Real objects are checked in tests/integration/test_ids_composition.py: a unit test builds no
client.)"""

from __future__ import annotations

import abc
import inspect

import pytest

from ddbkeys import aio, ids
from ddbkeys.ids._collection_core import CollectionCore
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._gapless_core import GaplessCore

PUBLIC = [
    ids.AtomicCounter,
    ids.GaplessSequence,
    ids.CollectionSequence,
    ids.BlockAllocator,
    aio.AtomicCounter,
    aio.GaplessSequence,
    aio.CollectionSequence,
    aio.BlockAllocator,
]


@pytest.mark.parametrize("strategy", PUBLIC, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_no_strategy_inherits_behaviour(strategy: type) -> None:
    """A sync strategy's one base is the shape ``IdStrategy``; the rest have none."""
    shape = strategy.__module__.startswith("ddbkeys.ids") and strategy is not ids.BlockAllocator
    assert strategy.__bases__ == ((ids.IdStrategy,) if shape else (object,))
    assert issubclass(strategy, ids.IdStrategy) is shape


def test_id_strategy_is_a_shape_with_no_behaviour() -> None:
    assert ids.IdStrategy.__bases__ == (abc.ABC,)
    own = {name for name in vars(ids.IdStrategy) if not name.startswith("_")}
    shape = {"table", "retry", "usage", "deadline", "allow_global_tables", "table_info"}
    assert own == shape == ids.IdStrategy.__abstractmethods__


@pytest.mark.parametrize(
    ("sync", "asynchronous"),
    [
        (ids.AtomicCounter, aio.AtomicCounter),
        (ids.GaplessSequence, aio.GaplessSequence),
        (ids.CollectionSequence, aio.CollectionSequence),
        (ids.BlockAllocator, aio.BlockAllocator),
    ],
)
def test_both_forms_show_the_same_names(sync: type, asynchronous: type) -> None:
    def public(cls: type) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_")}

    differ = public(sync) ^ public(asynchronous)
    assert differ <= {"close", "aclose"}, differ


@pytest.mark.parametrize(
    ("sync", "asynchronous"),
    [
        (ids.AtomicCounter, aio.AtomicCounter),
        (ids.GaplessSequence, aio.GaplessSequence),
        (ids.CollectionSequence, aio.CollectionSequence),
        (ids.BlockAllocator, aio.BlockAllocator),
    ],
)
def test_both_forms_take_the_same_settings(sync: type, asynchronous: type) -> None:
    """Each form spells its constructor (no base holds it): the same names, kinds and defaults;
    only the counter a block allocator takes differs, in its annotation."""
    mine, theirs = (inspect.signature(cls) for cls in (sync, asynchronous))
    assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    assert str(mine).replace("AtomicCounter", "") == str(theirs).replace("AtomicCounter", "")


@pytest.mark.parametrize(
    ("core", "settings"),
    [
        (CounterCore, {"name": "orders", "start": 5, "step": 2, "idempotent": True}),
        (GaplessCore, {"name": "users", "width": 6, "prefix": "U#"}),
        (CollectionCore, {"width": 4, "never_reuse": True}),
    ],
)
def test_a_core_is_a_value_of_its_settings(core: type, settings: dict[str, object]) -> None:
    built = core("orders", **settings)
    assert built == core("orders", **settings)  # a value: equal settings, equal cores
    for name, value in settings.items():
        assert getattr(built, name) == value
    with pytest.raises(AttributeError):
        built.table = "other"  # frozen
