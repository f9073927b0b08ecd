"""What ddbkeys accepts where it takes a client, and how a request keeps to its deadline.

Nothing is registered on a client the caller passed. A resource's client, whose resource layer
converts values, is wrapped in a :class:`ResourceClient` that converts them back. Under a
deadline, :func:`send` sends from a thread of ``threads`` (by default the process's pool,
:data:`ddbkeys._core.lifecycle.POOL`; a hand-off costs about 9 microseconds, half a percent of a
request to DynamoDB Local) and gives the request up at the deadline as :class:`NoAnswerInTime`,
whatever holds it there: the client's own retries, long timeouts, or an answer trickling in byte
by byte, which no socket timeout ends (helper-70 F3: the CLI's own client, whose timeouts fit the
deadline, had been sent from the caller's thread and gave up after 178 s of a 60 s deadline).
:func:`guard` makes a client ddbkeys built stop retrying once less of the deadline is left than a
request may take."""

from __future__ import annotations

import contextvars
import decimal
import inspect
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from boto3.resources.base import ServiceResource
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from ddbkeys._attributes import MAX_DIGITS, resource_value, typed_value
from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._errors import ConfigurationError, DdbKeysError, NoAnswerInTime
from ddbkeys._probe import not_answered, retries_itself
from ddbkeys._retry import Deadline

if TYPE_CHECKING:
    from botocore.model import Shape
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "RequestThreads",
    "ResourceClient",
    "as_client",
    "deadline_scope",
    "guard",
    "send",
    "serializes_again",
]

_ACCEPTED = (
    "ddbkeys takes a boto3 DynamoDB client (boto3.client('dynamodb') or ddbkeys.make_client()), "
    "a DynamoDB resource (boto3.resource('dynamodb')) or one of its Tables"
)
_DEADLINE = contextvars.ContextVar[Deadline | None]("ddbkeys_deadline", default=None)


@contextmanager
def deadline_scope(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Run the block under ``deadline`` (the requests :func:`send` sends keep to it)."""
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def longest_request(config: Any) -> float:
    """A client's connect plus read timeout (botocore's default 60 s each; None: infinity)."""
    connect, read = getattr(config, "connect_timeout", 60), getattr(config, "read_timeout", 60)
    return float("inf") if connect is None or read is None else float(connect) + float(read)


def guard(client: Any) -> Any:
    """``client`` (one ddbkeys built) made to retry no more once less of the deadline is left
    than a request may take: the failure is raised (``False`` meant "at once" before 1.35)."""
    longest = longest_request(client.meta.config)

    def stop_retrying(response: Any = None, caught_exception: Any = None, **kw: Any) -> None:
        deadline = _DEADLINE.get()
        if deadline is None or deadline.remaining() >= longest:
            return
        if caught_exception is not None:
            raise caught_exception
        if response is not None:
            http, parsed = response
            if int(getattr(http, "status_code", 200)) >= 300 or "Error" in (parsed or {}):
                raise ClientError(parsed, getattr(kw.get("operation"), "name", "the request"))

    client.meta.events.register_first("needs-retry.dynamodb", stop_retrying)
    with suppress(TypeError):  # (a stand-in without weak references)
        _GUARDED.add(client)
    return client


#: The clients :func:`guard` made stop retrying at the deadline (ddbkeys' own).
_GUARDED: weakref.WeakSet[Any] = weakref.WeakSet()


def send(
    client: Any, operation: str, params: Mapping[str, Any], threads: RequestThreads | None = None
) -> Any:
    """``client.<operation>(**params)`` within the scope's deadline (see the module's doc)."""
    call = partial(getattr(client, operation), **params)
    deadline, meta = _DEADLINE.get(), getattr(client, "meta", None)
    if deadline is None or meta is None:  # (no deadline, or a stand-in for a client)
        return call()
    left = deadline.remaining()
    if left > 0:
        (threads or _lifecycle.POOL).hand(job := Job(call))
        if job.done.acquire(timeout=left):
            if isinstance(job.outcome, BaseException):
                raise job.outcome
            return job.outcome
        job.late = True  # (if no thread has taken it yet, none will send it)
        # (refused, if none listens; a client not ddbkeys' own may go on retrying it)
        trying = client not in _GUARDED and retries_itself(meta.config)
        raise not_answered(meta.endpoint_url, left, meta.config, trying=trying)
    raise NoAnswerInTime(endpoint_url=meta.endpoint_url, waited=0.0)


class Job:
    """One request for a thread of the pool, sent in the caller's context; then its outcome.
    The thread that sends it is named after the caller's (``name``), for a reader of a stack
    dump or of a client's events."""

    why = (
        "every request under a deadline is sent from a request thread, and this process can "
        "start no more (its thread or process limit: ulimit -u, a container's pids limit)"
    )

    def __init__(self, call: Callable[[], Any]) -> None:
        self.name = f"ddbkeys-request ({threading.current_thread().name})"
        self.call, self.context = call, contextvars.copy_context()
        self.outcome: Any = None
        self.late = False
        self.done = threading.Lock()
        self.done.acquire()  # released once the outcome is in

    def run(self) -> None:
        if not self.late:  # (given up: not sent)
            try:
                self.outcome = self.context.run(self.call)
            except BaseException as exc:  # the caller's to raise
                self.outcome = exc

    def finish(self) -> None:
        self.done.release()


#: The threads that send requests: the process's one pool (:mod:`ddbkeys._core.lifecycle`),
#: or one of its own for a test.
RequestThreads = _lifecycle.Pool
THREADS = _lifecycle.POOL  #: the process's, for send()


def as_client(obj: object, table: str | None = None) -> tuple[DynamoDBClient, str | None]:
    """The client to send with and the table, from a low-level client (as it is), a resource,
    a ``Table`` (its name) or a resource's client (in a :class:`ResourceClient`)."""
    client: Any = obj
    if isinstance(obj, BaseClient):
        if type(obj).__module__.startswith("aiobotocore"):  # its calls return coroutines
            raise ConfigurationError(
                f"{_ACCEPTED}, not an aiobotocore client: an aiobotocore client is for the "
                "asyncio API (from ddbkeys import aio)."
            )
        service = obj.meta.service_model.service_name
        if service != "dynamodb":
            raise ConfigurationError(f"{_ACCEPTED}, not a boto3 client for {service!r}.")
        client = ResourceClient(obj) if serializes_again(obj) else obj
    elif isinstance(obj, ServiceResource) and obj.meta.service_name == "dynamodb":
        if obj.meta.resource_model.name == "Table":
            name = str(obj.name)  # type: ignore[attr-defined]
            if table is not None and table != name:
                raise ConfigurationError(
                    f"Two tables named: the Table object is {name!r} but table={table!r} was "
                    "given as well; pass one of them.",
                    table=name,
                )
            table = name
        elif obj.meta.identifiers:
            raise ConfigurationError(f"{_ACCEPTED}, not a {obj.meta.resource_model.name}.")
        client = ResourceClient(obj.meta.client)
    elif not isinstance(obj, ResourceClient):
        what = f"the string {obj[:40]!r}" if isinstance(obj, str) else None
        kind = "None" if obj is None else f"a {type(obj).__module__}.{type(obj).__qualname__}"
        raise ConfigurationError(f"{_ACCEPTED}, not {what or kind}.")
    return cast("DynamoDBClient", client), table


def serializes_again(client: Any) -> bool:
    """Whether a resource layer converts the parameters of ``client``: a probe ``Key`` changed by
    its ``before-parameter-build`` handlers (as for a presigned URL: Stubber lets it be)."""
    probe: dict[str, Any] = {"TableName": "ddbkeys-probe", "Key": {"k": {"S": "probe"}}}
    emitted = client.meta.events.emit(
        "before-parameter-build.dynamodb.GetItem",
        params=probe,
        model=client.meta.service_model.operation_model("GetItem"),
        context={"is_presign_request": True},
    )
    if inspect.iscoroutine(emitted):  # aiobotocore's emitter: its handlers run when driven
        with suppress(StopIteration):  # raised once every handler ran (a resource layer's do)
            emitted.send(None)
            emitted.close()  # a handler waits on something: not a resource layer's
            return False
    return bool(probe["Key"].get("k") != {"S": "probe"})


class ResourceClient:
    """A (aio)boto3 resource's client with a low-level client's face: typed values converted to
    and from plain ones by the operation's shapes (errors are typed already)."""

    def __init__(self, client: Any) -> None:
        self.client, self.meta, self.exceptions = client, client.meta, client.exceptions

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        operation = self.meta.method_to_api_mapping.get(name)
        if operation is None:
            return method
        model = self.meta.service_model.operation_model(operation)

        def call(**request: Any) -> Any:
            table: str | None = request.get("TableName")
            with _readable(operation, table):
                answer = method(**_walk(request, model.input_shape, resource_value))
            if inspect.isawaitable(answer):
                return _later(answer, operation, model.output_shape, table)
            return _walk(answer, model.output_shape, typed_value)

        return call


async def _later(answer: Any, operation: str, shape: Shape | None, table: str | None = None) -> Any:
    with _readable(operation, table):
        return _walk(await answer, shape, typed_value)


@contextmanager
def _readable(operation: str, table: str | None = None) -> Iterator[None]:
    """A number the resource layer cannot read, as a one-line error naming the operation and
    its table (``table``: the request's TableName, where it has one)."""
    try:
        yield
    except decimal.DecimalException as exc:
        why = f"more than {MAX_DIGITS} significant digits, as DynamoDB Local writes 1E+125 out"
        where = f" of table {table!r}" if table else ""  # (as errors.unexpected_answer says it)
        said = f"{operation}{where} carried a number boto3's resource layer cannot read ({why})"
        fix = '; a low-level client reads it (boto3.client("dynamodb"), not a resource\'s)'
        raise DdbKeysError(f"{said} ({exc!r}){fix}.", table=table, cause=exc) from exc


def _walk(value: Any, shape: Shape | None, convert: Callable[[Any], Any]) -> Any:
    """``value`` with the AttributeValues ``shape`` finds converted, in new containers."""
    if shape is None or shape.name == "AttributeValue":
        return value if shape is None else convert(value)
    if shape.type_name == "structure" and isinstance(value, Mapping):
        members = shape.members  # type: ignore[attr-defined]
        return {k: _walk(v, members[k], convert) if k in members else v for k, v in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [_walk(v, shape.member, convert) for v in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, Mapping):
        return {k: _walk(v, shape.value, convert) for k, v in value.items()}  # type: ignore[attr-defined]
    return value
