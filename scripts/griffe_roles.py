"""A griffe extension for the docs site: the docstrings' Sphinx roles as mkdocstrings references.

The docstrings are written for ``help()`` and Sphinx: ``:class:`~ddbkeys.ids.AtomicCounter```,
``:meth:`next```, ``:mod:`ddbkeys._core```. As griffe loads ddbkeys for mkdocstrings
(``mkdocs.yml``: ``extensions: [scripts/griffe_roles.py]``), each role is found the way Sphinx
finds it (an absolute path, else a name seen from the object, its class and its module, a
class's bases included) and rewritten:

- to a cross-reference of the name the site renders,
  ``[`AtomicCounter`][ddbkeys.ids.AtomicCounter]`` (``~`` shows the last part, as in Sphinx;
  ``:mod:`title <path>``` shows the title), when the object is public: the site renders each
  face's ``__all__`` under the face's path, so an object of a private module
  (``ddbkeys.ids._counter.AtomicCounter``) is linked under its public path
  (``ddbkeys.ids.AtomicCounter``), its public members too;
- to plain code, `` `ddbkeys._core` ``, when the site renders no page or heading for it (a
  private module or name, a name of another library) or the name is not found: so a reference
  the site cannot resolve never fails the strict build, and a reference it links always
  resolves (``mkdocs build --strict`` checks it).

The counts (linked, linked through a private path, plain) are logged at the end of the load, for
the docstrings the site renders and for all of them.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import re
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import griffe

log = logging.getLogger("mkdocs.plugins.ddbkeys.griffe_roles")


def _public_api() -> ModuleType:
    """scripts/public_api.py beside this file (griffe loads this one by its path, so its
    directory is not on ``sys.path``)."""
    spec = importlib.util.spec_from_file_location(
        "ddbkeys_public_api", Path(__file__).with_name("public_api.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The faces whose ``__all__`` the site renders, in the order a name is credited to the first:
#: those of public-api.txt (one list, so the site renders what the API check holds).
FACES: tuple[str, ...] = _public_api().FACES
ROLE = re.compile(r":(?:py:)?(meth|class|func|mod|data|attr|exc|obj|const):`([^`]+)`")
#: reStructuredText's ``text::`` before an indented block: in Markdown the block is code already,
#: and the text ends with one colon.
LITERAL = re.compile(r"(?<=\S)::(?=\n\s*\n[ \t])")


def _target(obj: griffe.Object | griffe.Alias) -> griffe.Object | None:
    """The object an alias stands for, or ``None`` when it is outside what griffe loaded."""
    try:
        final = obj.final_target if isinstance(obj, griffe.Alias) else obj
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return final if isinstance(final, griffe.Object) else None


def _member(scope: griffe.Object, name: str) -> griffe.Object | None:
    """``scope``'s member at the dotted ``name``, a class's bases included, or ``None``."""
    here: griffe.Object | None = scope
    for part in name.split("."):
        if here is None:
            return None
        found = here.members.get(part)
        if found is None and isinstance(here, griffe.Class):
            try:
                found = here.all_members.get(part)
            except (griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
                found = None
        here = _target(found) if found is not None else None
    return here


class RolesToReferences(griffe.Extension):
    """Rewrites every docstring's roles once the package is loaded (see the module)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "ddbkeys":
            return
        public = self._public_paths(loader)
        for obj in self._objects(pkg):
            if obj.docstring is not None:
                shown = self._public(obj.path, public) is not None
                rewrite = functools.partial(self._rewrite, obj=obj, public=public, shown=shown)
                obj.docstring.value = LITERAL.sub(":", ROLE.sub(rewrite, obj.docstring.value))
        c = self.counts
        log.info(
            "griffe_roles: in the rendered docstrings, %d roles linked (%d of them written with "
            "a private path or a relative name and linked under the public one), %d left as plain "
            "code; in all docstrings, %d linked and %d plain",
            c["shown linked"],
            c["shown relinked"],
            c["shown plain"],
            c["linked"],
            c["plain"],
        )

    def _objects(self, obj: griffe.Object) -> list[griffe.Object]:
        """``obj`` and the objects defined in it (not the aliases: their docstring is the
        target's, rewritten where it is defined)."""
        found = [obj]
        for member in obj.members.values():
            if not isinstance(member, griffe.Alias) and isinstance(member, griffe.Object):
                found += self._objects(member)
        return found

    @staticmethod
    def _public_paths(loader: griffe.GriffeLoader) -> dict[str, str]:
        """Where the site renders each object: its path where it is defined, to its public path
        (the first face exporting it). A private base class of a public one, whose members the
        site shows under the public class (``inherited_members``), is keyed ``path.*``: its
        members are linked there, the base itself is not (it is another class)."""
        public: dict[str, str] = {}
        classes: list[tuple[griffe.Class, str]] = []
        for face_path in FACES:
            face = loader.modules_collection.get_member(face_path)
            public.setdefault(face.path, face.path)
            for name in face.exports or ():
                member = face.members.get(str(name))
                target = _target(member) if member is not None else None
                if target is not None:
                    public.setdefault(target.path, f"{face.path}.{name}")
                if isinstance(target, griffe.Class):
                    classes.append((target, f"{face.path}.{name}"))
        for cls, path in classes:
            try:
                bases = cls.mro()
            except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            for base in bases:
                if base.path not in public:
                    public.setdefault(f"{base.path}.*", path)
        return public

    @staticmethod
    def _public(path: str, public: dict[str, str]) -> str | None:
        """The path the site renders ``path`` under, or ``None`` when it renders it nowhere."""
        for cut in range(path.count(".") + 1):
            head, *tail = path.rsplit(".", cut) if cut else [path]
            shown_as = public.get(head) or (public.get(f"{head}.*") if tail else None)
            if shown_as is not None:
                if any(part.startswith("_") for part in tail):
                    return None  # a private member of a public object: not rendered
                return ".".join([shown_as, *tail])
        return None

    def _rewrite(
        self, match: re.Match[str], obj: griffe.Object, public: dict[str, str], shown: bool
    ) -> str:
        written = " ".join(match[2].split())
        title, _, target = written.rpartition(" <")
        name = (target.removesuffix(">") if title else written).lstrip("~.").removesuffix("()")
        text = title or f"`{name.rsplit('.', 1)[-1] if written.startswith('~') else name}`"
        found = self._find(name, obj)
        path = self._public(found.path, public) if found is not None else None
        if path is None:
            log.debug("griffe_roles: %s: %s left as code", obj.path, match[0])
            self.counts["plain"] += 1
            self.counts["shown plain"] += shown
            return text
        self.counts["linked"] += 1
        if shown:
            self.counts["shown linked"] += 1
            self.counts["shown relinked"] += path != name
        return f"[{text}][{path}]"

    @staticmethod
    def _find(name: str, obj: griffe.Object) -> griffe.Object | None:
        """The object a role names, looked up as Sphinx does: an absolute path, else from the
        object outwards (the object, its class, its module, the package)."""
        if name.split(".", 1)[0] == "ddbkeys":
            try:
                found = obj.modules_collection.get_member(name)
            except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                found = None
            return _target(found) if found is not None else None
        scope: griffe.Object | None = obj
        while scope is not None:
            found = _member(scope, name)
            if found is not None:
                return found
            scope = scope.parent
        return None
