"""The docs site (``mkdocs.yml``) builds with ``--strict``, with an API page per public module and
every docstring role turned into a reference the site resolves or into plain code; and a broken
link or reference fails that build (the negative control: planted in a copy of the sources).

The build is the one ``make docs-site`` runs; CI runs it here (``make test``). No DynamoDB."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What the build reads: the config, its hooks and griffe extension, the pages, the package.
SOURCES = ("mkdocs.yml", "README.md", "public-api.txt", "docs", "scripts", "src", "benchmarks")
ROLE = re.compile(r":(?:py:)?[a-z]+:`[^`]+`")


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


def public_modules() -> list[str]:
    text = (ROOT / "public-api.txt").read_text(encoding="utf-8")
    return re.findall(r"^## (\S+)$", text, re.M)


def public_paths() -> set[str]:
    """Every name ``public-api.txt`` lists, a class's members with it (``ddbkeys.X.next``), but
    ``__init__``: the site shows a class's constructor as the class's own signature."""
    paths: set[str] = set()
    owner = ""
    for line in (ROOT / "public-api.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith(" "):
            found = re.match(r"(?:class |(?:async )?def )?([\w.]+)", line)
            assert found is not None, line
            owner = found[1]
            paths.add(owner)
        elif (
            member := re.match(r"\s+(?:(?:class|static)method )?(?:(?:async )?def )?(\w+)", line)
        ) and member[1] != "__init__":
            paths.add(f"{owner}.{member[1]}")
    return paths


def test_the_site_builds_strictly_with_a_page_per_public_module(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    modules = public_modules()
    assert len(modules) >= 9
    shown: set[str] = set()
    for module in modules:
        page = (tmp_path / "api" / module / "index.html").read_text(encoding="utf-8")
        assert f'id="{module}"' in page, module  # the module's own heading
        assert not ROLE.search(re.sub(r"<[^>]+>", "", page)), module  # every role converted
        shown |= set(re.findall(r'<h\d id="(ddbkeys[\w.]*)"', page)) - {module}
    # The API reference shows the public API, all of it and nothing more.
    expected = public_paths()
    assert len(expected) > 1000
    assert sorted(expected - shown) == [] and sorted(shown - expected) == []
    home = (tmp_path / "index.html").read_text(encoding="utf-8")
    # The README is the home page: its links into docs/ are the site's pages, its links to
    # other files of the repository are addresses on GitHub.
    assert 'href="ids/blocks/"' in home
    assert 'href="https://github.com/ddbkeys/ddbkeys/blob/main/benchmarks/shapes.py"' in home
    skip = (tmp_path / "partition-keys" / "skip" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../#where-the-techniques-come-from"' in skip  # docs' ../../README.md
    counter = (tmp_path / "api" / "ddbkeys.ids" / "index.html").read_text(encoding="utf-8")
    assert 'href="../ddbkeys.aio/#ddbkeys.aio"' in counter  # a role, resolved across pages


def test_a_broken_link_or_reference_fails_the_strict_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            root.mkdir(exist_ok=True)
            shutil.copy(source, root / name)
    planted = {
        "docs/items.md": (
            "\n[a page that is not there](no-such-page.md), "
            "[a heading that is not there](iam.md#no-such-heading), "
            "[an object that is not there][ddbkeys.no_such_name]\n"
        ),
        "README.md": (
            "\n[a page of docs/ that is not there](docs/no-such-page.md), "
            "[a file that is not there](benchmarks/no_such_file.py)\n"
        ),
    }
    for name, text in planted.items():
        with (root / name).open("a", encoding="utf-8") as page:
            page.write(text)
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    for expected in (
        "'no-such-page.md'",  # from docs/items.md
        "'iam.md#no-such-heading'",
        "'ddbkeys.no_such_name'",
        "benchmarks/no_such_file.py",
    ):
        assert expected in result.stderr, (expected, result.stderr[-4000:])
    assert result.stderr.count("no-such-page.md") >= 2, result.stderr[-4000:]  # README's too
    # and nothing else failed it: the copy, as it was, builds
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert all(re.search(r"no[_-]such[_-]", line) for line in warnings), warnings


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    extensions = griffe.load_extensions(str(ROOT / "scripts" / "griffe_roles.py"))
    loaded = griffe.load("ddbkeys", search_paths=[str(ROOT / "src")], extensions=extensions)
    assert isinstance(loaded, griffe.Module)
    return loaded


def test_roles_become_references_under_public_names_or_plain_code(package: griffe.Module) -> None:
    counter = package["ids"]["AtomicCounter"].docstring.value
    # an absolute public path, kept; a relative name, linked under the first face exporting it
    assert "[`ddbkeys.aio`][ddbkeys.aio]" in counter
    assert "[`SequenceExhaustedError`][ddbkeys.SequenceExhaustedError]" in counter
    # a private module, and a constant of one: plain code, which the strict build cannot fail on
    assert "`ddbkeys.ids._exact`" in counter and "[`ddbkeys.ids._exact`]" not in counter
    assert "`CLOCK_MARGIN`" in counter and "][ddbkeys.ids._slots" not in counter
    # reStructuredText's "text::" before a code block
    face = package.docstring
    assert face is not None and "[`ddbkeys.aio`][ddbkeys.aio] for asyncio:\n" in face.value


def test_no_role_is_left_in_any_docstring(package: griffe.Module) -> None:
    def docstrings(obj: griffe.Object) -> list[tuple[str, str]]:
        found = [(obj.path, obj.docstring.value)] if obj.docstring is not None else []
        for member in obj.members.values():
            if isinstance(member, griffe.Object):
                found += docstrings(member)
        return found

    every = docstrings(package)
    assert len(every) > 500
    left = [(path, m[0]) for path, text in every for m in ROLE.finditer(text)]
    assert left == []
