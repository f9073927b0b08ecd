"""The shape of the source, checked (issue 34): no module over ``MAX_LINES`` lines (non-blank,
non-comment, docstrings included), no function of radon rank D or worse (complexity over
``MAX_COMPLEXITY``).

The modules and functions still over a limit are listed below, each to be split; the lists only
shrink: a new offender fails, and so does a listed one that no longer is (take it off the list)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

import ddbkeys

ROOT = Path(ddbkeys.__file__).parent
MAX_LINES = 400
MAX_COMPLEXITY = 20

#: Modules over MAX_LINES, to be split (path under src/ddbkeys).
LONG_MODULES: set[str] = set()
#: Functions of rank D or worse, to be simplified ("path:qualified name").
COMPLEX_FUNCTIONS: set[str] = set()


def sources() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path


def lines(path: Path) -> int:
    """Non-blank lines that are not comments (docstrings count)."""
    return sum(
        1
        for line in path.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    )


def blocks(code: str) -> Iterator[tuple[str, int]]:
    """Every function, method and nested function of ``code``, with its complexity."""

    def walk(block: Function | Class, prefix: str) -> Iterator[tuple[str, int]]:
        name = f"{prefix}{block.name}"
        if isinstance(block, Class):
            for method in block.methods:
                yield from walk(method, f"{name}.")
            for inner in block.inner_classes:
                yield from walk(inner, f"{name}.")
            return
        yield name, block.complexity
        for closure in block.closures:
            yield from walk(closure, f"{name}.")

    for block in cc_visit(code):
        if isinstance(block, Function) and block.is_method:
            continue  # (given again under its class)
        yield from walk(block, "")


def test_no_module_is_over_the_limit() -> None:
    long = {name for name, path in sources() if lines(path) > MAX_LINES}
    assert not long - LONG_MODULES, (
        f"over {MAX_LINES} lines: split them: {sorted(long - LONG_MODULES)}"
    )
    assert not LONG_MODULES - long, (
        f"within the limit now: take them off LONG_MODULES: {sorted(LONG_MODULES - long)}"
    )


def test_no_function_is_of_rank_d_or_worse() -> None:
    complex_ = {
        f"{name}:{qualified}"
        for name, path in sources()
        for qualified, complexity in blocks(path.read_text())
        if complexity > MAX_COMPLEXITY
    }
    new, gone = complex_ - COMPLEX_FUNCTIONS, COMPLEX_FUNCTIONS - complex_
    assert not new, f"complexity over {MAX_COMPLEXITY}: simplify them: {sorted(new)}"
    assert not gone, f"simple enough now: take them off COMPLEX_FUNCTIONS: {sorted(gone)}"


def test_the_checks_see_what_radon_sees() -> None:
    """A negative control: a function of 21 branches is found, a nested one and a method too."""
    branches = "".join(f"    if x == {n}:\n        return {n}\n" for n in range(20))
    code = (
        f"def flat(x):\n{branches}    return -1\n"
        "class C:\n    def m(self, x):\n"
        + branches.replace("    ", "        ")
        + "        return -1\n"
    )
    assert dict(blocks(code)) == {"flat": 21, "C.m": 21}


#: The public modules: the package faces and the two public modules that are not packages
#: (public-api.txt lists what each exports). Every other module's name, or a package above it,
#: starts with ``_`` (as h11's ``_connection.py`` and httpx's ``_client.py``).
PUBLIC = {
    "__init__.py",
    "__main__.py",
    "aio/__init__.py",
    "ids/__init__.py",
    "partition_keys/__init__.py",
    "partition_keys/aws_lambda.py",
    "iam.py",
    "testing/__init__.py",
    "engines/__init__.py",
    "engines/dask.py",
    "engines/spark.py",
}


def test_a_module_that_is_not_public_says_so_by_its_name() -> None:
    unmarked = [
        name
        for name, _ in sources()
        if name not in PUBLIC
        and not any(part.startswith("_") for part in name.split("/")[:-1])
        and not Path(name).name.startswith("_")
    ]
    assert unmarked == []
    assert all((ROOT / name).exists() for name in PUBLIC)
