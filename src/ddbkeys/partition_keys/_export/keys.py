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

from ddbkeys._entity import ENTITY_ATTRIBUTE
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.decode import Item, items_of
from ddbkeys.partition_keys._export.keyset import KeySet, bytes_key, key_bytes
from ddbkeys.partition_keys._export.location import ExportFolder
from ddbkeys.partition_keys._export.manifest import (
    SUMMARY,
    ExportError,
    Manifest,
    parse_files,
    parse_summary,
)
from ddbkeys.partition_keys._listing.recognise import Markers, is_own

__all__ = ["BATCH", "ExportCounts", "check_table", "export_keys", "read_manifest"]

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
    batch: list[bytes] = []
    for data in manifest.files:
        where = folder.uri + data.path
        read = 0
        with folder.open(data.path) as raw:
            for read, item in enumerate(items_of(raw, manifest.format, wanted, where), 1):
                key = _key_of(item, info, where, read)
                if not own_items and is_own(item, markers):
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
        counts.items += read
    yield from _fresh(seen, batch, counts, check)


def _fresh(
    seen: KeySet, batch: list[bytes], counts: ExportCounts, check: Callable[[], None]
) -> Iterator[dict[str, object]]:
    check()
    for raw in seen.new(batch):
        counts.keys += 1
        yield bytes_key(raw)
