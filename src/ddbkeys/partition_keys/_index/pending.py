"""Collections whose reconciliation did not settle: the *pending set* of a marker index's record.

A reconciliation (see :mod:`ddbkeys.partition_keys._index.maintain`) gives up after ``MAX_ROUNDS``
rounds when the collection keeps changing under it. A maintainer (``index follow``, the Lambda
handler) does not stop there: it adds the collection to the pending set of the index's record in
the state table (``pending``, a string set), then goes on, and the shard's position moves past
the record as if it were applied. Every proven listing re-checks each pending collection with a
consistent Query, as it does the collections the stream names past the positions (see
:mod:`ddbkeys.partition_keys._proof.evidence` for why that keeps the proof).

Each give-up adds an element of its own (the collection's key, when, and a nonce of the
maintainer's), with an ADD of that element alone. A later reconciliation of the collection that
settles takes out the elements its maintainer knew of *before it began* (a DELETE of those
elements alone): an element added since, by another maintainer giving up again, stays. So two
maintainers never undo each other, and an element leaves the set only once a reconciliation
that began after its give-up has settled, or once a newer element of the same collection is in
(a maintainer that gives up again on a collection replaces the elements of it it knew of: one
element per maintainer, not one per batch).

The set is bounded, so that the record stays well under DynamoDB's 400 KB item: an element is
added only while the set holds fewer than ``MAX_PENDING`` elements (``MAX_LARGE_PENDING`` for an
element longer than ``SMALL_ELEMENT`` bytes; one more when the element replaces one of the same
collection), on the condition of the set's size, in the same request: at most
:func:`most_bytes` bytes (about 113 KB). A collection that cannot be recorded (the set is full)
holds its shard's position where it is: the follower goes on applying records but saves no
position past it until the collection settles or can be recorded; the Lambda handler reports it
as a batch item failure, so Lambda sends it again.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Request, update_item
from ddbkeys._errors import error_code
from ddbkeys._retry import Deadline
from ddbkeys.partition_keys._index.maintain import Outcome, UnsettledError, reconcile_flow
from ddbkeys.partition_keys._index.markers import hashable
from ddbkeys.partition_keys._listing.base import Key

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._index.state import StateCore

__all__ = [
    "MAX_LARGE_PENDING",
    "MAX_PENDING",
    "PENDING_ATTRIBUTE",
    "RETRY_PENDING",
    "SMALL_ELEMENT",
    "Applied",
    "Nonces",
    "add_pending",
    "apply_flow",
    "element",
    "element_key",
    "limit",
    "most_bytes",
    "pending_keys",
    "remove_pending",
    "settled_elements",
]

#: The attribute of the index's record that holds the pending set (a string set).
PENDING_ATTRIBUTE = "pending"
#: The most elements the pending set holds: past it, a collection that does not settle holds
#: its shard's position (see the module's docstring).
MAX_PENDING = 256
#: The most elements the set may hold when one longer than ``SMALL_ELEMENT`` is added.
MAX_LARGE_PENDING = 16
#: An element up to this many bytes (encoded) is small: keys of up to about 200 bytes.
SMALL_ELEMENT = 256
#: The longest partition key DynamoDB allows (bytes).
MAX_KEY_BYTES = 2048
#: Seconds between a maintainer's tries of the pending collections it knows of.
RETRY_PENDING = 10.0
_KINDS = frozenset({"S", "N", "B"})


def element(key: Key, now: float, nonce: str) -> str:
    """The pending set's element for the collection ``key`` (typed) given up at ``now`` by the
    maintainer whose nonce is ``nonce``: ``<kind>:<base64 of the key's bytes> <time> <nonce>``
    (base64: a key of 2,048 bytes takes 2,732 characters, whatever it holds)."""
    kind, raw = next(iter(key.items()))
    data = bytes(raw) if kind == "B" else str(raw).encode()
    return f"{kind}:{base64.b64encode(data).decode()} {now:.3f} {nonce}"


def element_key(text: str) -> Key | None:
    """The collection (typed key) an element names; None when it is not one ddbkeys wrote."""
    head = text.split(" ", 1)[0]
    kind, _, encoded = head.partition(":")
    if kind not in _KINDS or not encoded:
        return None
    try:
        data = base64.b64decode(encoded, validate=True)
        return {kind: data if kind == "B" else data.decode()}
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def pending_keys(elements: Iterable[str]) -> list[Key]:
    """The distinct collections ``elements`` name (those ddbkeys wrote), in a fixed order."""
    found: dict[tuple[str, Any], Key] = {}
    for text in elements:
        key = element_key(text)
        if key is not None:
            found.setdefault(hashable(key), key)
    return [found[h] for h in sorted(found)]


def settled_elements(known: Iterable[str], settled: Iterable[Key]) -> list[str]:
    """The elements of ``known`` (those a maintainer knew of before its reconciliations began)
    that name a collection of ``settled`` (whose reconciliation settled): what it takes out."""
    done = {hashable(k) for k in settled}
    out = []
    for text in known:
        key = element_key(text)
        if key is not None and hashable(key) in done:
            out.append(text)
    return sorted(out)


def limit(text: str, most: int = MAX_PENDING) -> int:
    """How many elements the set may hold when ``text`` is added: ``most``, or for an element
    longer than ``SMALL_ELEMENT`` bytes at most ``MAX_LARGE_PENDING``."""
    return most if len(text.encode()) <= SMALL_ELEMENT else min(most, MAX_LARGE_PENDING)


def most_bytes(most: int = MAX_PENDING) -> int:
    """The most bytes the pending set's elements take: at most ``MAX_LARGE_PENDING`` large ones
    (each added while the set held fewer; one more for a replacement), the rest small."""
    largest = len(element({"B": bytes(MAX_KEY_BYTES)}, 9_999_999_999.999, "f" * 24).encode())
    return (min(most, MAX_LARGE_PENDING) + 1) * largest + (most + 1) * SMALL_ELEMENT


class Nonces:
    """A maintainer's nonces: unique to it (random) and to each give-up (counted), so that no
    two give-ups share an element."""

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix if prefix is not None else secrets.token_hex(6)
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}-{next(self._count)}"


@dataclass(frozen=True)
class Applied:
    """What applying one collection did: its reconciliation's ``outcome`` (None: it did not
    settle) and, if it did not, the pending ``element`` recorded (None: the set was full, and
    the collection is not applied), and the elements of the collection it replaced."""

    key: Key
    outcome: Outcome | None
    element: str | None = None
    replaced: tuple[str, ...] = ()

    @property
    def applied(self) -> bool:
        """Settled, or recorded pending: the record that named it may be passed."""
        return self.outcome is not None or self.element is not None


def apply_flow(
    index: MarkerCore,
    store: StateCore,
    key: Key,
    nonce: Callable[[], str],
    most: int = MAX_PENDING,
    known: Iterable[str] = (),
) -> Flow[Applied]:
    """Reconcile the collection ``key``; when it does not settle, add it to the pending set of
    the index's record in ``store`` (unless the set is full). Any other failure goes up.

    Elements of ``key`` among ``known`` (those the maintainer knows of) are then replaced: taken
    out once the new one is in, so that a collection that keeps giving up holds one element of
    each maintainer, not one a batch. (The new element stands for them: an element leaves only
    once a reconciliation begun after it settled, which began after theirs too.)"""
    try:
        outcome = yield from reconcile_flow(index, key, index.begin())
    except UnsettledError:
        text = element(key, store.clock(), nonce())
        old = tuple(settled_elements(known, [key]))
        added = yield from add_pending(store, index.table, index.name, text, most, bool(old))
        if not added:
            return Applied(key, None)
        yield from remove_pending(store, index.table, index.name, old)
        return Applied(key, None, text, old)
    return Applied(key, outcome)


def add_pending(
    store: StateCore,
    table: str,
    index: str,
    text: str,
    most: int = MAX_PENDING,
    replacing: bool = False,
) -> Flow[bool]:
    """Add the element ``text`` to the pending set of ``table``'s index ``index``, in one
    request conditioned on the set's size (see :func:`limit`; one more when ``replacing``: an
    element of the same collection leaves next). False when the set is full."""
    bound = limit(text, most) + replacing
    if bound <= 0:
        return False
    params: Any = {
        "TableName": store.name,
        "Key": store.key(table, index),
        "UpdateExpression": "ADD #p :p",
        "ConditionExpression": "attribute_not_exists(#p) OR size(#p) < :n",
        "ExpressionAttributeNames": {"#p": PENDING_ATTRIBUTE},
        "ExpressionAttributeValues": {":p": {"SS": [text]}, ":n": {"N": str(bound)}},
    }
    answer = yield from _send(store, lambda: update_item(params, counted=False), conditional=True)
    return answer is not None


def remove_pending(store: StateCore, table: str, index: str, texts: Iterable[str]) -> Flow[None]:
    """Take the elements ``texts`` out of the pending set (a DELETE of those alone)."""
    gone = sorted(set(texts))
    if not gone:
        return
    params: Any = {
        "TableName": store.name,
        "Key": store.key(table, index),
        "UpdateExpression": "DELETE #p :p",
        "ExpressionAttributeNames": {"#p": PENDING_ATTRIBUTE},
        "ExpressionAttributeValues": {":p": {"SS": gone}},
    }
    yield from _send(store, lambda: update_item(params, counted=False), conditional=False)


def _send(store: StateCore, make: Callable[[], Request], *, conditional: bool) -> Flow[Any]:
    """One request (made anew for each attempt) through the retry layer: its answer, or None
    when ``conditional`` and its condition failed."""

    def attempt(_: int) -> Flow[Any]:
        try:
            answer = yield make()
        except ClientError as exc:
            if conditional and error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        return answer

    return attempts(
        attempt,
        what="writing the index's pending collections",
        table=store.name,
        policy=store.retry,
        deadline=Deadline(store.deadline, clock=store.retry.clock),
        usage=store.usage,
    )


def unpend_flow(
    store: StateCore, table: str, index: str, known: Iterable[str], settled: Iterable[Key]
) -> Flow[list[str]]:
    """Take out the elements of ``known`` (those known before the reconciliations began) that
    name a collection of ``settled``; the elements taken out."""
    gone = settled_elements(known, settled)
    yield from remove_pending(store, table, index, gone)
    return gone


def retry_flow(
    index: MarkerCore, store: StateCore, known: Iterable[str]
) -> Flow[tuple[list[Outcome], list[str]]]:
    """Reconcile each collection the elements ``known`` name (pending already: one that does
    not settle again stays so); take out the elements of those that settle. Their outcomes,
    and the elements taken out."""
    known = frozenset(known)
    outcomes: list[Outcome] = []
    settled: list[Key] = []
    for key in pending_keys(known):
        try:
            outcome = yield from reconcile_flow(index, key, index.begin())
        except UnsettledError:
            continue
        outcomes.append(outcome)
        if outcome is not Outcome.CLASH:
            settled.append(key)
    gone = yield from unpend_flow(store, index.table, index.name, known, settled)
    return outcomes, gone
