"""What ddbkeys accepts where it takes a client, and how a request keeps to its call's deadline.

:func:`as_client` takes a low-level DynamoDB client, a DynamoDB service resource, one of its
``Table`` objects, or a resource's client. boto3's resource layer converts plain Python values
to DynamoDB's typed form and back on such a client; ddbkeys speaks the typed form, so it is
wrapped in a :class:`ResourceClient` that converts them the other way around the call. Nothing
is registered on a client the caller passed: ddbkeys only calls its public methods.

:func:`send` keeps a request inside the deadline of the :func:`deadline_scope` it runs in. It
is sent from the caller's thread when nothing can make it outlast the deadline: a client
:func:`ddbkeys.make_client` built (it carries a handler that stops botocore's retries once
less of the deadline is left than one request may take) or one making a single attempt, with
at least one request's timeouts left (connect plus read). Otherwise (a client's own retries,
timeouts longer than what is left) it is sent from a request thread and waited for until the
deadline, then given up as :class:`~ddbkeys.errors.NoAnswerInTime`: an answer trickling in
byte by byte, each read within the read timeout, ends there too.
"""

from __future__ import annotations

import contextvars
import decimal
import inspect
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from boto3.resources.base import ServiceResource
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from ddbkeys.attributes import MAX_DIGITS, resource_value, typed_value
from ddbkeys.errors import ConfigurationError, DdbKeysError, NoAnswerInTime
from ddbkeys.retry import Deadline

if TYPE_CHECKING:
    from botocore.model import Shape
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "ResourceClient",
    "as_client",
    "current_deadline",
    "deadline_scope",
    "guard",
    "send",
    "serializes_again",
]

_ACCEPTED = (
    "ddbkeys takes a boto3 DynamoDB client (boto3.client('dynamodb') or ddbkeys.make_client()), "
    "a DynamoDB resource (boto3.resource('dynamodb')) or one of its Tables"
)
_DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "ddbkeys_deadline", default=None
)
#: The clients ddbkeys built and guarded (:func:`guard`).
_GUARDED: weakref.WeakSet[Any] = weakref.WeakSet()
#: How long a request thread with nothing to send waits for the next request before it ends.
IDLE_SECONDS = 30.0
#: At most this many request threads wait for requests; more end when their request does.
KEEP = 64


@contextmanager
def deadline_scope(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Run the block under ``deadline`` (the requests :func:`send` sends keep to it)."""
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> Deadline | None:
    """The deadline of the innermost :func:`deadline_scope`, or None."""
    return _DEADLINE.get()


def longest_request(config: Any) -> float:
    """How long one request may take by a client's configuration: its connect timeout plus its
    read timeout (botocore's default 60 s each), or infinity when either is None."""
    connect, read = getattr(config, "connect_timeout", 60), getattr(config, "read_timeout", 60)
    return float("inf") if connect is None or read is None else float(connect) + float(read)


def guard(client: Any) -> Any:
    """``client``, one ddbkeys built, with a ``needs-retry`` handler (registered first): once
    less of the deadline of the scope is left than one more request may take, botocore retries
    no more, and the failure goes up to ddbkeys' own retries. It raises the failure (a
    ``False`` answer meant "retry at once" before botocore 1.35)."""
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
    _GUARDED.add(client)
    return client


def send(client: Any, operation: str, params: Mapping[str, Any]) -> Any:
    """``client.<operation>(**params)``, answered within the deadline of the scope or given up
    at it as :class:`NoAnswerInTime` (see the module's docstring)."""
    call = partial(getattr(client, operation), **params)
    deadline, meta = _DEADLINE.get(), getattr(client, "meta", None)
    if deadline is None or meta is None:  # (no deadline, or a stand-in for a client)
        return call()
    left, retries = deadline.remaining(), getattr(meta.config, "retries", None) or {}
    once = retries.get("total_max_attempts") == 1 or retries.get("max_attempts") == 0
    with suppress(TypeError):  # (a stand-in without weak references is never guarded)
        once = once or client in _GUARDED
    if once and left >= longest_request(meta.config):
        return call()
    if left > 0:
        job = _Job(call)
        _THREADS.hand(job)
        if job.done.acquire(timeout=left):
            if isinstance(job.outcome, BaseException):
                raise job.outcome
            return job.outcome
        job.late = True  # (if no thread has taken it yet, none will send it)
    raise NoAnswerInTime(endpoint_url=meta.endpoint_url, waited=max(left, 0.0))


class _Job:
    """One request for a request thread, sent in the caller's context; then its outcome."""

    def __init__(self, call: Callable[[], Any] | None) -> None:
        self.call, self.context = call, contextvars.copy_context()
        self.outcome: Any = None
        self.late = False
        self.done = threading.Lock()
        self.done.acquire()  # released once the outcome is in


class _Threads:
    """Daemon threads, each sending one request after another (starting one cost about a
    third of a request on a local server) and ending after :data:`IDLE_SECONDS` without one,
    or at once when :data:`KEEP` wait already; a request that never ends holds its thread
    alone, and the exit does not wait for it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty (and in a forked child: the parent's threads are not there)."""
        self.lock, self.jobs = threading.Lock(), queue.SimpleQueue[_Job]()
        self.idle = 0  # threads waiting for a job that no caller has claimed

    def hand(self, job: _Job) -> None:
        with self.lock:
            claimed, self.idle = self.idle > 0, max(self.idle - 1, 0)
        if not claimed:
            try:
                threading.Thread(target=self._work, name="ddbkeys-request", daemon=True).start()
            except RuntimeError as exc:  # "can't start new thread"
                raise DdbKeysError(
                    f"Could not start a thread to send a request within its deadline ({exc}): "
                    "give the client timeouts within the deadline (ddbkeys.make_client() does) "
                    "to send from the caller's thread.",
                    cause=exc,
                ) from exc
        self.jobs.put(job)

    def _work(self) -> None:
        waits = 0
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:  # none claimed ends one; a claim whose job never came (the
                    if self.idle > 0 or waits:  # caller interrupted) ends after a second wait
                        self.idle -= 1 if self.idle > 0 else 0
                        return
                waits += 1
                continue
            if job.call is None:  # before a fork
                job.outcome = threading.current_thread()
                job.done.release()
                return
            if not job.late:
                try:
                    job.outcome = job.context.run(job.call)
                except BaseException as exc:  # the caller's to raise
                    job.outcome = exc
            with self.lock:  # free again before the caller hears of it, to be reused at once
                keep, self.idle = self.idle < KEEP, min(self.idle + 1, KEEP)
            job.done.release()
            if not keep:
                return
            del job
            waits = 0

    def end_idle(self) -> None:
        """Before a fork: the waiting threads end (a fork with threads is warned of)."""
        with self.lock:
            stops, self.idle = [_Job(None) for _ in range(self.idle)], 0
        for stop in stops:
            self.jobs.put(stop)
        for stop in stops:
            if stop.done.acquire(timeout=0.05):
                stop.outcome.join(0.05)


_THREADS = _Threads()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_THREADS.end_idle, after_in_child=_THREADS.reset)


def as_client(obj: object, table: str | None = None) -> tuple[DynamoDBClient, str | None]:
    """The client ddbkeys sends with, and the table name, from what the caller passed: a
    low-level DynamoDB client as it is; a resource, a ``Table`` (whose name is the table's: a
    different ``table`` is a :class:`ConfigurationError`) or a resource's client in a
    :class:`ResourceClient`; anything else is a ConfigurationError saying what is taken."""
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
    """Whether boto3's resource layer converts the parameters of ``client``: a probe ``Key`` is
    put through the client's own ``before-parameter-build`` handlers and comes out changed (no
    request is built from it, as for a presigned URL: botocore's Stubber leaves it alone)."""
    probe: dict[str, Any] = {"TableName": "ddbkeys-probe", "Key": {"k": {"S": "probe"}}}
    emitted = client.meta.events.emit(
        "before-parameter-build.dynamodb.GetItem",
        params=probe,
        model=client.meta.service_model.operation_model("GetItem"),
        context={"is_presign_request": True},
    )
    if inspect.iscoroutine(emitted):  # aiobotocore's emitter: its handlers run when driven
        try:
            emitted.send(None)
        except StopIteration:
            pass  # every handler ran (a resource layer's are plain functions)
        else:  # a handler waits on something: not a resource layer's; leave it be
            emitted.close()
            return False
    return bool(probe["Key"].get("k") != {"S": "probe"})


class ResourceClient:
    """A boto3 (or aioboto3) resource's client with a low-level client's face: requests and
    answers hold typed AttributeValues, converted to and from the plain values the resource
    layer takes, by the operation's shapes. Errors go up as they are (typed already); a number
    the resource layer cannot read is a :class:`~ddbkeys.DdbKeysError`."""

    def __init__(self, client: Any) -> None:
        self.client, self.meta, self.exceptions = client, client.meta, client.exceptions

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        operation = self.meta.method_to_api_mapping.get(name)
        if operation is None:
            return method
        model = self.meta.service_model.operation_model(operation)

        def call(**request: Any) -> Any:
            with _readable(operation):
                answer = method(**_walk(request, model.input_shape, resource_value))
            if inspect.isawaitable(answer):
                return _later(answer, operation, model.output_shape)
            return _walk(answer, model.output_shape, typed_value)

        return call


async def _later(answer: Any, operation: str, shape: Shape | None) -> Any:
    with _readable(operation):
        return _walk(await answer, shape, typed_value)


@contextmanager
def _readable(operation: str) -> Iterator[None]:
    try:
        yield
    except decimal.DecimalException as exc:
        raise DdbKeysError(
            f"{operation} carried a number boto3's resource layer cannot read (more than "
            f"{MAX_DIGITS} significant digits, as DynamoDB Local writes 1E+125 out) ({exc!r}).",
            cause=exc,
        ) from exc


def _walk(value: Any, shape: Shape | None, convert: Callable[[Any], Any]) -> Any:
    """``value`` with every AttributeValue inside it (found by ``shape``) converted, in new
    containers (the caller's request is left as it was)."""
    if shape is None:
        return value
    if shape.name == "AttributeValue":
        return convert(value)
    if shape.type_name == "structure" and isinstance(value, Mapping):
        members = shape.members  # type: ignore[attr-defined]
        return {k: _walk(v, members[k], convert) if k in members else v for k, v in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [_walk(v, shape.member, convert) for v in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, Mapping):
        return {k: _walk(v, shape.value, convert) for k, v in value.items()}  # type: ignore[attr-defined]
    return value
