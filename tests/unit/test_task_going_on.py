"""``ListingTask.going_on`` takes only a checkpoint of that task (pure: no server). A checkpoint
of another task of the plan would continue that task instead, and the engine would take its
keys for this one's: some keys twice, this task's never."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ddbkeys import ResumeTokenError
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import ListingOptions, ListingTask
from ddbkeys.partition_keys._listing.base import Position
from ddbkeys.partition_keys._listing.checkpoint import Checkpoint, encode_token


def token(positions: list[Position], **changed: object) -> str:
    checkpoint = Checkpoint("orders", "pk:S,sk:N", "skip-pages", positions, "2024-01-01")
    return encode_token(replace(checkpoint, **changed))  # type: ignore[arg-type]


def task(segment: int, segments: int = 3) -> ListingTask:
    alone: list[Position] = [None if n == segment else True for n in range(segments)]
    options = ListingOptions(method="skip-pages")
    return ListingTask("orders", "", segment, segments, token(alone), options)


def test_a_task_goes_on_from_a_checkpoint_of_its_own() -> None:
    at = token([True, {"S": "k7"}, True])
    assert task(1).going_on(at).token == at
    done = token([True, True, True])  # the task's listing ended: nothing left
    assert task(1).going_on(done).token == done


@pytest.mark.parametrize(
    ("checkpoint", "why"),
    [
        (token([{"S": "k7"}, True, True]), "segment 0 is not done in it"),
        (token([True, {"S": "k7"}]), "it is of 2 Scan segments, not 3"),
        (token([True, {"S": "k7"}, True], table="other"), "it is of table 'other'"),
        (token([True, {"S": "k7"}, True], method="scan"), "it is of method scan"),
        (token([True, {"S": "k7"}, True], created="2023"), "it is of a table created at 2023"),
        (
            token([True, {"S": "k7"}, True], replay={"margin": 1.0, "keys": []}),
            "it holds another proof of the marker index",
        ),
    ],
)
def test_a_checkpoint_of_another_task_or_plan_is_refused(checkpoint: str, why: str) -> None:
    with pytest.raises(ResumeTokenError) as refused:
        task(1).going_on(checkpoint)
    assert str(refused.value) == (
        f"The resume token is not a checkpoint of task 1 of 3 of the listing of table 'orders' "
        f"({why}): continue a task from its own listing's checkpoint(), or run it again from "
        "its start."
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("options.deadline", "x"),
        ("options.deadline", 0),
        ("options.deadline", float("nan")),
        ("segment", "1"),
        ("segment", True),
        ("options.trust_index", 1),
        ("options.max_rcu_per_second", []),
        ("options.max_rcu_per_second", float("inf")),
        ("options.max_rcu_per_second", -1),
        ("options.index_name", 5),
        ("options.method", "magic"),
        ("options.budget", 5),
        ("options", [1]),
    ],
)
def test_a_task_line_with_a_field_of_the_wrong_kind_is_refused(field: str, value: object) -> None:
    line = json.loads(task(1).to_json())
    *inside, name = field.split(".")
    (line[inside[0]] if inside else line)[name] = value
    named = "listing options" if field == "options" else name
    with pytest.raises(ConfigurationError, match=f"Not a listing task ddbkeys wrote .*{named}"):
        ListingTask.from_json(json.dumps(line))
    assert ListingTask.from_json(task(1).to_json()) == task(1)


def test_a_task_line_missing_fields_says_which_in_json_terms() -> None:
    """``{}`` said "ListingTask.__init__() missing 5 required positional arguments"."""
    with pytest.raises(ConfigurationError) as refused:
        ListingTask.from_json('{"tabel": "orders"}')
    assert str(refused.value) == (
        "Not a listing task ddbkeys wrote (ValueError: it has no reason, no segment, no "
        "segments, no table, no token, an unknown 'tabel'): pass one line of `ddbkeys "
        "partition-keys plan` output, or ListingTask.to_json()."
    )


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("segment", 0, "not every other segment is done in its token"),
        ("segment", 3, "its token is of 3 segments"),
        ("segment", -1, "its token is of 3 segments"),
        ("segments", 4, "its token is of 3 segments"),
        ("table", "other", "its token lists skip-pages of table 'orders'"),
        ("options.method", "scan", "its token lists skip-pages of table 'orders'"),
    ],
)
def test_a_task_line_whose_fields_disagree_with_its_token_is_refused(
    field: str, value: object, why: str
) -> None:
    line = json.loads(task(1).to_json())
    *inside, name = field.split(".")
    (line[inside[0]] if inside else line)[name] = value
    with pytest.raises(ConfigurationError, match=f"a line edited: .*{why}"):
        ListingTask.from_json(json.dumps(line))
