"""Names that changed keep working for this release, with a DeprecationWarning that points at the
caller's line (the project's own tests turn such warnings into errors: see pyproject.toml), as a
caller meets them: the classes and functions themselves, which take a client. Constructors send
nothing (their client's endpoint has no server); the counter's key is read from a real table.
How ``renamed()`` reads an old name alone: tests/unit/test_renamed.py."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from ddbkeys.aio.listing import distinct_partition_keys as aio_listing
from ddbkeys.connect import make_client
from ddbkeys.errors import ConfigurationError
from ddbkeys.ids import AtomicCounter
from ddbkeys.partition_keys import distinct_partition_keys
from ddbkeys.testing.tables import TableFactory

pytestmark = pytest.mark.integration

# Nothing is sent: no request from a constructor.
CLIENT = boto3.client(
    "dynamodb",
    region_name="us-east-1",
    endpoint_url="http://127.0.0.1:9",
    aws_access_key_id="unused",
    aws_secret_access_key="unused",
)
KEY = {"pk": "c", "sk": 0}
TYPED_KEY = {"pk": {"S": "c"}, "sk": {"N": "0"}}


@pytest.fixture
def keyed(ddb_table_factory: TableFactory) -> str:
    """A table whose counter key is a whole key (``KEY``)."""
    return ddb_table_factory(("pk", "S"), ("sk", "N"))


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [("key", "counter_key", KEY), ("attribute", "counter_attribute", "n")],
)
def test_the_old_counter_names_still_work_with_a_warning(
    ddb_client: Any, keyed: str, old: str, new: str, value: Any
) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old}= is deprecated: pass {new}= instead") as w:
        counter = AtomicCounter(ddb_client, keyed, **{old: value})
    assert w[0].filename == __file__  # the warning names the line that used the old name
    if old == "key":
        assert counter.counter_item().key == TYPED_KEY
    else:
        assert counter.counter_attribute == value
    assert counter.attribute == counter.counter_attribute  # (the old property, kept)


def test_the_new_names_do_not_warn(ddb_client: Any, keyed: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counter = AtomicCounter(ddb_client, keyed, counter_key=KEY, counter_attribute="n")
        assert (counter.counter_item().key, counter.counter_attribute) == (TYPED_KEY, "n")


def test_both_names_at_once_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="key= is the old name of counter_key="):
        AtomicCounter(CLIENT, "table", key=KEY, counter_key=KEY)
    with pytest.raises(ConfigurationError, match="attribute= is the old name of counter_attribute"):
        AtomicCounter(CLIENT, "table", attribute="a", counter_attribute="b")


def test_the_key_property_warns_that_it_sends_a_request(ddb_endpoint_url: str, keyed: str) -> None:
    client = make_client(endpoint_url=ddb_endpoint_url)
    sent: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(params["TableName"])

    client.meta.events.register("provide-client-params.dynamodb.DescribeTable", record)
    counter = AtomicCounter(client, keyed, counter_key=KEY)
    with pytest.warns(DeprecationWarning, match=r"use counter_item\(\)\.key instead"):
        key = counter.key
    assert key == TYPED_KEY == counter.counter_item().key
    assert sent == [keyed]  # one DescribeTable, the first time


def test_max_lag_is_ignored_with_a_warning() -> None:
    # (The deadline is refused right after the warning: nothing is sent.)
    with (
        pytest.warns(DeprecationWarning, match="max_lag is ignored") as w,
        pytest.raises(ConfigurationError, match="deadline"),
    ):
        distinct_partition_keys(CLIENT, "table", max_lag=30, deadline=-1)
    assert w[0].filename == __file__
    with (
        pytest.warns(DeprecationWarning, match="max_lag is ignored"),
        pytest.raises(ConfigurationError),
    ):
        asyncio.run(aio_listing(CLIENT, "table", max_lag=30, deadline=-1))


def test_the_marker_index_settings_have_one_name_everywhere() -> None:
    """index_name= and marker_attribute=, as --index-name and --marker-attribute: the old
    names (index=, name=, attribute=) still work for this release, with a warning that names
    the caller's line."""
    from ddbkeys.partition_keys import MarkerIndex, estimate_listing, plan_listing  # noqa: PLC0415
    from ddbkeys.partition_keys.aws_lambda import StreamHandler  # noqa: PLC0415

    async def awaited() -> object:
        return await aio_listing(CLIENT, "table", index="mine", deadline=-1)

    with pytest.warns(DeprecationWarning) as w:
        index = MarkerIndex(CLIENT, "table", name="mine", attribute="owner")
    assert [str(x.message).split(" is ")[0] for x in w] == ["name=", "attribute="]
    assert all(x.filename == __file__ for x in w)
    assert (index.name, index.attribute) == ("mine", "owner")
    with pytest.warns(DeprecationWarning) as w:
        handler = StreamHandler(CLIENT, index="mine", attribute="owner")
    assert [str(x.message).split(" is ")[0] for x in w] == ["index=", "attribute="]
    assert (handler.index_name, handler.attribute) == ("mine", "owner")
    olds: list[Callable[[], object]] = [
        lambda: distinct_partition_keys(CLIENT, "table", index="mine", deadline=-1),
        lambda: estimate_listing(CLIENT, "table", index="mine", deadline=-1),
        lambda: plan_listing(CLIENT, "table", tasks=0, index="mine"),
        lambda: asyncio.run(awaited()),
    ]
    for old in olds:
        with (
            pytest.warns(DeprecationWarning, match="index= is deprecated") as w,
            pytest.raises(ConfigurationError),  # (refused right after: nothing is sent)
        ):
            old()
        assert w[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MarkerIndex(CLIENT, "table", index_name="mine", marker_attribute="owner")
    with pytest.raises(ConfigurationError, match="name= is the old name of index_name="):
        MarkerIndex(CLIENT, "table", name="a", index_name="b")


def test_the_counters_shared_writes_are_called_group_commit_as_the_sequences() -> None:
    with pytest.warns(DeprecationWarning, match="coalesce= is deprecated: pass group_commit=") as w:
        counter = AtomicCounter(CLIENT, "table", coalesce=True)
    assert w[0].filename == __file__ and counter.group_commit is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert AtomicCounter(CLIENT, "table", group_commit=True).group_commit is True
