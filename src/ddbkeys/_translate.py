"""How a failure from botocore (or an endpoint that is not DynamoDB) becomes one of ddbkeys'
errors (:mod:`ddbkeys._errors`), with a one-line message that says what to do."""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    SSLError,
)

from ddbkeys._errors import (
    DEADLINE_HINT,
    ConfigurationError,
    CredentialsError,
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    KeySchemaError,
    NoAnswerInTime,
    ServiceError,
    TableNotFoundError,
    UnexpectedAnswerError,
    error_code,
)
from ddbkeys._probe import StillRetried

__all__ = [
    "deadline_exceeded",
    "describe_failure",
    "endpoint_of",
    "error_message",
    "error_response",
    "foreign_answer",
    "fresh",
    "key_schema_refusal",
    "maybe_own",
    "one_line",
    "raise_translated",
    "translate_error",
    "unanswered",
]


_KEY_SCHEMA_PHRASES = (
    "key element does not match the schema",
    "One of the required keys was not given a value",
    "Missing the key",
    "Type mismatch for key",
    # (DynamoDB Local's, for a key that lacks the sort key or holds one the table has not)
    "The number of conditions on the keys is invalid",
    # (a Query's key condition on an attribute that is not the table's key)
    "Query condition missed key schema element",
    # (a Query's key condition of another type than the key's: a sort key made S from N)
    "Condition parameter type does not match schema type",
    # (a Query's condition on a sort key the table no longer has: DynamoDB Local's words)
    "Query key condition not supported",
)


def key_schema_refusal(message: str) -> bool:
    """Whether DynamoDB's ``message`` (of a ValidationException, or of a transaction's
    ValidationError reason) refused a key the table's key schema does not have."""
    return any(phrase in message for phrase in _KEY_SCHEMA_PHRASES)


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
    """Whether ``exc`` is a request sent that got no answer, or one the client's own retries
    may still send (it may still be applied)."""
    return isinstance(exc, (ReadTimeoutError, ConnectionClosedError, StillRetried))


def maybe_own(exc: ClientError, lost: Sequence[bool]) -> bool:
    """Whether a refusal that finds the work done (a table in use, a condition failed) may
    meet this call's own earlier try: one whose answer was lost (``lost``: what each of
    ddbkeys' earlier tries met, by :func:`unanswered`) or one the client retried itself
    (botocore's ``RetryAttempts``)."""
    return any(lost) or bool(exc.response.get("ResponseMetadata", {}).get("RetryAttempts"))


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
    after 3.0 s (the deadline; raise it with deadline=): the DynamoDB endpoint
    http://127.0.0.1:8000 did not answer within 3 s (read timeout), 1 attempt.``

    ``elapsed`` is the time the call took: when a request outlived the deadline by more than a
    second (a client whose read timeout is longer than the deadline), the message gives it.
    """
    on = f" on table {table!r}" if table else ""
    failed = describe_failure(
        last, times=attempts if failures is None else failures, read_timeout=read_timeout
    )
    when = f"after {seconds:.1f} s (the deadline; {DEADLINE_HINT})"
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
            "right? Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, SSLError):  # (an https URL on DynamoDB Local's plain http port)
        return EndpointUnreachableError(
            f"No TLS (https) connection to {endpoint_of(exc)}: {one_line(exc.kwargs['error'])}. "
            "Where it speaks plain http, as DynamoDB Local does, give an http:// URL: check "
            "endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, (ReadTimeoutError, ConnectionClosedError)):
        return EndpointUnreachableError(
            f"{_capital(describe_failure(exc))}{where}: is it overloaded or stuck? Try again, "
            "or allow longer with deadline=.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return CredentialsError(
            "No AWS credentials found. Set AWS_PROFILE or pass profile=, set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or point endpoint_url= at a DynamoDB "
            "Local (`ddbkeys local` starts one).",
            table=table,
            cause=exc,
        )
    if isinstance(exc, NoRegionError):
        return ConfigurationError(
            "No AWS region set. Pass region=, or set AWS_REGION (or AWS_DEFAULT_REGION), or a "
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
            "DynamoDB? (check endpoint_url= and AWS_ENDPOINT_URL_DYNAMODB)",
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
    if code == "ValidationException" and key_schema_refusal(message):
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
    if code == "UnknownOperationException":  # (DynamoDB Local: no exports, no backups)
        return ServiceError(
            f"This endpoint has no {_operation(exc)} (UnknownOperationException){where}: "
            "DynamoDB Local has no exports or backups; run it on the service (in tests, "
            "ddbkeys.testing.write_export writes an export to read).",
            table=table,
            cause=exc,
        )
    if code in {"UnrecognizedClientException", "InvalidSignatureException"}:
        return CredentialsError(
            f"DynamoDB rejected the credentials{where} ({code}): check AWS_PROFILE or profile=.",
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
