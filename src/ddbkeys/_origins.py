"""Where a client ddbkeys built came from: its session and the keys it was given (DynamoDB
Local's stand-in ones), so that a DynamoDB Streams client like it is made from the same
session, and signs with the very credentials object it signs with.

Kept beside the client (a weak map: an entry goes with its client), never read from it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, TypeVar

C = TypeVar("C")


@dataclass(frozen=True)
class Origin:
    """The session a client was created from, and the keyword arguments it was given beyond
    the session's own (``aws_access_key_id``/``aws_secret_access_key``, or none)."""

    session: Any
    keys: dict[str, Any] = field(default_factory=dict)


_ORIGINS: weakref.WeakKeyDictionary[Any, Origin] = weakref.WeakKeyDictionary()


def remember(client: C, session: Any, **keys: Any) -> C:
    """Note that ddbkeys made ``client`` from ``session`` (with ``keys``); returns it."""
    _ORIGINS[client] = Origin(session, {k: v for k, v in keys.items() if v is not None})
    return client


def origin_of(client: Any) -> Origin | None:
    """Where ``client`` came from, if ddbkeys made it."""
    try:
        return _ORIGINS.get(client)
    except TypeError:  # not weakly referenceable: not one ddbkeys made
        return None
