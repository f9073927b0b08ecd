"""A listing as tasks: plain data that an engine (a process pool, Dask, Spark) runs anywhere.

``plan_listing`` settles the method once (``auto``'s choice, and for the marker index its proof,
the stream replayed once) and splits the listing into tasks, one Scan segment each (the proven
index has one more: the collections the proof re-checked). Each task is a
:class:`ListingTask`: picklable, JSON through :meth:`ListingTask.to_json`, and holding what a
worker needs to build its own client (endpoint, region, profile; never credentials).
``open_task`` lists one task's keys on any worker. Parallel-scan segments split the items by
partition key, so the tasks' key sets are disjoint and their union is the listing; a task run
again from its start yields the same keys, so an engine's retries never lose or repeat one. A
task's listing can be stopped and continued: ``task.going_on(listing.checkpoint())``.

Each task is a resume token of the planned listing in which every other segment is done, so a
task runs through the one listing code path (its retries, deadline, read budget and accounting).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any, Unpack

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._errors import ConfigurationError, DdbKeysError, ResumeTokenError
from ddbkeys.partition_keys._listing.base import Position
from ddbkeys.partition_keys._listing.checkpoint import Checkpoint, decode_token, task_token
from ddbkeys.partition_keys._listing.listing import Listing
from ddbkeys.partition_keys._listing.opening import distinct_partition_keys
from ddbkeys.partition_keys._listing.options import (
    ListingOptions,
    ListingSettings,
    Method,
    listing_options,
)
from ddbkeys.partition_keys._listing.read_share import share

__all__ = [
    "ListingTask",
    "list_task",
    "list_tasks",
    "not_this_task",
    "open_task",
    "plan_listing",
    "say_strays",
]

LOG = logging.getLogger("ddbkeys")

#: How often a process pool is built again after a worker died, before ``list_tasks`` gives up.
POOL_RESTARTS = 3
#: What distinct_partition_keys takes that a plan does not, and what to do instead.
_NOT_PLANNED = {
    "resume": "a task goes on from its own checkpoint: task.going_on(listing.checkpoint())",
    "scan_segments": "a plan has one Scan segment a task: give tasks=",
    "segments": "each task reads its one segment; run tasks at once with concurrency=",
    "usage": "each task's listing has its usage (list_task() returns it; list_tasks(usage=))",
    "on_key": "each task's listing is iterated where it runs",
    "retry": "each task's listing retries as a listing does",
    "streams": "no task reads the stream: the plan replays it once",
}


@dataclass(frozen=True)
class ListingTask:
    """One segment of a planned listing, as plain data. ``token`` is the listing's resume
    token with every other segment done; ``reason`` why the plan chose its method; ``options``
    the settings its listing runs with: the plan's, with the method settled
    (``options.method``) and this task's share of the read budget
    (``options.max_rcu_per_second``, None: none; ``strict_budget``: kept over the task's whole
    run). ``endpoint_url``, ``region`` and ``profile`` are how a worker builds its client."""

    table: str
    reason: str
    segment: int
    segments: int
    token: str
    options: ListingOptions
    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None

    def to_json(self) -> str:
        """The task as one line of JSON (its options as an object)."""
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ListingTask:
        """The task :meth:`to_json` wrote; a clear error for anything else."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, Mapping):
                raise TypeError(f"a task is a JSON object, not {raw!r}")
            wrong = _wrong_fields(raw)
            if wrong:
                raise ValueError(f"it has {wrong}")
            task = cls(**{**raw, "options": ListingOptions.from_dict(raw.get("options", {}))})
            for name, kinds in _KINDS.items():
                value = getattr(task, name)
                if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                    raise TypeError(f"{name} is {value!r}")
            token = decode_token(task.token)
            positions, why = token.positions, None
            if not 0 <= task.segment < len(positions) or len(positions) != task.segments:
                why = f"its token is of {len(positions)} segments"
            elif (token.table, token.method) != (task.table, task.options.method):
                why = f"its token lists {token.method} of table {token.table!r}"
            elif not _others_done(positions, task.segment):
                why = "not every other segment is done in its token"
            if why is not None:
                raise ValueError(
                    f"a line edited: not task {task.segment} of {task.segments}, {why}"
                )
        except (ValueError, TypeError, ConfigurationError) as exc:
            raise ConfigurationError(
                f"Not a listing task ddbkeys wrote ({type(exc).__name__}: {exc}): pass one line "
                "of `ddbkeys partition-keys plan` output, or ListingTask.to_json()."
            ) from exc
        return task

    def going_on(self, token: str) -> ListingTask:
        """This task, continued from ``token`` (``checkpoint()`` of its listing). A checkpoint
        of another task (or of another plan's) is refused with a ResumeTokenError: it would
        continue that task, whose keys the engine would take for this one's."""
        why = not_this_task(self, token)
        if why is not None:
            raise ResumeTokenError(
                f"The resume token is not {why}: continue a task from its own listing's "
                "checkpoint(), or run it again from its start."
            )
        return replace(self, token=token)


def not_this_task(task: ListingTask, token: str) -> str | None:
    """Why ``token`` cannot continue ``task`` ("a checkpoint of task 1 of 3 of the listing of
    table 'orders' (segment 2 is not done in it)"), None where it can."""
    why = _not_of_task(decode_token(token), decode_token(task.token), task.segment)
    if why is None:
        return None
    return (
        f"a checkpoint of task {task.segment} of {task.segments} of the listing of table "
        f"{task.table!r} ({why})"
    )


#: What each field of a task's JSON may hold (its options check themselves).
_KINDS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(["table", "reason", "token"], (str,)),
    **dict.fromkeys(["segment", "segments"], (int,)),
    **dict.fromkeys(["endpoint_url", "region", "profile"], (str, type(None))),
}


def _wrong_fields(raw: Mapping[str, Any]) -> str:
    """What a task's JSON object lacks or has that no task field is (empty: nothing)."""
    known = {field.name for field in fields(ListingTask)}
    needed = {field.name for field in fields(ListingTask) if field.default is MISSING}
    said = [f"no {name}" for name in sorted(needed - {"options"} - raw.keys())]
    said += [f"an unknown {name!r}" for name in sorted(raw.keys() - known)]
    return ", ".join(said)


def _others_done(positions: list[Position], segment: int) -> bool:
    """Whether every segment of ``positions`` but ``segment`` (one of them) is done, counted
    in C: a plan may have a million tasks."""
    inside = 0 <= segment < len(positions)
    return (
        positions.count(True) - (inside and positions[segment] is True) == len(positions) - inside
    )


def _not_of_task(theirs: Checkpoint, ours: Checkpoint, segment: int) -> str | None:
    """Why checkpoint ``theirs`` is not of the task whose token is ``ours`` (None: it is)."""
    if theirs.table != ours.table:
        return f"it is of table {theirs.table!r}"
    if (theirs.key_schema, theirs.created) != (ours.key_schema, ours.created):
        return f"it is of a table created at {theirs.created or 'an unknown time'}"
    if theirs.method != ours.method:
        return f"it is of method {theirs.method}"
    if len(theirs.positions) != len(ours.positions):
        return f"it is of {len(theirs.positions)} Scan segments, not {len(ours.positions)}"
    if not _others_done(theirs.positions, segment):
        n = next(n for n, p in enumerate(theirs.positions) if n != segment and p is not True)
        return f"segment {n} is not done in it"
    if theirs.replay != ours.replay:
        return "it holds another proof of the marker index"
    return None


def plan_listing(
    client: object,
    table: str | None = None,
    method: Method | str | None = None,
    *,
    options: ListingOptions | None = None,
    tasks: int = 4,
    concurrency: int | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    **settings: Unpack[ListingSettings],
) -> list[ListingTask]:
    """Split the listing of ``table`` into ``tasks`` tasks (one Scan segment each; the proven
    marker index adds one: the collections its proof re-checked).

    The method is settled here, once, with the settings of
    :func:`~ddbkeys.partition_keys.distinct_partition_keys` (``options`` and its fields as
    keywords: ``index_name``, ``state_table``, ``replay_margin``, ``trust_index``, ...). The
    read budget (``max_rcu_per_second``, ``read_percent`` of the table's read capacity; see
    :mod:`ddbkeys.partition_keys._listing.read_share`) is the whole listing's, shared by the
    ``concurrency`` tasks that run at once (by default all of them): each task's options hold
    its share, kept over its whole run. ``endpoint_url``, ``region`` and ``profile`` are how
    workers build their own clients (by default: ``client``'s endpoint and region)."""

    options = listing_options(options, method, _planned(settings))
    if options.from_export is not None:
        raise ConfigurationError(
            "plan_listing splits a read of the table into Scan segments; an export is read "
            "whole: list it with distinct_partition_keys(..., from_export=...) (it reads no "
            "read capacity)."
        )
    if options.segments not in (None, 1) or options.scan_segments is not None:
        name = "segments" if options.segments not in (None, 1) else "scan_segments"
        raise ConfigurationError(f"plan_listing does not take {name}: {_NOT_PLANNED[name]}.")
    options = options.replace(segments=1)  # (a task reads its one segment)
    if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
        raise ConfigurationError(f"tasks must be a whole number from 1, not {tasks!r}.")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ConfigurationError(f"concurrency must be a whole number from 1, not {concurrency!r}.")
    planned = distinct_partition_keys(client, table, options=options.replace(scan_segments=tasks))
    meta = getattr(planned.reader.client, "meta", None)
    total = planned.scan_segments  # (the proven index's: one more, the collections re-checked)
    checkpoint = decode_token(planned.checkpoint())
    rate = share(
        planned.method.info,
        options.read_percent,
        options.max_rcu_per_second,
        options.read_capacity,
        concurrency=min(concurrency or total, total),
    )
    each = options.replace(
        method=planned.method_name,
        max_rcu_per_second=rate,
        read_percent=None,
        read_capacity=None,
        strict_budget=True,
    )
    return [
        ListingTask(
            table=checkpoint.table,
            reason=planned.method_reason,
            segment=segment,
            segments=total,
            token=task_token(checkpoint, segment, total),
            options=each,
            endpoint_url=endpoint_url or getattr(meta, "endpoint_url", None),
            region=region or getattr(meta, "region_name", None),
            profile=profile,
        )
        for segment in range(total)
    ]


def _planned(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without the arguments of distinct_partition_keys a plan does not take but
    that are given at their defaults (a shared set of arguments); a clear error for one that
    is not."""
    given = dict(settings)
    for name in given.keys() & _NOT_PLANNED.keys():
        if name in ("segments", "scan_segments"):
            continue  # (settings: checked on the options)
        if given.pop(name) is not None:
            raise ConfigurationError(f"plan_listing does not take {name}: {_NOT_PLANNED[name]}.")
    return given


#: The clients built for tasks in this process, by how they connect: a worker running many
#: tasks builds one once (building a boto3 client reads botocore's endpoint data, about 0.1 s of
#: CPU, as much as listing thousands of keys). A forked child builds its own.
_CLIENTS: dict[tuple[str | None, str | None, str | None, float | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _forget_clients() -> None:
    global _CLIENTS_LOCK  # noqa: PLW0603 - a new lock in a forked child
    _CLIENTS.clear()
    _CLIENTS_LOCK = threading.Lock()


_lifecycle.at_fork(after_in_child=_forget_clients)


def _client_for(task: ListingTask) -> Any:
    how = (task.endpoint_url, task.region, task.profile, task.options.deadline)
    with _CLIENTS_LOCK:
        if how not in _CLIENTS:
            _CLIENTS[how] = make_client(*how[:3], timeout=task.options.deadline)
        return _CLIENTS[how]


def open_task(task: ListingTask, client: object = None) -> Listing:
    """The listing of one task (iterate over it once for its keys), with ``client`` or the
    process's client for the task's endpoint, region and profile (built at its first task).
    Its ``checkpoint()`` continues the task: ``open_task(task.going_on(listing.checkpoint()))``.
    It reads at most ``task.options.max_rcu_per_second`` read units a second over its whole
    run (``strict_budget``: its budget starts empty, and it waits off the last page's units
    before it ends)."""

    if client is None:
        client = _client_for(task)
    return distinct_partition_keys(client, task.table, resume=task.token, options=task.options)


def list_task(task: ListingTask | str) -> tuple[list[Any], dict[str, float]]:
    """A worker's part: one task (or its line of JSON) listed to its end, with its keys and
    what its listing read (``Usage.snapshot()``: ``requests``, ``items``, ``read_units``, ...),
    so that an engine can report the whole listing's cost."""
    task = ListingTask.from_json(task) if isinstance(task, str) else task
    listing = open_task(task)
    keys = list(listing)
    say_strays(task, listing)
    return keys, listing.usage.snapshot()


def say_strays(task: ListingTask, listing: Listing) -> None:
    """Once ``task``'s listing has ended, log (the ``ddbkeys`` logger, as a warning: in an
    engine's worker logs) where it handed out keys at items that say they are ddbkeys'
    markers of other settings (``listing.stray_note``), as the command line says it."""
    note = listing.stray_note
    if note:
        LOG.warning("Table %r, task %d of %d: %s.", task.table, task.segment, task.segments, note)


def list_tasks(
    tasks: Iterable[ListingTask], workers: int = 2, *, usage: Usage | None = None
) -> Iterator[Any]:
    """The keys of every task, from a pool of ``workers`` processes, each task's keys once it
    has finished. A worker that dies (killed, out of memory) breaks a bare pool for good; here
    the pool is built again and the tasks it had not finished are run again from their start
    (at most ``POOL_RESTARTS`` times), so no key is lost or repeated. An error of a task (a
    DdbKeysError) ends the run with it. ``usage``, when given, adds up what the finished tasks
    read (a task run again counts once)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigurationError(f"workers must be a whole number from 1, not {workers!r}.")
    pending = dict(enumerate(task.to_json() for task in tasks))  # (tasks of several plans too)
    restarts = 0
    while pending:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(list_task, line): number for number, line in pending.items()}
            try:
                for future in concurrent.futures.as_completed(futures):
                    keys, read = future.result()
                    del pending[futures[future]]
                    if usage is not None:
                        usage.merge(read)
                    yield from keys
            except concurrent.futures.process.BrokenProcessPool as exc:
                restarts += 1
                if restarts > POOL_RESTARTS:
                    raise DdbKeysError(
                        f"The worker processes died {restarts} times; {len(pending)} task(s) "
                        "were not finished."
                    ) from exc
