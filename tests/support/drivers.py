"""One test body for both drivers: build a strategy (or call a public function) by its public
name, then call it synchronously whichever driver runs it.

- ``Driver("sync")`` builds the class of :mod:`ddbkeys` (``ddbkeys.ids``,
  ``ddbkeys.partition_keys``) and hands it back as it is.
- ``Driver("async")`` builds the class of :mod:`ddbkeys.aio` of the same name, on an event loop
  of its own running in a background thread, with an aiobotocore client made (on that loop) for
  the same endpoint, region, credentials, timeouts and botocore attempts as the boto3 client the
  test passed. What it hands back is an :class:`AsyncProxy`: each method runs on that loop
  (``asyncio.run_coroutine_threadsafe``) and is waited for, ``async for`` becomes plain
  iteration, and attributes (``usage``, ``table``...) pass through. Threads of a test calling a
  proxy become concurrent tasks of the one event loop: exactly what the asyncio driver must
  survive.

A name :mod:`ddbkeys.aio` does not have yet skips the async test with the reason
:data:`NOT_IN_AIO` (grep for it to find what is left to port).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar, cast

import pytest
from botocore.client import BaseClient

T = TypeVar("T")

__all__ = [
    "DRIVERS",
    "NOT_IN_AIO",
    "AsyncProxy",
    "Driver",
    "EventLoopThread",
    "async_client_for",
    "in_thread",
]

DRIVERS = ["sync", "async"]
#: The reason of every async test skipped because its class or function is not ported yet.
NOT_IN_AIO = "not in ddbkeys.aio yet"
#: Where the sync API's public names live, looked up in this order.
SYNC_HOMES = ("ddbkeys.ids", "ddbkeys.partition_keys", "ddbkeys")


class EventLoopThread:
    """An event loop running in a daemon thread; :meth:`run` waits for a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="ddbkeys-test-loop", daemon=True
        )
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = 600) -> T:
        """Run ``coroutine`` on the loop and wait for its result (or its exception)."""
        if threading.current_thread() is self.thread:
            raise RuntimeError("a proxy was called from its own event loop (it would deadlock)")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` called on the loop, awaited when it gives an awaitable."""

        async def invoke() -> Any:
            result = function(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        return self.run(invoke())

    def close(self) -> None:
        """Cancel what is left on the loop, stop it and close it."""

        async def cancel_the_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.loop.is_running():
            try:
                self.run(cancel_the_rest(), timeout=10)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self.thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


def _sync_base(client: Any) -> BaseClient | None:
    """The botocore client inside what ddbkeys wraps a client in (adapters), or None."""
    seen = 0
    while client is not None and seen < 5:
        if isinstance(client, BaseClient):
            # (an aiobotocore client is a BaseClient too: not a sync one, nor what holds it)
            return None if type(client).__module__.startswith("aiobotocore") else client
        client = getattr(client, "client", None)
        seen += 1
    return None


def is_sync_client(obj: object) -> bool:
    """A boto3 DynamoDB client, bare or wrapped by ddbkeys (not an aiobotocore one)."""
    if type(obj).__module__.startswith("aiobotocore"):
        return False
    base = _sync_base(obj)
    return base is not None and base.meta.service_model.service_name == "dynamodb"


async def async_client_for(client: Any) -> Any:
    """An aiobotocore DynamoDB client (entered) for the endpoint, region, credentials, timeouts
    and botocore attempts of the boto3 ``client``: close it with ``await c.__aexit__(...)``."""
    from aiobotocore.config import AioConfig  # noqa: PLC0415 - the optional extra
    from aiobotocore.session import get_session  # noqa: PLC0415

    base = _sync_base(client)
    assert base is not None, f"not a boto3 DynamoDB client: {client!r}"
    config: Any = base.meta.config
    retries = dict(getattr(config, "retries", None) or {})
    signer: Any = getattr(base, "_request_signer")  # noqa: B009 - the same identity
    credentials = signer._credentials
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    creator = get_session().create_client(
        "dynamodb",
        endpoint_url=base.meta.endpoint_url,
        region_name=base.meta.region_name,
        aws_access_key_id=frozen.access_key if frozen else None,
        aws_secret_access_key=frozen.secret_key if frozen else None,
        aws_session_token=frozen.token if frozen else None,
        config=AioConfig(
            retries=retries or None,
            connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout,
            max_pool_connections=max(64, config.max_pool_connections or 10),
        ),
    )
    return await creator.__aenter__()


class AsyncProxy:
    """An object of :mod:`ddbkeys.aio` seen synchronously: methods run on the driver's loop and
    are waited for; ``async for`` is plain iteration (one iterator, kept, as the sync objects
    are iterated once); attributes pass through (and are set through)."""

    __slots__ = ("_iterator", "_runner", "_target")

    def __init__(self, target: Any, runner: EventLoopThread) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_runner", runner)
        object.__setattr__(self, "_iterator", None)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not (inspect.ismethod(value) or inspect.isfunction(value)):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return wrap(self._runner.call(value, *unwrap(args), **unwrap(kwargs)), self._runner)

        call.__name__ = name
        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._iterator is None:
            target = self._target
            if not hasattr(target, "__aiter__"):
                raise TypeError(f"{type(target).__name__} is not async-iterable")
            object.__setattr__(self, "_iterator", target.__aiter__())

        async def step() -> Any:
            return await self._iterator.__anext__()

        try:
            return wrap(self._runner.run(step()), self._runner)
        except StopAsyncIteration:
            raise StopIteration from None

    def __repr__(self) -> str:
        return f"AsyncProxy({self._target!r})"


def wrap(value: Any, runner: EventLoopThread) -> Any:
    """What an aio call gave, seen synchronously: an object of an aio class (or an async
    iterable) as a proxy, anything else as it is."""
    if hasattr(value, "__aiter__") or _has_coroutine_methods(type(value)):
        return AsyncProxy(value, runner)
    return value


def _has_coroutine_methods(kind: type) -> bool:
    if not kind.__module__.startswith("ddbkeys"):
        return False
    return any(
        inspect.iscoroutinefunction(getattr(kind, n, None))
        for n in dir(kind)
        if not n.startswith("__")
    )


def unwrap(values: Any) -> Any:
    """Arguments with every proxy replaced by the aio object it stands for."""
    if isinstance(values, tuple):
        return tuple(v._target if isinstance(v, AsyncProxy) else v for v in values)
    return {k: v._target if isinstance(v, AsyncProxy) else v for k, v in values.items()}


def aio_name(name: str) -> Any | None:
    """The aio class or function ``name``: exported by ``ddbkeys.aio``, or defined in one of its
    modules (before the lead wires the export), else None."""
    try:
        aio = importlib.import_module("ddbkeys.aio")
    except ImportError:
        return None
    found = getattr(aio, name, None)
    if found is not None:
        return found
    for module in pkgutil.iter_modules(aio.__path__, "ddbkeys.aio."):
        try:
            candidate = getattr(importlib.import_module(module.name), name, None)
        except ImportError:
            continue
        if candidate is not None and getattr(candidate, "__module__", "").startswith("ddbkeys.aio"):
            return candidate
    return None


def sync_name(name: str) -> Any:
    for home in SYNC_HOMES:
        found = getattr(importlib.import_module(home), name, None)
        if found is not None:
            return found
    raise LookupError(f"no public name {name!r} in {', '.join(SYNC_HOMES)}")


class Driver:
    """``sync`` or ``async``: how a test builds and calls the public API (see the module)."""

    def __init__(self, name: str) -> None:
        if name not in DRIVERS:
            raise ValueError(name)
        self.name = name
        self._runner: EventLoopThread | None = None
        self._clients: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    @property
    def is_async(self) -> bool:
        return self.name == "async"

    def __repr__(self) -> str:
        return f"Driver({self.name!r})"

    def require(self, *names: str) -> None:
        """Skip the test (async) when ``ddbkeys.aio`` lacks one of ``names``."""
        if not self.is_async:
            return
        missing = [n for n in names if aio_name(n) is None]
        if missing:
            pytest.skip(f"{', '.join(missing)} {NOT_IN_AIO}")

    def public(self, name: str) -> Any:
        """The class or function ``name`` of this driver's API (skipping when not ported)."""
        if not self.is_async:
            return sync_name(name)
        self.require(name)
        return aio_name(name)

    def make(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """``name(*args, **kwargs)`` of this driver's API: a sync object, or a proxy of an aio
        one built on the loop (a boto3 client among the arguments becomes an aiobotocore client
        for the same endpoint)."""
        return self.call(name, *args, **kwargs)

    def call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """A public function (``distinct_partition_keys``, ``audit_attribute``...) or class of
        this driver's API, called with ``args``: its result, seen synchronously."""
        function = self.public(name)
        if not self.is_async:
            return function(*args, **kwargs)
        runner = self.runner()
        args = tuple(self.client(a) if is_sync_client(a) else a for a in unwrap(args))
        kwargs = {k: self.client(v) if is_sync_client(v) else v for k, v in unwrap(kwargs).items()}
        return wrap(runner.call(function, *args, **kwargs), runner)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of a test's own on the driver's loop (async only)."""
        return self.runner().run(coroutine)

    def runner(self) -> EventLoopThread:
        with self._lock:
            if self._runner is None:
                pytest.importorskip("aiobotocore", reason="the asyncio driver needs aiobotocore")
                self._runner = EventLoopThread()
            return self._runner

    def client(self, sync_client: Any) -> Any:
        """The client this driver sends with for ``sync_client``: itself (sync), or an
        aiobotocore client for the same endpoint, made once and closed with the driver."""
        if not self.is_async:
            return sync_client
        with self._lock:
            known = self._clients.get(id(sync_client))
        if known is not None:
            return known[1]
        made = self.runner().run(async_client_for(sync_client))
        with self._lock:
            known = self._clients.setdefault(id(sync_client), (sync_client, made))
        if known[1] is not made:
            self.runner().run(made.__aexit__(None, None, None))
        return known[1]

    def close(self) -> None:
        """Close the aiobotocore clients and the loop (after the test)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        clients = [made for _, made in self._clients.values()]
        self._clients.clear()
        try:
            for made in clients:
                runner.run(made.__aexit__(None, None, None), timeout=30)
        finally:
            runner.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def in_thread(coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
    """``asyncio.run(coroutine)`` in a thread of its own (an event loop of its own), waited
    for ``timeout`` seconds: its result, or its error raised here."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, asyncio.run(coroutine)))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    ok, value = outcome[0]
    if ok:
        return cast(T, value)
    raise value
