"""No circle of imports among ddbkeys' modules, counting every import: at module level, under
``if TYPE_CHECKING:`` and inside functions (an import made when called is still a module
reaching one that imports it); and no private name (``_x``) imported from a package face."""

from __future__ import annotations

import ast
from pathlib import Path

import ddbkeys

ROOT = Path(ddbkeys.__file__).parent


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The ddbkeys modules ``path`` imports, wherever the import stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                found.add(whole if whole in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & known.keys()


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_one_that_imports_it() -> None:
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    assert circles(graph) == []


def test_no_private_name_is_imported_from_a_package_face() -> None:
    """A package's ``__init__`` gives out public names only: a module that needs a helper
    imports it from the module that defines it."""
    known = modules()
    faces = {name for name, path in known.items() if path.name == "__init__.py"}
    found = []
    for name, path in sorted(known.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in faces:
                private = [
                    a.name
                    for a in node.names
                    # (a private submodule is a module, not a name the face gives out)
                    if a.name.startswith("_") and f"{node.module}.{a.name}" not in known
                ]
                found += [f"{name}: from {node.module} import {p}" for p in private]
    assert found == []
