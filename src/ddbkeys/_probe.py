"""Why a request had no answer by its deadline: nothing listening, or a slow endpoint.

A client ddbkeys builds tries a refused connection once and says so at once. A plain
``boto3.client`` tries it again on its own, backing off for about 25 s, so a shorter deadline
comes first and the request is given up unanswered. One TCP connect to the endpoint's host and
port then tells the two apart: refused (or a name that does not resolve) is raised as botocore's
:class:`~botocore.exceptions.EndpointConnectionError` (:class:`StillRetried`: the client's own
retries may yet send it, so a write may yet be applied), what the client itself would raise in
the end; anything else stays :class:`~ddbkeys._errors.NoAnswerInTime`."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

from botocore.exceptions import EndpointConnectionError

from ddbkeys._errors import NoAnswerInTime

__all__ = ["PROBE_TIMEOUT", "StillRetried", "address", "not_answered", "not_answered_async"]

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


def _verdict(endpoint_url: str | None, waited: float, refused: bool) -> Exception:
    endpoint_url = endpoint_url or "the endpoint"
    if refused:
        return StillRetried(endpoint_url=endpoint_url)
    return NoAnswerInTime(endpoint_url=endpoint_url, waited=waited)


def not_answered(endpoint_url: str | None, waited: float) -> Exception:
    """The error for a request given up at its deadline after ``waited`` seconds (one connect
    of at most :data:`PROBE_TIMEOUT` seconds first)."""
    where = address(endpoint_url)
    if where is None:
        return _verdict(endpoint_url, waited, refused=False)
    try:
        socket.create_connection(where, timeout=PROBE_TIMEOUT).close()
    except (ConnectionRefusedError, socket.gaierror):
        return _verdict(endpoint_url, waited, refused=True)
    except OSError:  # (a timeout, a host that cannot be reached: not known to be refused)
        pass
    return _verdict(endpoint_url, waited, refused=False)


async def not_answered_async(endpoint_url: str | None, waited: float) -> Exception:
    """:func:`not_answered` on the running event loop."""
    where = address(endpoint_url)
    if where is None:
        return _verdict(endpoint_url, waited, refused=False)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            _, writer = await asyncio.open_connection(*where)
        writer.close()
    except (ConnectionRefusedError, socket.gaierror):
        return _verdict(endpoint_url, waited, refused=True)
    except (OSError, TimeoutError):
        pass
    return _verdict(endpoint_url, waited, refused=False)
