"""Where ``ddbkeys partition-keys`` writes its keys, and the ``--checkpoint FILE`` it keeps.

The checkpoint is replaced atomically (a temporary file in the same directory, then
``os.replace``) right after each flush of the output: at least once a second while keys come,
and after at most :data:`CHECKPOINT_KEYS` keys. So a kill at any moment leaves a checkpoint
whose keys have all been flushed:

- with ``--output-file OUT`` the checkpoint also records OUT's length, and a resume first cuts
  OUT back to it: every key exactly once, however many kills;
- on stdout, a resume may repeat the keys written since the last checkpoint (at most
  :data:`CHECKPOINT_KEYS`), and never loses one.

Once the listing ends, the checkpoint file is removed: the same command then starts over.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import time
from typing import IO, TYPE_CHECKING

import click

from ddbkeys._cli.group import stdout_closed
from ddbkeys._cli.rendering import check_query
from ddbkeys._errors import DdbKeysError, ResumeTokenError
from ddbkeys.partition_keys._listing.checkpoint import (
    CheckpointFile,
    check_output,
    decode_file,
    encode_file,
)

if TYPE_CHECKING:
    from ddbkeys.partition_keys import Listing

__all__ = [
    "CHECKPOINT_KEYS",
    "CHECKPOINT_SECONDS",
    "KeySink",
    "check_options",
    "listing_query_option",
    "resume_from",
    "write_atomically",
]

#: The most keys written between two checkpoints (what a kill may repeat on stdout).
CHECKPOINT_KEYS = 1000
#: The longest time between two checkpoints while keys come, in seconds.
CHECKPOINT_SECONDS = 1.0


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` with ``text``: readers (and a kill) see the old file or the new one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".ddbkeys-checkpoint-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _lock(checkpoint: str) -> IO[bytes] | None:
    """Hold ``checkpoint``.lock for this run: a second run of the same listing is refused (both
    would write OUT and the checkpoint). Where there is no fcntl (Windows), no lock."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
    except ImportError:
        return None
    try:
        handle = open(checkpoint + ".lock", "ab")  # noqa: SIM115 - held until the process ends
    except OSError as exc:  # (named as given: helper-87, '/no/such/dir/f.lock' was not)
        hint = f"{exc.strerror} (its lock file {checkpoint}.lock beside it)"
        raise click.FileError(checkpoint, hint) from exc
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise DdbKeysError(
            f"Another listing is using the checkpoint file {checkpoint} (it holds "
            f"{checkpoint}.lock): wait for it to end, or name another file.",
            cause=exc,
        ) from exc
    return handle


class KeySink:
    """Key lines to stdout or to ``output_file``, and the checkpoint file kept beside them.

    ``resume_token`` is the token to go on from when the checkpoint file exists (None: start
    afresh, which truncates ``output_file``). Nothing is written, and the output file is not
    touched, before :meth:`open`.
    """

    def __init__(self, output_format: str, output_file: str | None, checkpoint: str | None) -> None:
        if not output_file and stdout_closed():  # (`>&-`: keys read and written nowhere)
            raise click.ClickException(
                "Standard output is closed, so the keys would be written nowhere: nothing "
                "read. Give --output-file FILE, or leave standard output open."
            )
        self.format = output_format
        self.path = os.path.abspath(output_file) if output_file else None
        self.checkpoint_path = checkpoint
        self.resume_token: str | None = None
        self.keys = 0  # written in all, this run and the runs it goes on from
        self._since = 0  # written since the last checkpoint
        self._stamp = time.monotonic()
        self._hash = hashlib.sha256()  # of everything OUT holds
        self._lock: IO[bytes] | None = None
        if checkpoint is not None:
            self._lock = _lock(checkpoint)
        self._saved = self._load()
        self._file: IO[bytes] | None = None
        #: Whether this run goes on from a checkpoint file.
        self.resumed = self._saved is not None
        if self._saved is not None:
            self.resume_token = self._saved.token
            self.keys = self._saved.keys

    def open(self, listing: Listing) -> None:
        """Open the output file, once ``listing`` is known to fit the checkpoint: truncated to
        what the checkpoint recorded (or to nothing, with no checkpoint); then write the first
        checkpoint, so that a FILE that cannot be written is said before any key."""
        if self.path is not None and self._file is None:
            self._file = self._open(self._saved)
        self.save(listing)

    def _load(self) -> CheckpointFile | None:
        name = self.checkpoint_path
        if name is None or not os.path.exists(name):
            return None
        try:
            with open(name, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1 << 20)
        except OSError as exc:
            raise click.FileError(name, exc.strerror) from exc
        saved = decode_file(text, name)
        check_output(saved, name, self.path, self.format)
        return saved

    def _open(self, saved: CheckpointFile | None) -> IO[bytes]:
        assert self.path is not None
        try:
            if saved is None:
                return open(self.path, "wb")
            handle = open(self.path, "r+b")  # noqa: SIM115
        except OSError as exc:
            raise click.FileError(self.path, exc.strerror) from exc
        size = handle.seek(0, os.SEEK_END)
        if size < saved.output_bytes:
            handle.close()
            raise ResumeTokenError(
                f"The output file {self.path} holds {size} bytes, fewer than the "
                f"{saved.output_bytes} the checkpoint file {self.checkpoint_path} recorded (it "
                f"was changed): delete {self.checkpoint_path} to start the listing again."
            )
        handle.seek(0)
        kept = hashlib.sha256()
        left = saved.output_bytes
        while left:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            kept.update(chunk)
            left -= len(chunk)
        if saved.output_sha256 and kept.hexdigest() != saved.output_sha256:
            handle.close()
            raise ResumeTokenError(
                f"The output file {self.path} was changed since the checkpoint file "
                f"{self.checkpoint_path} was written (its first {saved.output_bytes} bytes "
                f"differ): delete {self.checkpoint_path} to start the listing again."
            )
        self._hash = kept
        handle.truncate(saved.output_bytes)
        handle.seek(saved.output_bytes)
        return handle

    def write(self, line: str) -> None:
        """Write one line (a key), without waiting for a checkpoint."""
        if self._file is not None:
            data = line.encode("utf-8", "surrogateescape") + b"\n"
            self._file.write(data)
            self._hash.update(data)
        else:
            sys.stdout.write(line + "\n")
        self.keys += 1
        self._since += 1

    def write_document(self, text: str) -> None:
        """The whole output at once (``--output json``)."""
        if self._file is not None:
            self._file.write(text.encode("utf-8") + b"\n")
        else:
            click.echo(text)

    def tick(self, listing: Listing) -> None:
        """Flush and checkpoint when it is time to."""
        if self.checkpoint_path is None:
            return
        if self._since >= CHECKPOINT_KEYS or time.monotonic() - self._stamp >= CHECKPOINT_SECONDS:
            self.save(listing)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
        else:
            sys.stdout.flush()

    def save(self, listing: Listing) -> None:
        """Flush the output, then replace the checkpoint file with where ``listing`` stands."""
        self.flush()
        if self.checkpoint_path is None:
            return
        size = self._file.tell() if self._file is not None else 0
        saved = CheckpointFile(
            listing.checkpoint(),
            self.path,
            self.format,
            size,
            self.keys,
            self._hash.hexdigest() if self._file is not None else "",
        )
        try:
            write_atomically(self.checkpoint_path, encode_file(saved))
        except OSError as exc:
            raise click.FileError(self.checkpoint_path, exc.strerror) from exc
        self._since = 0
        self._stamp = time.monotonic()

    def finish(self) -> None:
        """The listing ended: flush, close, and remove the checkpoint (a new run starts over)."""
        self.close()
        self.forget()
        if self.checkpoint_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.checkpoint_path + ".lock")

    def forget(self) -> None:
        """Remove the checkpoint file: what was written cannot be vouched for (the reader of
        stdout went away), so the next run starts over."""
        if self.checkpoint_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.checkpoint_path)

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def check_options(
    table_name: str | None,
    output: str,
    query: str | None,
    checkpoint_file: str | None,
    output_file: str | None,
) -> None:
    """The options that do not go together: a usage error naming them."""
    if query is not None and output not in ("json", "table"):
        raise click.UsageError(
            "--query goes with --output json or table (one document at the end); with text "
            "and jsonl each key is written as it comes."
        )
    if table_name is None:
        raise click.UsageError("Missing option '--table-name' / '-t'.")
    if checkpoint_file is not None and output in ("json", "table"):
        raise click.UsageError(
            f"--checkpoint goes with --output text or jsonl ({output} is one document at the end)."
        )
    if (
        checkpoint_file is not None
        and output_file is not None
        and os.path.abspath(checkpoint_file) == os.path.abspath(output_file)
    ):
        raise click.UsageError(
            f"--checkpoint and --output-file are the same file ({output_file}): name two files."
        )


def resume_from(sink: KeySink, resume: str | None, checkpoint_file: str | None) -> str | None:
    """The token to go on from: --resume, or the checkpoint file's (not both)."""
    if sink.resume_token is None:
        return resume
    if resume is not None:
        raise click.UsageError(
            f"--resume and the checkpoint file {checkpoint_file}, which exists: drop "
            f"--resume to go on from {checkpoint_file}, or delete it."
        )
    return sink.resume_token


#: --query of a listing's one document (``--output json`` or ``table``): the listing's and
#: a task's.
listing_query_option = click.option(
    "--query",
    metavar="JMESPATH",
    callback=lambda ctx, param, value: (check_query(value), value)[1],
    help="With --output json or table: print only this part of the document (JMESPath, as "
    "in the AWS CLI), e.g. --query 'keys[:10]'.",
)
