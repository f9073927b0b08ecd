"""The history checker on histories written by hand: each promise's breach is found and names
the calls, what is not promised is not checked, and the ordered pairs are counted."""

from __future__ import annotations

import pytest

from ddbkeys.testing import History, HistoryViolation, Operation, check_history


def op(start: int, end: int, *ids: int, process: int = 1, scope: str = "", n: int = 0) -> Operation:
    return Operation(start, end, tuple(ids), process, scope, n)


def test_ordered_calls_with_increasing_ids_pass_and_the_pairs_are_counted() -> None:
    # 1 and 2 overlap; 3 began after both ended; 4 after all three
    calls = [op(0, 10, 2, n=1), op(5, 12, 1, n=2), op(20, 30, 3, n=3), op(40, 50, 4, 5, n=4)]
    report = check_history("GaplessSequence", calls)
    assert (report.operations, report.ids, report.ordered_pairs) == (4, 5, 2 + 3)
    assert report.summary().startswith("GaplessSequence: 4 calls, 5 ids, 5 ordered pairs")


def test_a_call_ordered_after_another_with_a_smaller_id_is_named() -> None:
    calls = [op(0, 10, 7, process=11, n=1), op(20, 30, 5, process=12, n=2)]
    with pytest.raises(HistoryViolation) as raised:
        check_history("AtomicCounter", calls)
    message = str(raised.value)
    assert "call 1 of process 11 got id 7" in message
    assert "before call 2 of process 12 began, which got id 5" in message
    assert "increasing across processes" in message


def test_a_duplicate_is_named() -> None:
    with pytest.raises(HistoryViolation, match=r"id 3 was returned by call 1 .* and by call 2"):
        check_history("AtomicCounter", [op(0, 10, 3, n=1), op(0, 10, 3, n=2)])


def test_a_gap_is_found_only_where_gapless_is_promised() -> None:
    calls = [op(0, 1, 1), op(2, 3, 2), op(4, 5, 4)]
    with pytest.raises(HistoryViolation, match=r"1 ids between 1 and 4 .* \[3\]"):
        check_history("GaplessSequence", calls)
    check_history("AtomicCounter", calls)  # may skip
    check_history("GaplessSequence", calls, complete=False)  # calls that never returned


def test_blocks_are_increasing_per_allocator_only() -> None:
    # two allocators interleave their blocks: 11 after 1..2 of the other is fine, 3 is not
    a = [op(0, 1, 1, scope="a"), op(10, 11, 2, scope="a")]
    b = [op(2, 3, 11, scope="b"), op(20, 21, 3, scope="b", n=9)]
    report = check_history("BlockAllocator", a + b[:1])
    assert report.scopes == 2 and report.ordered_pairs == 1
    with pytest.raises(HistoryViolation, match=r"call 9 of process 1 \(b\)"):
        check_history("BlockAllocator", a + b)
    with pytest.raises(HistoryViolation, match="unique across processes"):
        check_history("BlockAllocator", [op(0, 1, 1, scope="a"), op(0, 1, 1, scope="b")])


def test_collections_are_checked_each_on_its_own() -> None:
    calls = [op(0, 1, 1, scope="x"), op(2, 3, 1, scope="y"), op(4, 5, 2, scope="y")]
    assert check_history("CollectionSequence", calls).scopes == 2
    with pytest.raises(HistoryViolation, match=r"gapless within each collection, but \(in y\)"):
        check_history("CollectionSequence", [*calls, op(6, 7, 4, scope="y")])


def test_the_recorder_stamps_calls_and_reads_back() -> None:
    history = History(scope="s")
    assert history.call(lambda: 1) == 1
    assert history.call(lambda: [2, 3], scope="t") == [2, 3]
    with pytest.raises(ValueError, match="boom"), history.recording():
        raise ValueError("boom")  # a call that raised: not recorded
    first, second = history.operations
    assert first.ids == (1,) and first.scope == "s" and first.start <= first.end <= second.start
    assert second.ids == (2, 3) and second.scope == "t" and second.number == 1
    assert Operation.from_dict(second.as_dict()) == second
    assert check_history("AtomicCounter", history.operations).ordered_pairs == 1
