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

import re
from typing import Any, NoReturn, TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
)

__all__ = [
    "ConfigurationError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "EndpointUnreachableError",
    "KeySchemaError",
    "ListingInterrupted",
    "LocalServerError",
    "NoAnswerInTime",
    "ResumeTokenError",
    "ServiceError",
    "TableNotFoundError",
    "UnexpectedAnswerError",
    "cut_short",
    "deadline_exceeded",
    "describe_failure",
    "foreign_answer",
    "translate_error",
    "unanswered",
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


def cut_short(exc: BaseException) -> bool:
    """Whether ``exc`` is a request ddbkeys stopped waiting for because its call's deadline came
    (after other failures, those tell better why the call ran out of time)."""
    return isinstance(exc, NoAnswerInTime)


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


_KEY_SCHEMA_PHRASES = (
    "key element does not match the schema",
    "One of the required keys was not given a value",
    "Missing the key",
)


def error_code(exc: BaseException) -> str | None:
    """The DynamoDB error code of a botocore ``ClientError``, or None."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def error_response(exc: ClientError) -> dict[str, Any]:
    """The parsed error response of a ClientError (with ``Item`` or ``CancellationReasons``)."""
    return dict(exc.response)


def error_message(exc: BaseException) -> str:
    """The server's own message of a ``ClientError``, else ``str(exc)``."""
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message")
        if message:
            return str(message)
    return str(exc)


def foreign_answer(exc: BaseException) -> str | None:
    """The content type of an error answer that is not DynamoDB's (every DynamoDB answer is
    JSON: an HTML page comes from a web server or a proxy on the endpoint's address), else
    None. Answers without headers (botocore's Stubber) count as DynamoDB's."""
    if not isinstance(exc, ClientError):
        return None
    headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders") or {}
    kind = str(headers.get("content-type", "")).split(";")[0].strip().lower()
    return kind if kind and "json" not in kind else None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")


def _page_gist(exc: ClientError) -> str:
    """A few words of what a foreign answer said: its HTML title, else its first words."""
    said = error_message(exc)
    title = _TITLE.search(said)
    gist = " ".join((title[1] if title else _TAG.sub(" ", said)).split())
    return gist if len(gist) <= 60 else gist[:57] + "..."


_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "LimitExceededException",
    }
)
_ITEM_TOO_LARGE = "Item size has exceeded the maximum allowed size"


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def endpoint_of(exc: BaseException) -> str:
    """The endpoint URL a botocore connection error names, or "the DynamoDB endpoint"."""
    kwargs = getattr(exc, "kwargs", None)
    url = kwargs.get("endpoint_url") if isinstance(kwargs, dict) else None
    return f"the DynamoDB endpoint {url}" if url else "the DynamoDB endpoint"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _operation(exc: ClientError) -> str:
    return str(getattr(exc, "operation_name", None) or "the request")


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def describe_failure(
    exc: BaseException | None, *, times: int = 1, read_timeout: float | None = None
) -> str:
    """What went wrong with one request, as a phrase to put after a colon (lowercase, no
    full stop): the endpoint that did not answer or could not be reached (with its URL), the
    throttling code and how often (``times``), the HTTP status of a 5xx, or the server's own
    words. ``read_timeout`` is the client's, when known. Pure: no I/O."""
    if exc is None:
        return "no request could be sent in time"
    if isinstance(exc, ConnectTimeoutError):
        return f"could not connect to {endpoint_of(exc)} (connect timeout): is it running?"
    if isinstance(exc, EndpointConnectionError):
        return f"could not connect to {endpoint_of(exc)}: is it running?"
    if isinstance(exc, NoAnswerInTime):
        waited = exc.kwargs.get("waited", 0.0)
        return f"{endpoint_of(exc)} had not answered when the deadline came ({waited:.1f} s)"
    if isinstance(exc, ReadTimeoutError):
        within = f" within {read_timeout:g} s" if read_timeout else ""
        return f"{endpoint_of(exc)} did not answer{within} (read timeout)"
    if isinstance(exc, ConnectionClosedError):
        return f"{endpoint_of(exc)} closed the connection without answering"
    if isinstance(exc, ClientError):
        code = error_code(exc) or "no code"
        if code in _THROTTLING_CODES:
            return f"throttled ({code}) {times} time{'s' if times != 1 else ''}"
        status = _status(exc)
        if status >= 500:
            return f"DynamoDB answered HTTP {status} ({code}): {one_line(error_message(exc))}"
        return f"DynamoDB refused {_operation(exc)} ({code}): {one_line(error_message(exc))}"
    return one_line(exc) or type(exc).__name__


def unanswered(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a request sent that got no answer (it may still have been applied)."""
    return isinstance(exc, (ReadTimeoutError, ConnectionClosedError))


def deadline_exceeded(
    what: str,
    table: str | None,
    seconds: float,
    attempts: int,
    last: BaseException | None,
    *,
    failures: int | None = None,
    read_timeout: float | None = None,
    elapsed: float | None = None,
    note: str = "",
) -> DeadlineExceededError:
    """The error for a call that ran out of its deadline (the caller raises it ``from last``).

    ``what`` names the call ("the next id", "a page of the listing"), ``attempts`` counts the
    requests sent, ``last`` is the last failure and ``failures`` how many attempts failed the
    same way (default: all of them), e.g. ``Gave up on a page of the listing on table 'T'
    after 3.0 s (the deadline; raise it with deadline= or --timeout): the DynamoDB endpoint
    http://127.0.0.1:8000 did not answer within 3 s (read timeout), 1 attempt.``

    ``elapsed`` is the time the call took: when a request outlived the deadline by more than a
    second (a client whose read timeout is longer than the deadline), the message gives it.
    """
    on = f" on table {table!r}" if table else ""
    failed = describe_failure(
        last, times=attempts if failures is None else failures, read_timeout=read_timeout
    )
    when = f"after {seconds:.1f} s (the deadline; raise it with deadline= or --timeout)"
    if elapsed is not None and elapsed > seconds + 1.0:
        when = (
            f"after {elapsed:.1f} s, past its {seconds:.1f} s deadline (a request outlived it: "
            "give the client a read timeout within the deadline, e.g. make_client(timeout=...))"
        )
    return DeadlineExceededError(
        f"Gave up on {what}{on} {when}: {failed}, {attempts} "
        f"attempt{'s' if attempts != 1 else ''}.{note}",
        seconds=seconds,
        attempts=attempts,
        table=table,
        cause=last,
    )


def translate_error(exc: BaseException, *, table: str | None = None) -> BaseException:
    """Turn a botocore error into the ddbkeys error a caller can act on.

    Returns the new error (with ``cause`` set); the caller raises it ``from exc``. Every
    ``ClientError`` and ``BotoCoreError`` becomes a :class:`DdbKeysError` (a
    :class:`ServiceError` for DynamoDB codes without a class of their own); a DdbKeysError is
    returned as it is, and so is any other exception (a bug, not an answer from DynamoDB).
    """
    if isinstance(exc, DdbKeysError):
        return exc
    if isinstance(exc, ClientError):
        return _translate_client_error(exc, table)
    if isinstance(exc, BotoCoreError):
        return _translate_botocore_error(exc, table)
    return exc


def _translate_botocore_error(exc: BotoCoreError, table: str | None) -> DdbKeysError:
    where = f" for table {table!r}" if table else ""
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        endpoint = getattr(exc, "kwargs", {}).get("endpoint_url", "the endpoint")
        return EndpointUnreachableError(
            f"Could not connect to the DynamoDB endpoint {endpoint}: is it running, and is the URL "
            "right? Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, (ReadTimeoutError, ConnectionClosedError)):
        return EndpointUnreachableError(
            f"{_capital(describe_failure(exc))}{where}: is it overloaded or stuck? Try again, "
            "or raise --timeout (deadline= in Python).",
            table=table,
            cause=exc,
        )
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return CredentialsError(
            "No AWS credentials found. Set AWS_PROFILE or pass --profile, set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or point --endpoint-url at a DynamoDB "
            "Local (`ddbkeys local` starts one).",
            table=table,
            cause=exc,
        )
    if isinstance(exc, NoRegionError):
        return ConfigurationError(
            "No AWS region set. Pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION), or a "
            "region in your AWS profile.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, ParamValidationError):
        return ConfigurationError(
            f"boto3 refused the request{where} before sending it: {one_line(exc)}",
            table=table,
            cause=exc,
        )
    return DdbKeysError(
        f"boto3 failed{where} ({type(exc).__name__}): {one_line(exc)}", table=table, cause=exc
    )


def _translate_client_error(exc: ClientError, table: str | None) -> DdbKeysError:
    where = f" for table {table!r}" if table else ""
    on = f" on table {table!r}" if table else ""
    kind = foreign_answer(exc)
    if kind is not None:
        gist = _page_gist(exc)
        return UnexpectedAnswerError(
            f"The endpoint answered {_operation(exc)}{on} with HTTP {_status(exc)} and a {kind} "
            f"page{f' ({gist!r})' if gist else ''}, not DynamoDB's JSON: is the endpoint "
            "DynamoDB? (check --endpoint-url and AWS_ENDPOINT_URL_DYNAMODB)",
            table=table,
            cause=exc,
        )
    code = error_code(exc)
    message = one_line(error_message(exc))
    if code == "ResourceNotFoundException":
        name = repr(table) if table else "the table"
        return TableNotFoundError(
            f"Table {name} not found: check the name, the region and the endpoint ({message}).",
            table=table,
            cause=exc,
        )
    if code == "ValidationException" and any(p in message for p in _KEY_SCHEMA_PHRASES):
        return KeySchemaError(
            f"The key does not match the key schema{where}: {message}", table=table, cause=exc
        )
    if code == "ValidationException" and _ITEM_TOO_LARGE in message:
        return ServiceError(
            f"An item is too large for table {table!r}: DynamoDB items are at most 400 KB, "
            f"attribute names and values included; nothing was written ({message})."
            if table
            else "An item is too large: DynamoDB items are at most 400 KB, attribute names and "
            f"values included; nothing was written ({message}).",
            table=table,
            cause=exc,
        )
    if code == "ValidationException":
        return ServiceError(
            f"DynamoDB refused {_operation(exc)}{on} as invalid (ValidationException): {message}",
            table=table,
            cause=exc,
        )
    if code in {"UnrecognizedClientException", "InvalidSignatureException"}:
        return CredentialsError(
            f"DynamoDB rejected the credentials{where} ({code}): check AWS_PROFILE or --profile.",
            table=table,
            cause=exc,
        )
    return ServiceError(
        f"DynamoDB refused {_operation(exc)}{on} ({code or 'no code'}): {message}",
        table=table,
        cause=exc,
    )


def raise_translated(exc: BaseException, *, table: str | None = None) -> NoReturn:
    """Raise ``translate_error(exc)`` from ``exc``; re-raise ``exc`` itself when it is not a
    botocore error (nor a DdbKeysError)."""
    translated = translate_error(exc, table=table)
    if translated is exc:
        raise exc
    raise translated from exc


_E = TypeVar("_E", bound=BaseException)


def fresh(error: _E) -> _E:
    """``error``, to raise in one more caller, as a copy (same class, message, attributes,
    cause and first traceback): one failure raised in many threads or tasks would otherwise
    chain every caller's frames onto one traceback, and keep them all alive. ``error`` itself
    when it cannot be copied."""
    kind = type(error)
    try:
        copy = kind.__new__(kind, *error.args)
        copy.__dict__.update(error.__dict__)
    except Exception:  # (no __dict__, or a __new__ of its own)
        return error
    copy.args = error.args
    copy.__cause__ = error.__cause__
    copy.__context__ = error.__context__
    copy.__suppress_context__ = error.__suppress_context__
    return copy.with_traceback(error.__traceback__)
