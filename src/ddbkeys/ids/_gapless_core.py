"""The gapless sequence's decisions, apart from any client: a value built from its settings alone
(:class:`GaplessCore`). How an item is checked, what a commit's transaction holds, and what
each answer or cancellation means, as flows (see :mod:`ddbkeys._core`) that take what they need
as arguments: the table's description and where the counter lives (in a :class:`Commit`), and
what the sequence knows of its counter between calls (a
:class:`~ddbkeys.ids._gapless_state.CounterState`).
:class:`~ddbkeys.ids._gapless.GaplessSequence` (sync or asyncio) is this core, a link
(:class:`~ddbkeys.ids._link.Link`), a driver and, with group commit, a group."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import write_units
from ddbkeys._core.steps import Flow
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo, check_name, check_table_name, to_attributes
from ddbkeys.ids._base import (
    Attempts,
    Contention,
    CounterItem,
    ItemKeyClashError,
    SequenceExhaustedError,
    Throttled,
    cancelled_error,
    check_counter_attribute,
    counter_key_from,
    counter_written,
    earliest,
    key_names,
    put_if_new,
    stale_images,
    transact,
)
from ddbkeys.ids._cancellation import Cancellation, Verdict
from ddbkeys.ids._counter_item import read_counter, read_counter_item, warn_if_new
from ddbkeys.ids._exact import exact_update
from ddbkeys.ids._gapless_exists import exists_error
from ddbkeys.ids._values import (
    DEFAULT_WIDTH,
    MAX_ID,
    check_item_key,
    check_name_and_key,
    check_padding,
    counter_label,
    counter_value,
    id_value,
    item_key,
    show_key,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

    from ddbkeys.ids._gapless_state import CounterState

__all__ = [
    "MAX_BATCH",
    "RETRY",
    "Commit",
    "GaplessCore",
    "Pending",
    "earliest",
]

Item = dict[str, "AttributeValueTypeDef"]
MAX_BATCH = 99  # TransactWriteItems takes 100 actions: the counter and 99 items
#: The sequence's retry policy when none is given: a writer that lost a race learns the
#: counter's new value at once, so short waits (and many of them) keep it from being starved.
RETRY = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.25)
#: After a lost race, a writer waits up to this many times its last attempt's round trip (the
#: counter's read and the transaction: the window in which another commit makes it lose),
#: doubled with each further loss in a row ...
SPREAD = 4
#: ... and at most ``max_delay`` or this many round trips, whichever is longer (a busy server
#: stretches the waits with it: a fixed cap would bunch the writers up again).
MOST_ROUND_TRIPS = 16


@dataclass(frozen=True)
class Pending:
    """A ``put()`` waiting for a group commit: its prepared item and its call's deadline."""

    item: Item
    deadline: Deadline


@dataclass
class Commit:
    """One commit of ``items`` (``atomic``: all of them or none), with the table's description
    ``info`` and where the ``counter`` lives; and what its attempts learn: the items ``live``
    still to write, each item's result, the counter value the next transaction builds on (None:
    read it), its token, the lost races in a row, whether to read the counter afresh before the
    next attempt (it waited), and how long the last attempt took (its read, if any, and its
    transaction; seconds)."""

    items: Sequence[Item]
    info: TableInfo
    counter: CounterItem
    atomic: bool = False
    last: int | None = None
    token: str | None = None
    streak: int = 0
    reread: bool = False
    rtt: float = 0.0
    live: list[int] = field(init=False)
    results: list[int | BaseException | None] = field(init=False)

    def __post_init__(self) -> None:
        self.live = list(range(len(self.items)))
        self.results = [None] * len(self.items)


@dataclass(frozen=True)
class GaplessCore:
    """The sequence ``name`` of ``table``: the last id in ``counter_attribute`` of the counter
    item (``{partition key: name}``, or ``counter_key`` whole, in ``counter_table``: by default
    ``table``), each id in ``id_attribute`` of its item (``prefix`` and ``width`` digits in a
    string key), at most ``max_batch`` items a commit; ``policy`` says how long a writer that
    lost a race waits. Settings no sequence can have are a :class:`ConfigurationError` here."""

    table: str
    name: str = "sequence"
    key_attribute: str | None = None
    counter_key: Mapping[str, Any] | None = None
    counter_table: str = ""  # (empty: the table itself)
    counter_attribute: str = "last_id"
    id_attribute: str = "id"
    width: int = DEFAULT_WIDTH
    prefix: str = ""
    max_batch: int = MAX_BATCH
    policy: RetryPolicy = RETRY

    def __post_init__(self) -> None:
        table = check_table_name(self.table)
        check_name("sequence name", self.name, table=table)
        counter_table = check_table_name(self.counter_table) if self.counter_table else table
        object.__setattr__(self, "counter_table", counter_table)
        check_counter_attribute(self.counter_attribute, table=table)
        check_name("id attribute", self.id_attribute, table=table)
        check_padding(self.width, self.prefix, table=table)
        if not isinstance(self.max_batch, int) or not 1 <= self.max_batch <= MAX_BATCH:
            raise ConfigurationError(f"max_batch must be 1 to {MAX_BATCH}, not {self.max_batch!r}.")
        if self.counter_key is not None and not isinstance(self.counter_key, Mapping):
            raise ConfigurationError(
                "counter_key must be a mapping of key attributes to values, not "
                f"{self.counter_key!r}.",
                table=table,
            )
        check_name_and_key(
            "GaplessSequence", self.name, "sequence", self.counter_key, table=counter_table
        )

    @property
    def label(self) -> str:
        """How messages name it (see ``_values.counter_label``)."""
        return counter_label(self.name, self.counter_key)

    # --- where things are ------------------------------------------------------------------

    def counter_item(self, info: TableInfo) -> CounterItem:
        """Where the counter lives, from the description of ``counter_table``."""
        key = counter_key_from(
            info, self.counter_table, self.name, self.key_attribute, self.counter_key
        )
        return CounterItem(self.counter_table, key, self.counter_attribute)

    def id_target(self, info: TableInfo) -> KeyAttribute | None:
        """The key attribute that receives the id, or None when the id is not part of the key."""
        for key in (info.partition_key, info.sort_key):
            if key is not None and key.name == self.id_attribute:
                return key
        return None

    @staticmethod
    def value(counter: CounterItem, value: Mapping[str, Any] | None) -> int:
        """The counter's number (0 when it is missing); CounterStateError for anything else."""
        number = counter_value(
            value, table=counter.table, key=counter.key, attribute=counter.attribute
        )
        return number or 0

    # --- preparing items -------------------------------------------------------------------

    def prepare(
        self, items: Sequence[Mapping[str, Any]], typed: bool, info: TableInfo
    ) -> list[Item]:
        """The items, typed and checked against the table's key schema (before any write)."""
        return [self._prepare(item, info, typed=typed, position=n) for n, item in enumerate(items)]

    def _prepare(
        self, item: Mapping[str, Any], info: TableInfo, *, typed: bool, position: int = 0
    ) -> Item:
        prepared = to_attributes(item, table=self.table, typed=typed)
        where = _where(position)
        if self.id_attribute in prepared:
            raise ConfigurationError(
                f"{where} already has the id attribute {self.id_attribute!r}; the sequence "
                f"of table {self.table!r} sets it. Leave it out.",
                table=self.table,
            )
        check_item_key(prepared, info, skip=self.id_attribute, where=where)
        target = self.id_target(info)
        if (target is None or target.type != "S") and (self.prefix or self.width != DEFAULT_WIDTH):
            # (a helper's prefix="INV-" was dropped without a word: ids were numbers)
            kind = "no key" if target is None else "a number key"
            raise ConfigurationError(
                f"prefix= and width= shape ids kept in a string key, but the id attribute "
                f"{self.id_attribute!r} of table {self.table!r} is {kind}: its ids are numbers. "
                "Leave them out (or keep the ids in a string key attribute: id_attribute=).",
                table=self.table,
            )
        id_value(1, target, width=self.width, prefix=self.prefix, table=self.table)
        return prepared

    def not_the_counter(
        self, prepared: Sequence[Item], info: TableInfo, counter: CounterItem
    ) -> None:
        """No item has the counter item's key (when the id is not part of the key)."""
        if self.id_target(info) is not None or counter.table != self.table:
            return
        for position, item in enumerate(prepared):
            key = item_key(item, info)
            if key == counter.key:
                raise ItemKeyClashError(
                    f"{_where(position)} has the key {show_key(key)}, which is the counter "
                    f"item's key of sequence {self.label} in table {self.table!r}: give the "
                    "item another key, or keep the counter elsewhere (counter_table=, "
                    "counter_key=).",
                    table=self.table,
                )

    def distinct(self, prepared: Sequence[Item], info: TableInfo) -> None:
        """put_many's items have distinct keys (when the id is not part of the key)."""
        if self.id_target(info) is not None:
            return
        seen: dict[str, int] = {}
        for n, item in enumerate(prepared):
            shown = show_key(item_key(item, info))
            if shown in seen:
                raise ItemKeyClashError(
                    f"Items {seen[shown] + 1} and {n + 1} of put_many have the same key "
                    f"{shown} in table {self.table!r}: one transaction cannot write an item "
                    "twice. Nothing was written.",
                    table=self.table,
                )
            seen[shown] = n

    def many(self, items: object) -> Sequence[Mapping[str, Any]]:
        """put_many's argument: a list of 1 to 99 items, or a :class:`ConfigurationError`."""
        if isinstance(items, Mapping) or not isinstance(items, Sequence):
            raise ConfigurationError(
                f"put_many takes a list of items, not {type(items).__name__}.", table=self.table
            )
        if not 1 <= len(items) <= MAX_BATCH:
            raise ConfigurationError(
                f"put_many takes 1 to {MAX_BATCH} items, not {len(items)}.", table=self.table
            )
        return items

    # --- reading and writing ---------------------------------------------------------------

    def current(self, counter: CounterItem, deadline: Deadline, attempts: Attempts) -> Flow[int]:
        """The last id given out: one strongly consistent GetItem of the counter (1 read
        unit)."""
        value = yield from attempts(
            lambda _: read_counter(counter), f"reading sequence {self.label}", deadline
        )
        return self.value(counter, value)

    def write(
        self, commit: Commit, deadline: Deadline, state: CounterState, attempts: Attempts
    ) -> Flow[list[int | BaseException]]:
        """Write the commit's items with consecutive ids in one transaction, retrying lost
        races through ``attempts``; the ids, in order (and, without ``atomic``, the error of
        each item that exists: it fails alone, the rest are written)."""

        def attempt(_: int) -> Flow[None]:
            began = self.policy.clock()  # (the read, if any, is part of the race)
            read: Mapping[str, Any] = {}  # (the counter item, where this attempt read it)
            if commit.token is None:
                known = None if commit.reread else state.last
                if known is None:
                    read = yield from read_counter_item(commit.counter)
                    known = self.value(commit.counter, read.get(commit.counter.attribute))
                commit.reread = False
                commit.last, commit.token = known, str(uuid.uuid4())
            last = commit.last
            assert last is not None
            actions, new, billed = self.transaction(commit, last)
            items = len(commit.live)
            cancellation = yield from transact(actions, commit.token, items=items, billed=billed)
            commit.rtt = self.policy.clock() - began
            if cancellation is not None:
                written = [action["Put"]["Item"] for action in actions[1:]]
                if cancellation.verdict is not Verdict.INVALID and (
                    stale := stale_images(self.table, written, cancellation, key_names(commit.info))
                ):
                    raise stale
                self.cancelled(commit, cancellation, state)
                return
            for offset, index in enumerate(commit.live, start=1):
                commit.results[index] = last + offset
            commit.live.clear()
            state.passed(new)
            if read:  # (this attempt read the counter item: was it a counter already?)
                warn_if_new(commit.counter, read, last + 1)

        while commit.live:
            what = f"writing {len(commit.live)} item(s) with sequence {self.label}"
            yield from attempts(attempt, what, deadline)
        return [r for r in commit.results if r is not None]

    def transaction(
        self, commit: Commit, last: int
    ) -> tuple[list[TransactWriteItemTypeDef], int, float]:
        """The transaction that writes the commit's live items after ``last``: its actions, the
        counter's new value and the units it is billed."""
        info, counter = commit.info, commit.counter
        new = last + len(commit.live)
        if new > MAX_ID:
            raise self.exhausted(last, len(commit.live))
        # (at 0: a new counter, or one that holds 0, seeded by another tool)
        update = exact_update(counter, last, new, base=0)
        target = self.id_target(info)
        written = []
        for offset, index in enumerate(commit.live, start=1):
            item = dict(commit.items[index])
            item[self.id_attribute] = id_value(
                last + offset, target, width=self.width, prefix=self.prefix, table=self.table
            )
            if target is not None and counter.table == self.table:
                self._check_not_counter(item_key(item, info), counter, last + offset)
            written.append(item)
        counter_image = counter_written(counter.key, counter.attribute, new)
        actions: list[TransactWriteItemTypeDef] = [update]
        keys = [*key_names(info), self.id_attribute]
        actions += [put_if_new(self.table, i, keys) for i in written]
        return actions, new, write_units([counter_image, *written], transactional=True)

    def exhausted(self, last: int, count: int) -> SequenceExhaustedError:
        return SequenceExhaustedError(
            f"Sequence {self.label} of table {self.table!r} is at {last}: {count} more id(s) "
            "would pass 10**38 - 1, the largest DynamoDB number.",
            table=self.table,
        )

    def _check_not_counter(self, key: Mapping[str, Any], counter: CounterItem, number: int) -> None:
        if key == counter.key:
            raise ItemKeyClashError(
                f"Id {number} would give the item the key {show_key(key)}, which is the counter "
                f"item's key of sequence {self.label} in table {self.table!r}: keep the counter "
                "outside the ids' range (counter_key=) or in another table (counter_table=).",
                table=self.table,
            )

    def cancelled(self, commit: Commit, cancellation: Cancellation, state: CounterState) -> None:
        """What cancelled the commit's transaction, and what to do next; updates the commit (a
        cancelled transaction is never sent again: no token, no counter value) and ``state``.
        Raises :class:`Contention` or :class:`Throttled` for the retry layer, or the error;
        returns to go on with the items left at once."""
        if cancellation.verdict is Verdict.INVALID:
            raise cancelled_error(self, cancellation, (commit.counter.table,))
        info, live, last = commit.info, commit.live, commit.last
        commit.last = commit.token = None
        commit.streak += 1
        counter_moved = cancellation.failed(0)
        taken = [live[i - 1] for i in cancellation.failed_conditions if i >= 1]
        target = self.id_target(info)
        self._learn(commit, cancellation, state, counter_moved, last)
        if taken and (target is None or not counter_moved):
            # The key is taken and not by a racing writer of this sequence: either the item
            # exists (its key does not hold the id), or the id's key holds an item the sequence
            # did not write (the counter is behind the table).
            self._refuse(commit, cancellation, taken if target is None else list(live), last)
            if not counter_moved:
                return
        if counter_moved or (taken and target is not None):
            # Everyone who lost to the same commit learnt the same value from the old image:
            # going again at once with it, only one of them can win. Wait instead, a full-jitter
            # time scaled by the contention seen (how long the lost transaction took, doubled
            # with each loss in a row), then read the counter afresh.
            commit.reread = True
            raise Contention(wait=self.backoff(commit))
        if cancellation.verdict is Verdict.THROTTLED:
            raise Throttled(cancellation.describe())
        raise Contention(immediate=False)

    def _learn(
        self,
        commit: Commit,
        cancellation: Cancellation,
        state: CounterState,
        counter_moved: bool,
        last: int | None,
    ) -> None:
        """What the cancellation says of the counter, learnt by ``state``."""
        if not counter_moved:
            state.learn(last if cancellation.verdict is Verdict.CONDITIONS else None)
            return
        old = cancellation.old_item(0) or {}
        # Another writer moved the counter: its old image says where it is now (or that it
        # holds something no counter may hold, which raises CounterStateError).
        now = self.value(commit.counter, old.get(commit.counter.attribute))
        state.learn(now)
        if now + len(commit.live) > MAX_ID:  # (no wait for that news)
            raise self.exhausted(now, len(commit.live))

    def _refuse(
        self, commit: Commit, cancellation: Cancellation, blocked: list[int], last: int | None
    ) -> None:
        """The ``blocked`` items' keys are taken: each gets its error (an atomic commit raises
        the first) and leaves the live items."""
        others = len(commit.items) - 1 if commit.atomic else 0  # (not written either)
        for index in blocked:
            commit.results[index] = exists_error(
                self.table,
                self.label,
                self.id_target(commit.info) is not None,
                commit.items[index],
                cancellation,
                last,
                commit.info,
                others,
            )
        if commit.atomic:
            raise commit.results[blocked[0]]  # type: ignore[misc]
        commit.live[:] = [i for i in commit.live if commit.results[i] is None]

    def backoff(self, commit: Commit) -> float:
        """The wait after the commit's ``streak``-th lost race in a row: full jitter, uniform
        up to :data:`SPREAD` times the lost attempt's round trip (the counter's read and the
        transaction; at least the policy's ``base_delay``), doubled with each further loss, at
        most the policy's ``max_delay`` or :data:`MOST_ROUND_TRIPS` round trips, whichever is
        longer.

        Why so long: every writer that lost to one commit goes again, and each new attempt is a
        window of one round trip in which another commit makes it lose. Spread over a few round
        trips per writer, most attempts find the window clear (8 processes taking one id at a
        time: 1.9 transactions per id, benchmarks/fleet.py; spread over one round trip, 2.4 to
        2.9, more the busier the server)."""
        policy = self.policy
        trip = max(commit.rtt, policy.base_delay)
        ceiling = trip * SPREAD * 2 ** min(max(commit.streak - 1, 0), 30)
        return float(policy.random() * min(max(policy.max_delay, trip * MOST_ROUND_TRIPS), ceiling))


def _where(position: int) -> str:
    return "The item" if not position else f"Item {position + 1}"
