"""One name per setting: no public class or function of the package faces takes a parameter
under a name that was renamed before 1.0 (``index=`` for ``index_name=``, ``key=`` for
``counter_key=``, ``attribute=`` for ``counter_attribute=`` or ``marker_attribute=``,
``coalesce=`` for ``group_commit=``, ``name=`` for ``index_name=``, ``max_lag=``; the list is in
CHANGELOG.md, "Renamed before 1.0"). Where one of those words is the one name of something else
(the counter's name, an item's key, a MarkerIndex object), it is listed below with what it
means, so that a new one is a decision, not an accident. No client: signatures only."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

FACES = ("ddbkeys", "ddbkeys.aio", "ddbkeys.ids", "ddbkeys.partition_keys")

#: The names that were the old names of settings (see the module's docstring).
OLD_NAMES = frozenset({"index", "key", "attribute", "coalesce", "max_lag", "name"})

#: Where one of OLD_NAMES is the one name of another thing: (qualified name, parameter) ->
#: what it is.
OTHER_MEANINGS: dict[tuple[str, str], str] = {
    ("AtomicCounter", "name"): "the counter's name (its item's partition key value)",
    ("GaplessSequence", "name"): "the sequence's name (its counter item's partition key value)",
    ("StateStore", "name"): "the state table's name",
    ("ItemExistsError", "key"): "the key of the item that exists",
    ("MarkerClashError", "key"): "the key of the collection whose marker clashes",
    ("StreamFollower", "index"): "the MarkerIndex object it keeps",
    ("reconcile", "index"): "the MarkerIndex object it writes through",
    ("audit_attribute", "attribute"): "the attribute of the ids audited (--attribute)",
    ("Cancellation.failed", "index"): "the position of an item in the transaction",
    ("Cancellation.old_item", "index"): "the position of an item in the transaction",
    ("ListingEstimate.method", "name"): "a listing method's name",
    ("ProofStatus", "index"): "a report's field: the index it reports on",
    ("VerifyReport", "index"): "a report's field: the index it reports on",
}


def _callables(face: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Each public class (its constructor), its public methods, and each public function of
    ``face``'s ``__all__``, by qualified name."""
    module = importlib.import_module(face)
    for public in module.__all__:
        value = getattr(module, public)
        if inspect.isclass(value):
            yield value.__qualname__, value
            for attr, member in inspect.getmembers(value):
                if not attr.startswith("_") and (
                    inspect.isfunction(member) or inspect.ismethod(member)
                ):
                    yield f"{value.__qualname__}.{attr}", member
        elif callable(value):
            yield getattr(value, "__qualname__", public), value


def _parameters(target: Callable[..., Any]) -> list[str]:
    try:
        return list(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # (a builtin without a signature)
        return []


def _old_names_taken() -> dict[tuple[str, str], str]:
    """Each (qualified name, parameter) of OLD_NAMES, and the face that gives it."""
    found: dict[tuple[str, str], str] = {}
    for face in FACES:
        for qualname, target in _callables(face):
            for parameter in _parameters(target):
                if parameter in OLD_NAMES:
                    found.setdefault((qualname, parameter), face)
    return found


def test_no_public_signature_takes_a_name_renamed_before_1_0() -> None:
    unexplained = {
        f"{face}: {qualname}({parameter}=)"
        for (qualname, parameter), face in _old_names_taken().items()
        if (qualname, parameter) not in OTHER_MEANINGS
    }
    assert not unexplained, (
        "These take a parameter under a name renamed before 1.0 (see CHANGELOG.md): "
        f"{sorted(unexplained)}"
    )


def test_each_other_meaning_listed_is_still_there() -> None:
    """The list above stays the list of what is (an entry whose parameter went, goes too)."""
    assert set(OTHER_MEANINGS) <= set(_old_names_taken())


@pytest.mark.parametrize(
    ("face", "qualname", "renamed"),
    [
        ("ddbkeys.ids", "AtomicCounter", {"key", "attribute", "coalesce"}),
        ("ddbkeys.partition_keys", "distinct_partition_keys", {"index", "max_lag"}),
        ("ddbkeys.aio", "distinct_partition_keys", {"index", "max_lag"}),
        ("ddbkeys.partition_keys", "estimate_listing", {"index"}),
        ("ddbkeys.partition_keys", "MarkerIndex", {"name", "attribute"}),
        ("ddbkeys.aio", "MarkerIndex", {"name", "attribute"}),
        ("ddbkeys.partition_keys.aws_lambda", "StreamHandler", {"index", "attribute"}),
    ],
)
def test_the_settings_renamed_before_1_0_have_one_name(
    face: str, qualname: str, renamed: set[str]
) -> None:
    """The cases that had two names each (CHANGELOG.md): only the new one is left."""
    target = dict(_callables(face))[qualname]
    assert renamed.isdisjoint(_parameters(target))


@pytest.mark.parametrize(
    ("face", "qualname", "gone"),
    [
        ("ddbkeys.ids", "AtomicCounter", {"key", "attribute"}),  # counter_item().key, ...
        ("ddbkeys.ids", "CollectionSequence", {"highest"}),  # current()
        ("ddbkeys.aio", "CollectionSequence", {"highest"}),
        ("ddbkeys.ids", "GaplessSequence", {"counter"}),  # counter_item()
        ("ddbkeys.aio", "GaplessSequence", {"counter"}),
    ],
)
def test_the_accessors_renamed_before_1_0_are_gone(
    face: str, qualname: str, gone: set[str]
) -> None:
    cls = getattr(importlib.import_module(face), qualname)
    assert not {name for name in gone if hasattr(cls, name)}


def test_blocks_gives_only_its_own_names() -> None:
    """The allocator's decisions are read from ``ddbkeys.ids._blocks_core`` only."""
    blocks = importlib.import_module("ddbkeys.ids._blocks")
    assert all(hasattr(blocks, name) for name in blocks.__all__)
    with pytest.raises(AttributeError):
        blocks.BlockState  # noqa: B018
