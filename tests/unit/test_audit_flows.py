"""The audits' scans and queries, as flows driven by hand without a server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._errors import ConfigurationError
from ddbkeys.ids._audit import attribute_flow, audit_ids, check_attribute_settings, collection_flow
from tests.support.hand import POLICY, TABLE, drive

#: The description of a table keyed (pk S, sk N).
DESCRIPTION = {
    "Table": {
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    }
}

# --- the audits' flows ---------------------------------------------------------------------------


def test_the_attribute_audit_scans_every_page_and_retries_a_throttled_one() -> None:
    answer: Any = {
        "Error": {"Code": "ThrottlingException"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    throttled = ClientError(answer, "Scan")
    usage = Usage()
    run = drive(
        attribute_flow(TABLE, "id", prefix="INV#", width=4, usage=usage, retry=POLICY),
        [
            {
                "Items": [{"id": {"N": "1"}}, {"id": {"S": "INV#0003"}}],
                "LastEvaluatedKey": {"k": 1},
            },
            throttled,
            {"Items": [{"id": {"N": "3"}}, {"id": {"S": "nope"}}, {"id": {"N": "1.5"}}]},
        ],
    )
    report = run.result
    assert (report.count, report.gaps, report.duplicates, report.not_numbers) == (
        3,
        [(2, 2)],
        {3: 2},
        2,
    )
    assert run.operations == ["scan"] * 3 and len(run.pauses) == 1
    assert "ExclusiveStartKey" not in run.requests[0].params
    assert run.requests[2].params["ExclusiveStartKey"] == {"k": 1}
    assert all(r.count_scanned for r in run.requests)
    assert usage.snapshot()["retries"] == 1


def test_the_collection_audit_skips_the_marker_and_the_counter() -> None:
    """The marker is recognised by its key and attribute: an id that carries the marker
    attribute (another tool's, or a key's value) is still an id."""
    p = {"S": "p"}
    done = drive(
        collection_flow(TABLE, "p", usage=Usage(), retry=POLICY),
        [
            DESCRIPTION,
            {
                "Items": [
                    {"pk": p, "sk": {"N": "-" + "9" * 38}, "ddbkeys_pk": p},  # the marker
                    {"pk": p, "sk": {"N": "0"}, "last_number": {"N": "4"}},
                    {"pk": p, "sk": {"N": "1"}},
                    {"pk": p, "sk": {"N": "2"}, "ddbkeys_pk": {"S": "zzz"}},  # an id
                ],
                "LastEvaluatedKey": {"pk": p, "sk": {"N": "2"}},
            },
            {"Items": [{"pk": p, "sk": {"N": "4"}, "ddbkeys_pk": p}]},  # an id
        ],
    )
    report = done.result
    assert done.operations == ["describe_table", "query", "query"]
    assert (report.count, report.first, report.last, report.gaps) == (3, 1, 4, [(3, 3)])
    query = done.requests[1].params
    assert query["ExpressionAttributeValues"] == {":pk": {"S": "p"}}
    assert done.requests[2].params["ExclusiveStartKey"] == {"pk": {"S": "p"}, "sk": {"N": "2"}}


# --- what an audit calls a problem ---------------------------------------------------------------


def scanned(values: list[dict[str, Any]], **settings: Any) -> Any:
    """The attribute audit of one page holding these values of ``id``."""
    flow = attribute_flow(TABLE, "id", usage=Usage(), retry=POLICY, **settings)
    return drive(flow, [{"Items": [{"id": v} for v in values]}]).result


def test_ids_below_start_and_values_that_are_not_ids_are_problems() -> None:
    """The breaker's table: -1, 0, 1, 2, the string "3" and 4, audited from 1."""
    values = [{"N": "-1"}, {"N": "0"}, {"N": "1"}, {"N": "2"}, {"S": "3"}, {"N": "4"}]
    report = scanned(values, start=1)
    assert (report.count, report.first, report.last, report.gaps) == (3, 1, 4, [(3, 3)])
    assert (report.below_start, report.not_numbers, report.ok) == ([-1, 0], 1, False)
    assert report.as_dict()["below_start"] == [-1, 0] and report.as_dict()["ok"] is False
    # From 0 on, 0 is an id; -1 still is not.
    from_zero = scanned([{"N": "-1"}, {"N": "0"}, {"N": "1"}], start=0)
    assert (from_zero.count, from_zero.below_start, from_zero.ok) == (2, [-1], False)
    assert scanned([{"N": "1"}, {"N": "2"}], start=1).ok
    assert audit_ids([-2, -2, 1]).below_start == [-2, -2]


def test_a_string_id_is_the_prefix_and_exactly_width_ascii_digits() -> None:
    padded = [{"S": "INV#001"}, {"S": "INV#002"}, {"S": "INV#003"}]
    assert (scanned(padded, prefix="INV#", width=3).count, scanned(padded, prefix="INV#").ok) == (
        3,
        False,  # padded to 3 digits, not the 10 of the default width
    )
    strays = [{"S": "INV#3"}, {"S": "INV#+03"}, {"S": "INV#٠٠٣"}, {"S": "3"}, {"S": "INV#00a"}]
    report = scanned([*padded, *strays], prefix="INV#", width=3)
    assert (report.count, report.not_numbers, report.ok) == (3, 5, False)
    assert scanned([{"S": "0000000007"}], start=7).ok  # the default: no prefix, 10 digits


def test_the_attribute_audit_skips_the_sequences_counter_item() -> None:
    """With the id as the key, the counter item (``{"pk": "orders", "last_id": 2}``, or the
    number 0 of ``counter_key={"pk": 0}``) holds the id attribute too: it is not an id."""
    items = [
        {"pk": {"S": "orders"}, "last_id": {"N": "2"}},
        {"pk": {"N": "0"}, "last_id": {"N": "2"}},
        {"pk": {"N": "1"}},
        {"pk": {"N": "2"}},
    ]
    flow = attribute_flow(TABLE, "pk", usage=Usage(), retry=POLICY)
    run = drive(flow, [{"Items": items}])
    report = run.result
    assert (report.count, report.not_numbers, report.below_start, report.ok) == (2, 0, [], True)
    scan = run.requests[0].params
    # (and ddbkeys_type: every id strategy's counter item, typed, is left out too)
    assert scan["ExpressionAttributeNames"] == {"#a": "pk", "#c": "last_id", "#t": "ddbkeys_type"}
    assert scan["ProjectionExpression"] == "#a, #c, #t"
    typed = [{"pk": {"S": "ord"}, "n": {"N": "7"}, "ddbkeys_type": {"S": "counter"}}, *items[2:]]
    counted = drive(
        attribute_flow(TABLE, "pk", counter_attribute="n", usage=Usage(), retry=POLICY),
        [{"Items": typed}],
    ).result
    assert (counted.count, counted.not_numbers, counted.ok) == (2, 0, True)
    other = drive(
        attribute_flow(TABLE, "pk", counter_attribute="n", usage=Usage(), retry=POLICY),
        [{"Items": items}],
    ).result
    assert (other.not_numbers, other.below_start, other.ok) == (1, [0], False)


def test_the_attribute_audit_of_the_sort_key_skips_the_marker_index_s_markers() -> None:
    """helper-101 F1: ids kept in a number sort key, audited with ``--attribute sk``, once the
    marker index was made: each collection's marker (at -(10**38 - 1)) was "below 1",
    PROBLEMS FOUND (exit 1 with --strict: a cron audit alarmed at `index create`)."""
    marker = {"sk": {"N": "-" + "9" * 38}, "ddbkeys_type": {"S": "marker"}}
    items = [{"sk": {"N": "1"}}, marker, {"sk": {"N": "2"}}, marker]
    report = drive(attribute_flow(TABLE, "sk", usage=Usage(), retry=POLICY), [{"Items": items}])
    assert (report.result.count, report.result.below_start, report.result.ok) == (2, [], True)
    # Another ddbkeys_type (yours) is audited as any item.
    yours = [{"sk": {"N": "1"}}, {"sk": {"N": "-4"}, "ddbkeys_type": {"S": "Marker"}}]
    mine = drive(attribute_flow(TABLE, "sk", usage=Usage(), retry=POLICY), [{"Items": yours}])
    assert (mine.result.below_start, mine.result.ok) == ([-4], False)


def test_a_collections_other_items_are_reported_but_not_problems() -> None:
    """An item collection holds other items beside its numbers: sort keys that are not numbers
    and those another tool numbered 0 or below (a collection sequence starts at 1 above
    them) are counted, and the report is still ok."""
    items = [{"sk": {"N": n}} for n in ("-3", "0", "1", "1.5", "2")]
    report = drive(
        collection_flow(TABLE, "p", usage=Usage(), retry=POLICY), [DESCRIPTION, {"Items": items}]
    ).result
    assert (report.count, report.first, report.last, report.gaps) == (2, 1, 2, [])
    assert (report.below_start, report.not_numbers, report.values_are_ids) == ([-3, 0], 1, False)
    assert report.ok


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"width": 0}, "width must be 1 to 38 digits, not 0"),
        ({"prefix": 3}, "prefix must be a string, not 3"),
        ({"start": "1"}, "start must be a whole number, not '1'"),
        ({"start": True}, "start must be a whole number, not True"),
        ({"counter_attribute": ""}, "counter attribute"),
    ],
)
def test_the_attribute_audits_settings_are_checked_before_any_request(
    settings: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {
        "start": 1,
        "prefix": "",
        "width": 10,
        "counter_attribute": "last_id",
        **settings,
    }
    with pytest.raises(ConfigurationError, match=re.escape(message)) as caught:
        check_attribute_settings(TABLE, "id", **given)
    assert TABLE in str(caught.value) or caught.value.table == TABLE


def test_an_id_on_an_item_that_also_holds_the_counter_attribute_is_counted() -> None:
    """Only the counter item is skipped: items whose id is valid are ids whatever else they
    hold (two items with id 2 and a last_id attribute of their own are a duplicate); and the
    counter attribute itself can be audited (one path in the projection, not two)."""
    items = [
        {"id": {"N": "1"}, "last_id": {"N": "9"}},
        {"id": {"N": "2"}, "last_id": {"N": "9"}},
        {"id": {"N": "2"}, "last_id": {"N": "9"}},
    ]
    report = drive(attribute_flow(TABLE, "id", usage=Usage(), retry=POLICY), [{"Items": items}])
    assert (report.result.count, report.result.duplicates, report.result.ok) == (3, {2: 2}, False)
    run = drive(
        attribute_flow(TABLE, "last_id", usage=Usage(), retry=POLICY),
        [{"Items": [{"last_id": {"N": "1"}}, {"last_id": {"N": "1"}}]}],
    )
    assert run.requests[0].params["ProjectionExpression"] == "#a, #t"
    assert run.requests[0].params["ExpressionAttributeNames"] == {
        "#a": "last_id",
        "#t": "ddbkeys_type",
    }
    assert (run.result.duplicates, run.result.ok) == ({1: 2}, False)
