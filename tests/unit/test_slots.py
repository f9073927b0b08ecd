"""Writer slots without a server: the request numbers a slot gives, the pool a process keeps
(one slot per call at a time, a new token after fork), what an item image says, which slots are
stale, the write units a write is billed, and the table descriptions a process keeps."""

from __future__ import annotations

import os
from typing import Any

import pytest

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.ids import _described as described
from ddbkeys.ids import _slots as slots
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._exact import billed, item_name, slot_update

NOW = 1_800_000_000.0
NOW_MS = int(NOW * 1000)
COUNTER = CounterItem("ids", {"pk": {"S": "orders"}}, "last_id")


def test_a_request_number_is_the_time_to_keep_the_slot_until() -> None:
    # The call's deadline (60 s left) plus the clock margin (60 s), in ms, rounded up.
    assert slots.keep_until(NOW, 60.0) == NOW_MS + 120_000
    assert slots.keep_until(NOW + 0.0001, 0.0, margin=0.0) == NOW_MS + 1


def test_a_slot_numbers_only_grow() -> None:
    slot = slots.Slot("s")
    assert slot.number(1000) == 1000
    assert slot.number(1000) == 1001  # (the same millisecond: one more)
    assert slot.number(500) == 1002  # (a clock set back: kept longer, never reused)
    assert slot.number(5000) == 5000


def test_one_slot_per_call_at_a_time() -> None:
    pool = slots.WriterSlots()
    first = pool.take()
    second = pool.take()  # (while the first is held)
    assert first.name != second.name
    assert first.name[:12] == second.name[:12]  # one token per process
    pool.give(first)
    pool.give(second)
    assert {pool.take().name, pool.take().name} == {first.name, second.name}
    assert pool.take().name not in (first.name, second.name)


def test_a_new_process_draws_a_new_token(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = slots.WriterSlots()
    before = pool.take()
    pool.give(before)
    monkeypatch.setattr(os, "getpid", lambda: -1)  # (as in a forked child)
    after = pool.take()
    assert after.name[:12] != before.name[:12] and after.last == 0
    pool.give(before)  # a slot of the parent is not taken back
    assert pool.take().name != before.name


def test_forget_draws_a_new_token_at_the_next_call() -> None:
    pool = slots.WriterSlots()
    before = pool.take()
    pool.forget()  # (after a SnapStart restore)
    pool.give(before)
    assert pool.take().name[:12] != before.name[:12]


def image(**numbers: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"pk": {"S": "orders"}, "last_id": {"N": "7"}}
    for name, number in numbers.items():
        item[slots.number_name(name)] = number if isinstance(number, dict) else {"N": str(number)}
        item[slots.value_name(name)] = {"N": "7"}
    return item


def test_the_slots_an_image_holds() -> None:
    assert slots.slots_in(image(a=5, b=6, odd={"S": "x"})) == {"a": 5, "b": 6, "odd": None}
    assert slots.slots_in({"pk": {"S": "orders"}}) == {}


def test_the_stale_slots_oldest_first_at_most_some() -> None:
    seen = slots.SeenSlots()
    seen.saw("item", image(live=NOW_MS, late=NOW_MS - 1, early=NOW_MS - 9, mine=1, odd={"S": "x"}))
    assert seen.stale("item", NOW_MS, skip={"mine"}) == ["early", "late"]
    assert seen.stale("other", NOW_MS, skip=set()) == []
    many = image(**{f"s{n}": n for n in range(20)})
    seen.saw("item", many)
    assert seen.stale("item", NOW_MS, skip=set()) == [f"s{n}" for n in range(slots.MOST_REMOVED)]


def test_seen_items_are_forgotten_least_recently_used_first() -> None:
    seen = slots.SeenSlots(size=2)
    for name in ("a", "b", "c"):
        seen.saw(name, image(x=1))
    assert seen.get("a") is None and seen.get("c") is not None


def test_the_write_removes_stale_slots_on_condition_that_they_still_are() -> None:
    request = slot_update(
        COUNTER, slot="me", number=9, increment=3, base=0, limit=100, stale=["x", "y"], now_ms=5
    )
    names = request["ExpressionAttributeNames"]
    assert request["UpdateExpression"].endswith(" REMOVE #r0, #r0v, #r1, #r1v")
    assert [names[n] for n in ("#r0", "#r0v", "#r1", "#r1v")] == [
        "ddbkeys_w.x",
        "ddbkeys_v.x",
        "ddbkeys_w.y",
        "ddbkeys_v.y",
    ]
    assert request["ConditionExpression"].count("< :now") == 2
    values = request["ExpressionAttributeValues"]
    assert (values[":now"], values[":seq"], values[":limit"]) == (
        {"N": "5"},
        {"N": "9"},
        {"N": "97"},
    )
    plain = slot_update(COUNTER, slot="me", number=9, increment=1, base=0, limit=100)
    assert (
        "REMOVE" not in plain["UpdateExpression"]
        and ":now" not in plain["ExpressionAttributeValues"]
    )


def test_the_write_is_billed_by_the_item_as_last_seen() -> None:
    seen = slots.SeenSlots()
    assert billed(None, COUNTER, "me") == 1.0  # (the counter alone, and this slot)
    # Real slot names: a 12-character token and a number (about 55 bytes a slot).
    seen.saw(item_name(COUNTER), image(**{f"{'t' * 12}{n}": NOW_MS for n in range(16)}))
    assert billed(seen.get(item_name(COUNTER)), COUNTER, "me") == 1.0  # 16 slots: 1 KB
    seen.saw(item_name(COUNTER), image(**{f"{'t' * 12}{n}": NOW_MS for n in range(20)}))
    assert billed(seen.get(item_name(COUNTER)), COUNTER, "me") == 2.0  # 20: over 1 KB


INFO = TableInfo("t", KeyAttribute("pk", "S"), None, (), {}, 0, 0)


class Meta:
    endpoint_url = "http://127.0.0.1:8000"
    region_name = "us-east-1"


class Client:
    meta = Meta()


def test_a_description_is_kept_per_endpoint_region_and_table() -> None:
    key = described.table_key(Client(), "t")
    assert key == ("http://127.0.0.1:8000", "us-east-1", "t")
    assert described.known(key) is None
    described.keep(key, INFO)
    assert described.known(key) is INFO
    assert described.known(("http://127.0.0.1:8001", "us-east-1", "t")) is None
    described.forget(key)
    assert described.known(key) is None
