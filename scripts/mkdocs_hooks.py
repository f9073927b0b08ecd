"""MkDocs hooks of the docs site (``mkdocs.yml``): the README as the home page, and one API page
per public module, neither of them a file in ``docs/``.

- The home page is ``README.md`` itself, added to the site as ``index.md`` with its links made
  right for that place: ``docs/x.md`` becomes ``x.md`` (the same page, seen from the site's
  root), and a link to a file of the repository that is not a page (``benchmarks/shapes.py``)
  becomes its address on GitHub, after checking that the file exists (a missing one is a
  warning, which fails ``mkdocs build --strict``). A page of ``docs/`` that links to
  ``../README.md`` is sent to the home page the same way. Copying at build time, rather than a
  ``docs/index.md`` that includes the README, keeps one file to edit and keeps
  ``tests/docs/test_examples.py`` (which runs every ``docs/**/*.md``) free of a page whose
  examples would run twice.
- The API pages are ``api/<module>.md``, one per public module as ``public-api.txt`` lists
  them (``## ddbkeys.ids``, which a test keeps equal to the code): a new public module gets its
  page without an edit here (and the strict build fails until ``mkdocs.yml``'s nav lists it).
  Each page renders the module's public names (its ``__all__``) with mkdocstrings (options in
  ``mkdocs.yml``); the names come from private modules and are shown under their public path.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/ddbkeys/ddbkeys/blob/main/"
log = logging.getLogger("mkdocs.plugins.ddbkeys")

#: A Markdown link's target: ``](target)`` or ``](target "title")``.
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
#: Fenced code blocks, left as they are (their text is code, not links).
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)


def public_names() -> dict[str, list[str]]:
    """Each public module's names (its ``__all__``), as ``public-api.txt`` lists them, in its
    order (the order of the API pages)."""
    text = (ROOT / "public-api.txt").read_text(encoding="utf-8")
    names: dict[str, list[str]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        module = section.split("\n", 1)[0].strip()
        top = re.findall(rf"^(?:class |def |async def )?{re.escape(module)}\.(\w+)", section, re.M)
        names[module] = list(dict.fromkeys(top))
    return names


def api_page(module: str, names: list[str]) -> str:
    """The module's heading (the page's title, with its anchor) and its public names: exactly
    those, not every name the module defines (``ddbkeys.iam`` has constants it does not export);
    their members by ``mkdocs.yml``'s filters."""
    return f"::: {module}\n    options:\n      members: [{', '.join(names)}]\n"


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=readme))
    for module, names in public_names().items():
        files.append(File.generated(config, f"api/{module}.md", content=api_page(module, names)))
    return files


def on_page_markdown(
    markdown: str, page: Page, config: MkDocsConfig, files: Files, **kwargs: Any
) -> str:
    """Links that leave ``docs/`` (the README's, and ``../README.md`` from a page) pointed at
    the site's page, or at GitHub for a file that is not one."""
    # Where the page's text lives in the repository: the README is the home page.
    source = "README.md" if page.file.src_uri == "index.md" else f"docs/{page.file.src_uri}"
    here = posixpath.dirname(source)

    def fix(match: re.Match[str]) -> str:
        target = match[2]
        if re.match(r"[a-z]+:|#|/", target):
            return match[0]  # an address, an anchor of the page, or the site's root
        path, _, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join(here, path))
        if in_repo.startswith("docs/"):
            return match[0] if here.startswith("docs") else relink(match, in_repo[5:], anchor)
        if in_repo == "README.md":
            return relink(match, "index.md", anchor)
        if not (ROOT / in_repo).exists():
            log.warning("%s links to %s, which is not in the repository", source, target)
            return match[0]
        return f"{match[1]}{REPOSITORY}{in_repo}{'#' + anchor if anchor else ''}{match[3]}"

    def relink(match: re.Match[str], site_path: str, anchor: str) -> str:
        relative = posixpath.relpath(site_path, posixpath.dirname(page.file.src_uri) or ".")
        return f"{match[1]}{relative}{'#' + anchor if anchor else ''}{match[3]}"

    pieces: list[str] = []
    last = 0
    for fence in FENCE.finditer(markdown):
        pieces += [LINK.sub(fix, markdown[last : fence.start()]), fence[0]]
        last = fence.end()
    pieces.append(LINK.sub(fix, markdown[last:]))
    return "".join(pieces)
