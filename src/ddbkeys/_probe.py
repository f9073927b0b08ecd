"""Why a request had no answer by its deadline: nothing listening, or a slow endpoint.

A client ddbkeys builds tries a refused connection once and says so at once. A plain
``boto3.client`` tries it again on its own, backing off for about 25 s, so a shorter deadline
comes first and the request is given up unanswered. One TCP connect to the endpoint's host and
port then tells the two apart: refused (or a name that does not resolve) is raised as botocore's
:class:`~botocore.exceptions.EndpointConnectionError` (:class:`StillRetried`: the client's own
retries may yet send it, so a write may yet be applied), what the client itself would raise in
the end; anything else stays :class:`~ddbkeys._errors.NoAnswerInTime`. No connect is tried
where the request goes through a proxy (it would not go where the request went), and the
connect, name lookup included, takes :data:`PROBE_TIMEOUT` at most."""

from __future__ import annotations

import asyncio
import socket
import threading
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import EndpointConnectionError

from ddbkeys._errors import NoAnswerInTime

__all__ = [
    "PROBE_TIMEOUT",
    "StillRetried",
    "StillTrying",
    "address",
    "not_answered",
    "not_answered_async",
    "proxied",
    "retries_itself",
]

#: Seconds the connect may take: a refusal comes at once, a host that drops packets never.
PROBE_TIMEOUT = 0.5

_PORTS = {"http": 80, "https": 443}


def address(endpoint_url: str | None) -> tuple[str, int] | None:
    """The host and port ``endpoint_url`` connects to (None: not a URL a probe can reach)."""
    if not endpoint_url:
        return None
    try:
        parts = urlsplit(endpoint_url)
        port = parts.port or _PORTS.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.hostname, port


class StillRetried(EndpointConnectionError):
    """The endpoint refused connections when the deadline came, while the client went on
    trying on its own: its retries may yet send the request (a write may yet be applied)."""


class StillTrying(NoAnswerInTime):
    """A request that had not been answered when the deadline came, sent by a client that
    retries on its own and was not made by ddbkeys (whose clients stop retrying at the
    deadline): its retries, in the call ddbkeys stopped waiting for, may send it again
    (helper-79 F2: a write was applied 3 more times after the error)."""


def retries_itself(config: Any) -> bool:
    """Whether a client with ``config`` sends a request again on its own (botocore's default
    retry modes do, up to 3 to 10 attempts; ``total_max_attempts=1`` or ``max_attempts=0``
    turn it off)."""
    retries = getattr(config, "retries", None) or {}
    if "total_max_attempts" in retries:
        return int(retries["total_max_attempts"]) > 1
    if "max_attempts" in retries:
        return int(retries["max_attempts"]) > 0
    return True


def _verdict(
    endpoint_url: str | None, waited: float, refused: bool, trying: bool = False
) -> Exception:
    endpoint_url = endpoint_url or "the endpoint"
    if refused:
        return StillRetried(endpoint_url=endpoint_url)
    kind = StillTrying if trying else NoAnswerInTime
    return kind(endpoint_url=endpoint_url, waited=waited)


def proxied(endpoint_url: str | None, config: Any = None) -> bool:
    """Whether requests to ``endpoint_url`` go through an HTTP proxy (the client's
    ``Config(proxies=...)``, or HTTP_PROXY/HTTPS_PROXY not bypassed by NO_PROXY): a connect
    of one's own would not go where the request went."""
    scheme = urlsplit(endpoint_url or "").scheme
    if (getattr(config, "proxies", None) or {}).get(scheme):
        return True
    where = address(endpoint_url)
    environ = urllib.request.getproxies()
    return where is not None and bool(environ.get(scheme)) and not _bypassed(where[0])


def _bypassed(host: str) -> bool:
    """Whether NO_PROXY (or the system's list) names ``host``."""
    try:
        return bool(urllib.request.proxy_bypass(host))
    except OSError:  # (a lookup that failed: take the proxy as used)
        return False


def _refused(where: tuple[str, int]) -> bool:
    """One TCP connect, in a thread of its own so that a name lookup that hangs cannot hold the
    caller past :data:`PROBE_TIMEOUT` (the socket's own timeout does not cover it)."""
    outcome: list[bool] = []

    def connect() -> None:
        try:
            socket.create_connection(where, timeout=PROBE_TIMEOUT).close()
        except (ConnectionRefusedError, socket.gaierror):
            outcome.append(True)
        except OSError:  # (a timeout, a host that cannot be reached: not known to be refused)
            outcome.append(False)

    thread = threading.Thread(target=connect, name="ddbkeys-probe", daemon=True)
    thread.start()
    thread.join(PROBE_TIMEOUT)
    return bool(outcome) and outcome[0]


def not_answered(
    endpoint_url: str | None, waited: float, config: Any = None, *, trying: bool = False
) -> Exception:
    """The error for a request given up at its deadline after ``waited`` seconds (one connect
    of at most :data:`PROBE_TIMEOUT` seconds first, unless the client's ``config`` or the
    environment sends it through a proxy); ``trying``: the client goes on retrying it
    (:class:`StillTrying`)."""
    where = address(endpoint_url)
    refused = where is not None and not proxied(endpoint_url, config) and _refused(where)
    return _verdict(endpoint_url, waited, refused=refused, trying=trying)


async def not_answered_async(
    endpoint_url: str | None, waited: float, config: Any = None
) -> Exception:
    """:func:`not_answered` on the running event loop."""
    where = address(endpoint_url)
    if where is None or proxied(endpoint_url, config):
        return _verdict(endpoint_url, waited, refused=False)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):  # (the name's lookup included)
            _, writer = await asyncio.open_connection(*where)
        writer.close()
    except (ConnectionRefusedError, socket.gaierror):
        return _verdict(endpoint_url, waited, refused=True)
    except (OSError, TimeoutError):
        pass
    return _verdict(endpoint_url, waited, refused=False)
