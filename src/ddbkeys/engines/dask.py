"""A listing's tasks on Dask (``pip install 'ddbkeys[dask]'``: ``dask[bag]`` and
``distributed``).

:func:`keys_bag` turns the tasks of :func:`~ddbkeys.partition_keys.plan_listing` into a
``dask.bag.Bag`` of keys, one partition per task: the task travels as its line of JSON and the
worker lists it (as :func:`~ddbkeys.partition_keys.open_task` does), building its own client
from the task's endpoint, region and profile. :func:`tasks_bag` is the same with what each
task read, to report the whole listing's read units.

Compute the bag on a distributed cluster (a ``distributed.Client`` of a ``LocalCluster``, or
of a real cluster's scheduler): when a worker dies (killed, out of memory, its machine gone),
the distributed scheduler runs its tasks again on another, and a task run again from its start
yields the same keys, so none is lost or repeated. Dask's local schedulers do not: with the
processes scheduler, a worker process that dies fails the whole compute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys._tasks.tasks import ListingTask, list_task

try:
    import dask.bag
except ImportError as exc:  # the extra is not installed
    raise ConfigurationError(
        f"ddbkeys.engines.dask needs Dask ({exc}): pip install 'ddbkeys[dask]'."
    ) from exc

__all__ = ["keys_bag", "tasks_bag"]

if TYPE_CHECKING:
    from dask.bag import Bag


def tasks_bag(tasks: Iterable[ListingTask]) -> Bag:
    """One element per task, in its own partition: the task's keys (a list) and what it read
    (a dict: ``requests``, ``items``, ``read_units``, ...; add them up with
    :meth:`ddbkeys.Usage.merge`). Nothing is read until it is computed."""
    lines = [_line(task) for task in tasks]
    bag: Bag = dask.bag.from_sequence(lines, partition_size=1).map(list_task)
    return bag


def keys_bag(tasks: Iterable[ListingTask]) -> Bag:
    """The keys of ``tasks`` (from :func:`~ddbkeys.partition_keys.plan_listing`), as a bag
    with one partition per task; nothing is read until it is computed. Each key once: the
    tasks' key sets are disjoint, and their union is the listing.

    Costs what the listing costs, spread over the tasks: each task reads its Scan segment
    within its ``rate`` (read units a second)."""
    keys: Bag = tasks_bag(tasks).pluck(0).flatten()
    return keys


def _line(task: object) -> str:
    if not isinstance(task, ListingTask):
        raise ConfigurationError(
            f"ddbkeys.engines.dask takes ListingTask objects (plan_listing(...)), not "
            f"{type(task).__name__}: for a line of `ddbkeys partition-keys plan`, pass "
            "ListingTask.from_json(line)."
        )
    return task.to_json()
