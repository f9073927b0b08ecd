"""A process that hands out ids from one block allocator, for the tests of blocks across
processes::

    python -m tests.support.blocks_worker DRIVER ENDPOINT TABLE CALLERS COUNT END [SETTINGS]

``CALLERS`` threads (sync) or tasks of one event loop (async) share one allocator on counter
``ids`` and take ``COUNT`` ids in all with ``next()``; ``SETTINGS`` is a JSON object of the
allocator's settings. Then, by ``END``:

- ``close``: closes it (``with`` / ``async with``) and prints one JSON line: the ids, the
  allocator's stats, the close report and the history of the calls (each ``next()``'s start,
  end and id, for :func:`ddbkeys.testing.check_history`);
- ``exit``: prints the ids and stats and returns without closing (the interpreter's exit hands
  the ids back, sync only);
- ``hold``: once a spare block is held, prints the ids and stats, then waits to be killed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import threading
import time
from typing import Any

from ddbkeys import aio
from ddbkeys._connect import make_client
from ddbkeys._retry import RetryPolicy
from ddbkeys.ids import AtomicCounter, BlockAllocator
from ddbkeys.testing import History

RETRY = RetryPolicy(max_attempts=60)
KEPT: list[BlockAllocator] = []
#: Every ``next()`` of this process's one allocator.
HISTORY = History(scope=f"allocator of process {os.getpid()}")


def report(ids: list[int], blocks: Any, closed: Any = None) -> None:
    print(
        json.dumps(
            {
                "ids": ids,
                "stats": dataclasses.asdict(blocks.stats),
                "report": dataclasses.asdict(closed) if closed is not None else None,
                "block_size": blocks.block_size,
                "history": [op.as_dict() for op in HISTORY.operations],
            }
        ),
        flush=True,
    )


def held(blocks: Any) -> bool:
    return blocks._state.spare is not None


def run_sync(endpoint: str, table: str, callers: int, count: int, end: str, settings: Any) -> None:
    client = make_client(endpoint_url=endpoint, max_attempts=10)
    blocks = BlockAllocator(AtomicCounter(client, table, "ids", retry=RETRY), **settings)
    got: list[list[int]] = [[] for _ in range(callers)]
    start = threading.Barrier(callers)

    def call(n: int) -> None:
        start.wait()
        got[n] = [HISTORY.call(blocks.next) for _ in range(count // callers)]

    threads = [threading.Thread(target=call, args=(n,)) for n in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [i for mine in got for i in mine]
    if end == "close":
        with blocks:
            pass  # the end of the block closes it ...
        report(ids, blocks, blocks.close())  # ... and close() gives its report again
        return
    if end == "exit":
        KEPT.append(blocks)  # (held to the end, as a module's allocator would be)
        report(ids, blocks)
        return
    while not held(blocks):
        time.sleep(0.01)
    report(ids, blocks)
    time.sleep(600)


async def run_async(
    endpoint: str, table: str, callers: int, count: int, end: str, settings: Any
) -> None:
    async with aio.make_client(endpoint_url=endpoint, max_attempts=10) as client:
        counter = aio.AtomicCounter(client, table, "ids", retry=RETRY)
        async with aio.BlockAllocator(counter, **settings) as blocks:

            async def call() -> list[int]:
                mine: list[int] = []
                for _ in range(count // callers):
                    with HISTORY.recording() as got:
                        got.append(await blocks.next())
                    mine += got
                return mine

            got = await asyncio.gather(*(call() for _ in range(callers)))
            ids = [i for mine in got for i in mine]
            if end == "hold":
                while not held(blocks):
                    await asyncio.sleep(0.01)
                report(ids, blocks)
                await asyncio.sleep(600)
        report(ids, blocks, await blocks.aclose())


def main(argv: list[str]) -> None:
    driver, endpoint, table, callers, count, end = argv[:6]
    settings = json.loads(argv[6]) if len(argv) > 6 else {}
    if driver == "sync":
        run_sync(endpoint, table, int(callers), int(count), end, settings)
    else:
        asyncio.run(run_async(endpoint, table, int(callers), int(count), end, settings))


if __name__ == "__main__":
    main(sys.argv[1:])
