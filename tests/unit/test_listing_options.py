"""One settings value per idea (issue 34): a listing's settings are one :class:`ListingOptions`,
whose defaults are written there and nowhere else. No client: the value, the signatures of the
listing's entry points, and the CLI's options.

- Every entry point of a listing takes ``options`` and the fields as typed keywords
  (``**settings: Unpack[ListingSettings]``); every other parameter it takes is listed in
  ``NOT_SETTINGS`` with what it is. A setting added to a signature and not to the object fails
  here: it enters ListingOptions (and so ListingSettings) instead.
- Any other public signature that names a setting shows the object's default, or says here
  whose setting of that name it is (``OTHER_OWNERS``).
- The CLI's options of a listing default to the object's fields.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, get_type_hints

import click
import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys import ListingOptions, ListingSettings
from ddbkeys.partition_keys._listing.base import ReadBudget
from ddbkeys.partition_keys._listing.choice import Choice
from ddbkeys.partition_keys._listing.joining import Joining
from ddbkeys.partition_keys._listing.opening import read_budget, readers_for
from ddbkeys.partition_keys._listing.options import AUTO_READERS
from ddbkeys.partition_keys._listing.scan import ScanMethod
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod

FACES = ("ddbkeys", "ddbkeys.aio", "ddbkeys.partition_keys")
FIELDS = {field.name: field.default for field in dataclasses.fields(ListingOptions)}

#: The entry points of a listing (face, name): each takes ``options`` and ``**settings``.
ENTRY_POINTS = [
    ("ddbkeys.partition_keys", "distinct_partition_keys"),
    ("ddbkeys.aio", "distinct_partition_keys"),
    ("ddbkeys.partition_keys", "plan_listing"),
    ("ddbkeys.partition_keys", "estimate_listing"),
]

#: What an entry point takes that is not a setting, and what it is.
NOT_SETTINGS = {
    "client": "the DynamoDB client (or resource, or Table)",
    "table": "the table listed",
    "method": "ListingOptions.method, third argument by position (None: the options')",
    "options": "the settings, as one value",
    "settings": "the settings, as keywords applied over options",
    "resume": "a resume token: where a listing goes on from, not how it lists",
    "retry": "a RetryPolicy object (callables: sleep, clock, random), not JSON",
    "usage": "the Usage object that counts what was read",
    "on_key": "a callback",
    "streams": "a DynamoDB Streams client",
    "s3": "an S3 client (what from_export is read with)",
    "tasks": "plan_listing: how many tasks the plan has",
    "concurrency": "plan_listing, estimate_listing: how many tasks or readers run at once",
    "endpoint_url": "plan_listing: how workers build their client",
    "region": "plan_listing: how workers build their client",
    "profile": "plan_listing: how workers build their client",
    "clock": "estimate_listing: the clock the sample is timed with",
}

#: (qualified name, parameter) of a public signature that names a listing setting with another
#: default, and whose setting it is.
OTHER_OWNERS: dict[tuple[str, str], str] = {
    ("MarkerIndex", "marker_attribute"): "the index's: None reads it from the index itself",
    ("wait_export", "deadline"): "how long to wait for an export to complete (a day)",
}


def _target(face: str, name: str) -> Callable[..., Any]:
    found: Callable[..., Any] = getattr(importlib.import_module(face), name)
    return found


def _callables(face: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    module = importlib.import_module(face)
    for public in module.__all__:
        value = getattr(module, public)
        if inspect.isclass(value):
            yield value.__qualname__, value
            for attr, member in inspect.getmembers(value):
                if not attr.startswith("_") and inspect.isfunction(member):
                    yield f"{value.__qualname__}.{attr}", member
        elif callable(value):
            yield getattr(value, "__qualname__", public), value


def _parameters(target: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return {}


def test_the_keywords_are_the_fields() -> None:
    """ListingSettings, the keywords, are ListingOptions' fields but ``method`` (an argument of
    its own), with the same types."""
    keys = set(ListingSettings.__annotations__)
    assert keys == set(FIELDS) - {"method"}
    hints, fields = get_type_hints(ListingSettings), get_type_hints(ListingOptions)
    assert {key: hints[key] for key in keys} == {key: fields[key] for key in keys}


@pytest.mark.parametrize(("face", "name"), ENTRY_POINTS)
def test_an_entry_point_takes_the_options_and_no_setting_of_its_own(face: str, name: str) -> None:
    parameters = _parameters(_target(face, name))
    assert "options" in parameters
    settings = parameters["settings"]
    assert settings.kind is inspect.Parameter.VAR_KEYWORD
    assert "ListingSettings" in str(settings.annotation)
    unknown = set(parameters) - set(NOT_SETTINGS)
    assert not unknown, (
        f"{face}.{name} takes {sorted(unknown)}: a listing setting is a field of ListingOptions "
        "(its default and check written there, and a key of ListingSettings), taken through "
        "options= or **settings; anything else goes in NOT_SETTINGS with what it is"
    )
    if "method" in parameters:
        assert parameters["method"].default is None  # (the options' method, "auto" by default)


def test_no_other_public_signature_repeats_a_default_of_its_own() -> None:
    differ = {}
    for face in FACES:
        for qualname, target in _callables(face):
            if qualname.startswith("ListingOptions"):
                continue
            for name, parameter in _parameters(target).items():
                if name in FIELDS and parameter.default is not inspect.Parameter.empty:
                    takes_options = "options" in _parameters(target)
                    if name == "method" and takes_options:
                        continue
                    if parameter.default != FIELDS[name]:
                        differ[(qualname, name)] = parameter.default
    unexplained = {k: v for k, v in differ.items() if k not in OTHER_OWNERS}
    assert not unexplained, (
        f"These name a listing setting with another default than ListingOptions': {unexplained}"
    )
    assert set(OTHER_OWNERS) <= set(differ)  # (an entry that no longer differs goes)


def test_sync_and_asyncio_listings_take_the_same_arguments() -> None:
    sync = _parameters(_target("ddbkeys.partition_keys", "distinct_partition_keys"))
    asynchronous = _parameters(_target("ddbkeys.aio", "distinct_partition_keys"))
    assert list(sync) == list(asynchronous)
    for name, parameter in sync.items():
        other = asynchronous[name]
        assert (parameter.kind, parameter.default) == (other.kind, other.default), name
        if name != "on_key":  # (called with the listing of its form)
            assert parameter.annotation == other.annotation, name


def test_the_cli_defaults_are_the_options_defaults() -> None:
    from ddbkeys._cli import cli  # noqa: PLC0415
    from ddbkeys._cli.listing_estimate import estimate_command  # noqa: PLC0415
    from ddbkeys._cli.listing_tasks import plan_command  # noqa: PLC0415
    from ddbkeys._cli.partition_keys import partition_keys_group  # noqa: PLC0415

    as_field = {"timeout": "deadline"}
    seen = set()
    for command in (partition_keys_group, plan_command, estimate_command):
        # (with the CLI's help names: click caches a command's help option from the first context)
        given = command.make_context(
            "ddbkeys", [], resilient_parsing=True, **cli.context_settings
        ).params  # (none given)
        for param in command.params:
            name = as_field.get(param.name or "", param.name or "")
            # (--marker-sort-key is read against the table's type, not passed: no default)
            if name in FIELDS and isinstance(param, click.Option) and not param.envvar:
                if not param.expose_value:
                    continue
                seen.add(name)
                assert given[param.name or ""] == FIELDS[name], (command.name, param.name)
    assert {"method", "segments", "scan_segments", "deadline", "replay_margin"} <= seen


def test_made_checked_immutable_and_json() -> None:
    rate: Any = Decimal("2.5")  # (a number of DynamoDB's: taken, kept as a float)
    options = ListingOptions(method="skip", segments=4, max_rcu_per_second=rate)
    assert options.max_rcu_per_second == 2.5 and isinstance(options.max_rcu_per_second, float)
    assert ListingOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options
    assert ListingOptions.from_dict({}) == ListingOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.segments = 2  # type: ignore[misc]
    assert options.replace(segments=8) == dataclasses.replace(options, segments=8)
    assert options.replace(segments=8).method == "skip" and options.segments == 4
    with pytest.raises(TypeError, match="'index' is not a listing setting: the settings are"):
        options.replace(index="x")
    with pytest.raises(ConfigurationError, match="segments must be a whole number"):
        options.replace(segments=0)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"method": "magic"}, "Unknown method 'magic': choose one of auto, scan, skip, "),
        ({"segments": 65}, "segments must be a whole number from 1 to 64 (reader threads"),
        ({"segments": True}, "segments must be a whole number from 1 to 64"),
        ({"scan_segments": 0}, "scan_segments must be a whole number from 1 to 1,000,000, not 0"),
        ({"max_rcu_per_second": 0}, "max_rcu_per_second must be a number of read units a second"),
        ({"read_percent": 2}, "read_percent must be a share of the table's read capacity from"),
        ({"read_capacity": -1}, "read_capacity must be read units a second above 0, not -1."),
        ({"deadline": 0}, "The deadline must be above 0 seconds (or None for none), not 0."),
        ({"replay_margin": 3600}, "replay_margin must be a number of seconds from 0 to 3600"),
        ({"trust_index": 1}, "trust_index must be True or False, not 1."),
        ({"strict_budget": "yes"}, "strict_budget must be True or False, not 'yes'."),
        ({"trust_index": True}, "trust_index reads the marker index as it is, so it goes with"),
        ({"index_name": ""}, "Invalid index_name '': it must be a non-empty string"),
        ({"marker_attribute": 5}, "Invalid marker_attribute 5: it must be a non-empty string"),
        ({"state_table": ""}, "Invalid state_table '': it must be a non-empty string"),
    ],
)
def test_a_bad_setting_is_refused_in_one_line_naming_it(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        ListingOptions(**given)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_trust_index_goes_with_the_index_method() -> None:
    assert ListingOptions(method="index", trust_index=True).trust_index is True


def test_the_read_budget_is_decided_by_the_options() -> None:
    """A task's (``strict_budget``) starts empty and settles; a listing's starts full."""
    info = TableInfo("t", KeyAttribute("pk", "S"), None, (), {}, 0, 0)
    assert read_budget(ListingOptions(), info) is None
    full = read_budget(ListingOptions(max_rcu_per_second=10), info)
    strict = read_budget(ListingOptions(max_rcu_per_second=10, strict_budget=True), info)
    assert full is not None and strict is not None
    assert (full.rate, full.settles, strict.rate, strict.settles) == (10.0, False, 10.0, True)
    full.spend(1)
    strict.spend(1)
    assert full.wait_time() == 0.0  # a second's units saved up
    assert 0.09 < strict.wait_time() <= 0.1  # nothing saved up: 1 unit at 10 a second


@pytest.mark.parametrize(
    ("segments", "method", "megabytes", "most"),
    [
        (None, "auto", 0, 1),  # no size told (a new table on the service): one
        (None, "auto", 1.5, 1),
        (None, "auto", 3.5, 1),  # none more below 4 MB
        (None, "auto", 6.5, 3),  # one every 2 whole MB may join
        (None, "auto", 20, AUTO_READERS),  # up to AUTO_READERS
        (None, "skip-pages", 20, 1),  # a method asked for reads as asked: one
        (4, "auto", 20, 4),  # segments given: as given
        (1, "auto", 20, 1),
    ],
)
def test_auto_reads_a_table_of_many_megabytes_with_readers_that_join(
    segments: int | None, method: str, megabytes: float, most: int
) -> None:
    """Skipping sends up to a request a key, each small, where a scan sends one a MB: auto,
    when it lists by skipping and no ``segments`` is given, starts with one reader, and up to
    one every 2 MB of the table (up to AUTO_READERS) may join as segments end (``Joining``),
    and says so."""
    size = int(megabytes * 1024 * 1024)
    info = TableInfo("t", KeyAttribute("pk", "S"), KeyAttribute("sk", "S"), (), {}, 10, size)
    choice = Choice(PagedSkipMethod(info), "the table has no marker index")
    given = segments or 1
    assert readers_for(segments, method, choice) == (given if segments else 1)
    joining = choice.joining
    assert (joining.most if joining is not None else given) == most
    assert ("up to" in choice.reason) == (joining is not None), choice.reason
    scan = Choice(ScanMethod(info), "asked for")
    assert readers_for(None, "auto", scan) == 1  # (auto's scan: a table without a sort key)
    assert ListingOptions().segments is None
    # under a read budget, one reader a page's read units a second of it: more would read in
    # bursts of a page each, over the budget, and end no sooner
    slow, fast = ReadBudget(100), ReadBudget(3 * 128 + 1)
    if segments is None and method == "auto" and megabytes >= 6:
        assert readers_for(None, "auto", Choice(PagedSkipMethod(info), "x"), slow) == 1
        budgeted = Choice(PagedSkipMethod(info), "x")
        assert readers_for(None, "auto", budgeted, fast) == 1  # (3 may join: the budget's)
        assert budgeted.joining is not None and budgeted.joining.most == 3
        assert "RCU/s of the budget" in budgeted.reason or megabytes < 8


def test_readers_join_where_skipping_sends_many_requests_a_page_of_a_scan() -> None:
    """Joining's rule: past skip-pages' learning, the requests the whole listing would send at
    the rate of the segments done, a reader each ``REQUESTS_A_PAGE`` times a scan's."""
    join = Joining(most=3, scan_requests=6)
    assert join.wanted(0, 5, 500) == 1  # nothing done: one
    # 2,500 documents, size growing with versions: 36 requests in the first segment of five,
    # most of them its learning: one reader (two read 1.07x its units)
    assert join.wanted(1, 5, 36) == 1
    # chat, 8 MB: 88 requests by the second segment of seven, 299 by the third
    chat = Joining(most=3, scan_requests=8)
    assert (chat.wanted(1, 7, 12), chat.wanted(2, 7, 88), chat.wanted(3, 7, 299)) == (1, 2, 3)
    assert Joining(most=8, scan_requests=20).wanted(4, 32, 600) == 8  # up to most
    # (resumed with 4 of 8 segments left: judged over those 4, from its own requests)
    assert chat.wanted(1, 4, 12 + 60) == 2
