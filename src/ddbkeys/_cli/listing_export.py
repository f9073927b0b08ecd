"""``partition-keys --from-export``: what the command says of a listing read from an export."""

from __future__ import annotations

from typing import Any

import click

from ddbkeys.partition_keys import ExportListing, Listing
from ddbkeys.partition_keys._export.now import Since

__all__ = [
    "check_export_options",
    "export_fields",
    "export_line",
    "export_stopped",
    "from_export_option",
]

from_export_option = click.option(
    "--from-export",
    metavar="URI",
    help="List the keys of the table's export to S3 instead of the table: the export's folder, "
    "s3://BUCKET/PREFIX/AWSDynamoDB/EXPORT_ID/, or a copy of it on disk (aws s3 sync). Its files "
    "read no read capacity. Where the table's stream holds every write since the export, the "
    "keys are exact now: each collection written since is re-checked with a consistent Query "
    "(1 RCU each, within --max-rcu-per-second and --read-percent); else they are the table's "
    "as it was at the export's time. The summary says which. Not with --method, --segments, "
    "--scan-segments, --trust-index, --resume or --checkpoint.",
)


def export_stopped(verb: str, listing: ExportListing) -> str:
    """What the command says when a listing from an export stops early."""
    since = listing.since
    again = "its files read no read capacity"
    if isinstance(since, Since) and since.named:  # (h91 F8: a rerun is not free)
        again += (
            f"; the {since.named:,} collections the stream named are re-checked again, "
            "about 1 RCU each"
        )
    return (
        f"{verb} after {export_line(listing)}.\nRun the same command again: a listing from an "
        f"export starts over ({again})."
    )


def export_line(listing: ExportListing) -> str:
    """The summary of a listing from an export: its keys, as of when, what it read."""
    c = listing.counts
    return (
        f"{listing.keys_found} keys (export, {listing.as_of}): {c.files} of "
        f"{len(listing.manifest.files)} data files, {c.items} items read, "
        f"{listing.usage.read_units:g} RCU"
    )


def check_export_options(
    method: str,
    default_method: str,
    resume: str | None,
    checkpoint_file: str | None,
    readers: tuple[int | None, int | None, bool] = (None, None, False),
) -> None:
    """--from-export lists the export: no method, resume or checkpoint goes with it, nor how
    the table would be read (``readers``: --segments, --scan-segments, --trust-index)."""
    segments, scan_segments, trust_index = readers
    given = [
        name
        for name, value in (
            ("--method", method != default_method),
            ("--segments", segments not in (None, 1)),
            ("--scan-segments", scan_segments not in (None, 1)),
            ("--trust-index", trust_index),
            ("--resume", resume is not None),
            ("--checkpoint", checkpoint_file is not None),
        )
        if value
    ]
    if given:
        why = {
            "--resume": "a listing from an export is not resumed; run it again",
            "--checkpoint": "a listing from an export is not resumed; run it again",
            "--trust-index": "it reads no marker index",
        }.get(given[0], "it reads the export's files one after another")
        raise click.UsageError(
            f"--from-export reads the export's files, not the table: drop {given[0]} ({why})."
        )


def export_fields(listing: Listing) -> dict[str, Any] | None:
    """What a listing from an export read (None: it read the table)."""
    if not isinstance(listing, ExportListing):
        return None
    return {
        "uri": listing.export_uri,
        "arn": listing.export_arn,
        "time": listing.manifest.time.isoformat(),
        "exact": listing.as_of,
        "files": listing.counts.files,
        "items": listing.counts.items,
        "own_items": listing.counts.own_items,
    }
