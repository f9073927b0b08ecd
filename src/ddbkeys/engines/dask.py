"""A listing's tasks on Dask (``pip install 'ddbkeys[dask]'``: ``dask[bag]`` and
``distributed``).

:func:`keys_bag` turns the tasks of :func:`~ddbkeys.partition_keys.plan_listing` into a
``dask.bag.Bag`` of keys, one partition per task: the task travels as its line of JSON and the
worker lists it (:func:`~ddbkeys.partition_keys.tasks.list_task`), building its own client
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

from ddbkeys.errors import ConfigurationError
from ddbkeys.partition_keys.tasks import ListingTask, list_task

__all__ = ["INSTALL", "keys_bag", "tasks_bag"]

INSTALL = "ddbkeys.engines.dask needs Dask: pip install 'ddbkeys[dask]' (dask[bag], distributed)."


class _DaskMissing(ConfigurationError, ImportError):
    """Dask is not installed (an ImportError too, for code that tries optional imports)."""


try:
    import dask.bag
except ImportError as exc:  # the extra is not installed
    raise _DaskMissing(INSTALL) from exc

if TYPE_CHECKING:
    from dask.bag import Bag


def tasks_bag(tasks: Iterable[ListingTask]) -> Bag:
    """One element per task, in its own partition: the task's keys (a list) and what it read
    (a dict: ``requests``, ``items``, ``read_units``, ...; add them up with
    :meth:`ddbkeys.capacity.Usage.merge`)."""
    lines = [task.to_json() for task in tasks]
    bag: Bag = dask.bag.from_sequence(lines, partition_size=1).map(list_task)
    return bag


def keys_bag(tasks: Iterable[ListingTask]) -> Bag:
    """The keys of every task, as a bag with one partition per task (each key once: the
    tasks' keys are disjoint, their union is the listing)."""
    keys: Bag = tasks_bag(tasks).pluck(0).flatten()
    return keys
