"""The one line the CLI prints for an error: a library or botocore error by its message, what
the machine refused in its words, anything else as an internal error."""

from __future__ import annotations

import errno
import os
import re

from ddbkeys._errors import CLI_WORDS, DdbKeysError
from ddbkeys._translate import one_line, translate_error

__all__ = ["DEBUG_ENV", "cli_words", "error_text", "internal_error_text", "os_error_text"]

DEBUG_ENV = "DDBKEYS_DEBUG"


def error_text(exc: BaseException) -> str:
    """The one-line message for an error that reached the CLI: a setting it names by the
    library's argument (``deadline=``) is named by the CLI's option (``--timeout``)."""
    translated = translate_error(exc)
    if isinstance(translated, DdbKeysError):
        return cli_words(translated.message)
    return one_line(exc)


def cli_words(message: str) -> str:
    """``message`` with the library's names of settings replaced by the CLI's options: each a
    word of its own (a value quoted in the message, such as a counter named ``deadline=1``, is
    left as it is)."""
    for library, cli in CLI_WORDS:
        message = re.sub(rf"(?<![\w'\"=-]){re.escape(library)}(?=[\s.,;:)]|$)", cli, message)
    return message


def internal_error_text(exc: BaseException) -> str:
    """The line for an error nobody foresaw: what it was, and how to see the traceback."""
    detail = one_line(exc)
    if len(detail) > 300:
        detail = detail[:297] + "..."
    kind = type(exc).__name__
    return (
        f"internal error ({kind}: {detail}); please report it. Set {DEBUG_ENV}=1 for the traceback."
        if detail
        else f"internal error ({kind}); please report it. Set {DEBUG_ENV}=1 for the traceback."
    )


def os_error_text(exc: OSError) -> str:
    """The line for what the machine refused (a full disk, a read-only or missing folder, no
    permission): what and where, in the system's words."""
    what = exc.strerror or one_line(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno or 0)
    code = f" ({name})" if name else ""
    if exc.filename is not None:
        return f"{what}{code}: {os.fsdecode(exc.filename)!r}."
    return f"{what}{code}, writing the output (standard output, or the file it goes to)."
