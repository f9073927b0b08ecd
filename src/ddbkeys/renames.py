"""Old names of settings, kept for one release with a warning: one name per idea across the
classes, the functions and the CLI (``index_name=`` as ``--index-name``, ``marker_attribute=``
as ``--marker-attribute``, ...)."""

from __future__ import annotations

import warnings
from typing import Any

from ddbkeys.errors import ConfigurationError

__all__ = ["renamed"]


def renamed(
    old: str, new: str, value: Any, current: Any, default: Any, *, stacklevel: int = 3
) -> Any:
    """The value of a setting given under its old name ``old`` (with a DeprecationWarning), or
    under its new one ``new``; both is a :class:`ConfigurationError`. The warning names the line
    that called the function calling ``renamed`` (``stacklevel`` 3: renamed, that function, that
    line), so ``-W error::DeprecationWarning:module`` finds the caller's module."""
    if value is None:
        return current
    if current is not default and current != default:
        raise ConfigurationError(f"{old}= is the old name of {new}=: pass only {new}=.")
    warnings.warn(
        f"{old}= is deprecated: pass {new}= instead (the same setting, one name in every "
        "class); the old name goes in the next release.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return value
