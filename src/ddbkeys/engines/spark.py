"""A listing on PySpark (what AWS Glue and Amazon EMR run): its tasks as an RDD of keys
(:func:`keys_rdd`), or of each task's keys and what it read (:func:`tasks_rdd`).

``pip install 'ddbkeys[spark]'`` (on Glue and EMR, PySpark is already there). The RDD has one
partition per task, holding the task as its line of JSON; a Python worker runs
:func:`ddbkeys.partition_keys.open_task` on it, with a client it builds from the task (endpoint,
region, profile; credentials from the worker's own environment, such as the job's IAM role).
Spark runs a failed partition again from its start (``spark.task.maxFailures``; on
``local[N,F]``, F tries), and a task run again yields the same keys, so a worker that dies
mid-task loses or repeats no key. Each task keeps to its own share of the read budget
(``concurrency=`` of :func:`~ddbkeys.partition_keys.plan_listing`: the tasks Spark runs at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys._tasks.tasks import ListingTask, list_task, open_task, say_strays

try:
    from pyspark import RDD, SparkContext
except ImportError as exc:  # the extra is not installed
    raise ConfigurationError(
        f"ddbkeys.engines.spark needs PySpark ({exc}): pip install 'ddbkeys[spark]'."
    ) from exc

__all__ = ["keys_rdd", "tasks_rdd"]


def keys_rdd(spark_context: SparkContext, tasks: Iterable[ListingTask]) -> RDD[Any]:
    """The keys of ``tasks`` (from :func:`~ddbkeys.partition_keys.plan_listing`), as an RDD
    with one partition per task, in the tasks' order; nothing is read until an action
    (``collect()``, ``saveAsTextFile()``, ...). Each key once: the tasks' key sets are
    disjoint, and Spark keeps only the output of a task's attempt that finished.

    Costs what the listing costs, spread over the tasks: each task reads its Scan segment
    within its ``rate`` (read units a second)."""
    lines, named = _lines("keys_rdd", spark_context, tasks)
    # One line a partition: parallelize slices a list of n items into n partitions of one.
    rdd = spark_context.parallelize(lines, max(len(lines), 1)).mapPartitions(_keys_of)
    return rdd.setName(named)


def tasks_rdd(spark_context: SparkContext, tasks: Iterable[ListingTask]) -> RDD[Any]:
    """One element per task, in its own partition: the task's keys (a list) and what it read
    (a dict: ``requests``, ``items``, ``read_units``, ...; add them up with
    :meth:`ddbkeys.Usage.merge`), as ``ddbkeys.engines.dask.tasks_bag`` gives them on Dask.
    Nothing is read until an action. A task Spark ran again counts once: what an attempt that
    failed read is billed, and not in these figures."""
    lines, named = _lines("tasks_rdd", spark_context, tasks)
    rdd = spark_context.parallelize(lines, max(len(lines), 1)).map(list_task)
    return rdd.setName(named)


def _lines(what: str, spark_context: object, tasks: Iterable[ListingTask]) -> tuple[list[str], str]:
    """The tasks' lines of JSON, and the RDD's name; one line for a wrong argument."""
    if not isinstance(spark_context, SparkContext):
        raise ConfigurationError(
            f"{what} takes a SparkContext, not {type(spark_context).__name__}: pass "
            "spark.sparkContext for a SparkSession."
        )
    lines: list[str] = []
    tables: set[str] = set()
    for task in tasks:
        if not isinstance(task, ListingTask):
            raise ConfigurationError(
                f"{what} takes ListingTask objects (plan_listing(...)), not "
                f"{type(task).__name__}: for a line of `ddbkeys partition-keys plan`, pass "
                "ListingTask.from_json(line)."
            )
        lines.append(task.to_json())
        tables.add(task.table)
    named = ", ".join(sorted(tables)) or "nothing"
    return lines, f"ddbkeys listing of {named}: {len(lines)} task(s)"


def _keys_of(lines: Iterable[str]) -> Iterator[Any]:
    """A worker's part: the keys of the task in this partition, listed to its end."""
    for line in lines:
        task = ListingTask.from_json(line)
        listing = open_task(task)
        yield from listing
        say_strays(task, listing)
