"""The errors ddbkeys raises.

Every error is a :class:`DdbKeysError`. It keeps the exception that caused it (``cause``, and the
``__cause__`` chain through ``raise ... from``), the DynamoDB error code when there was one
(``code``) and the table it concerns (``table``). Subclasses exist only where callers branch on
them. Every error that comes from botocore (a :class:`~botocore.exceptions.ClientError` the
server answered, or a :class:`~botocore.exceptions.BotoCoreError` on the way) becomes one: those
ddbkeys knows get their own class and a message that says what to do, the others a
:class:`ServiceError` (or a plain :class:`DdbKeysError`) that still carries the code.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import (
    ClientError,
    ReadTimeoutError,
)

__all__ = [
    "CLI_WORDS",
    "DEADLINE_HINT",
    "ConfigurationError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "EndpointUnreachableError",
    "ExportError",
    "KeySchemaError",
    "ListingInterrupted",
    "LocalServerError",
    "NoAnswerInTime",
    "ResumeTokenError",
    "ServiceError",
    "TableNotFoundError",
    "UnexpectedAnswerError",
    "amend",
    "cut_short",
    "error_code",
    "unexpected_answer",
]


class DdbKeysError(Exception):
    """The base of every ddbkeys error.

    ``cause`` is the exception that led to this one (also ``__cause__``), ``code`` the DynamoDB
    error code such as ``ConditionalCheckFailedException`` when the error came from DynamoDB,
    and ``table`` the name of the table concerned, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        code: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        Exception.__init__(self, message)  # (not super(): some subclasses are ClientErrors too)
        self.message = message
        self.table = table
        self.cause = cause
        if code is None and isinstance(cause, ClientError):
            code = error_code(cause)
        self.code = code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable with every subclass's own attributes, so errors cross process pools.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[DdbKeysError], message: str, state: dict[str, Any]) -> DdbKeysError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ConfigurationError(DdbKeysError):
    """A setting is missing or wrong: no region, a bad endpoint URL, bad arguments."""


class ExportError(ConfigurationError):
    """A table's export cannot be read as its snapshot: not an export, another table's, a file
    missing, truncated or not in the manifest's format. ``where`` names the file at fault."""

    def __init__(self, message: str, *, where: str = "", table: str | None = None) -> None:
        super().__init__(message, table=table)
        self.where = where


class ListingInterrupted(DdbKeysError):
    """A listing was asked to stop (``Listing.stop()``; on the command line Ctrl-C, SIGTERM or
    SIGHUP) before it finished. Its ``checkpoint()`` goes on from the last key handed out."""


class ResumeTokenError(ConfigurationError):
    """A resume token or checkpoint file cannot be used: not written by ddbkeys, cut short or
    changed (its check does not match), of another version, or for another table, key schema
    or method than the listing asked for."""


class CredentialsError(ConfigurationError):
    """No AWS credentials were found, or they are incomplete."""


class EndpointUnreachableError(DdbKeysError):
    """Nothing answered at the DynamoDB endpoint."""


class UnexpectedAnswerError(DdbKeysError):
    """The endpoint answered what DynamoDB never would (an HTTP 200 without the answer's
    parts: a web server on the wrong port, a captive portal): most likely not DynamoDB."""


class NoAnswerInTime(ReadTimeoutError):
    """A request that had not been answered when its call's deadline came: ddbkeys stopped
    waiting for it (the request itself may still reach DynamoDB and be applied)."""

    fmt = "{endpoint_url} had not answered when the deadline came, after {waited:.1f} s"


def unexpected_answer(
    operation: str, table: str | None, what: str, answer: object
) -> UnexpectedAnswerError:
    """The error for an answer to ``operation`` that lacks ``what`` every answer of DynamoDB
    holds (an endpoint that answers HTTP 200 and is not DynamoDB), showing what it said."""
    if isinstance(answer, dict):  # (botocore's ResponseMetadata says nothing here)
        answer = {k: v for k, v in answer.items() if k != "ResponseMetadata"}
    said = repr(answer)
    said = said if len(said) <= 80 else said[:77] + "..."
    where = f" of table {table!r}" if table else ""
    return UnexpectedAnswerError(
        f"The endpoint's answer to {operation}{where} holds no {what} (it said {said}): is the "
        "endpoint DynamoDB?",
        table=table,
    )


def amend(exc: DdbKeysError, text: str) -> None:
    """``exc``'s message with ``text`` after it, as a sentence: what the error left behind, and
    what to do, where the caller knows it (the error keeps its type, its cause and code)."""
    exc.message = f"{exc.message.rstrip('.')}. {text}"
    exc.args = (exc.message,)


def cut_short(exc: BaseException) -> bool:
    """Whether ``exc`` is a request ddbkeys stopped waiting for because its call's deadline came
    (after other failures, those tell better why the call ran out of time)."""
    return isinstance(exc, NoAnswerInTime)


#: How a deadline's message says to raise it, in the library's words (see :data:`CLI_WORDS`).
DEADLINE_HINT = "raise it with deadline="

#: A message names a setting by the library's argument; the CLI prints its option instead
#: (``_cli.errors.error_text``), so each reader is told what they can change.
CLI_WORDS = (
    ("deadline=", "--timeout"),
    ("endpoint_url=", "--endpoint-url"),
    ("region=", "--region"),
    ("profile=", "--profile"),
    ("method='auto'", "--method auto"),
    ("method='scan'", "--method scan"),
    ("trust_index=True", "--trust-index"),
    ("marker_sort_key=", "--marker-sort-key"),
    ("marker_attribute=", "--marker-attribute"),
    ("state_table=", "--state-table"),
    ("index_name=", "--index-name"),
    ("never_reuse=True", "--never-reuse"),
    ("counter_attribute=", "--attribute"),  # (said of counters only: ids next's option)
)


class DeadlineExceededError(DdbKeysError):
    """A call ran out of its total time (``deadline=`` in the library, ``--timeout`` on the CLI)
    before it could finish. ``seconds`` is the deadline, ``attempts`` how many requests were
    tried; ``cause`` is the last failure (a read timeout, a refused connection, a throttle, a
    lost race), and the message says which."""

    def __init__(
        self,
        message: str,
        *,
        seconds: float,
        attempts: int,
        table: str | None = None,
        code: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, table=table, code=code, cause=cause)
        self.seconds = seconds
        self.attempts = attempts


class _Answered(DdbKeysError, ClientError):
    """An error DynamoDB answered, which is also a botocore :class:`ClientError` (so code that
    catches ``ClientError`` and reads ``error.response["Error"]["Code"]`` goes on working): its
    ``response`` and ``operation_name`` are those of the ``ClientError`` it came from."""

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        code: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        DdbKeysError.__init__(self, message, table=table, code=code, cause=cause)
        if isinstance(cause, ClientError):
            self.response = cause.response
            self.operation_name = cause.operation_name
        else:
            self.response = {"Error": {"Code": self.code or "", "Message": message}}
            self.operation_name = ""


class ServiceError(_Answered):
    """DynamoDB refused a request for a reason ddbkeys has no class of its own for; ``code`` is
    DynamoDB's error code (``ValidationException``, ``AccessDeniedException``, ...). Also a
    botocore ``ClientError``, with the service's ``response``."""


class TableNotFoundError(_Answered):
    """The table does not exist (or is not visible with these credentials and region). Also a
    botocore ``ClientError`` (``ResourceNotFoundException`` when DynamoDB said so)."""


class KeySchemaError(DdbKeysError):
    """The table's key schema is not what the operation needs."""


class LocalServerError(DdbKeysError):
    """The embedded DynamoDB Local could not be obtained, started or reached."""


def error_code(exc: BaseException) -> str | None:
    """The DynamoDB error code of a botocore ``ClientError``, or None."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None
