"""Where a warning points: the first frame outside ddbkeys (the caller's own line), not the line
inside ddbkeys that warned."""

from __future__ import annotations

import os
import sys

__all__ = ["outside"]

_PACKAGE = os.path.dirname(__file__) + os.sep


def outside() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the function that calls this) of the
    first frame outside ddbkeys: the warning names the line of your code that called ddbkeys
    (through its drivers and flows), not ddbkeys' own."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
