"""A listing's settings as one value: :class:`ListingOptions`, given out by
:mod:`ddbkeys.partition_keys` (and :mod:`ddbkeys`, :mod:`ddbkeys.aio`).

Every entry point of a listing takes it (``options=``) or its fields as keywords
(:class:`ListingSettings`): the sync and asyncio :func:`distinct_partition_keys`,
``plan_listing``, ``ListingTask`` (which carries one), ``estimate_listing`` and the CLI, which
builds one from its options. Each default is written here and nowhere else.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypedDict

from ddbkeys._attributes import check_name
from ddbkeys._errors import ConfigurationError
from ddbkeys._key_json import key_of_text
from ddbkeys._retry import DEFAULT_DEADLINE
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._listing.base import check_deadline
from ddbkeys.partition_keys._listing.choice import check_margin, check_method
from ddbkeys.partition_keys._listing.read_share import check_capacity, check_percent
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN

#: A ``marker_sort_key``: the markers' sort key value in the sort key's type (None: the default).
MarkerSortKey = str | int | Decimal | bytes | None

__all__ = [
    "AUTO_READERS",
    "MAX_READERS",
    "MAX_TOTAL_SEGMENTS",
    "ListingOptions",
    "ListingSettings",
    "Method",
    "check_no_resume",
    "check_rate",
    "check_whole",
    "listing_options",
]

Method = Literal["auto", "scan", "skip", "skip-pages", "index"]

MAX_TOTAL_SEGMENTS = 1_000_000  # DynamoDB's limit on TotalSegments
#: The most reader threads (``segments``) one listing runs. More gain nothing in one Python
#: process (they share one interpreter and one connection pool); for more parallelism, split
#: the Scan segments between processes.
MAX_READERS = 64
#: The most readers ``auto`` runs where it lists by skipping and ``segments`` is not given.
AUTO_READERS = 8


@dataclass(frozen=True)
class ListingOptions:
    """The settings of a listing of distinct partition keys, checked when made, immutable and
    JSON-able (``dataclasses.asdict``; a :class:`~ddbkeys.partition_keys.ListingTask` carries
    one). Change one with :meth:`replace`. Every entry point of a listing takes one
    (``options=``) or these fields as keywords, applied over it.

    ``method``: ``auto`` (the cheapest that applies; the marker index only when proven),
    ``scan``, ``skip``, ``skip-pages`` or ``index``. ``segments``: the Scan segments read at
    once (reader threads, or asyncio tasks), 1 to ``MAX_READERS``; None (the default): one,
    except where ``auto`` lists by skipping, which sends up to a request a key: then one at
    first, and up to one every 2 MB of the table (by DescribeTable), up to ``AUTO_READERS``
    (8), join as segments end showing skipping sends many requests, so that it takes about as
    long as a scan. ``scan_segments``: the Scan segments the table is split into (None: up to
    4 a reader, at most one a MB; see :func:`~ddbkeys.partition_keys.default_scan_segments`).
    ``index_name`` and ``marker_attribute``: the marker index and the attribute that keys it;
    ``marker_sort_key``: the markers' sort key value, where the index was made with one
    (``MarkerIndex(marker_sort_key=...)``, in the sort key's type: a string, a number or bytes;
    None: the default for the type), so that every method knows its markers for ddbkeys' own.
    ``max_rcu_per_second`` (above 0) and ``read_percent`` (0.1 to 1.5 of the table's read
    capacity: provisioned, or on demand its maximum, else its warm throughput, else 40,000;
    ``read_capacity`` overrides it): the read budget, the lower where both are given (None: no
    limit). ``strict_budget``: the budget starts empty and each segment waits off its last
    page's units before it ends, so a listing reads at most the budget times the seconds it ran,
    however short (what a task does: tasks run one after another each keep to their share).
    ``deadline``: seconds each request may take with its retries (None: none).
    ``state_table``, ``replay_margin`` and ``trust_index``: how the marker index is proven (the
    table of its evidence, how far back the stream is read) or read as it is (with
    ``method="index"`` only). ``include_own_items``: list a key that holds only ddbkeys' own
    items too (its markers and the id strategies' counter items, ``ddbkeys_type = "counter"``;
    see :mod:`ddbkeys.partition_keys._listing.recognise`), which are left out by default; not
    with ``method="index"`` (the marker index marks only collections holding your items), and
    ``auto`` then does not use the index. ``from_export``: list from the table's export to S3
    instead of the table (its folder, ``s3://bucket/prefix/AWSDynamoDB/<export id>/``, or a
    copy of it on disk), at no read capacity: the keys as they were at the export's time (see
    :class:`~ddbkeys.partition_keys.ExportListing`); with ``method="auto"`` only, and ``auto``
    never reads an export unless one is given.

    Every listing setting added later is a field here, with its default and its check, and
    nowhere else: the entry points take it through this object or :class:`ListingSettings`
    (``tests/unit/test_listing_options.py`` fails on a setting a signature names that is not
    a field).
    """

    method: Method | str = "auto"
    segments: int | None = None
    scan_segments: int | None = None
    index_name: str = DEFAULT_INDEX
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE
    marker_sort_key: MarkerSortKey = None
    max_rcu_per_second: float | None = None
    read_percent: float | None = None
    read_capacity: float | None = None
    strict_budget: bool = False
    deadline: float | None = DEFAULT_DEADLINE
    state_table: str | None = None
    replay_margin: float = DEFAULT_REPLAY_MARGIN
    trust_index: bool = False
    include_own_items: bool = False
    from_export: str | None = None

    def __post_init__(self) -> None:
        check_method(self.method)
        checked = {
            "segments": None
            if self.segments is None
            else check_whole("segments", self.segments, MAX_READERS),
            "max_rcu_per_second": check_rate(self.max_rcu_per_second),
            "read_percent": check_percent(self.read_percent),
            "read_capacity": check_capacity(self.read_capacity),
            "deadline": check_deadline(self.deadline),
            "replay_margin": check_margin(self.replay_margin),
        }
        if self.scan_segments is not None:
            check_whole("scan_segments", self.scan_segments)
        check_name("index_name", self.index_name)
        check_name("marker_attribute", self.marker_attribute)
        _check_sort_value(self.marker_sort_key)
        if self.state_table is not None:
            check_name("state_table", self.state_table)
        for flag in ("strict_budget", "trust_index", "include_own_items"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigurationError(
                    f"{flag} must be True or False, not {getattr(self, flag)!r}."
                )
        if self.from_export is not None:  # (first: its refusals say what to drop)
            _check_export(self)
        if self.trust_index and self.method != "index":
            raise ConfigurationError(
                f"trust_index reads the marker index as it is, so it goes with method='index' "
                f"(--method index), not {self.method!r}."
            )
        if self.include_own_items and self.method == "index":
            raise ConfigurationError(
                "include_own_items lists keys that hold only ddbkeys' own items (markers, "
                "counters), which the marker index never marks: list with another method "
                "('scan', 'skip-pages' or 'auto'), not 'index'."
            )
        for name, value in checked.items():  # (numbers as floats: one JSON form)
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> ListingOptions:
        """These options with ``changes`` (checked alike); a name that is no setting is a
        TypeError, as an unknown keyword is."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(
                f"{sorted(unknown)[0]!r} is not a listing setting: the settings are "
                f"{', '.join(sorted(_FIELDS))} (ListingOptions)."
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain JSON values (:meth:`from_dict` reads them back; a
        ``marker_sort_key`` of bytes or a Decimal as ``{"B": base64}`` or ``{"N": text}``)."""
        raw = dataclasses.asdict(self)
        value = self.marker_sort_key
        if isinstance(value, bytes):
            raw["marker_sort_key"] = {"B": base64.b64encode(value).decode()}
        elif isinstance(value, Decimal):
            raw["marker_sort_key"] = {"N": str(value)}
        return raw

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ListingOptions:
        """The options :meth:`to_dict` wrote (a missing field takes its default); a
        ConfigurationError or TypeError for anything else."""
        if not isinstance(raw, Mapping):
            raise TypeError(f"listing options are a JSON object, not {raw!r}")
        value = raw.get("marker_sort_key")
        if isinstance(value, Mapping):  # (what to_dict wrote for bytes or a Decimal)
            raw = {**raw, "marker_sort_key": _sort_value_of(value)}
        return cls().replace(**raw)


_FIELDS = frozenset(field.name for field in dataclasses.fields(ListingOptions))


class ListingSettings(TypedDict, total=False):
    """The fields of :class:`ListingOptions` as keywords (``**settings`` of the entry points;
    each means and defaults to what the field does). ``method`` is the entry points' own
    third argument."""

    segments: int | None
    scan_segments: int | None
    index_name: str
    marker_attribute: str
    marker_sort_key: MarkerSortKey
    max_rcu_per_second: float | None
    read_percent: float | None
    read_capacity: float | None
    strict_budget: bool
    deadline: float | None
    state_table: str | None
    replay_margin: float
    trust_index: bool
    include_own_items: bool
    from_export: str | None


def _check_sort_value(value: object) -> None:
    """A ``marker_sort_key``: None, or a non-empty string, a whole number or Decimal, or
    non-empty bytes (its type against the table's sort key is checked where it is used)."""
    if value is None or (isinstance(value, (str, bytes)) and value):
        return
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return
    raise ConfigurationError(
        f"marker_sort_key must be the markers' sort key value (a non-empty string, a number or "
        f"non-empty bytes, in the sort key's type), not {value!r}."
    )


def _sort_value_of(raw: Mapping[str, Any]) -> object:
    """The ``marker_sort_key`` that :meth:`ListingOptions.to_dict` wrote as an object."""
    try:
        ((kind, text),) = raw.items()
        if kind in ("B", "N"):
            return key_of_text(str(text), kind)
    except (ValueError, ArithmeticError):
        pass
    raise ConfigurationError(
        f'marker_sort_key must be a string, a number, {{"B": base64}} or {{"N": text}}, not '
        f"{dict(raw)!r}."
    )


def _check_export(options: ListingOptions) -> None:
    """``from_export``: a URI or path, with no setting that reads the table."""
    if not isinstance(options.from_export, str) or not options.from_export:
        raise ConfigurationError(
            f"from_export must be the export's folder (s3://bucket/prefix/AWSDynamoDB/ID/ or a "
            f"path), not {options.from_export!r}."
        )
    if options.method != "auto":
        raise ConfigurationError(
            f"from_export lists the keys the export holds, not with a method that reads the "
            f"table: drop method={options.method!r} (--method)."
        )
    for name, flag, given in (  # (one segment, one reader: as it reads)
        ("segments", "--segments", options.segments not in (None, 1)),
        ("scan_segments", "--scan-segments", options.scan_segments not in (None, 1)),
        ("trust_index", "--trust-index", options.trust_index),
    ):
        if given:
            raise ConfigurationError(
                f"from_export reads the export's files one after another, and no marker index: "
                f"drop {name}={getattr(options, name)!r} ({flag})."
            )


def check_no_resume(options: ListingOptions, resume: str | None) -> None:
    """A listing from an export starts over: a resume token goes with none."""
    if options.from_export is not None and resume is not None:
        raise ConfigurationError(
            "from_export lists the export from its start, and a listing from an export is not "
            "resumed: drop resume (--resume) and run it again (it reads no read capacity)."
        )


def listing_options(
    options: ListingOptions | None, method: str | None, settings: Mapping[str, Any]
) -> ListingOptions:
    """What an entry point lists with: ``options`` (by default the defaults) with ``method``
    (None: the options') and the keywords ``settings`` applied over it, checked once."""
    base = options if options is not None else ListingOptions()
    if not isinstance(base, ListingOptions):
        raise ConfigurationError(f"options must be a ListingOptions, not {base!r}.")
    changes = dict(settings)
    if method is not None:
        changes["method"] = method
    return base.replace(**changes) if changes else base


def check_whole(name: str, value: object, most: int = MAX_TOTAL_SEGMENTS) -> int:
    """A whole number from 1 to ``most``, or a ConfigurationError naming ``name``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        why = (
            " (reader threads; for more, split the Scan segments between processes)"
            if most == MAX_READERS
            else ""
        )
        raise ConfigurationError(
            f"{name} must be a whole number from 1 to {most:,}{why}, not {value!r}."
        )
    return value


def check_rate(value: object) -> float | None:
    """``max_rcu_per_second``: None (no limit) or a finite number above 0."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, Decimal))
        or not 0 < value < math.inf
    ):
        raise ConfigurationError(
            f"max_rcu_per_second must be a number of read units a second above 0 (or None for "
            f"no limit), not {value!r}."
        )
    return float(value)
