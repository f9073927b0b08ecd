"""The listing's decisions without a server: each method's flow is driven by hand (its Scan
requests answered with scripted pages, failures thrown in), and what it asks for next, what it
emits, how long the read budget waits and where each segment stands are asserted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from ddbkeys import ListingInterrupted
from ddbkeys._core.steps import Emit, Flow, Pause, Request
from ddbkeys._core.stopping import STOP_SLICE
from ddbkeys._errors import DdbKeysError
from ddbkeys._retry import RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._listing.base import MAX_SORT_KEY, ReadBudget, Reader, SegmentMethod
from ddbkeys.partition_keys._listing.checkpoint import decode_token
from ddbkeys.partition_keys._listing.listing import DONE, ListingCore
from ddbkeys.partition_keys._listing.pages import MAX_TARGET, PageSize
from ddbkeys.partition_keys._listing.reading import Reading
from ddbkeys.partition_keys._listing.recognise import Seen
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS, ScanMethod
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod, SkipMethod
from tests.unit.test_read_budget import FakeClock

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.base import ScanPage

Page = dict[str, Any]


def info(sort: str | None = "N", *, size: int = 0, items: int = 0) -> TableInfo:
    return TableInfo(
        name="orders",
        partition_key=KeyAttribute("pk", "S"),
        sort_key=KeyAttribute("sk", sort) if sort else None,
        replica_regions=(),
        index_projections={},
        item_count=items,
        size_bytes=size,
        created="2024-01-01T00:00:00",
    )


def reader(**settings: Any) -> Reader:
    policy = RetryPolicy(max_attempts=3, base_delay=0.1, sleep=lambda _: None, random=lambda: 1)
    return Reader(None, "orders", retry=policy, deadline=None, **settings)


def page(*keys: str, more: dict[str, Any] | None = None, units: float = 0.5) -> Page:
    answer: Page = {
        "Items": [{"pk": {"S": key}} for key in keys],
        "ScannedCount": len(keys),
        "ConsumedCapacity": {"CapacityUnits": units},
    }
    if more is not None:
        answer["LastEvaluatedKey"] = more
    return answer


def drive(flow: Flow[Any], answers: list[Page | Exception]) -> tuple[list[Any], list[Any]]:
    """Run ``flow``, answering its requests from ``answers`` in turn (an exception is thrown
    in): (the steps it yielded, Emits as their values), (the params of each request)."""
    steps: list[Any] = []
    sent: list[Any] = []
    answers = list(answers)
    try:
        step = next(flow)
        while True:
            if isinstance(step, Request):
                sent.append(dict(step.params))
                answer = answers.pop(0)
                steps.append("request")
                step = flow.throw(answer) if isinstance(answer, Exception) else flow.send(answer)
            else:
                steps.append(step.value if isinstance(step, Emit) else step)
                step = flow.send(None)
    except StopIteration:
        pass
    assert not answers, "answers left over"
    return steps, sent


def keys_of(steps: list[Any]) -> list[str]:
    return [s["S"] for s in steps if isinstance(s, dict)]


# --- the skip scan: where the next page starts ----------------------------------------------

LAST = {"S": "b"}
ANY_LEK = {"pk": {"S": "b"}, "sk": {"N": "3"}}


@pytest.mark.parametrize(
    ("sort", "answer", "last", "start"),
    [
        # A page with items: just past the last key's collection, at the greatest sort key.
        ("N", page("a", "b", more=ANY_LEK), LAST, {"pk": LAST, "sk": MAX_SORT_KEY["N"]}),
        ("S", page("a", "b", more=ANY_LEK), LAST, {"pk": LAST, "sk": MAX_SORT_KEY["S"]}),
        ("B", page("a", "b", more=ANY_LEK), LAST, {"pk": LAST, "sk": MAX_SORT_KEY["B"]}),
        # Items all of a collection already handed out: past it all the same.
        ("N", page("b", more=ANY_LEK), LAST, {"pk": LAST, "sk": MAX_SORT_KEY["N"]}),
        # No item came back (DynamoDB stopped short): where DynamoDB stopped.
        ("N", page(more=ANY_LEK), LAST, ANY_LEK),
        ("N", page(more=ANY_LEK), None, ANY_LEK),
        # No LastEvaluatedKey: the segment is read to its end.
        ("N", page("a", "b"), LAST, None),
        ("N", page(), None, None),
    ],
    ids=[
        "items N",
        "items S",
        "items B",
        "seen before",
        "empty page",
        "empty first page",
        "end",
        "empty end",
    ],
)
def test_where_the_next_skip_page_starts(
    sort: str, answer: Page, last: dict[str, Any] | None, start: dict[str, Any] | None
) -> None:
    method = SkipMethod(info(sort))
    request = {"Limit": 1, "ProjectionExpression": "#pk"}
    following = method.next_request(request, answer, Seen(last), None)
    if start is None:
        assert following is None
    else:
        assert following == {**request, "ExclusiveStartKey": start}
        assert request == {"Limit": 1, "ProjectionExpression": "#pk"}  # not changed


MARKER_SK = {"N": "-" + "9" * 38}


def marker(key: str) -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": MARKER_SK, "ddbkeys_pk": {"S": key}}


def data(key: str, sk: str = "1", **more: Any) -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": {"N": sk}, **more}


def items(*found: dict[str, Any], more: dict[str, Any] | None = None) -> Page:
    answer: Page = {"Items": list(found), "ScannedCount": len(found)}
    if more is not None:
        answer["LastEvaluatedKey"] = more
    return answer


def test_the_skip_scan_looks_past_a_marker_and_never_lists_a_lone_one() -> None:
    """A page that ends with a marker goes on just after it (its collection's next item says
    whether it holds data), not past the collection; a marker alone is not a key."""
    a_marker = {"pk": {"S": "a"}, "sk": MARKER_SK}
    c_marker = {"pk": {"S": "c"}, "sk": MARKER_SK}
    answers: list[Page | Exception] = [
        items(marker("a"), more=a_marker),  # a's marker first: look at a's next item
        items(data("a"), more=data("a")),  # a holds data: a key; past a
        items(marker("b"), more={"pk": {"S": "b"}, "sk": MARKER_SK}),
        items(marker("c"), more=c_marker),  # b held its marker alone: not a key
        items(data("c", ddbkeys_pk={"S": "zzz"})),  # data with the attribute: data
    ]
    steps, sent = drive(SkipMethod(info()).keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["a", "c"]
    assert [r.get("ExclusiveStartKey") for r in sent] == [
        None,
        a_marker,
        {"pk": {"S": "a"}, "sk": MAX_SORT_KEY["N"]},
        {"pk": {"S": "b"}, "sk": MARKER_SK},
        c_marker,
    ]
    assert all(r["Limit"] == 1 for r in sent)


def test_the_scan_hands_out_a_collection_at_its_first_item_that_is_not_a_marker() -> None:
    answers: list[Page | Exception] = [
        items(marker("a"), marker("b"), more=data("b")),
        items(data("b", "2"), marker("c"), data("d"), marker("d")),
    ]
    steps, _ = drive(ScanMethod(info()).keys(reader(), 0, 1, None), answers)
    assert keys_of(steps) == ["b", "d"]
    # A table without a sort key has no markers: every item counts but a counter item.
    plain = ScanMethod(info(None))
    assert plain.markers is None
    assert plain.first_request(0, 1, None)["ProjectionExpression"] == "#pk, #t"
    steps, _ = drive(plain.keys(reader(), 0, 1, None), [items(marker("a"))])
    assert keys_of(steps) == ["a"]


def test_a_collection_at_the_greatest_sort_key_is_passed_exactly() -> None:
    """The start key is the greatest item a collection can hold: an item there is the start
    key itself (exclusive), so the next page begins with the next collection either way."""
    for sort in ("S", "N", "B"):
        start = SkipMethod(info(sort)).start_key({"S": "k"})
        assert start == {"pk": {"S": "k"}, "sk": MAX_SORT_KEY[sort]}
    assert ScanMethod(info(None)).start_key({"S": "k"}) == {"pk": {"S": "k"}}


@pytest.mark.parametrize(
    ("after", "segments", "expected"),
    [
        (None, 1, {}),
        ({"S": "k"}, 1, {"ExclusiveStartKey": {"pk": {"S": "k"}, "sk": MAX_SORT_KEY["N"]}}),
        (None, 4, {"Segment": 2, "TotalSegments": 4}),
        (
            {"S": "k"},
            4,
            {
                "Segment": 2,
                "TotalSegments": 4,
                "ExclusiveStartKey": {"pk": {"S": "k"}, "sk": MAX_SORT_KEY["N"]},
            },
        ),
    ],
    ids=["new", "resumed", "segment", "resumed segment"],
)
def test_a_segments_first_request(
    after: dict[str, Any] | None, segments: int, expected: dict[str, Any]
) -> None:
    request = SkipMethod(info()).first_request(2 if segments > 1 else 0, segments, after)
    assert request == {
        # (what tells ddbkeys' own items, a marker or a counter: no read unit more)
        "ProjectionExpression": "#pk, #sk, #m, #t",
        "ExpressionAttributeNames": {
            "#pk": "pk",
            "#sk": "sk",
            "#m": "ddbkeys_pk",
            "#t": "ddbkeys_type",
        },
        **expected,
    }


def test_the_skip_flow_pages_and_emits_each_key_once() -> None:
    flow = SkipMethod(info()).keys(reader(), 0, 1, None)
    steps, sent = drive(
        flow,
        [page("a", more={"pk": {"S": "a"}, "sk": {"N": "1"}}), page("c", more=ANY_LEK), page()],
    )
    assert keys_of(steps) == ["a", "c"]
    assert steps == ["request", {"S": "a"}, "request", {"S": "c"}, "request"]
    assert [r.get("ExclusiveStartKey") for r in sent] == [
        None,
        {"pk": {"S": "a"}, "sk": MAX_SORT_KEY["N"]},
        {"pk": {"S": "c"}, "sk": MAX_SORT_KEY["N"]},
    ]
    assert all(r["Limit"] == 1 and r["TableName"] == "orders" for r in sent)
    assert all(r["ReturnConsumedCapacity"] == "TOTAL" for r in sent)


def test_a_resumed_segment_hands_out_nothing_of_the_collection_it_stopped_in() -> None:
    flow = SkipMethod(info(), page_items=3).keys(reader(), 0, 1, {"S": "b"})
    steps, sent = drive(flow, [page("b", "c", "c")])
    assert keys_of(steps) == ["c"]
    assert sent[0]["ExclusiveStartKey"] == {"pk": {"S": "b"}, "sk": MAX_SORT_KEY["N"]}


def test_the_scan_flow_hands_each_key_once_across_pages() -> None:
    flow = ScanMethod(info()).keys(reader(), 1, 2, None)
    lek = {"pk": {"S": "b"}, "sk": {"N": "2"}}
    steps, sent = drive(flow, [page("a", "a", "b", more=lek), page("b", "b", "c")])
    assert keys_of(steps) == ["a", "b", "c"]
    assert [r["Limit"] for r in sent] == [PAGE_ITEMS, PAGE_ITEMS]
    assert sent[1]["ExclusiveStartKey"] == lek  # a scan goes on where DynamoDB stopped
    assert sent[0]["Segment"] == 1 and sent[0]["TotalSegments"] == 2


def test_skip_pages_asks_for_what_its_shared_controller_learned() -> None:
    method = PagedSkipMethod(info(size=3000 * 500, items=3000))  # items of 500 bytes: 8 a page
    assert method.first_limit(method.start_state()) == 8
    more = {"pk": {"S": "x"}, "sk": {"N": "1"}}
    # A page of 8 items that cost 2 units (over its 1-unit target): one item less.
    answer = page(*"abcdefgh", more=more, units=1.0)
    following = method.next_request({"Limit": 8}, answer, Seen({"S": "h"}), method.start_state())
    assert following is not None and following["Limit"] == 7
    expected = Reading(PageSize.for_items_of(500, 3000 * 500))
    expected.first_limit()  # (a segment started: PageSize.live)
    expected.after(list("abcdefgh"), 2.0, asked=8)
    assert method.start_state().pages == expected.pages
    # A segment that starts later goes on from what the others learned.
    first = drive(method.keys(reader(), 3, 4, None), [page()])[1][0]
    assert first["Limit"] == 7


def test_skip_pages_reads_a_table_of_128_kb_or_less_whole() -> None:
    """Where the table's description puts it at 128 KB or less (``WHOLE_BYTES``: skipping
    could save at most 16 RCU, the ``LEEWAY`` skip-pages allows itself beyond skipping alone),
    each segment's first pages are scan-sized: one request reads the table, as a scan does, not
    six or more, and the summary says so. They read at most twice the segment's share of the
    described items and bytes: where the table proves larger (a description hours old), the
    pages after them skip, past the collection the last ended in, and the summary says that
    instead; however many segments, they read about twice the described table at most."""
    described = info(size=3000 * 40, items=3000)  # 120 KB in 3,000 items
    method = PagedSkipMethod(described)
    steps, sent = drive(method.keys(reader(), 0, 1, None), [page("a", "b", units=1.0)])
    assert sent[0]["Limit"] == 6008 and keys_of(steps) == ["a", "b"]
    assert method.note() == (
        "read as a scan: the table's description puts it at 120,000 bytes, where skipping "
        "could save at most 15 RCU"
    )
    # Four segments: each reads whole up to twice its share (1,508 items); one that reads its
    # share and more, as the table grew since its description, skips from there.
    grown = PagedSkipMethod(described)
    more = {"pk": {"S": "k01507"}, "sk": {"N": "1"}}
    full = page(*(f"k{n:05}" for n in range(1508)), more=more, units=7.5)
    steps, sent = drive(grown.keys(reader(), 1, 4, None), [full, page("z")])
    assert [r["Limit"] for r in sent] == [1508, 102]  # then skipping, a unit's items
    assert sent[1]["ExclusiveStartKey"]["pk"] == {"S": "k01507"}  # past its collection
    assert len(keys_of(steps)) == 1509
    assert grown.note().startswith("its first pages read as a scan: the table's description")
    # A last page that cost more than twice the share of the described bytes says so too.
    costly = PagedSkipMethod(described)
    drive(costly.keys(reader(), 0, 1, None), [page("a", units=31.5)])  # 63 units of 62
    assert "proved larger" in costly.note()
    larger = PagedSkipMethod(info(size=40 * 3300, items=3300))  # 132 KB
    assert larger.first_limit(larger.start_state()) == 102


def test_a_table_read_whole_goes_on_whole_past_a_scan_s_page_of_items() -> None:
    """A table of 128 KB or less in over 20,000 items (``PAGE_ITEMS``, a scan's page) takes
    the scan's two pages read whole, not a third skipping one."""
    method = PagedSkipMethod(info(size=23_040 * 5, items=23_040))
    more = {"pk": {"S": "k19999"}, "sk": {"N": "1"}}
    first = page(*(f"k{n:05}" for n in range(PAGE_ITEMS)), more=more, units=12.5)
    steps, sent = drive(method.keys(reader(), 0, 1, None), [first, page("z", units=2.0)])
    assert [r["Limit"] for r in sent] == [PAGE_ITEMS, PAGE_ITEMS]
    assert len(keys_of(steps)) == PAGE_ITEMS + 1
    assert method.note().startswith("read as a scan")


def test_skip_pages_reads_on_in_pages_of_a_scan_s_limit_and_judges_them_scan_sized() -> None:
    """Reading on as a scan, a page goes out with a scan's Limit (``PAGE_ITEMS``: DynamoDB's 1
    MB pages, of at most that many items), and is judged as the scan-sized page the shared
    controller asked for: one that comes back with ``PAGE_ITEMS`` items did not fill a Limit
    the controller set, so it says nothing of how many items a unit holds."""
    method = PagedSkipMethod(info(size=10_000 * 150, items=10_000))
    state = method.start_state()
    pages = state.pages
    pages.ledgers.skipped(10.0, 300, 300)
    pages.ledgers.read(100.0, 3000, 3000)
    pages.through, pages.small, pages.unit_items = True, True, 27
    pages.through_target = 2 * MAX_TARGET
    state.reading_on, state.asked = True, None  # a scan-sized page was asked for
    state.joined = pages.went_back  # (by a segment reading on in this period)
    more = {"pk": {"S": "x"}, "sk": {"N": "1"}}
    answer = page(*(f"k{n:05}" for n in range(PAGE_ITEMS)), more=more, units=100.0)
    sent = {"Limit": PAGE_ITEMS}
    following = method.next_request(sent, answer, Seen({"S": "k19999"}), state)
    assert following is not None and following["Limit"] == PAGE_ITEMS
    assert pages.scan_pages == 1  # (read on as a scan-sized page)
    # (judged as a page that filled a Limit of 20,000: 100 items a unit, at 100 RCU)
    assert pages.unit_items == 27


def test_skip_pages_reads_whole_items_where_their_sizes_may_turn_the_judgement() -> None:
    """While every segment reads on and that may still turn (``Reading.whole_items``), a page
    goes out without the projection of keys: its items' sizes (``item_size``) say what
    skipping would have cost its collections (``Ledgers.seen``). Skipping again, its pages
    read whole items too (``PageSize.curve``); a page read on once decided asks for the keys
    alone again, with the projection the first page had."""
    method = PagedSkipMethod(info(size=30 * 1024 * 1024, items=15_000))  # 2 KB items
    pages = method.start_state().pages
    for units in (1.0, 8.0) * 4:
        pages.ledgers.skipped(units, 1, 2)  # a key's first items: 1 or 8 units
    pages.through, pages.unit_items, pages.through_target = True, 2, 2 * MAX_TARGET
    keys = [f"k{n // 6:03}" for n in range(600)]  # 100 keys of 6 items of 1 KB
    whole = {
        "Items": [
            {"pk": {"S": key}, "sk": {"N": str(n)}, "pad": {"S": "x" * 995}}
            for n, key in enumerate(keys)
        ],
        "ScannedCount": 600,
        "ConsumedCapacity": {"CapacityUnits": 75.0},  # 600 KB: 150 units of 4 KB
        "LastEvaluatedKey": {"pk": {"S": "k099"}, "sk": {"N": "599"}},
    }
    steps, sent = drive(method.keys(reader(), 0, 1, None), [whole, page("z")])
    assert "ProjectionExpression" not in sent[0] and "ExpressionAttributeNames" not in sent[0]
    # Skipping pages of 2 items (a unit's), one a key: the page's last key too, cut as it is.
    assert (pages.ledgers.seen_pages, pages.ledgers.seen_keys) == (100, 100)
    assert pages.ledgers.seen_units == 100.0  # two items of 1 KB a page: a unit each
    # Skipping costs 1.2 units a key now, reading on 1.5: it failed; skipping reads whole
    # items, for what each limit costs.
    assert pages.went_back == 1 and not pages.through
    assert "ProjectionExpression" not in sent[1]
    assert len(keys_of(steps)) == 101
    # Reading on, decided: the keys alone, with the projection the first page had.
    state = method.start_state()
    state.reading_on = True
    request = dict(sent[1])
    method.project(request, state)
    first = method.first_request(0, 1, None)
    assert (request["ProjectionExpression"], request["ExpressionAttributeNames"]) == (
        first["ProjectionExpression"],
        first["ExpressionAttributeNames"],
    )


def test_a_page_of_whole_items_these_credentials_may_not_read_is_asked_for_the_keys_alone() -> None:
    """An IAM policy that allows some attributes alone refuses a Scan without a projection
    (``AccessDeniedException``; DynamoDB Local has no IAM, so the refusal is scripted): the
    same page is asked again for the keys alone, and so is every page after it; a refusal of
    a page of keys goes up as before."""
    method = PagedSkipMethod(info(size=30 * 1024 * 1024, items=15_000))
    pages = method.start_state().pages
    for units in (1.0, 8.0) * 4:
        pages.ledgers.skipped(units, 1, 2)
    pages.through, pages.unit_items, pages.through_target = True, 2, 2 * MAX_TARGET
    denied = ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}}, "Scan"
    )
    more = {"pk": {"S": "k"}, "sk": {"N": "1"}}
    steps, sent = drive(
        method.keys(reader(), 0, 1, None), [denied, page("a", "b", more=more), page("c")]
    )
    assert "ProjectionExpression" not in sent[0]
    assert all("ProjectionExpression" in request for request in sent[1:])
    assert {k: v for k, v in sent[1].items() if "Projection" not in k and "Names" not in k} == {
        k: v for k, v in sent[0].items()
    }
    assert keys_of(steps) == ["a", "b", "c"]
    with pytest.raises(DdbKeysError, match="AccessDeniedException"):
        drive(method.keys(reader(), 1, 2, None), [denied])


# --- the reader: retries, the read budget -----------------------------------------------------


def throttled() -> ClientError:
    response: Any = {
        "Error": {"Code": "ThrottlingException", "Message": "slow down"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return ClientError(response, "Scan")


def test_a_throttled_page_is_asked_for_again_after_a_backoff() -> None:
    steps, sent = drive(reader().page({"Limit": 1}), [throttled(), page("a")])
    assert steps[0] == "request" and steps[2] == "request"
    assert isinstance(steps[1], Pause) and steps[1].seconds == pytest.approx(0.1)
    assert sent[0] == sent[1]


def test_a_page_is_a_scan_of_the_readers_table_that_asks_for_its_cost() -> None:
    request: ScanPage = {"Limit": 2, "IndexName": "ix", "ReturnConsumedCapacity": "NONE"}
    _, sent = drive(reader().page(request), [page("a")])
    assert sent == [
        {"TableName": "orders", "Limit": 2, "IndexName": "ix", "ReturnConsumedCapacity": "TOTAL"}
    ]
    assert request == {"Limit": 2, "IndexName": "ix", "ReturnConsumedCapacity": "NONE"}


def test_a_stopped_reader_sends_nothing_more() -> None:
    stopped = reader()
    flow = stopped.page({"Limit": 1})
    assert isinstance(next(flow), Request)
    backoff = flow.throw(throttled())
    assert isinstance(backoff, Pause) and backoff.stop is stopped.stop  # a driver looks at it
    stopped.stop.set()
    with pytest.raises(ListingInterrupted):
        flow.send(None)  # the next attempt looks at the flag before it sends


@pytest.mark.parametrize(
    ("rate", "spent", "elapsed", "wait"),
    [
        (10.0, 0.0, 0.0, 0.0),  # a full bucket
        (10.0, 10.0, 0.0, 0.0),  # emptied, not in debt
        (10.0, 15.0, 0.0, 0.5),  # 5 units of debt at 10 a second
        (10.0, 15.0, 0.2, 0.3),  # refilled meanwhile
        (10.0, 15.0, 1.0, 0.0),  # paid off
        (1.0, 129.0, 0.0, 128.0),  # a 1 MB page at 1 unit a second
        (10.0, 10.0 + 1e-12, 0.0, 0.0),  # float dust is no debt
    ],
)
def test_how_long_the_read_budget_waits(
    rate: float, spent: float, elapsed: float, wait: float
) -> None:
    clock = FakeClock()
    budget = ReadBudget(rate, clock=clock)
    budget.spend(spent)
    clock.now += elapsed
    assert budget.wait_time() == pytest.approx(wait)


def test_the_read_budget_waits_in_pauses_a_stop_can_end() -> None:
    clock = FakeClock()
    budget = ReadBudget(2.0, clock=clock, sleep=clock.sleep)
    budget.spend(3.0)  # 1 unit of debt: 0.5 s
    stop = reader().stop
    whole = next(budget.wait())
    assert whole.seconds == pytest.approx(0.5) and whole.stop is None  # no stop: in one pause
    steps: list[Pause] = []
    for step in budget.wait(stop):
        steps.append(step)
        clock.now += step.seconds
    assert [s.seconds for s in steps] == pytest.approx([STOP_SLICE] * 5)
    assert all(s.stop is stop and s.sleep == clock.sleep for s in steps)


def test_a_page_waits_for_the_budget_then_spends_what_it_cost() -> None:
    clock = FakeClock()
    budget = ReadBudget(1.0, clock=clock)
    budget.spend(2.0)  # 1 unit of debt
    flow = reader(budget=budget).page({"Limit": 1})
    first = next(flow)
    assert isinstance(first, Pause) and first.seconds == pytest.approx(STOP_SLICE)
    clock.now += 1.0
    assert isinstance(flow.send(None), Request)  # out of debt: the request goes
    with pytest.raises(StopIteration):
        flow.send(page("a", units=4.0))
    assert budget.wait_time() == pytest.approx(4.0)


# --- where each segment stands: not started -> a key -> done, and resume ---------------------


class Scripted(SegmentMethod):
    """A method whose segments hold the given keys, emitted without a request."""

    name = "skip"

    def __init__(self, segments: dict[int, list[str]]) -> None:
        super().__init__(info())
        self.segments = segments
        self.started: list[tuple[int, Any]] = []

    def keys(self, reader: Reader, segment: int, segments: int, after: Any) -> Flow[None]:
        self.started.append((segment, after))
        keys = self.segments[segment]
        if after is not None:
            keys = keys[keys.index(after["S"]) + 1 :]
        for key in keys:
            yield Emit({"S": key})


def run_segment(listing: ListingCore, segment: int, count: int | None = None) -> list[str]:
    """Hand out the keys of ``segment`` as a listing does (``count``: then stop)."""
    got: list[str] = []
    flow = listing._segment_flow(segment)
    for step in flow:
        assert isinstance(step, Emit)
        listing._take(segment, step.value)
        got.append(step.value["S"])
        if count is not None and len(got) == count:
            return got
    listing._take(segment, DONE)
    return got


def test_checkpoint_transitions_and_resume_of_each() -> None:
    notified: list[int] = []
    method = Scripted({0: ["a", "b"], 1: ["c", "d", "e"], 2: ["f"]})
    listing = ListingCore(method, reader(), [None, None, None], 2, lambda _: notified.append(1))
    assert listing._begin() == [0, 1, 2]
    with pytest.raises(DdbKeysError, match="iterate over it once"):
        listing._begin()
    assert decode_token(listing.checkpoint()).positions == [None, None, None]
    assert run_segment(listing, 0) == ["a", "b"]
    assert run_segment(listing, 1, count=1) == ["c"]
    assert listing.positions == [True, {"S": "c"}, None]
    assert (listing.keys_found, listing.segments_done, listing.finished) == (3, 1, False)
    assert len(notified) == 4  # each key, and the segment done
    token = listing.checkpoint()
    saved = decode_token(token)
    assert (saved.table, saved.key_schema, saved.method) == ("orders", "pk:S,sk:N", "skip")
    assert saved.positions == [True, {"S": "c"}, None]
    assert saved.created == "2024-01-01T00:00:00"

    # Resume: a done segment is not read again, a started one goes on after its last key, one
    # not started starts from its beginning.
    again = Scripted(method.segments)
    resumed = ListingCore(again, reader(), saved.positions)
    assert resumed._begin() == [1, 2]
    assert run_segment(resumed, 1) == ["d", "e"]
    assert run_segment(resumed, 2) == ["f"]
    assert again.started == [(1, {"S": "c"}), (2, None)]
    assert resumed.finished and decode_token(resumed.checkpoint()).positions == [True] * 3


def test_a_readers_failure_reaches_the_consumer() -> None:
    listing = ListingCore(Scripted({0: []}), reader(), [None])
    with pytest.raises(ListingInterrupted):
        listing._take(0, ListingInterrupted("stopped"))
    assert listing.positions == [None]


def test_stop_sets_the_readers_flag() -> None:
    listing = ListingCore(Scripted({0: []}), reader(), [None])
    listing.stop()
    with pytest.raises(ListingInterrupted):
        listing.reader.stop.check()
