"""Collections whose reconciliation does not settle (issue 33, point 5), without a server: the
pending set's elements and bound, ``apply_flow`` driven by hand, and the follower and the
Lambda handler on the model of tests/support/proof_world.py (the table, its lagging index, its
stream and the state table), with the proven listing's decision core after each step."""

from __future__ import annotations

from typing import Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys.partition_keys._index.maintain import MAX_ROUNDS, Outcome
from ddbkeys.partition_keys._index.pending import (
    MAX_LARGE_PENDING,
    MAX_PENDING,
    PENDING_ATTRIBUTE,
    SMALL_ELEMENT,
    Nonces,
    add_pending,
    apply_flow,
    element,
    element_key,
    limit,
    most_bytes,
    pending_keys,
    settled_elements,
)
from ddbkeys.partition_keys._index.state import StateCore, evidence_from_item
from ddbkeys.partition_keys._proof.evidence import Evidence
from tests.support.proof_actors import follower_at_rest, listing, record
from tests.support.proof_machine import ListingWrong, ProofMachine, check
from tests.support.proof_world import INDEX, TABLE
from tests.unit.test_index_core import DATA, MARKER, failure, index, play, query

# --- the elements ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [{"S": "a"}, {"S": "a b:c é\x00"}, {"N": "-1.5E+10"}, {"B": b"\x00\xff "}, {"S": "x" * 2048}],
)
def test_an_element_names_its_collection_whatever_the_key_holds(key: dict[str, Any]) -> None:
    text = element(key, 1_700_000_000.25, "n-1")
    assert element_key(text) == key
    assert text.endswith(" 1700000000.250 n-1") and text.count(" ") == 2


@pytest.mark.parametrize("text", ["", "a", "S:", "X:YQ== 1 n", "S:not base64! 1 n", "B:%%% 1"])
def test_an_element_ddbkeys_did_not_write_names_nothing(text: str) -> None:
    assert element_key(text) is None


def test_pending_keys_are_distinct_and_in_a_fixed_order() -> None:
    texts = [element({"S": "b"}, 1, "x-1"), element({"S": "a"}, 2, "x-2")]
    texts += [element({"S": "b"}, 3, "y-1"), "junk"]
    assert pending_keys(texts) == [{"S": "a"}, {"S": "b"}]
    assert pending_keys(reversed(texts)) == [{"S": "a"}, {"S": "b"}]


def test_a_settled_collection_takes_out_only_the_elements_known_before() -> None:
    """Two writers: b's element added after this maintainer read the set stays, though b
    settled here; so does a's, whose collection did not settle."""
    mine = element({"S": "b"}, 1, "me-1")
    theirs = element({"S": "b"}, 2, "them-1")
    other = element({"S": "a"}, 1, "me-2")
    known = {mine, other}
    assert settled_elements(known, [{"S": "b"}]) == [mine]
    assert settled_elements(known | {theirs}, [{"S": "b"}]) == sorted([mine, theirs])
    assert settled_elements(known, []) == []


def test_nonces_differ_per_maintainer_and_per_give_up() -> None:
    one, two = Nonces(), Nonces()
    assert len({one(), one(), two(), two()}) == 4


def test_the_bound_keeps_the_record_well_under_400_kb() -> None:
    small = element({"S": "order-123456"}, 1_700_000_000.0, Nonces()())
    large = element({"S": "x" * 300}, 1_700_000_000.0, Nonces()())
    assert limit(small) == MAX_PENDING and limit(large) == MAX_LARGE_PENDING
    assert len(small.encode()) <= SMALL_ELEMENT < len(large.encode())
    assert limit(small, 3) == 3 and limit(large, 3) == 3
    # At most MAX_LARGE_PENDING elements of the longest key, the rest small: ~110 KB.
    assert most_bytes() < 128 * 1024
    assert most_bytes() >= MAX_PENDING * SMALL_ELEMENT


# --- apply_flow, driven by hand ---------------------------------------------------------------


def _churn() -> list[tuple[str, Any]]:
    """A collection that fills and empties between each read and write of a reconciliation."""
    script: list[tuple[str, Any]] = []
    for _ in range(MAX_ROUNDS // 2):
        script += [("query", query(DATA)), ("put_item", {})]
        script += [("query", query(MARKER)), ("delete_item", {})]
    return script


def _store() -> StateCore:
    return StateCore("state", deadline=5.0, clock=lambda: 1_700_000_000.0)


def test_a_collection_that_settles_is_applied_with_nothing_recorded() -> None:
    core = index()
    result, sent = play(
        apply_flow(core, _store(), {"S": "a"}, Nonces("n")), [("query", query(DATA, MARKER))]
    )
    assert result.outcome is Outcome.UNCHANGED and result.applied and result.element is None
    assert [r.operation for r in sent] == ["query"]


def test_a_collection_that_does_not_settle_is_added_to_the_pending_set_alone() -> None:
    core = index()
    result, sent = play(
        apply_flow(core, _store(), {"S": "a"}, Nonces("n")), [*_churn(), ("update_item", {})]
    )
    assert result.outcome is None and result.applied
    assert result.element == element({"S": "a"}, 1_700_000_000.0, "n-1")
    update = sent[-1].params
    assert update["UpdateExpression"] == "ADD #p :p"  # that element alone: no writer undone
    assert update["ExpressionAttributeNames"] == {"#p": PENDING_ATTRIBUTE}
    assert update["ExpressionAttributeValues"][":p"] == {"SS": [result.element]}
    assert update["ConditionExpression"] == "attribute_not_exists(#p) OR size(#p) < :n"
    assert update["ExpressionAttributeValues"][":n"] == {"N": str(MAX_PENDING)}


def test_a_collection_that_gives_up_again_replaces_its_known_elements() -> None:
    """A hot collection holds one element of each maintainer, not one a batch: the new one is
    added (one more allowed), then those it knew of leave."""
    core = index()
    old = element({"S": "a"}, 1.0, "n-0")
    other = element({"S": "b"}, 1.0, "n-0")
    result, sent = play(
        apply_flow(core, _store(), {"S": "a"}, Nonces("n"), known={old, other}),
        [*_churn(), ("update_item", {}), ("update_item", {})],
    )
    assert result.element is not None and result.replaced == (old,)
    add, delete = sent[-2].params, sent[-1].params
    assert add["ExpressionAttributeValues"][":n"] == {"N": str(MAX_PENDING + 1)}
    assert delete["UpdateExpression"] == "DELETE #p :p"
    assert delete["ExpressionAttributeValues"][":p"] == {"SS": [old]}


def test_a_full_pending_set_leaves_the_collection_unapplied() -> None:
    core = index()
    full = failure("ConditionalCheckFailedException")
    result, _ = play(
        apply_flow(core, _store(), {"S": "a"}, Nonces("n"), 5), [*_churn(), ("update_item", full)]
    )
    assert result.outcome is None and result.element is None and not result.applied


def test_add_pending_sends_the_bound_for_the_element() -> None:
    text = element({"S": "x" * 300}, 1.0, "n-1")
    answer, sent = play(add_pending(_store(), "orders", "ix", text, 100), [("update_item", {})])
    assert answer is True
    assert sent[0].params["ExpressionAttributeValues"][":n"] == {"N": str(MAX_LARGE_PENDING)}
    assert sent[0].params["Key"] == {"id": {"S": "orders/ix"}}


def test_the_record_reads_its_pending_set() -> None:
    texts = [element({"S": "a"}, 1, "n-1")]
    evidence = evidence_from_item("t", "i", {"id": {"S": "t/i"}, "pending": {"SS": texts}})
    assert evidence.pending == tuple(texts) and evidence.corrupt is None
    broken = evidence_from_item("t", "i", {"id": {"S": "t/i"}, "pending": {"S": "x"}})
    assert broken.corrupt is not None and "pending" in broken.corrupt
    assert evidence_from_item("t", "i", {"id": {"S": "t/i"}}).pending == ()


# --- the maintainers, on the model -----------------------------------------------------------


def started(settled: str, max_pending: int = MAX_PENDING) -> ProofMachine:
    """A table with one shard, maintained (``settled``) and backfilled, the margin past."""
    state = ProofMachine()
    state.max_pending = max_pending
    state.handler.max_pending = max_pending
    state.start(history=[("a", 1)], shards=1, settled=settled)
    state.check()
    return state


def saved(state: ProofMachine) -> Evidence:
    return evidence_from_item(TABLE, INDEX, state.world.state[f"{TABLE}/{INDEX}"])


def newest(state: ProofMachine) -> int:
    """The newest position recorded in the table's one shard."""
    (mark,) = saved(state).shards.values()
    sequence = mark.marks[-1][0]
    return int(sequence) if sequence is not None else 0


def last_record(state: ProofMachine) -> int:
    assert state.world.stream is not None
    (shard,) = state.world.stream.shards.values()
    return shard.last_seq()


def test_the_follower_records_a_collection_that_does_not_settle_and_goes_on() -> None:
    state = started("follower")
    state.put("c", 1, tag=None, lane=0)
    state.follower_runs(0, 30, None, ("*", "unsettled"))
    running = state.followers[0]
    assert not running.done, running.error  # not ended by it
    assert running.report is not None and running.report.pending == 1
    assert pending_keys(saved(state).pending) == [{"S": "c"}]
    assert newest(state) == last_record(state)  # its position went past the record
    state.tick(state.margin + 1)
    # No record after the positions names c, and its marker is missing: only the pending set
    # says so. The listing re-checks it; one that leaves it out is wrong.
    verdict = state.check()
    assert verdict.replay is not None and verdict.replay.pending == 1
    with pytest.raises(ListingWrong, match=r"missing \['c'\]"):
        check(listing(state.world, state.client, state.margin, pending=False), state.world)
    # Once the collection settles, the follower takes it out of the set.
    state.tick(10.0)
    state.follower_runs(0, 30, None, None)
    assert saved(state).pending == ()
    assert running.report.unpended == 1 and running.report.marked >= 1
    state.tick(state.margin + 1)
    assert sorted(state.check().keys or []) == ["a", "c"]


def test_a_hot_collection_gives_up_for_real_and_the_listing_stays_exact() -> None:
    """The application changes the collection right after each of the follower's marker
    writes (real writes, with records): the reconciliation gives up after MAX_ROUNDS."""
    state = started("follower")
    state.put("c", 1, tag=None, lane=0)
    state.quiet_upset(("c", "hot"))
    running = state.followers[0]
    assert not running.done and running.report is not None and running.report.pending >= 1
    for _ in range(4):
        state.quiet()
    state.tick(10.0)
    state.quiet()
    assert saved(state).pending == ()
    verdict = state.check()
    assert verdict.keys == sorted(state.world.non_empty())


def test_an_element_added_after_the_follower_read_the_set_stays() -> None:
    state = started("follower")
    state.put("c", 1, tag=None, lane=0)
    state.follower_runs(0, 30, None, ("*", "unsettled"))
    (mine,) = saved(state).pending
    # Another maintainer gives up on c too, after this follower last read the set.
    theirs = element({"S": "c"}, state.world.now, "another-1")
    assert SyncDriver(state.client, Usage()).run(
        add_pending(record(state.world), TABLE, INDEX, theirs)
    )
    state.tick(10.0)
    state.follower_runs(0, 30, None, None)  # settles c: takes out what it knew of
    assert saved(state).pending == (theirs,)
    assert mine != theirs
    state.tick(state.margin + 1)
    state.check()  # (c still re-checked, and exact)


def test_a_full_pending_set_holds_the_shards_position_until_the_collection_settles() -> None:
    state = started("follower", max_pending=0)
    before = newest(state)
    state.put("c", 1, tag=None, lane=0)
    state.follower_runs(0, 30, None, ("*", "unsettled"))
    running = state.followers[0]
    assert not running.done and running.report is not None
    assert running.report.held_since is not None and running.report.pending == 0
    assert saved(state).pending == ()
    assert newest(state) == before < last_record(state)  # held before c's record
    state.put("d", 1, tag=None, lane=0)  # the follower goes on applying
    state.follower_runs(0, 30, None, ("*", "unsettled"))
    assert newest(state) == before
    state.tick(state.margin + 1)
    state.check()  # the listing reads the stream from the held position: exact
    state.follower_runs(0, 30, None, None)  # c and d settle: the position catches up
    assert running.report.held_since is None
    assert newest(state) == last_record(state)
    state.tick(state.margin + 1)
    assert sorted(state.check().keys or []) == ["a", "c", "d"]


def test_the_lambda_handler_records_a_collection_that_does_not_settle() -> None:
    state = started("lambda")
    state.put("c", 1, tag=None, lane=0)
    assert state.trigger is not None
    state.lambda_batch(0, 4, None, None, ("*", "unsettled"))
    assert state.trigger.failed == {}  # applied: Lambda goes on
    assert pending_keys(saved(state).pending) == [{"S": "c"}]
    assert newest(state) == last_record(state)
    state.tick(state.margin + 1)
    verdict = state.check()
    assert verdict.replay is not None and verdict.replay.pending == 1
    state.tick(10.0)
    state.put("d", 1, tag=None, lane=0)
    state.lambda_batch(0, 4, None, None, None)  # tries c again: it settles, and leaves
    assert saved(state).pending == ()
    state.tick(state.margin + 1)
    assert sorted(state.check().keys or []) == ["a", "c", "d"]


def test_the_lambda_handler_reports_a_collection_it_cannot_record_as_failed() -> None:
    state = started("lambda", max_pending=0)
    before = newest(state)
    state.put("c", 1, tag=None, lane=0)
    put = last_record(state)
    assert state.trigger is not None
    state.lambda_batch(0, 4, None, None, ("*", "unsettled"))
    assert list(state.trigger.failed.values()) == [[put]]  # sent again
    assert newest(state) == before and saved(state).pending == ()
    state.lambda_batch(0, 4, None, None, None)
    assert state.trigger.failed == {} and newest(state) == put
    state.tick(state.margin + 1)
    assert sorted(state.check().keys or []) == ["a", "c"]


def test_a_follower_started_later_takes_out_what_an_earlier_one_left() -> None:
    state = started("follower")
    state.put("c", 1, tag=None, lane=0)
    state.follower_runs(0, 30, None, ("*", "unsettled"))
    state.follower_killed(0)  # its element stays in the set
    assert pending_keys(saved(state).pending) == [{"S": "c"}]
    later = follower_at_rest(state.world, state.client, from_start=False)
    later.advance(80)
    assert later.report is not None and later.report.unpended == 1
    assert saved(state).pending == ()
