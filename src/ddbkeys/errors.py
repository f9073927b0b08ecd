"""The errors ddbkeys raises.

Every error is a :class:`DdbKeysError`. It keeps the exception that caused it (``cause``, and the
``__cause__`` chain through ``raise ... from``), the DynamoDB error code when there was one
(``code``) and the table it concerns (``table``). Subclasses exist only where callers branch on
them. An error ddbkeys does not recognise is not wrapped: it goes up unchanged.
"""

from __future__ import annotations

from typing import Any, NoReturn

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

__all__ = [
    "ConfigurationError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "EndpointUnreachableError",
    "KeySchemaError",
    "LocalServerError",
    "ServiceError",
    "TableNotFoundError",
    "translate_error",
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
        super().__init__(message)
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


class CredentialsError(ConfigurationError):
    """No AWS credentials were found, or they are incomplete."""


class EndpointUnreachableError(DdbKeysError):
    """Nothing answered at the DynamoDB endpoint."""


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


class TableNotFoundError(DdbKeysError):
    """The table does not exist (or is not visible with these credentials and region)."""


class KeySchemaError(DdbKeysError):
    """The table's key schema is not what the operation needs."""


class ServiceError(DdbKeysError):
    """DynamoDB refused a request for a reason ddbkeys has no more specific error for; ``code``
    is DynamoDB's error code."""


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


def translate_error(exc: BaseException, *, table: str | None = None) -> BaseException:
    """Turn a botocore error into the ddbkeys error a caller can act on.

    Returns the new error (with ``cause`` set); the caller raises it ``from exc``. Every
    botocore error becomes a :class:`DdbKeysError`: a DynamoDB error ddbkeys has no specific
    error for is a :class:`ServiceError` with its code, operation and table; anything else that
    is not botocore's is returned unchanged.
    """
    if isinstance(exc, DdbKeysError):
        return exc
    where = f" for table {table!r}" if table else ""
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        endpoint = getattr(exc, "kwargs", {}).get("endpoint_url", "the endpoint")
        return EndpointUnreachableError(
            f"Could not connect to the DynamoDB endpoint {endpoint}: is it running, and is the URL "
            "right? Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return CredentialsError(
            "No AWS credentials found. Set AWS_PROFILE or pass --profile, set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use --local for an embedded "
            "DynamoDB Local.",
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
    code = error_code(exc)
    if code == "ResourceNotFoundException":
        name = repr(table) if table else "the table"
        return TableNotFoundError(
            f"Table {name} not found: check the name, the region and the endpoint "
            f"({error_message(exc)}).",
            table=table,
            cause=exc,
        )
    if code == "ValidationException" and any(
        phrase in error_message(exc) for phrase in _KEY_SCHEMA_PHRASES
    ):
        return KeySchemaError(
            f"The key does not match the key schema{where}: {error_message(exc)}",
            table=table,
            cause=exc,
        )
    if code in {"UnrecognizedClientException", "InvalidSignatureException"}:
        return CredentialsError(
            f"DynamoDB rejected the credentials{where} ({code}): check AWS_PROFILE or --profile.",
            table=table,
            cause=exc,
        )
    if isinstance(exc, ClientError):
        operation = getattr(exc, "operation_name", None) or "a request"
        message = error_message(exc)
        if code == "ValidationException" and "Item size has exceeded" in message:
            return ServiceError(
                f"The item is too large for table {table!r}: DynamoDB items are at most 400 KB, "
                f"attribute names and values included ({operation}: {message}).",
                table=table,
                cause=exc,
            )
        return ServiceError(
            f"DynamoDB refused {operation}{where} ({code}): {message}",
            table=table,
            cause=exc,
        )
    if isinstance(exc, BotoCoreError):
        return DdbKeysError(f"The request to DynamoDB failed{where}: {exc}", table=table, cause=exc)
    return exc


def raise_translated(exc: BaseException, *, table: str | None = None) -> NoReturn:
    """Raise ``translate_error(exc)`` from ``exc``; re-raise ``exc`` itself when unrecognised."""
    translated = translate_error(exc, table=table)
    if translated is exc:
        raise exc
    raise translated from exc
