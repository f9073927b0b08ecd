"""What a collection sequence keeps per collection, without a server: the highest numbers of
the collections used last only (Remembered), and a group commit only while calls use it
(GroupsInUse), in threads and on an event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys.ids._group import AsyncGroupCommit, GroupCommit, GroupsInUse
from ddbkeys.ids._remembered import REMEMBERED, Remembered
from tests.support.hand import core


def test_remembered_keeps_the_collections_used_last() -> None:
    numbers = Remembered(3)
    for name, number in [("a", 1), ("b", 2), ("c", 3)]:
        numbers.raise_to(name, number)
    assert numbers.get("a") == 1  # now the latest used: b goes first
    numbers.raise_to("d", 4)
    assert (len(numbers), numbers.get("b")) == (3, None)
    assert [numbers.get(n) for n in "acd"] == [1, 3, 4]
    numbers.raise_to("a", 0)  # never lowered
    assert numbers.get("a") == 1
    numbers.forget("a")
    assert numbers.get("a") is None and len(numbers) == 2
    nothing = Remembered(0)
    nothing.raise_to("a", 5)
    assert (len(nothing), nothing.get("a")) == (0, None)
    assert Remembered().size == REMEMBERED == 10_000


def test_remembered_stays_bounded_under_threads() -> None:
    numbers = Remembered(50)

    def write(start: int) -> None:
        for i in range(start, start + 2000):
            numbers.raise_to(f"c{i % 700}", i)
            numbers.get(f"c{(i * 7) % 700}")

    threads = [threading.Thread(target=write, args=(n * 2000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(numbers) == 50


def test_a_group_is_shared_while_in_use_and_dropped_after_its_last_call() -> None:
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    groups: GroupsInUse[str, object] = GroupsInUse(make)
    with groups.using("a") as first, groups.using("a") as second:
        assert first is second and len(groups) == 1
        with groups.using("b") as other:
            assert other is not first and len(groups) == 2
        assert len(groups) == 1
    assert len(groups) == 0
    with pytest.raises(RuntimeError), groups.using("a"):
        raise RuntimeError("a call failed")
    assert len(groups) == 0 and len(made) == 3


def test_groups_of_keys_that_are_gone_are_dropped_when_a_group_is_made() -> None:
    gone: set[str] = set()
    groups: GroupsInUse[str, object] = GroupsInUse(object, gone.__contains__)
    held = groups.using("stuck")
    held.__enter__()  # a call that will never end (its event loop was closed)
    assert len(groups) == 1
    gone.add("stuck")
    with groups.using("next"):
        assert len(groups) == 1  # "stuck" dropped
    assert len(groups) == 0


def test_threads_share_commits_and_leave_no_group_behind() -> None:
    commits: list[int] = []

    def commit(values: Sequence[int]) -> list[int]:
        commits.append(len(values))
        return [v * 10 for v in values]

    groups: GroupsInUse[str, GroupCommit[int, int]] = GroupsInUse(lambda: GroupCommit(commit, 8))
    results: dict[int, int] = {}

    def call(value: int) -> None:
        with groups.using(f"c{value % 5}") as group:
            results[value] = group.submit(value)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: n * 10 for n in range(200)} and sum(commits) == 200
    assert len(groups) == 0


def test_tasks_share_commits_and_leave_no_group_behind() -> None:
    async def commit(values: Sequence[int]) -> list[int]:
        await asyncio.sleep(0)
        return [v * 10 for v in values]

    groups: GroupsInUse[str, AsyncGroupCommit[int, int]] = GroupsInUse(
        lambda: AsyncGroupCommit(commit, 8)
    )

    async def call(value: int) -> int:
        with groups.using(f"c{value % 5}") as group:
            return await group.submit(value)

    async def main() -> list[int]:
        got = await asyncio.gather(*(call(n) for n in range(200)))
        assert len(groups) == 0
        return list(got)

    assert asyncio.run(main()) == [n * 10 for n in range(200)]


@pytest.mark.parametrize("remembered", [-1, 1.5, True, "10"])
def test_remembered_must_be_a_whole_number_of_collections(remembered: Any) -> None:
    with pytest.raises(ConfigurationError, match="remembered must be a whole number"):
        core(remembered=remembered)
