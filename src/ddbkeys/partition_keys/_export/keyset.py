"""The keys seen so far, in memory that does not grow with their number: a Python set up to
``memory_keys`` keys (of ``memory_bytes`` bytes at most), then a SQLite file on disk (a B-tree,
keyed by the key's bytes), which a batch of keys is checked against at once.

An export lists a collection's items wherever its partition put them: a key comes back in
other files, and a key of a split collection in other partitions' files, so every key is
checked against all those seen before it. Keys are bytes here (:func:`key_bytes`): a type
byte, then the string's UTF-8, the number's text (as DynamoDB writes it) or the binary value.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

from ddbkeys.partition_keys._export.manifest import ExportError

__all__ = ["MEMORY_KEYS", "KeySet", "TouchedKeys", "bytes_key", "key_bytes"]

#: Keys kept in a Python set before they go to disk: about 15 MB of short keys.
MEMORY_KEYS = 100_000
#: The bytes of the keys kept in memory before they go to disk, however few: 100,000 keys of
#: 2,000 bytes held 281 MB (RSS) before this bound; 16 MB is 8,000 of them.
MEMORY_BYTES = 16 << 20


def key_bytes(key: dict[str, Any]) -> bytes:
    """A key AttributeValue (S, N as DynamoDB's text, or B) as bytes that tell it apart."""
    ((kind, value),) = key.items()
    if kind == "B":
        return b"B" + bytes(value)
    return kind.encode() + str(value).encode("utf-8")


def bytes_key(raw: bytes) -> dict[str, Any]:
    """The key AttributeValue :func:`key_bytes` made ``raw`` from."""
    kind, value = raw[:1].decode(), raw[1:]
    return {"B": value} if kind == "B" else {kind: value.decode("utf-8")}


class KeySet:
    """Keys seen, each once: :meth:`new` says which of a batch were not seen before."""

    def __init__(
        self,
        memory_keys: int = MEMORY_KEYS,
        folder: str | None = None,
        memory_bytes: int = MEMORY_BYTES,
    ) -> None:
        self.memory_keys = memory_keys
        self.memory_bytes = memory_bytes
        self.folder = folder
        self.count = 0
        self._bytes = 0  # (of the keys in memory)
        self._memory: set[bytes] | None = set()
        self._dir: str | None = None
        self._db: sqlite3.Connection | None = None

    @property
    def on_disk(self) -> bool:
        return self._db is not None

    def new(self, batch: Sequence[bytes]) -> list[bytes]:
        """The keys of ``batch`` not seen before (each once, in the batch's order), now seen."""
        fresh = list(dict.fromkeys(batch))
        try:
            if self._memory is not None:
                fresh = [key for key in fresh if key not in self._memory]
                self._memory.update(fresh)
                self.count += len(fresh)
                self._bytes += sum(map(len, fresh))
                if len(self._memory) > self.memory_keys or self._bytes > self.memory_bytes:
                    self._spill()
                return fresh
            return self._new_on_disk(fresh)
        except (sqlite3.Error, OSError) as exc:
            folder = self.folder or tempfile.gettempdir()
            self.close()
            raise ExportError(
                f"The keys seen, past {self.memory_keys:,} keys or {self.memory_bytes:,} bytes, "
                f"go to a file in {folder}, which failed ({type(exc).__name__}: {exc}): free "
                "space there, or set TMPDIR to a folder with room for the keys (their bytes and "
                "about 10 more each)."
            ) from None

    def _spill(self) -> None:
        assert self._memory is not None
        self._dir = tempfile.mkdtemp(prefix="ddbkeys-export-", dir=self.folder)
        path = os.path.join(self._dir, "keys.sqlite")
        self._db = db = sqlite3.connect(  # (one thread at a time: the asyncio form's, in turn)
            path, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE seen (k BLOB PRIMARY KEY) WITHOUT ROWID")
        self._forget_on_disk(path)
        db.execute("CREATE TEMP TABLE batch (i INTEGER PRIMARY KEY, k BLOB)")
        db.execute("BEGIN")
        db.executemany("INSERT INTO seen VALUES (?)", ((key,) for key in self._memory))
        db.execute("COMMIT")
        self._memory = None

    def _forget_on_disk(self, path: str) -> None:
        """The file, open, taken out of its folder at once (as SQLite does with its own
        temporary files): the space comes back when the connection closes, even after a
        kill -9, which would otherwise leave the keys seen on disk. Where an open file cannot be
        removed (Windows), it stays until :meth:`close`."""
        try:
            os.unlink(path)
            os.rmdir(self._dir or "")
        except OSError:
            return
        self._dir = None

    def _new_on_disk(self, fresh: list[bytes]) -> list[bytes]:
        db = self._db
        assert db is not None
        db.execute("BEGIN")
        db.executemany("INSERT INTO batch VALUES (?, ?)", enumerate(fresh))
        rows = db.execute(
            "SELECT b.k FROM batch b WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.k = b.k) "
            "ORDER BY b.i"
        ).fetchall()
        db.execute("INSERT OR IGNORE INTO seen SELECT k FROM batch")
        db.execute("DELETE FROM batch")
        db.execute("COMMIT")
        self.count += len(rows)
        return [row[0] for row in rows]

    def has(self, raw: bytes) -> bool:
        """Whether the key ``raw`` (:func:`key_bytes`) was seen."""
        if self._memory is not None:
            return raw in self._memory
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM seen WHERE k = ?", (raw,)).fetchone() is not None

    def all(self) -> Iterator[bytes]:
        """Every key seen, each once, in the order of their bytes (streamed from disk)."""
        if self._memory is not None:
            yield from sorted(self._memory)
            return
        assert self._db is not None
        for (raw,) in self._db.execute("SELECT k FROM seen ORDER BY k"):
            yield bytes(raw)

    def close(self) -> None:
        """Forget the keys: the file on disk is removed."""
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._memory = set()
        self.count = self._bytes = 0

    def __enter__(self) -> KeySet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Hashed = tuple[str, Any]


class TouchedKeys(MutableMapping[Hashed, dict[str, Any]]):
    """The collections a stream names (a replay's ``touched``: hashable key -> key) kept in a
    :class:`KeySet`, so that a day of a busy table's stream does not have to fit in memory.
    Iterates in the order of the keys' bytes."""

    def __init__(self, seen: KeySet | None = None) -> None:
        self.seen = seen if seen is not None else KeySet()

    @staticmethod
    def _raw(hashed: Hashed) -> bytes:
        return key_bytes({hashed[0]: hashed[1]})

    def __contains__(self, hashed: object) -> bool:
        return isinstance(hashed, tuple) and self.seen.has(self._raw(hashed))

    def __getitem__(self, hashed: Hashed) -> dict[str, Any]:
        if hashed not in self:
            raise KeyError(hashed)
        return {hashed[0]: hashed[1]}

    def __setitem__(self, hashed: Hashed, key: dict[str, Any]) -> None:
        self.seen.new([self._raw(hashed)])

    def __delitem__(self, hashed: Hashed) -> None:
        raise TypeError("the collections a stream named are not taken back")

    def __iter__(self) -> Iterator[Hashed]:
        for raw in self.seen.all():
            ((kind, value),) = bytes_key(raw).items()
            yield (kind, value)

    def __len__(self) -> int:
        return self.seen.count

    def close(self) -> None:
        self.seen.close()
