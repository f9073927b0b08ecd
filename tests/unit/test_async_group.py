"""AsyncGroupCommit, the asyncio form of group commit: concurrent tasks of one event loop share
commits; a batch DynamoDB refuses as invalid is committed one by one; a caller that gives up
(cancelled) is left out of the next commit. No server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from ddbkeys._errors import ServiceError
from ddbkeys.ids._group import AsyncGroupCommit


def test_concurrent_tasks_share_commits() -> None:
    batches: list[int] = []

    async def main() -> dict[int, Any]:
        gate = asyncio.Event()

        async def commit(values: Sequence[int]) -> list[int | BaseException]:
            await gate.wait()
            batches.append(len(values))
            await asyncio.sleep(0.01)
            return [v * 10 if v != 13 else ValueError("13") for v in values]

        group: AsyncGroupCommit[int, int] = AsyncGroupCommit(commit, max_batch=8)

        async def call(v: int) -> Any:
            try:
                return await group.submit(v)
            except ValueError as exc:
                return exc

        tasks = [asyncio.create_task(call(v)) for v in range(40)]
        await asyncio.sleep(0.05)
        gate.set()
        return dict(zip(range(40), await asyncio.gather(*tasks), strict=True))

    results = asyncio.run(main())
    assert all(results[v] == v * 10 for v in range(40) if v != 13)
    assert isinstance(results[13], ValueError)
    assert batches == [8] * 5  # the waiting calls were combined, 8 at a time


@pytest.mark.parametrize(("bad", "split"), [(13, True), (99, False)])
def test_a_batch_refused_as_invalid_is_committed_one_by_one(bad: int, split: bool) -> None:
    """One caller's item over 400 KB makes DynamoDB refuse the whole batch: every other caller
    still gets its own answer. An error of another kind is every caller's."""
    batches: list[list[int]] = []

    async def main() -> dict[int, Any]:
        gate = asyncio.Event()

        async def commit(values: Sequence[int]) -> list[int | BaseException]:
            await gate.wait()
            batches.append(list(values))
            if 13 in values:
                raise ServiceError("An item is too large", code="ValidationException")
            if 99 in values:
                raise ServiceError("Access denied", code="AccessDeniedException")
            return [v * 10 for v in values]

        group: AsyncGroupCommit[int, int] = AsyncGroupCommit(commit, max_batch=8)

        async def call(v: int) -> Any:
            try:
                return await group.submit(v)
            except ServiceError as exc:
                return exc.code

        values = [100, *range(5), bad, *range(5, 10)]  # 100 goes first, alone
        tasks = [asyncio.create_task(call(v)) for v in values]
        await asyncio.sleep(0.05)
        gate.set()
        return dict(zip(values, await asyncio.gather(*tasks), strict=True))

    results = asyncio.run(main())
    values = [100, *range(5), bad, *range(5, 10)]
    refused = [b for b in batches if bad in b and len(b) > 1]
    assert refused, "the bad value must have been committed with others"
    if split:
        assert results == {v: v * 10 for v in values if v != bad} | {bad: "ValidationException"}
        assert [bad] in batches  # retried alone, and refused alone
    else:
        assert all(results[v] == "AccessDeniedException" for v in refused[0])
        assert [bad] not in batches


def test_a_cancelled_caller_is_left_out_and_the_rest_are_answered() -> None:
    batches: list[list[int]] = []

    async def main() -> tuple[list[Any], bool]:
        gate = asyncio.Event()

        async def commit(values: Sequence[int]) -> list[int | BaseException]:
            await gate.wait()
            batches.append(list(values))
            return [v * 10 for v in values]

        group: AsyncGroupCommit[int, int] = AsyncGroupCommit(commit, max_batch=8)
        first = asyncio.create_task(group.submit(0))  # its commit waits at the gate
        await asyncio.sleep(0.01)
        waiting = [asyncio.create_task(group.submit(v)) for v in (1, 2, 3)]
        await asyncio.sleep(0.01)
        waiting[1].cancel()  # the caller of 2 gives up while its value is pending
        await asyncio.sleep(0.01)
        gate.set()
        answered = await asyncio.gather(first, waiting[0], waiting[2])
        return list(answered), waiting[1].cancelled()

    answered, cancelled = asyncio.run(main())
    assert answered == [0, 10, 30]
    assert cancelled
    assert batches == [[0], [1, 3]]  # 2 was never committed


def test_a_cancelled_commit_is_told_to_its_callers() -> None:
    async def main() -> list[Any]:
        started = asyncio.Event()

        async def commit(values: Sequence[int]) -> list[int | BaseException]:
            started.set()
            await asyncio.sleep(60)
            return [v for v in values]

        group: AsyncGroupCommit[int, int] = AsyncGroupCommit(commit, max_batch=8)
        callers = [asyncio.create_task(group.submit(v)) for v in range(3)]
        await started.wait()
        assert group._task is not None
        group._task.cancel()  # the loop shuts down under a commit in flight
        return await asyncio.gather(*callers, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert outcomes and all(isinstance(o, asyncio.CancelledError) for o in outcomes)
