"""The unit tests drive ddbkeys' cores as values: none sets a private attribute (``x._y = ...``,
``setattr(x, "_y", ...)``, ``monkeypatch.setattr(x, "_y", ...)`` or ``"x._y"``), of ddbkeys or of
anything else. (That none builds a boto3 client is kept by ``conftest.py``, at run time.)"""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).parent


def private(name: object) -> bool:
    last = str(name).rsplit(".", 1)[-1]
    return last.startswith("_") and not last.startswith("__")


def sets_private(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that set a private attribute."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if not isinstance(part, ast.Attribute) or not private(part.attr):
                    continue
                if ast.unparse(part.value) not in {"self", "cls"}:  # a test's own class's
                    found.append(getattr(node, "lineno", 0))
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            named = [a.value for a in node.args[:2] if isinstance(a, ast.Constant)]
            if called in {"setattr", "delattr"} and any(private(n) for n in named):
                found.append(node.lineno)
    return found


def test_no_unit_test_sets_a_private_attribute() -> None:
    found = {
        path.name: lines
        for path in sorted(HERE.glob("*.py"))
        if (lines := sets_private(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_check_sees_each_way_of_setting_one() -> None:
    source = "\n".join(
        [
            "seq._counter = 1",
            "a.b._c += 1",
            "monkeypatch.setattr(clients, '_THREADS', None)",
            "monkeypatch.setattr('ddbkeys._clients._THREADS', None)",
            "setattr(x, '_y', 2)",
            "self._mine = 3",  # a test's own class may keep its own state
            "x.public = 4",
            "monkeypatch.setattr(exact, 'SLOTS', 5)",
        ]
    )
    assert sets_private(ast.parse(source)) == [1, 2, 3, 4, 5]
