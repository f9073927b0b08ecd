"""What skip-pages says of how it read (``PagedSkipMethod.note``). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys.partition_keys._listing.read_on import LEEWAY, WASTE

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.pages import PageSize

__all__ = ["how_it_read"]


def how_it_read(pages: PageSize) -> str:
    """How the listing read, where it went on as a scan (else empty)."""
    if not pages.through:
        if not pages.whole:
            return ""
        if pages.grew:
            return (
                f"its first pages read as a scan: the table's description put it at "
                f"{pages.whole:,} bytes, but it proved larger (DescribeTable's size is "
                "refreshed about every six hours)"
            )
        most = min(LEEWAY, pages.whole_units) / 2
        return (
            f"read as a scan: the table's description puts it at {pages.whole:,} bytes, "
            f"where skipping could save at most {most:g} RCU"
        )
    count, seen = pages.ledgers.skip_pages, pages.ledgers.seen_keys
    also = f" and the items of {seen:,} collections read on" * bool(seen)
    shown = f"under {WASTE:.0%}, as far as {count:,} page{'s' * (count != 1)}{also} showed"
    why = "its collections proved small" if pages.small else f"skipping saved {shown}"
    back = ""
    if pages.went_back:
        times = "once" if pages.went_back == 1 else f"{pages.went_back:,} times"
        back = f" (and went back to skipping {times} before, where pages met large collections)"
    return (
        f"read on as a scan after {pages.read_on_after:,} keys{back}: {why} (a page read on "
        "still skips the rest of the collection it ends in)"
    )
