"""How many readers ``auto`` runs while it lists by skipping: one at first, more as segments
end and show that skipping sends many more requests than a scan would. Pure.

Readers cost read units where skip-pages learns: each reader may lose a page into a large
collection before a failed trial reaches the others, and each segment ends on a page of its
own (on three collections of 2.2 MB among 800 small keys, 7 MB, skip-pages read 200.5 RCU
with one reader, 194-316 with three). They save time only where skipping sends many small
requests: where it reads on as a scan, one reader takes a scan's time. So the listing starts
with one, and each time a segment ends, :meth:`Joining.wanted` says how many should read: as
many as keep each reader's share of the requests the whole listing would send, at the rate
of the segments done so far, within ``REQUESTS_A_PAGE`` times the requests of a scan of the
table (pages of 1 MB), up to ``most``. The first requests are skip-pages' learning
(``LEARNING``: about ``LOOK_AFTER`` skipping pages and a ramp of three, before it reads on as
a scan where skipping saves little), not its rate: on 2,500 documents whose size grows with
their versions (6 MB), the first of five segments took 36 requests and the other four 10; a
second reader, joined on the first segment's rate, read 1.07x the units of one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddbkeys.partition_keys._listing.pages import LOOK_AFTER

__all__ = ["LEARNING", "REQUESTS_A_PAGE", "Joining"]

#: Small requests a reader of skip-pages sends in about the time a scan reads a 1 MB page:
#: about 9 ms against 200 ms on DynamoDB Local, and tens against hundreds of ms on the service.
REQUESTS_A_PAGE = 25
#: The requests of skip-pages' first pages, which learn rather than show its rate.
LEARNING = LOOK_AFTER + 4


@dataclass(frozen=True)
class Joining:
    """Readers joining a listing by skipping: at most ``most``, where a scan of the table
    takes ``scan_requests`` requests (its 1 MB pages)."""

    most: int
    scan_requests: int

    def wanted(self, done: int, of: int, requests: int) -> int:
        """How many readers should read once ``done`` segments of the ``of`` this run reads
        have ended and it has sent ``requests`` requests in all (the segments under way count
        theirs too: the estimate only grows with them)."""
        if done <= 0:
            return 1
        projected = max(0, requests - LEARNING) * of / done
        needed = math.ceil(projected / (REQUESTS_A_PAGE * max(1, self.scan_requests)))
        return max(1, min(self.most, needed))

    def reason(self) -> str:
        """What ``method_reason`` says of it."""
        return (
            f"; one reader at first, up to {self.most} at once as segments end showing skipping "
            f"sends more than {REQUESTS_A_PAGE} requests a reader for each page a scan reads"
        )
