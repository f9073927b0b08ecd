"""The promises are written once (``ddbkeys.ids._promises``): each strategy's docs page starts
its promise cell with the table's words, and :mod:`ddbkeys.ids`' table says the same."""

from __future__ import annotations

from pathlib import Path

import pytest

import ddbkeys.ids
from ddbkeys.ids._promises import PROMISES, Scope

ROOT = Path(__file__).resolve().parents[2]
PAGES = {
    "AtomicCounter": "atomic-counter.md",
    "BlockAllocator": "blocks.md",
    "CollectionSequence": "collection.md",
    "GaplessSequence": "gapless.md",
}


def promise_cell(page: str) -> str:
    """The promise column of the first row of the page's first table."""
    lines = [line for line in (ROOT / "docs" / "ids" / page).read_text().splitlines()]
    header = next(i for i, line in enumerate(lines) if line.startswith("|"))
    column = [c.strip() for c in lines[header].strip("|").split("|")].index("promise")
    return [c.strip() for c in lines[header + 2].strip("|").split("|")][column]


def test_every_strategy_has_a_promise_and_a_page() -> None:
    assert set(PROMISES) == set(PAGES)
    for name in PROMISES:
        assert hasattr(ddbkeys.ids, name)


@pytest.mark.parametrize("strategy", sorted(PAGES))
def test_the_docs_page_starts_its_promise_with_the_table(strategy: str) -> None:
    cell = promise_cell(PAGES[strategy])
    assert cell.startswith(PROMISES[strategy].phrase), (
        f"docs/ids/{PAGES[strategy]}: the promise cell must start with "
        f"{PROMISES[strategy].phrase!r} (ddbkeys/ids/_promises.py), not {cell!r}"
    )


def test_the_ids_package_table_says_the_same() -> None:
    doc = ddbkeys.ids.__doc__ or ""
    rows = {
        line.split()[0]: line
        for line in doc.splitlines()
        if line.split() and line.split()[0] in PROMISES
    }
    assert set(rows) == set(PROMISES)
    for name, row in rows.items():
        # columns: strategy, unique, increasing, gapless (words split on two spaces or more)
        columns = [c for c in row.split("  ") if c.strip()]
        said = tuple(c.strip() for c in columns[1:4])
        assert said == PROMISES[name].short(), f"ddbkeys.ids' table, {name}: {said}"


#: How each scope is said in the classes' "Promises" paragraphs.
SAID = {
    Scope.EVERYWHERE: "processes",
    Scope.OBJECT: "within one allocator",
    Scope.COLLECTION: "within one item collection",
}


@pytest.mark.parametrize("strategy", sorted(PAGES))
def test_the_class_docstring_promises_the_same(strategy: str) -> None:
    """The class's own "Promises" paragraph (read by ``help()``) names what the table says."""
    doc = getattr(ddbkeys.ids, strategy).__doc__ or ""
    promise = PROMISES[strategy]
    paragraph = doc[doc.index("Promises") :].split("\n\n")[0].lower()
    assert ("**not gapless**" in paragraph) == (promise.gapless is None), paragraph
    assert "**unique**" in paragraph and "**increasing" in paragraph, paragraph
    for scope in (promise.unique, promise.increasing, promise.gapless):
        if scope is not None:
            assert SAID[scope] in paragraph, f"{strategy}'s docstring: {SAID[scope]!r} not said"
