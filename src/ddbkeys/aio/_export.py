"""A listing from a table's export, for asyncio: the export's files are read in a worker
thread (``asyncio.to_thread``, a batch of keys at a time) with the S3 client of the sync form
(boto3's), so that the event loop never waits on a file or on S3; the table is described with
the aiobotocore client given."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keys import read_manifest
from ddbkeys.partition_keys._export.keyset import KeySet
from ddbkeys.partition_keys._export.location import ExportFolder, open_export
from ddbkeys.partition_keys._export.manifest import Manifest
from ddbkeys.partition_keys._export.now import Since, since_flow
from ddbkeys.partition_keys._listing.base import Key, Reader
from ddbkeys.partition_keys._listing.options import ListingOptions
from ddbkeys.partition_keys._streams.streams import SplitClient

__all__ = ["CHUNK", "close_reading", "export_of", "some"]

#: Keys read in the worker thread at a time.
CHUNK = 1000


def some(keys: Iterator[Key], most: int, lock: threading.Lock | None = None) -> list[Key]:
    """Up to ``most`` of ``keys`` (in the worker thread, holding ``lock``)."""
    chunk: list[Key] = []
    with lock or contextlib.nullcontext():
        for key in keys:
            chunk.append(key)
            if len(chunk) >= most:
                break
    return chunk


def close_reading(keys: Iterator[Key], seen: KeySet, lock: threading.Lock | None = None) -> None:
    """The reading closed, once the thread reading a chunk (holding ``lock``) is done with it:
    a task cancelled while it waits for a chunk leaves that thread running, and closing the
    keys under it was 'ValueError: generator already executing'."""
    with lock or contextlib.nullcontext():
        close = getattr(keys, "close", None)
        if close is not None:
            close()
        seen.close()


async def export_of(
    client: Any, reader: Reader, options: ListingOptions, s3: Any, streams: Any, owner: str
) -> tuple[TableInfo, ExportFolder, Manifest, Since | str]:
    """What the asyncio listing of ``options.from_export`` reads: the table described with
    ``client``, the export's manifests read in a thread (with ``s3``, else a boto3 S3 client
    in ``client``'s region), and the table's stream since (with ``streams``)."""
    uri = str(options.from_export)
    if s3 is not None and hasattr(s3, "__aenter__"):  # (aiobotocore's: its calls are coroutines)
        raise ConfigurationError(
            "s3 must be a boto3 S3 client, not aiobotocore's: the export's files are read in a "
            "worker thread, with boto3 (leave s3 out to have one made in the table's region)."
        )
    driver = AsyncDriver(SplitClient(client, streams), reader.usage, owner)
    info = await driver.run(reader.describe())

    def opened() -> tuple[ExportFolder, Manifest]:
        folder = open_export(uri, s3, client)
        return folder, read_manifest(folder, info)

    folder, manifest = await asyncio.to_thread(opened)
    since = await driver.run(
        since_flow(reader, info, manifest.time, options.replay_margin, time.time())
    )
    return info, folder, manifest, since
