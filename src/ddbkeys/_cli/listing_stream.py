"""How ``ddbkeys partition-keys`` (and ``run-task``) writes a listing's keys as they come, and
what it says when it stops early (a signal, an error): how far it came and how to go on."""

from __future__ import annotations

import signal
import sys
import threading

import click

from ddbkeys._cli.common import StatusLine
from ddbkeys._cli.errors import cli_words
from ddbkeys._cli.group import INTERRUPTED_NOTE, quiet_output
from ddbkeys._cli.listing_export import export_line, export_stopped
from ddbkeys._cli.listing_sink import KeySink
from ddbkeys._errors import DdbKeysError, ListingInterrupted
from ddbkeys.partition_keys import ExportListing, Listing, plain_key
from ddbkeys.partition_keys._listing.text import json_key, jsonl_line, text_line
from ddbkeys.partition_keys._tasks.figures import plural

__all__ = [
    "COLLECTED",
    "STOP_SIGNALS",
    "before_keys",
    "resume_note",
    "say_strays",
    "stream_keys",
    "usage_line",
    "write_keys",
]


def _n(n: int, noun: str) -> str:
    return plural(n, noun, grouped=False)


def usage_line(listing: Listing, *, progress: bool = False, others: int = 0) -> str:
    """A listing's figures in one line (``progress``: as its progress line says them, leaving
    out the segments ``others`` list: a task's, which lists one segment of many)."""
    u = listing.usage
    if isinstance(listing, ExportListing):
        return export_line(listing)
    readers = f", {listing.readers} readers" if listing.readers > 1 else ""
    line = (
        f"{_n(listing.keys_found, 'key')} ({listing.method_name}{readers}): "
        f"{_n(u.requests, 'request')}, {_n(u.items, 'item')} read, {u.read_units:g} RCU"
    )
    if listing.method_note and not progress:
        line += f"; {cli_words(listing.method_note)}"
    replay = listing.replay
    if replay is not None and not progress:
        line += (
            f" (the index proven: {_n(replay.records, 'stream record')} read past the "
            f"maintainer's positions held back {replay.margin:g} s{replay.of_history()}, "
            f"{_n(replay.rechecked, 'collection')} re-checked, their reads included in "
            "those figures)"
        )
    if progress and listing.scan_segments - others > 1:
        line += f"; {listing.segments_done - others}/{listing.scan_segments - others} segments done"
    return line


def say_strays(listing: Listing) -> None:
    """Say (on stderr, even with --quiet: the answer's trust is at stake) where the listing
    handed out keys at items that say they are ddbkeys' markers of other settings."""
    if listing.stray_note:
        click.echo(f"Warning: {cli_words(listing.stray_note)}.", err=True)


#: What each stopping signal is called, and the exit code it leads to (128 + its number).
STOP_SIGNALS: tuple[str, ...] = ("SIGINT", "SIGTERM", "SIGHUP")


#: The outputs written as one document once the listing ends (its keys collected meanwhile).
COLLECTED = ("json", "table")


def write_keys(listing: Listing, output: str, sink: KeySink, collected: list[object]) -> None:
    """Write each key as it comes (text, jsonl) or collect it (json), checkpointing as it goes."""
    for raw in listing.raw():
        key = plain_key(raw)
        if output == "text":
            sink.write(text_line(key))
        elif output == "jsonl":
            sink.write(jsonl_line(key))
        else:
            collected.append(json_key(key))
        sink.tick(listing)


def before_keys(ctx: click.Context, what: str, again: str, resume: str | None = None) -> None:
    """What Ctrl-C says until :func:`stream_keys` takes the stop over (while the listing
    opens: its table's description, a proof's stream read): nothing was written, and how to
    go on (a resume token given still holds)."""
    note = f"Interrupted before the {what} wrote a key: {again}"
    if resume is not None:
        note += " (its --resume token still goes on from where the stopped listing was)"
    ctx.meta[INTERRUPTED_NOTE] = note + "."


def resume_note(
    verb: str, listing: Listing, sink: KeySink, status: StatusLine | None, output: str = "text"
) -> None:
    """On stderr: how far the listing came, and how to go on from there. With an output that
    is one document at the end (json, table), nothing was written: no resume token, which
    would go on past keys that no one saw."""
    if status is not None:
        status.stop()
    if output in COLLECTED:
        click.echo(
            f"{verb} after {usage_line(listing)}.\nNothing was written (--output {output} "
            "writes the keys at the end): run the command again; with --output jsonl or text, "
            "--checkpoint FILE lets a run go on from where it stopped.",
            err=True,
        )
        return
    sink.save(listing)
    if isinstance(listing, ExportListing):
        click.echo(export_stopped(verb, listing), err=True)
        return
    how = f"Resume with: --resume {listing.checkpoint()}"
    if click.get_current_context().info_name == "run-task":  # (it takes no --resume)
        how = (
            "Run the task line again (from its start; with --checkpoint FILE a run goes on "
            "from where it stopped), or go on in Python with "
            f"open_task(task.going_on({listing.checkpoint()!r}))."
        )
    if sink.checkpoint_path is not None:
        how += f"\nOr run the same command again: it goes on from {sink.checkpoint_path}."
    click.echo(f"{verb} after {usage_line(listing)}.\n{how}", err=True)


def stream_keys(
    ctx: click.Context, listing: Listing, output: str, sink: KeySink, status: StatusLine | None
) -> list[object]:
    """Write the keys; on Ctrl-C, SIGTERM, SIGHUP or an error, say how to resume. Returns the
    keys collected for ``--output json``."""
    collected: list[object] = []
    ctx.meta.pop(INTERRUPTED_NOTE, None)  # (from here, a stop says how far it came)
    # A stopping signal asks the listing to stop: within about 0.1 s, after the key being
    # written, so that the resume token and the checkpoint are exact. A second Ctrl-C
    # interrupts at once, leaving the last checkpoint as it was.
    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        listing.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    in_main = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main:
        for name in STOP_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, stop)
    listing.background = True  # so that a stop never waits on an outstanding request
    try:
        if status is not None:
            status.start()
        write_keys(listing, output, sink, collected)
    except ListingInterrupted:
        number = received[0] if received else signal.SIGINT
        verb = (
            "Interrupted"
            if number == signal.SIGINT
            else f"Stopped by {signal.Signals(number).name}"
        )
        resume_note(verb, listing, sink, status, output)
        sink.close()
        ctx.exit(128 + number)
    except KeyboardInterrupt:
        if status is not None:
            status.stop()
        sink.close()
        click.echo(
            f"Interrupted twice: stopped at once, after {usage_line(listing)}; "
            + (
                f"{sink.checkpoint_path} holds the last checkpoint."
                if sink.checkpoint_path
                else "no resume token."
            ),
            err=True,
        )
        ctx.exit(130)
    except DdbKeysError:
        # The keys written so far stand: say how to go on from them, then the error itself.
        resume_note("Stopped", listing, sink, status, output)
        sink.close()
        raise
    except BrokenPipeError:
        # The reader went away (| head): stop quietly. What it read of the keys written is
        # unknown, so a checkpoint would skip keys it threw away: it is removed, and its lock
        # file with it (helper-68: the lock was left in the user's directory).
        quiet_output(sys.stdout)
        sink.finish()
        ctx.exit(0)
    finally:
        if status is not None:
            status.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return collected
