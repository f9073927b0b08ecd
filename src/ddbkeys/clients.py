"""What ddbkeys accepts where it takes a client, and the deadline every request keeps to.

:func:`as_client` takes what a boto3 user has at hand: a low-level DynamoDB client, a DynamoDB
service resource, one of its ``Table`` objects, or a resource's client (``table.meta.client``).
boto3's resource layer registers handlers on its client that turn plain Python values into
DynamoDB's typed form on the way in, and back on the way out; ddbkeys speaks the typed form,
so such a client is wrapped in an adapter that converts typed values to plain ones before the
call (for the resource layer to convert them back) and the answer's plain values to typed ones
after it. Numbers stay exact: they travel as :class:`decimal.Decimal`, never as floats.

:func:`deadline_scope` bounds botocore's own retries by the deadline of the ddbkeys call in
progress. A client ddbkeys builds (:func:`ddbkeys.make_client`) does not retry in botocore at
all (ddbkeys' loops count every attempt), and its read timeout is at most the deadline. A
client you built keeps its own configuration, retries included: inside a ddbkeys call,
botocore retries no more once less of the call's deadline is left than one request may take
by the client's timeouts (ddbkeys' own retries go on from there, within the deadline).

:class:`DeadlineBoundClient` (what :func:`as_client` hands out) keeps every request inside the
deadline even then: when less time is left than one request may take by the client's own
timeouts (connect plus read), the request is sent from a worker thread and waited for only
until the deadline, and then it is given up as :class:`~ddbkeys.errors.NoAnswerInTime`. With
time to spare it is sent from the caller's thread, as it would be without ddbkeys.
"""

from __future__ import annotations

import contextvars
import decimal
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from boto3.dynamodb.types import Binary
from boto3.resources.base import ServiceResource
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from ddbkeys.errors import ConfigurationError, DdbKeysError, NoAnswerInTime
from ddbkeys.request_threads import send_within
from ddbkeys.retry import Deadline

if TYPE_CHECKING:
    from botocore.model import Shape
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "DeadlineBoundClient",
    "ResourceClientAdapter",
    "as_client",
    "current_deadline",
    "deadline_scope",
]

_ACCEPTED = (
    "ddbkeys takes a boto3 DynamoDB client (boto3.client('dynamodb') or ddbkeys.make_client()), "
    "a DynamoDB resource (boto3.resource('dynamodb')) or one of its Tables"
)
_DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "ddbkeys_deadline", default=None
)
#: Numbers as DynamoDB holds them: up to 38 significant digits, from 1E-130 to 9.99...E+125.
_MAX_DIGITS = 38
_WIDE = decimal.Context(prec=200, Emax=999_999, Emin=-999_999, traps=[decimal.InvalidOperation])


# --- the deadline -------------------------------------------------------------------------------


@contextmanager
def deadline_scope(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Run the block under ``deadline``: a client that went through :func:`as_client` does not
    let botocore retry a request of this thread (or task) once the deadline has passed.
    Outside a scope (or with ``None``) botocore retries as its configuration says."""
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> Deadline | None:
    """The deadline of the innermost :func:`deadline_scope`, or None."""
    return _DEADLINE.get()


def _stop_retrying_past_deadline(
    response: Any = None,
    caught_exception: BaseException | None = None,
    operation: Any = None,
    *,
    longest: float = 0.0,
    **_: Any,
) -> None:
    """A ``needs-retry`` handler, registered first: once less of the deadline of the current
    scope is left than one more request may take by the client's timeouts (``longest``, see
    :func:`longest_request`), botocore retries no more, and the failure goes up to ddbkeys'
    own retries, which count it and send the next try within the deadline. (A retry botocore
    started just before the deadline could otherwise run up to ``longest`` past it, and a
    request given up at the deadline would hide what the endpoint answered before.) The call
    ends with the failure it had, raised here: the exception caught, or the error response as a
    ``ClientError`` (what botocore raises for it when no retry is wanted). Raising, rather than
    answering ``False``, means the same in every botocore version (before 1.35 a ``False``
    answer meant "retry at once"). A success, or a call with time to spare, is left to
    botocore's own handlers (None)."""
    deadline = _DEADLINE.get()
    if deadline is None or deadline.remaining() >= longest:
        return
    if caught_exception is not None:
        raise caught_exception
    if response is not None:
        http, parsed = response
        if int(getattr(http, "status_code", 200)) >= 300 or "Error" in (parsed or {}):
            raise ClientError(parsed, getattr(operation, "name", "the request"))


def _guard(client: Any) -> None:
    """Register the deadline handler on ``client`` (once: the unique id makes it idempotent)."""
    longest = longest_request(getattr(client.meta, "config", None))
    client.meta.events.register_first(
        "needs-retry.dynamodb",
        partial(_stop_retrying_past_deadline, longest=longest),
        unique_id="ddbkeys-deadline",
    )


# --- what a caller may pass ---------------------------------------------------------------------


def as_client(obj: object, table: str | None = None) -> tuple[DynamoDBClient, str | None]:
    """The client ddbkeys works with, and the table name, from what the caller passed.

    - a low-level DynamoDB client: as it is, with ``table``;
    - a boto3 ``Table``: an adapter over its client, and the table's name (a different
      ``table`` given as well is a :class:`ConfigurationError`);
    - a boto3 DynamoDB service resource: an adapter over its client, with ``table``;
    - a resource's client (``resource.meta.client``, ``table.meta.client``): an adapter;
    - anything else: a :class:`ConfigurationError` saying what is accepted.

    Each client gets the handler that keeps botocore's retries inside :func:`deadline_scope`.
    """
    client: Any
    if isinstance(obj, DeadlineBoundClient):
        return cast("DynamoDBClient", obj), table
    if isinstance(obj, ResourceClientAdapter):
        client = obj
    elif isinstance(obj, BaseClient):
        if type(obj).__module__.startswith("aiobotocore"):  # its calls return coroutines
            raise ConfigurationError(
                f"{_ACCEPTED}, not an aiobotocore client: an aiobotocore client is for the "
                "asyncio API (from ddbkeys import aio)."
            )
        service = obj.meta.service_model.service_name
        if service != "dynamodb":
            raise ConfigurationError(f"{_ACCEPTED}, not a boto3 client for {service!r}.")
        client = ResourceClientAdapter(obj) if serializes_again(obj) else obj
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
        client = ResourceClientAdapter(obj.meta.client)
    else:
        raise ConfigurationError(f"{_ACCEPTED}, not {_kind(obj)}.")
    _guard(client)
    return cast("DynamoDBClient", DeadlineBoundClient(client)), table


# --- requests bounded by the deadline ---------------------------------------------------------


def _in_worker(send: Callable[[], Any], seconds: float, url: str) -> Any:
    """``send()`` from a daemon thread (one that never answers does not hold up the exit; see
    :mod:`ddbkeys.request_threads`), waited for ``seconds`` at most: its answer or its error,
    else NoAnswerInTime."""
    ok, value = send_within(send, seconds)
    if ok:
        return value
    if value is None:
        raise NoAnswerInTime(endpoint_url=url, waited=seconds)
    raise value


def longest_request(config: Any) -> float:
    """How long one request may take by a client's configuration: its connect timeout plus its
    read timeout (botocore's default 60 s each), or infinity when either is None (no limit).
    A response trickling in byte by byte can take longer: each read is bounded, not the sum."""
    connect = getattr(config, "connect_timeout", 60)
    read = getattr(config, "read_timeout", 60)
    if connect is None or read is None:
        return float("inf")
    return float(connect) + float(read)


class DeadlineBoundClient:
    """A client whose requests keep to the deadline of the :func:`deadline_scope` they run in.

    With at least :func:`longest_request` left, a request is sent as it is. With less, it is
    sent from a worker thread and waited for until the deadline; then ``NoAnswerInTime`` (a
    botocore ``ReadTimeoutError``) is raised in the caller, and the retry layer above gives up
    saying so. Everything else is the wrapped client's."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.meta = client.meta
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if name not in self.client.meta.method_to_api_mapping:
            return attribute

        def call(**request: Any) -> Any:
            deadline = _DEADLINE.get()
            if deadline is None:
                return attribute(**request)
            left = deadline.remaining()
            if left >= longest_request(self.meta.config):
                return attribute(**request)
            url = self.meta.endpoint_url
            if left <= 0:
                raise NoAnswerInTime(endpoint_url=url, waited=0.0)
            return _in_worker(lambda: attribute(**request), left, url)

        call.__name__ = name
        return call

    def __repr__(self) -> str:
        return f"DeadlineBoundClient({self.client!r})"


def _kind(obj: object) -> str:
    if obj is None:
        return "None"
    if isinstance(obj, str):
        return f"the string {obj[:40]!r}"
    return f"a {type(obj).__module__}.{type(obj).__qualname__}"


def serializes_again(client: Any) -> bool:
    """Whether boto3's resource layer converts the parameters of ``client``: a probe ``Key`` is
    put through the client's own ``before-parameter-build`` handlers and comes out changed."""
    probe: dict[str, Any] = {"TableName": "ddbkeys-probe", "Key": {"k": {"S": "probe"}}}
    model = client.meta.service_model.operation_model("GetItem")
    # No request is built from the probe, as for a presigned URL: the context says so, and
    # botocore's Stubber (which checks each request against its queue) leaves it alone.
    emitted = client.meta.events.emit(
        "before-parameter-build.dynamodb.GetItem",
        params=probe,
        model=model,
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


# --- the adapter ----------------------------------------------------------------------------------


class ResourceClientAdapter:
    """A boto3 resource's client with a low-level client's face: requests and answers hold
    typed AttributeValues (``{"S": "x"}``), converted to and from the plain Python values the
    resource layer expects, by the operation's shapes in the service model. Error responses
    (``ClientError``) are not converted by boto3, so they are typed already and go up as they
    are. A number DynamoDB cannot hold (more than 38 significant digits) is a
    :class:`~ddbkeys.DdbKeysError`."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.meta = client.meta
        self.exceptions = client.exceptions
        # DynamoDB Local writes numbers out in full (126 digits for the greatest one), more
        # than the resource layer's decimal context takes: shorten them, exactly, first.
        client.meta.events.register_first(
            "after-call.dynamodb", _shorten_numbers, unique_id="ddbkeys-exact-numbers"
        )

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        operation = self.client.meta.method_to_api_mapping.get(name)
        if operation is None:
            return attribute
        model = self.client.meta.service_model.operation_model(operation)

        def call(**request: Any) -> Any:
            with _readable_numbers(operation):
                response = attribute(**_walk(request, model.input_shape, _to_plain))
            return _walk(response, model.output_shape, _to_typed)

        call.__name__ = name
        return call

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.client!r})"


class AsyncResourceClientAdapter(ResourceClientAdapter):
    """:class:`ResourceClientAdapter` for an aiobotocore client that serializes like a
    resource's (aioboto3's ``resource.meta.client``): the same conversions around an awaited
    call."""

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        operation = self.client.meta.method_to_api_mapping.get(name)
        if operation is None:
            return attribute
        model = self.client.meta.service_model.operation_model(operation)

        async def call(**request: Any) -> Any:
            with _readable_numbers(operation):
                response = await attribute(**_walk(request, model.input_shape, _to_plain))
            return _walk(response, model.output_shape, _to_typed)

        call.__name__ = name
        return call


@contextmanager
def _readable_numbers(operation: str) -> Iterator[None]:
    """A number the resource layer cannot read, as a DdbKeysError that says so."""
    try:
        yield
    except decimal.DecimalException as exc:
        raise DdbKeysError(
            f"{operation} answered a number that has more than {_MAX_DIGITS} "
            f"significant digits, which boto3's resource layer cannot read ({exc!r}).",
            cause=exc,
        ) from exc


def _holds_values(shape: Shape, seen: frozenset[str] = frozenset()) -> bool:
    """Whether an AttributeValue can occur anywhere inside ``shape``."""
    if shape.name == "AttributeValue":
        return True
    if shape.name in seen:
        return False
    inner = seen | {shape.name}
    children: list[Shape] = []
    if shape.type_name == "structure":
        children = list(shape.members.values())  # type: ignore[attr-defined]
    elif shape.type_name == "list":
        children = [shape.member]  # type: ignore[attr-defined]
    elif shape.type_name == "map":
        children = [shape.value]  # type: ignore[attr-defined]
    return any(_holds_values(child, inner) for child in children)


def _walk(value: Any, shape: Shape | None, convert: Callable[[Any], Any]) -> Any:
    """``value`` with every AttributeValue inside it (found by ``shape``) converted; new
    containers, so the caller's request is left as it was."""
    if shape is None:
        return value
    if shape.name == "AttributeValue":
        return convert(value)
    if not _holds_values(shape):
        return value
    if shape.type_name == "structure" and isinstance(value, Mapping):
        members = shape.members  # type: ignore[attr-defined]
        return {k: _walk(v, members[k], convert) if k in members else v for k, v in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [_walk(v, shape.member, convert) for v in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, Mapping):
        return {k: _walk(v, shape.value, convert) for k, v in value.items()}  # type: ignore[attr-defined]
    return value


def _number(text: object) -> decimal.Decimal:
    """A DynamoDB number as an exact Decimal the resource layer's context takes."""
    try:
        number = _WIDE.create_decimal(str(text))
    except decimal.DecimalException as exc:
        raise DdbKeysError(f"{text!r} is not a number.", cause=exc) from exc
    if not number.is_finite():
        raise DdbKeysError(f"{text!r} is not a number DynamoDB can store.")
    if len(number.as_tuple().digits) > _MAX_DIGITS:
        number = number.normalize(_WIDE)  # 100...0 (126 digits) is 1E+125
    if len(number.as_tuple().digits) > _MAX_DIGITS:
        raise DdbKeysError(
            f"The number {str(text)[:60]} has more than {_MAX_DIGITS} significant digits: "
            "DynamoDB cannot store it exactly."
        )
    return number


def _to_plain(value: Any) -> Any:
    """A typed AttributeValue as the plain Python value boto3's resource layer serializes."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise DdbKeysError(f"{value!r} is not a DynamoDB AttributeValue such as {{'S': 'x'}}.")
    kind, raw = next(iter(value.items()))
    if kind == "S":
        return str(raw)
    if kind == "N":
        return _number(raw)
    if kind == "B":
        return raw.encode() if isinstance(raw, str) else bytes(raw)
    if kind in ("SS", "NS", "BS"):
        return {_to_plain({kind[0]: one}) for one in raw}
    if kind == "M":
        return {str(k): _to_plain(v) for k, v in raw.items()}
    if kind == "L":
        return [_to_plain(v) for v in raw]
    if kind == "NULL":
        return None
    if kind == "BOOL":
        return bool(raw)
    raise DdbKeysError(f"{value!r} is not a DynamoDB AttributeValue: unknown type {kind!r}.")


def _to_typed(value: Any) -> dict[str, Any]:
    """A plain value (as boto3's resource layer gives it) back to a typed AttributeValue."""
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bool):
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, decimal.Decimal):
        return {"N": format(value, "f")}  # positional, as DynamoDB writes numbers out
    if isinstance(value, Binary):
        return {"B": value.__bytes__()}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if isinstance(value, (set, frozenset)):
        typed = [_to_typed(one) for one in value]
        kind = next(iter(typed[0])) if typed else "S"
        return {kind + "S": [next(iter(one.values())) for one in typed]}
    if isinstance(value, Mapping):
        return {"M": {str(k): _to_typed(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [_to_typed(v) for v in value]}
    raise DdbKeysError(f"boto3 answered a value ddbkeys cannot read back: {value!r}.")


def _shorten(value: Any) -> Any:
    """A typed AttributeValue with numbers of more than 38 digits written shorter, exactly."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    kind, raw = next(iter(value.items()))
    try:
        if kind == "N" and len(str(raw)) > _MAX_DIGITS:
            return {"N": str(_number(raw))}
        if kind == "NS":
            return {
                "NS": [str(_number(one)) if len(str(one)) > _MAX_DIGITS else one for one in raw]
            }
    except DdbKeysError:
        return value  # left for the resource layer to refuse
    if kind == "M":
        return {"M": {k: _shorten(v) for k, v in raw.items()}}
    if kind == "L":
        return {"L": [_shorten(v) for v in raw]}
    return value


def _shorten_numbers(parsed: Any, model: Any, **_: Any) -> None:
    """An ``after-call`` handler that runs before the resource layer's: numbers it could not
    read (over 38 digits as written, though no more than 38 significant) are written shorter."""
    shape = getattr(model, "output_shape", None)
    if shape is None or not isinstance(parsed, dict) or "Error" in parsed:
        return
    shortened = _walk(parsed, shape, _shorten)
    parsed.update(shortened)
