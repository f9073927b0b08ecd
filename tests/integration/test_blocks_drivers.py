"""The block allocator under many callers, for both drivers with the same test bodies: 16
threads on the sync one, 64 tasks of one event loop on the asyncio one. Checked on the exact set
of ids, and on ids increasing for each caller."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from aiobotocore.session import get_session

from ddbkeys._connect import LOCAL_ACCESS_KEY, is_loopback
from ddbkeys.aio._blocks import BlockAllocator as AsyncBlockAllocator
from ddbkeys.aio._ids import AtomicCounter as AsyncAtomicCounter
from ddbkeys.ids import AtomicCounter, BlockAllocator
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: What each caller asks for, in order: 1 is next(), n is reserve(n) (blocks of 50 below: 7 fits
#: or skips to the next block, 120 is a write of its own that drops the blocks below it).
MIXED = [1] * 12 + [7] + [1] * 5 + [120] + [1] * 8 + [7, 3] + [1] * 4


@dataclass
class Run:
    """What one run of callers got: each caller's ids in the order it got them, and the
    counter's usage and last value afterwards."""

    ids: list[list[int]]
    writes: int
    last: int


@asynccontextmanager
async def async_client(ddb_client: DynamoDBClient, endpoint_url: str) -> AsyncIterator[Any]:
    local = is_loopback(endpoint_url)
    async with get_session().create_client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=ddb_client.meta.region_name,
        aws_access_key_id=LOCAL_ACCESS_KEY if local else None,
        aws_secret_access_key="local" if local else None,
    ) as client:
        yield client


def run_threads(
    ddb_client: DynamoDBClient,
    table: str,
    callers: int,
    script: Sequence[int],
    allocators: int,
    block_size: int,
) -> Run:
    counter = AtomicCounter(ddb_client, table, "blocks")
    shared = [BlockAllocator(counter, block_size) for _ in range(allocators)]
    got: list[list[int]] = [[] for _ in range(callers)]
    start = threading.Barrier(callers)

    def call(n: int) -> None:
        blocks = shared[n % allocators]
        start.wait()
        for count in script:
            got[n].extend([blocks.next()] if count == 1 else blocks.reserve(count))

    threads = [threading.Thread(target=call, args=(n,)) for n in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return Run(got, int(counter.usage.snapshot()["requests"]), counter.current())


def list_tasks(
    ddb_client: DynamoDBClient,
    endpoint_url: str,
    table: str,
    callers: int,
    script: Sequence[int],
    allocators: int,
    block_size: int,
) -> Run:
    async def main() -> Run:
        async with async_client(ddb_client, endpoint_url) as client:
            counter = AsyncAtomicCounter(client, table, "blocks")
            shared = [AsyncBlockAllocator(counter, block_size) for _ in range(allocators)]
            got: list[list[int]] = [[] for _ in range(callers)]

            async def call(n: int) -> None:
                blocks = shared[n % allocators]
                for count in script:
                    got[n].extend(
                        [await blocks.next()] if count == 1 else await blocks.reserve(count)
                    )

            await asyncio.gather(*(call(n) for n in range(callers)))
            return Run(got, int(counter.usage.snapshot()["requests"]), await counter.current())

    return asyncio.run(main())


Runner = Callable[[str, Sequence[int], int, int], Run]


@pytest.fixture(params=["16 threads", "64 tasks"])
def run(
    request: pytest.FixtureRequest,
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
) -> tuple[int, Runner]:
    """(how many callers, a runner: table, script, allocators, block size -> Run)."""
    if request.param == "16 threads":
        return 16, lambda t, s, a, b: run_threads(ddb_client, t, 16, s, a, b)
    return 64, lambda t, s, a, b: list_tasks(ddb_client, ddb_endpoint_url, t, 64, s, a, b)


def test_next_from_one_allocator_hands_out_exactly_the_first_ids(
    run: tuple[int, Runner], ddb_table_factory: TableFactory
) -> None:
    callers, runner = run
    per_caller = 3200 // callers
    result = runner(ddb_table_factory(("pk", "S")), [1] * per_caller, 1, 50)
    every = [i for ids in result.ids for i in ids]
    assert sorted(every) == list(range(1, 3201))  # one process: no id skipped, none twice
    assert all(ids == sorted(ids) for ids in result.ids)  # increasing for each caller
    assert len(result.ids) == callers
    assert result.writes <= 3200 // 50 + 1  # one write a block (and one prefetched)
    assert result.last <= 3200 + 50


def test_mixed_reserves_from_two_allocators_are_unique_and_increase_per_caller(
    run: tuple[int, Runner], ddb_table_factory: TableFactory
) -> None:
    callers, runner = run
    result = runner(ddb_table_factory(("pk", "S")), MIXED, 2, 50)
    every = [i for ids in result.ids for i in ids]
    assert len(every) == callers * sum(MIXED)
    assert len(set(every)) == len(every)  # unique across both allocators ("processes")
    for ids in result.ids:
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert max(every) <= result.last  # every id was reserved on the counter
    # each caller's 120 ids are one range of their own; the blocks of 50 serve the rest
    start = sum(MIXED[: MIXED.index(120)])  # the ids each caller got before its 120
    for ids in result.ids:
        assert ids[start : start + 120] == list(range(ids[start], ids[start] + 120))
    # one write for each 120; the other ids from blocks of 50 (fewer than 7 of a block skipped
    # at a time, and up to 2 blocks held dropped at each 120)
    small = callers * (sum(MIXED) - 120)
    assert result.writes <= callers + small // 40 + 2 * callers + 4
