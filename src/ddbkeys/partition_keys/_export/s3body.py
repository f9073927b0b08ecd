"""An S3 object's body read as it streams, taken up again where a read broke.

A data file of an export is up to gigabytes, read over one HTTP response for as long as its
keys take to write out: a connection reset or a read timeout on the way would end a listing of
hours. botocore retries a request, not a body half read; this asks for the rest (a GET of the
bytes from where the read broke, on the condition that the object is the same one: its ETag)
and goes on, as long as each attempt reads something.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError
from urllib3.exceptions import HTTPError

from ddbkeys._translate import one_line
from ddbkeys.partition_keys._export.manifest import ExportError

__all__ = ["ATTEMPTS", "ResumingBody"]

#: Attempts in a row that read nothing before a broken read is given up.
ATTEMPTS = 5

#: What a body's read raises when the connection breaks (botocore wraps most of urllib3's).
_BROKEN = (BotoCoreError, HTTPError, OSError)


class ResumingBody(io.RawIOBase):
    """The bytes of an object, from ``open_at(0)`` on; where a read breaks, from
    ``open_at(offset)`` (the rest of the same object), up to ``ATTEMPTS`` times in a row that
    read nothing, then an :class:`ExportError` naming ``where`` and the offset."""

    def __init__(
        self,
        open_at: Callable[[int], Any],
        where: str,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._open_at = open_at
        self._where = where
        self._sleep = sleep
        self._body: Any = open_at(0)
        self.offset = 0
        self.resumed = 0  # (how many times a read was taken up again)
        self._failures = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            try:
                data = self._body.read(len(buffer))
            except _BROKEN as exc:
                self._broke(exc)
                continue
            count = len(data)
            buffer[:count] = data
            self.offset += count
            if count:
                self._failures = 0
            return count

    def _broke(self, exc: BaseException) -> None:
        """The read broke with ``exc``: the rest of the object asked for again (a request
        that fails counts as an attempt too)."""
        while True:
            self._failures += 1
            if self._failures >= ATTEMPTS:
                raise ExportError(
                    f"{self._where} could not be read past byte {self.offset:,} "
                    f"({type(exc).__name__}: {one_line(exc)}), {ATTEMPTS} attempts in a row: "
                    "check the network, then run the command again.",
                    where=self._where,
                ) from None
            self._close_body()
            self._sleep(min(0.2 * 2**self._failures, 5.0))
            try:
                self._body = self._open_at(self.offset)
            except _BROKEN as again:
                exc = again
                continue
            self.resumed += 1
            return

    def _close_body(self) -> None:
        with contextlib.suppress(*_BROKEN):
            self._body.close()

    def close(self) -> None:
        if not self.closed:
            self._close_body()
        super().close()
