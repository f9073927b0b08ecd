"""ddbkeys' own items, told apart without a server (issue 35, point 5): a marker (by its rule) and a
counter item (``ddbkeys_type`` exactly ``"counter"``) are ddbkeys' own; any other item, one
whose ``ddbkeys_type`` holds another value or type included, is yours. Each listing method's flow
is driven with scripted pages: a collection holding only own items is not handed out (unless
``own_items``), one whose first item is a counter is looked at past it, and the projection names
what tells them apart."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError, ResumeTokenError
from ddbkeys.partition_keys import ListingOptions
from ddbkeys.partition_keys._index.markers import collection_query, read_collection, until_data
from ddbkeys.partition_keys._listing.base import MAX_SORT_KEY
from ddbkeys.partition_keys._listing.checkpoint import (
    Checkpoint,
    check_binding,
    decode_token,
    encode_token,
)
from ddbkeys.partition_keys._listing.choice import choose
from ddbkeys.partition_keys._listing.recognise import Strays, is_counter, markers_of
from ddbkeys.partition_keys._listing.scan import ScanMethod
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod, SkipMethod
from tests.unit.test_listing_core import (
    MARKER_SK,
    data,
    drive,
    info,
    items,
    keys_of,
    marker,
    reader,
)


def counter(key: str, sk: str = "0", kind: Any = None) -> dict[str, Any]:
    return {
        "pk": {"S": key},
        "sk": {"N": sk},
        "ddbkeys_type": kind if kind is not None else {"S": "counter"},
    }


@pytest.mark.parametrize(
    ("kind", "own"),
    [
        ({"S": "counter"}, True),
        ({"S": "Counter"}, False),  # only the exact value ddbkeys writes
        ({"S": "customer"}, False),
        ({"S": "marker"}, False),  # a marker is known by its rule, never by its type
        ({"N": "1"}, False),
        ({"SS": ["counter"]}, False),
        ({"S": "counter", "N": "1"}, False),  # not an AttributeValue
        ("counter", False),
    ],
)
def test_only_the_exact_counter_type_is_ddbkeys_own(kind: Any, own: bool) -> None:
    item = {"pk": {"S": "a"}, "sk": {"N": "1"}, "ddbkeys_type": kind}
    markers = markers_of(info())
    assert markers is not None
    assert is_counter(item) is own
    assert markers.is_own(item) is own and markers.is_data(item) is not own
    assert markers.is_own(marker("a")) and not is_counter(marker("a"))
    assert markers.is_data(data("a"))


def test_the_scan_leaves_out_a_collection_of_counters_and_projects_the_type() -> None:
    answers: list[Any] = [
        items(
            counter("a"),
            marker("b"),
            counter("b", "1"),
            counter("c"),
            data("c", "1"),
            more=data("c", "1"),
        ),
        items(
            counter("d", kind={"S": "customer"}),  # yours
            counter("e"),
            counter("e", "1"),
        ),
    ]
    method = ScanMethod(info())
    request = method.first_request(0, 1, None)
    assert request["ProjectionExpression"] == "#pk, #sk, #m, #t"
    assert request["ExpressionAttributeNames"]["#t"] == "ddbkeys_type"
    steps, _ = drive(method.keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["c", "d"]
    # With own items, every collection is a key, and only the partition key is projected.
    both = ScanMethod(info()).knowing_markers_by("ddbkeys_pk", own_items=True)
    assert both.first_request(0, 1, None)["ProjectionExpression"] == "#pk"
    steps, _ = drive(both.keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["a", "b", "c", "d", "e"]


def test_a_table_without_a_sort_key_leaves_out_its_counters() -> None:
    counters = {
        "pk": {"S": "order-counter"},
        "last_id": {"N": "7"},
        "ddbkeys_type": {"S": "counter"},
    }
    steps, _ = drive(
        ScanMethod(info(None)).keys(reader(), 0, 1, None),
        [items({"pk": {"S": "ann"}}, counters, {"pk": {"S": "bob"}})],
    )
    assert keys_of(steps) == ["ann", "bob"]


def test_the_skip_scan_looks_past_a_counter_that_comes_first() -> None:
    """A collection whose first item is a counter needs a look at its next item (the next
    request starts just after the counter), as a marker does; a collection of counters alone
    is not a key (the request after its last reads the next collection)."""
    a_counter = {"pk": {"S": "a"}, "sk": {"N": "0"}}
    b_counter = {"pk": {"S": "b"}, "sk": {"N": "0"}}
    b_marker = {"pk": {"S": "b"}, "sk": MARKER_SK}
    answers: list[Any] = [
        items(counter("a"), more=a_counter),  # a's counter first: look at a's next item
        items(data("a", "1"), more=data("a", "1")),  # a holds data: a key; past a
        items(marker("b"), more=b_marker),
        items(counter("b"), more=b_counter),  # b: marker and counter only
        items(data("c", "3")),
    ]
    steps, sent = drive(SkipMethod(info()).keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["a", "c"]
    assert [r.get("ExclusiveStartKey") for r in sent] == [
        None,
        a_counter,
        {"pk": {"S": "a"}, "sk": MAX_SORT_KEY["N"]},
        b_marker,
        b_counter,
    ]
    # skip-pages: the same rule through the same next_request.
    steps, _ = drive(
        PagedSkipMethod(info()).keys(reader(), 0, 1, None),
        [items(counter("a"), counter("b"), data("b", "1"), counter("c"))],
    )
    assert keys_of(steps) == ["b"]


def test_a_collection_read_for_the_index_pages_on_past_own_items() -> None:
    """The maintainers' and verify's Query of a collection goes on while every item read is
    ddbkeys' own; a marker and a counter before the data do not make it look empty."""
    markers = markers_of(info())
    assert markers is not None
    request = collection_query("t", {"S": "a"}, markers, consistent=True)
    assert request["ProjectionExpression"] == "#pk, #sk, #m, #t" and request["Limit"] == 2
    pages = [
        {"Items": [marker("a"), counter("a")], "LastEvaluatedKey": counter("a")},
        {"Items": [data("a", "1"), data("a", "2")], "LastEvaluatedKey": data("a", "2")},
    ]
    asked: list[Any] = []

    def ask(request: Any) -> Any:
        asked.append(request.get("ExclusiveStartKey"))
        answer = yield None
        return answer

    flow = until_data(ask, request, markers)
    next(flow)
    flow.send(pages[0])
    with pytest.raises(StopIteration) as done:
        flow.send(pages[1])
    found, more = done.value.value
    assert asked == [None, counter("a")] and more
    holds, seen, look_up = read_collection(found, more, markers)
    assert holds and seen == marker("a") and not look_up
    # A collection of own items alone: no data, its marker seen (a maintainer removes it).
    assert read_collection([marker("a"), counter("a")], False, markers)[:2] == (False, marker("a"))


def test_include_own_items_is_a_checked_setting() -> None:
    options = ListingOptions(include_own_items=True)
    assert ListingOptions.from_dict(options.to_dict()) == options
    with pytest.raises(ConfigurationError, match="include_own_items"):
        ListingOptions(include_own_items=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="never marks"):
        ListingOptions(method="index", include_own_items=True)
    # auto never reads the index then (it marks only collections holding your items).
    ready = replace(
        info(),
        index_projections={"ddbkeys-partition-keys": "KEYS_ONLY"},
        index_hash_keys={"ddbkeys-partition-keys": "ddbkeys_pk"},
    )
    assert choose("auto", ready, "ddbkeys-partition-keys", "ddbkeys_pk") is None
    chosen = choose("auto", ready, "ddbkeys-partition-keys", "ddbkeys_pk", own_items=True)
    assert chosen is not None and chosen.method.name == "skip-pages"
    assert "include_own_items" in chosen.reason


def test_a_resume_token_keeps_include_own_items() -> None:
    """A listing resumed with the other setting would hand out a mix of both answers: the
    token says which it was, and a resume with the other is refused."""
    described = info()
    both = Checkpoint("orders", "pk:S,sk:N", "scan", [None], own_items=True)
    token = encode_token(both)
    assert decode_token(token) == both
    assert check_binding(decode_token(token), described, "scan", own_items=True) == "scan"
    with pytest.raises(ResumeTokenError, match="with --include-own-items"):
        check_binding(decode_token(token), described, "auto")
    plain = encode_token(Checkpoint("orders", "pk:S,sk:N", "scan", [None]))
    assert decode_token(plain).own_items is False
    with pytest.raises(ResumeTokenError, match="without --include-own-items"):
        check_binding(decode_token(plain), described, "scan", own_items=True)


def test_a_key_handed_out_at_an_item_that_says_it_is_a_marker_is_counted_and_said() -> None:
    """A key handed out at an item whose ``ddbkeys_type`` says "marker" but which is no marker
    of the listing's settings (an index made with another sort key or attribute) counts as a
    stray, once a key; the note names the listing's settings, the first stray's sort key and
    what to pass. The type alone never makes the item ddbkeys' own: the key is still listed."""
    method = ScanMethod(info())
    said_marker = {"ddbkeys_type": {"S": "marker"}, "ddbkeys_pk": {"S": "a"}}
    answers: list[dict[str, Any] | Exception] = [
        items(
            {"pk": {"S": "a"}, "sk": {"N": "-1"}, **said_marker},
            {"pk": {"S": "a"}, "sk": {"N": "5"}, **said_marker},  # (a's key was handed out)
            data("b"),
            {"pk": {"S": "c"}, "sk": {"N": "7"}, "ddbkeys_type": {"S": "Marker"}},  # yours
        )
    ]
    steps, _ = drive(method.keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["a", "b", "c"]
    assert (method.strays.count, method.strays.sort_value) == (1, {"N": "-1"})
    note = method.strays.note(method.markers)
    assert note.startswith("1 key was listed at an item that says it is ddbkeys' marker")
    assert f"(sort key {'-' + '9' * 38}, attribute 'ddbkeys_pk'), the first at sort key -1" in note
    assert Strays().note(method.markers) == ""
    # skip-pages, whose first collection of a page led by such an item: noted once, as a scan
    # (helper-94 F3: it said 11 keys for 10, the page's lead looked at twice).
    paged = PagedSkipMethod(info())
    answers = [items({"pk": {"S": "a"}, "sk": {"N": "-1"}, **said_marker}, data("a"), data("b"))]
    steps, _ = drive(paged.keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["a", "b"] and paged.strays.count == 1
