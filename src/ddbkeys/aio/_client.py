"""What the asyncio API takes where it takes a client: an aiobotocore DynamoDB client, entered
(``async with session.create_client("dynamodb") as client:``) and used in one event loop.

An aiobotocore client sends through an HTTP session that exists only between its
``__aenter__`` and ``__aexit__``, and whose connections belong to the loop of its first request.
aiobotocore reports a request sent outside that (read in its ``httpsession.py``) as an
``HTTPClientError`` wrapping the internal error: ``'NoneType' object has no attribute 'get'``
for a client closed or never entered (its sessions are ``None``), and ``RuntimeError`` about a
different or a closed event loop for a client whose connections belong to another loop. The
asyncio driver asks :func:`check_loop` before each request (it sends nothing of its own: it
reads which loop the client's connections belong to) and :func:`misuse` after a failure, and
raises a :class:`ConfigurationError` that says which it is and what to do.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, cast

from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, HTTPClientError, ProfileNotFound

from ddbkeys._clients import ResourceClient, guard, serializes_again
from ddbkeys._connect import (
    LOCAL_ACCESS_KEY,
    check_limits,
    client_options,
    is_loopback,
    region_for,
    resolve_settings,
)
from ddbkeys._core.loops import loop_state
from ddbkeys._errors import ConfigurationError
from ddbkeys._origins import remember
from ddbkeys._retry import DEFAULT_DEADLINE
from ddbkeys._translate import translate_error

__all__ = [
    "INSTALL",
    "OPEN_A_CLIENT",
    "as_async_client",
    "check_loop",
    "make_client",
    "misuse",
    "record_loop",
]

INSTALL = (
    "The asyncio API sends with aiobotocore: pip install 'ddbkeys[async]' (aiobotocore pins "
    "botocore to a narrow range of versions, so it is not a dependency of ddbkeys itself)."
)
#: How to have an open client, for the error messages.
OPEN_A_CLIENT = (
    "async with session.create_client('dynamodb') as client: (or async with "
    "ddbkeys.aio.make_client() as client:)"
)


def as_async_client(obj: object, table: str | None) -> tuple[Any, str | None]:
    """An aiobotocore DynamoDB client (``session.create_client("dynamodb")``, entered), as it
    is, with ``table``; anything else is a :class:`ConfigurationError` saying what is taken."""
    try:
        from aiobotocore.client import AioBaseClient  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:  # the extra is not installed
        raise ConfigurationError(INSTALL) from exc
    if not isinstance(obj, AioBaseClient):
        kind = _kind(obj)
        if hasattr(obj, "__aenter__") and type(obj).__module__.startswith(
            ("aiobotocore", "contextlib")
        ):  # create_client(...) or make_client() without async with
            raise ConfigurationError(
                f"ddbkeys.aio was given a client that was not entered ({kind}): open it with "
                f"{OPEN_A_CLIENT} and pass client, inside that block."
            )
        hint = (
            " (a boto3 client is for the sync API: ddbkeys.ids, ddbkeys.partition_keys)"
            if hasattr(obj, "meta") and not hasattr(obj, "__aenter__")
            else ""
        )
        raise ConfigurationError(
            "ddbkeys.aio takes an aiobotocore DynamoDB client: "
            "async with aiobotocore.session.get_session().create_client('dynamodb') as client, "
            f"or ddbkeys.aio.make_client(); not {kind}{hint}."
        )
    service = obj.meta.service_model.service_name
    if service != "dynamodb":
        raise ConfigurationError(
            f"ddbkeys.aio takes an aiobotocore DynamoDB client, not one for {service!r}."
        )
    _home(obj)
    if serializes_again(obj):  # aioboto3's resource.meta.client: it converts values itself
        return ResourceClient(obj), table
    return obj, table


def _kind(obj: object) -> str:
    """What ``obj`` is, as a user would name it: a boto3 client's class is named after its
    service ("DynamoDB"), which read "not DynamoDB" (helper-88)."""
    if isinstance(obj, BaseClient):
        return f"a boto3 client for {obj.meta.service_model.service_name!r}"
    return type(obj).__name__


def _home(client: Any) -> None:
    """A client handed over inside a running event loop, and not yet used by ddbkeys, belongs
    to that loop (it was entered there): another loop may not be the first to send with it."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # made outside any loop: the first request says
        return
    if _last_loop(client) is None:
        record_loop(client, loop)


# --- a client closed, never entered, or in another event loop ----------------------------------

#: The event loop each client last sent a ddbkeys request in (the client's entry goes with it;
#: the loop is held weakly where it can be).
_LOOPS: weakref.WeakKeyDictionary[Any, Callable[[], asyncio.AbstractEventLoop | None]] = (
    weakref.WeakKeyDictionary()
)
_LOOPS_GUARD = threading.Lock()


def _weak(loop: asyncio.AbstractEventLoop) -> Callable[[], asyncio.AbstractEventLoop | None]:
    try:
        return weakref.ref(loop)
    except TypeError:  # a loop class without weak references
        return lambda: loop


def _last_loop(client: Any) -> asyncio.AbstractEventLoop | None:
    with _LOOPS_GUARD:
        try:
            ref = _LOOPS.get(client)
        except TypeError:  # a stand-in that cannot be weakly referenced: not tracked
            return None
    return ref() if ref is not None else None


def record_loop(client: Any, loop: asyncio.AbstractEventLoop) -> None:
    """``client`` sent a ddbkeys request in ``loop`` (its connections are that loop's now)."""
    with _LOOPS_GUARD, suppress(TypeError):  # a stand-in without weak references: not tracked
        _LOOPS[client] = _weak(loop)


def _another_loop(owner: str, other: asyncio.AbstractEventLoop | None) -> str:
    state = f" ({loop_state(other)})" if other is not None else ""
    return (
        f"{owner} was called in an event loop other than the one its aiobotocore client was "
        f"used in{state}, and a client's connections belong to one loop: "
        f"create one {owner.rsplit('.', 1)[-1]} per event loop, over a client opened in that "
        f"loop ({OPEN_A_CLIENT})."
    )


def check_loop(
    client: Any, owner: str, table: str | None = None
) -> asyncio.AbstractEventLoop | None:
    """Before ``owner`` sends a request with ``client``: a :class:`ConfigurationError` when the
    client last sent one in another loop that is still open (its connections are in use
    there), or in one that has ended and the client was left open (not entered again in this
    loop: its connections are the ended loop's, and a request sent on one may be applied and
    fail as its answer is read), before anything is sent. Nothing else is sent to find out:
    what :func:`_connections_elsewhere` reads of the client says. Else None, or the loop it
    last sent in when that cannot be read (a failure after the request is told by
    :func:`misuse`). Called in the running loop."""
    running = asyncio.get_running_loop()
    previous = _last_loop(client)
    if previous is None or previous is running:
        return None
    if not previous.is_closed():
        raise ConfigurationError(_another_loop(owner, previous), table=table)
    elsewhere = _connections_elsewhere(client, running)
    if elsewhere:
        said = _another_loop(owner, previous) + " Nothing was sent."
        raise ConfigurationError(said, table=table)
    if elsewhere is None:  # (closed, or not an aiohttp session: the request itself tells)
        return previous
    record_loop(client, running)
    return None


def _connections_elsewhere(client: Any, running: asyncio.AbstractEventLoop) -> bool | None:
    """Whether ``client`` holds connections of an event loop other than ``running`` (it was
    left open in a loop that ended); False when it holds none, or only ``running``'s (it was
    entered again here); None when that cannot be read: the client is closed, or does not
    send with aiobotocore's aiohttp session.

    No public API says which loop a client's connections belong to, so two private fields are
    read, narrowly (and only these): aiobotocore's ``AIOHTTPSession._sessions`` (None outside
    ``async with``, a new dict at each entry, holding one ``aiohttp.ClientSession`` per proxy,
    made at the first request in that request's loop; read in aiobotocore 2.x to 3.10's
    ``httpsession.py``) and aiohttp's ``ClientSession._loop`` (the loop it was made in; its
    public ``loop`` property is deprecated). A client whose fields are not these is None."""
    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    sessions = getattr(http, "_sessions", None)
    if not isinstance(sessions, dict):
        return None
    loops = [getattr(session, "_loop", None) for session in list(sessions.values())]
    if not all(isinstance(loop, asyncio.AbstractEventLoop) for loop in loops):
        return None
    return any(loop is not running for loop in loops)


def _misused(exc: BaseException) -> str | None:
    """What the HTTPClientError ``exc`` says of the client: ``"closed"`` (closed, or never
    entered), ``"loop"`` (its connections are another event loop's), or None (something else)."""
    if not isinstance(exc, HTTPClientError):
        return None
    error = exc.kwargs.get("error")
    if isinstance(error, AttributeError):  # its sessions are None outside async with
        return "closed"
    if isinstance(error, RuntimeError) and "loop" in str(error):
        return "loop"
    return None


def misuse(
    exc: BaseException,
    owner: str,
    previous: asyncio.AbstractEventLoop | None,
    table: str | None = None,
) -> ConfigurationError | None:
    """The error to raise instead of ``exc`` when it says the client ``owner`` sent with is
    closed or was never entered, or belongs to another event loop (``previous``, the loop it
    last sent in); None when ``exc`` is another failure."""
    kind = _misused(exc)
    if kind is None and not (previous is not None and isinstance(exc, HTTPClientError)):
        return None
    if kind == "closed" and previous is not None and previous.is_closed():
        # (helper-77 F4: a second asyncio.run(); the first one's end closed the client,
        # make_client's block left open, as it finalizes what that loop left open)
        message = (
            f"The aiobotocore client of {owner} is closed, and was last used in an event loop "
            "that has ended (a second asyncio.run()? the end of the first closes a client "
            "make_client() opened in it). Create one "
            f"{owner.rsplit('.', 1)[-1]} per event loop, over a client opened in that loop "
            f"({OPEN_A_CLIENT})."
        )
    elif kind == "closed":
        message = (
            f"The aiobotocore client of {owner} is closed, or was never entered: send with it "
            f"inside its block, {OPEN_A_CLIENT}, and create the ddbkeys.aio objects there."
        )
    else:  # (it may have failed as the answer was read: after the request went out)
        message = _another_loop(owner, previous) + " The request may have been applied."
    return ConfigurationError(message, table=table, cause=exc)


def _no_retry_on_misuse(caught_exception: BaseException | None = None, **_: Any) -> None:
    """A ``needs-retry`` handler on the clients :func:`make_client` builds: botocore does not
    send again with a client that is closed or in another event loop (it would fail the same
    way, after backoff)."""
    if caught_exception is not None and _misused(caught_exception) is not None:
        raise caught_exception


@asynccontextmanager
async def make_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    *,
    config: Config | None = None,
    max_attempts: int = 1,
    timeout: float | None = DEFAULT_DEADLINE,
) -> AsyncIterator[Any]:
    """An aiobotocore DynamoDB client with the settings :func:`ddbkeys.make_client` resolves
    (argument, environment, AWS config files; timeouts within ``timeout``; no botocore retries
    by default), open for the ``async with`` block::

        async with ddbkeys.aio.make_client() as client:
            counter = ddbkeys.aio.AtomicCounter(client, "orders", "order")
    """
    try:
        from aiobotocore.config import AioConfig  # noqa: PLC0415 (an optional extra)
        from aiobotocore.session import AioSession  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigurationError(INSTALL) from exc
    check_limits(max_attempts, timeout)
    settings = resolve_settings(endpoint_url, region, profile)
    try:
        session = AioSession(profile=settings.profile)
        region_name = region_for(settings, session.get_config_variable("region"))
        local = is_loopback(settings.endpoint_url)
        dummy = LOCAL_ACCESS_KEY if local and await session.get_credentials() is None else None
        opened = session.create_client(
            "dynamodb",
            region_name=region_name,
            endpoint_url=settings.endpoint_url,
            config=AioConfig(**client_options(max_attempts, timeout)).merge(
                cast("AioConfig", config or AioConfig())  # (it merges any Config)
            ),
            aws_access_key_id=dummy,
            aws_secret_access_key=dummy,
        )
    except ProfileNotFound as exc:
        raise ConfigurationError(
            f"AWS profile {exc.kwargs.get('profile', settings.profile)!r} not found in the AWS "
            "config files: check the profile or AWS_PROFILE.",
            cause=exc,
        ) from exc
    except BotoCoreError as exc:
        raise translate_error(exc) from exc
    async with opened as client:
        remember(client, session, aws_access_key_id=dummy, aws_secret_access_key=dummy)
        guard(client).meta.events.register_first("needs-retry.dynamodb", _no_retry_on_misuse)
        yield as_async_client(client, None)[0]
