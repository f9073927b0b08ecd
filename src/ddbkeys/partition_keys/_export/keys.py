"""The distinct partition keys of an export: its manifests checked against the table, then each
data file's items, ddbkeys' own left out as every listing leaves them out
(:mod:`~ddbkeys.partition_keys._listing.recognise`), each key handed out once.

Reading goes through an :class:`~ddbkeys.partition_keys._export.location.ExportFolder` and
keeps no more than a batch of keys in hand; what is known of the table is its
:class:`~ddbkeys._schema.TableInfo` (DescribeTable, which reads no capacity).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ddbkeys._entity import ENTITY_ATTRIBUTE
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.decode import Item, items_of
from ddbkeys.partition_keys._export.keyset import KeySet, bytes_key, key_bytes
from ddbkeys.partition_keys._export.location import ExportFolder, open_export
from ddbkeys.partition_keys._export.manifest import (
    SUMMARY,
    ExportError,
    Manifest,
    parse_files,
    parse_summary,
)
from ddbkeys.partition_keys._index.markers import hashable
from ddbkeys.partition_keys._listing.recognise import Markers, is_own, same_value

__all__ = [
    "BATCH",
    "ExportCounts",
    "ExportSnapshot",
    "check_table",
    "export_keys",
    "export_snapshot",
    "read_manifest",
    "snapshot_of",
]

#: Keys checked against those seen before at once.
BATCH = 10_000


@dataclass
class ExportCounts:
    """What reading an export has read so far."""

    files: int = 0
    items: int = 0
    own_items: int = 0
    keys: int = 0


def check_table(manifest: Manifest, info: TableInfo, where: str) -> None:
    """That ``manifest`` is an export of ``info``'s table as it stands: the same name, and
    taken after the table was created (else it is of an earlier table of that name)."""
    if manifest.table != info.name:
        raise ExportError(
            f"{where} is an export of table {manifest.table!r}, not {info.name!r}.",
            where=where,
            table=info.name,
        )
    _check_place(manifest, info, where)
    if info.created:
        created = datetime.fromisoformat(info.created.replace("Z", "+00:00"))
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        if created > manifest.time:
            raise ExportError(
                f"{where} was taken at {manifest.time.isoformat()}, before table "
                f"{info.name!r} was created ({info.created}): it is an export of an "
                "earlier table of that name.",
                where=where,
                table=info.name,
            )


#: DynamoDB Local's region in its ARNs: it has no exports, so one read against it is a copy of
#: another's, from wherever it was taken.
_LOCAL_REGION = "ddblocal"


def _check_place(manifest: Manifest, info: TableInfo, where: str) -> None:
    """That the export's table is in ``info``'s account, and in its region or a replica's
    (a global table's): a table of the same name elsewhere is another table."""
    theirs, ours = manifest.table_arn.split(":"), info.arn.split(":")
    if len(theirs) < 6 or len(ours) < 6 or ours[3] == _LOCAL_REGION:
        return
    if theirs[4] != ours[4] or (theirs[3] != ours[3] and theirs[3] not in info.replica_regions):
        raise ExportError(
            f"{where} is an export of {manifest.table_arn}, not of {info.arn}: another table "
            "of that name (check region= and profile=, or the export's URI).",
            where=where,
            table=info.name,
        )


def read_manifest(folder: ExportFolder, info: TableInfo) -> Manifest:
    """The export in ``folder``, its manifests read and checked against ``info``'s table."""
    where = folder.uri + SUMMARY
    manifest = parse_summary(folder.read(SUMMARY), where)
    check_table(manifest, info, where)
    files_name = "manifest-files.json"
    manifest_files = folder.uri + files_name
    return parse_files(manifest, folder.read(files_name), manifest_files)


def _key_of(item: Item, info: TableInfo, where: str, number: int) -> dict[str, object]:
    pk = info.partition_key
    key = item.get(pk.name)
    if key is None or next(iter(key)) != pk.type:
        kind = "none" if key is None else repr(next(iter(key)))
        if kind == "'?'":
            kind = "a value that is no key (a null, a set, or a type DynamoDB keys never have)"
        raise ExportError(
            f"{where}: item {number} has {kind} for partition key {pk.name!r}, whose type in "
            f"table {info.name!r} is {pk.type!r}: the export's items are not this table's "
            "(or not in its outputFormat).",
            where=where,
            table=info.name,
        )
    return key


def export_keys(
    folder: ExportFolder,
    manifest: Manifest,
    info: TableInfo,
    markers: Markers | None,
    *,
    own_items: bool,
    seen: KeySet,
    counts: ExportCounts,
    check: Callable[[], None] = lambda: None,
) -> Iterator[dict[str, object]]:
    """Each distinct partition key of the export's items that are yours (all items with
    ``own_items``), as an AttributeValue, once; ``counts`` says what was read, ``check`` is
    called between batches (a stop flag)."""
    wanted = {info.partition_key.name, ENTITY_ATTRIBUTE}
    if markers is not None:
        wanted |= {markers.sort_key, markers.attribute}
    attribute = markers.attribute if markers is not None else None
    batch: list[bytes] = []
    for data in manifest.files:
        where = folder.uri + data.path
        read = 0
        with folder.open(data.path) as raw:
            for read, item in enumerate(items_of(raw, manifest.format, wanted, where), 1):
                counts.items += 1  # (as read: a summary on the way says no fewer than the keys)
                key = _key_of(item, info, where, read)
                if not own_items and _own(item, markers, attribute):
                    counts.own_items += 1
                    continue
                batch.append(key_bytes(key))
                if len(batch) >= BATCH:
                    yield from _fresh(seen, batch, counts, check)
                    batch = []
        if 0 <= data.items != read:
            raise ExportError(
                f"{where} holds {read} items where the manifest says {data.items}: it is "
                "truncated or another export's; copy the export again.",
                where=where,
                table=info.name,
            )
        counts.files += 1
    yield from _fresh(seen, batch, counts, check)


def _own(item: Item, markers: Markers | None, attribute: str | None) -> bool:
    """:func:`is_own`, looked at only where it can hold: a marker has its marker attribute, a
    counter item its ``ddbkeys_type`` (most items have neither: the check costs per item)."""
    if ENTITY_ATTRIBUTE not in item and (attribute is None or attribute not in item):
        return False
    return is_own(item, markers)


def _fresh(
    seen: KeySet, batch: list[bytes], counts: ExportCounts, check: Callable[[], None]
) -> Iterator[dict[str, object]]:
    check()
    for raw in seen.new(batch):
        check()  # (a stop between two keys of a batch: the next one is not handed out)
        counts.keys += 1
        yield bytes_key(raw)


@dataclass(frozen=True)
class ExportSnapshot:
    """What a backfill from an export needs of it: its time (seconds), the collections holding
    an item that is yours (``data``) and those holding a marker (``marked``), as hashable
    keys; where it was read from (``uri``)."""

    time: float
    data: frozenset[tuple[str, Any]]
    marked: frozenset[tuple[str, Any]]
    uri: str = ""
    items: int = 0
    #: Collections whose item at the markers' sort key is data (they cannot be marked).
    clashes: frozenset[tuple[str, Any]] = frozenset()


def snapshot_of(
    folder: ExportFolder, manifest: Manifest, info: TableInfo, markers: Markers
) -> ExportSnapshot:
    """The collections of the export in ``folder``, told apart by ``markers`` (in memory, as
    the backfill's read mode holds the table's keys and the index's)."""
    wanted = {info.partition_key.name, ENTITY_ATTRIBUTE, markers.sort_key, markers.attribute}
    data: set[tuple[str, Any]] = set()
    marked: set[tuple[str, Any]] = set()
    clashes: set[tuple[str, Any]] = set()
    items = 0
    for file in manifest.files:
        where = folder.uri + file.path
        with folder.open(file.path) as raw:
            for number, item in enumerate(items_of(raw, manifest.format, wanted, where), 1):
                key = _key_of(item, info, where, number)
                hashed = hashable(key)
                if markers.is_marker(item):
                    marked.add(hashed)
                elif not is_own(item, markers):
                    data.add(hashed)
                    if same_value(item.get(markers.sort_key), markers.sort_value):
                        clashes.add(hashed)
                items += 1
    return ExportSnapshot(
        manifest.time.timestamp(),
        frozenset(data),
        frozenset(marked),
        folder.uri,
        items,
        frozenset(clashes),
    )


def export_snapshot(
    client: Any, uri: str, s3: Any, info: TableInfo, markers: Markers
) -> ExportSnapshot:
    """The collections of ``info``'s table's export at ``uri`` (its manifests checked), read
    with ``s3`` (a boto3 S3 client; by default one in ``client``'s region)."""
    folder = open_export(uri, s3, client)
    return snapshot_of(folder, read_manifest(folder, info), info, markers)
