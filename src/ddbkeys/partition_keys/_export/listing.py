"""A listing read from a table's export (``from_export``): an
:class:`~ddbkeys.partition_keys.Listing` whose keys come from the export's files instead of the
table, at no read capacity. It is exact as of the export's time (``export_time``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keys import ExportCounts, export_keys
from ddbkeys.partition_keys._export.keyset import MEMORY_KEYS, KeySet
from ddbkeys.partition_keys._export.location import ExportFolder
from ddbkeys.partition_keys._export.manifest import Manifest, when
from ddbkeys.partition_keys._export.now import Since, exists_flow, forget
from ddbkeys.partition_keys._index.markers import hashable
from ddbkeys.partition_keys._listing.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys._listing.listing import Listing

__all__ = ["ExportFacts", "ExportListing", "ExportMethod"]


class ExportMethod(SegmentMethod):
    """What an export listing reads with: the export's files, no Scan."""

    name = "export"

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Any:
        raise ConfigurationError("An export listing reads its files, not Scan segments.")


class ExportFacts:
    """What a listing from an export has besides a listing's bookkeeping (the sync and the
    asyncio forms share it): the export, what was read of it, and its keys."""

    method: SegmentMethod
    reader: Reader
    keys_found: int
    #: (a listing from an export is run again, not resumed: see ``checkpoint``)
    _going_on = "Run it again: a listing from an export starts over (its files read no capacity)."

    def _export(
        self,
        folder: ExportFolder,
        manifest: Manifest,
        memory_keys: int = MEMORY_KEYS,
        spill_folder: str | None = None,
        since: Since | str | None = None,
    ) -> str:
        self.since = since
        self.folder = folder
        self.manifest = manifest
        self.counts = ExportCounts()
        self.memory_keys = memory_keys
        self.spill_folder = spill_folder
        read = f"read from export {manifest.export_id} ({len(manifest.files)} data files, "
        read += f"{manifest.format})"
        if isinstance(since, Since):
            return f"{read} and the table's stream since: {self.as_of}"
        return f"{read}: the table as it was at {when(manifest.time)}"

    @property
    def export_time(self) -> datetime:
        """The time the export is of: the keys are the table's as it was then."""
        return self.manifest.time

    @property
    def export_arn(self) -> str:
        return self.manifest.arn

    @property
    def export_uri(self) -> str:
        return self.folder.uri

    @property
    def exact_now(self) -> bool:
        """Whether the answer is the table as it is now (the stream since the export read and
        the collections it names re-checked), not as it was at the export's time."""
        return isinstance(self.since, Since)

    @property
    def as_of(self) -> str:
        """What the answer is exact as of, said in a line."""
        since = self.since
        if isinstance(since, Since):
            replay = since.replay
            return (
                f"exact now: the export of {when(self.manifest.time)} and the stream since "
                f"{when(datetime.fromtimestamp(since.bound, UTC))} ({replay.records} records, "
                f"{since.rechecks()})"
            )
        why = f"; not now: {since}" if since else ""
        return f"exact as of {when(self.manifest.time)}, the export's time{why}"

    def checkpoint(self) -> str:
        """A listing from an export is not resumed: a ConfigurationError says so."""
        raise ConfigurationError(
            f"A listing of table {self.method.info.name!r} from an export does not resume: run "
            "it again (it reads the export's files again, and no read capacity).",
            table=self.method.info.name,
        )

    def _export_keys(self, seen: KeySet) -> Iterator[Key]:
        """The export's keys, less the collections the stream since names (re-checked after)."""
        keys = self._read_export(seen)
        since = self.since
        if not isinstance(since, Since) or not since.replay.touched:
            return keys
        touched = since.replay.touched
        return (key for key in keys if hashable(key) not in touched)

    def _touched(self) -> Iterator[tuple[tuple[str, Any], Key]]:
        """The collections to re-check, in a fixed order (streamed, from disk if they went
        there)."""
        since = self.since
        if isinstance(since, Since):
            yield from since.replay.touched.items()

    def _recheck(self, hashed: tuple[str, Any], key: Key) -> Any:
        """The flow that re-checks one collection the stream named (its answer recorded)."""
        assert isinstance(self.since, Since)
        there = yield from exists_flow(
            self.reader, self.method.info, self.method.markers, key, self.method.own_items
        )
        self.since.rechecked += 1
        return there

    def _read_export(self, seen: KeySet) -> Iterator[Key]:
        return export_keys(
            self.folder,
            self.manifest,
            self.method.info,
            self.method.markers,
            own_items=self.method.own_items,
            seen=seen,
            counts=self.counts,
            check=self.reader.stop.check,
        )


class ExportListing(ExportFacts, Listing):
    """The distinct partition keys of a table as its export holds them (iterate over it once).

    Keys come as a :class:`~ddbkeys.partition_keys.Listing`'s do, each once; memory stays
    bounded (past ``MEMORY_KEYS`` keys, those seen go to a SQLite file in ``spill_folder``, by
    default the system's temporary folder). The answer is the table as it was at
    ``export_time`` (``as_of`` says so in a line); ``usage`` counts what was read of the table:
    nothing. A listing from an export is not resumed (``checkpoint()`` says so): run it again.
    """

    def __init__(
        self,
        info: TableInfo,
        reader: Reader,
        folder: ExportFolder,
        manifest: Manifest,
        *,
        marker_attribute: str,
        own_items: bool,
        marker_sort_key: Any = None,
        on_key: Callable[[Listing], None] | None = None,
        memory_keys: int = MEMORY_KEYS,
        spill_folder: str | None = None,
        since: Since | str | None = None,
    ) -> None:
        method = ExportMethod(info).knowing_markers_by(
            marker_attribute, sort_key=marker_sort_key, own_items=own_items
        )
        super().__init__(method, reader, [None], 1, on_key)
        self.method_reason = self._export(folder, manifest, memory_keys, spill_folder, since)

    def _raw(self) -> Iterator[Key]:
        self._begin()
        try:
            with KeySet(self.memory_keys, self.spill_folder) as seen:
                for key in self._export_keys(seen):
                    self._handed(0, key)
                    yield key
            for hashed, key in self._touched():
                self.reader.stop.check()
                if self._driver.run(self._recheck(hashed, key)):
                    self._handed(0, key)
                    yield key
        finally:
            forget(self.since)
        self._done(0)
