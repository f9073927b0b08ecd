"""Why a marker index's record proves nothing whatever the stream holds, decided without I/O:
the backfill it rests on (:func:`basis`, :func:`backfill_reason`) and :func:`precheck`, the
part of :func:`~ddbkeys.partition_keys._proof.replay_window.replay_window` that needs no shard
list. The records themselves are :mod:`ddbkeys.partition_keys._proof.evidence`'s."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace

from ddbkeys._key_json import brief_key
from ddbkeys.partition_keys._proof.evidence import (
    CLASHED,
    DEFAULT_REPLAY_MARGIN,
    RUN_BACKFILL,
    Backfill,
    Decline,
    Evidence,
)
from ddbkeys.partition_keys._streams.lambda_trigger import trigger_decline

__all__ = [
    "FOLLOW_OWNED",
    "FOLLOW_ROLE",
    "MOVED",
    "NO_MAINTAINER",
    "RECORDS_ELSEWHERE",
    "backfill_reason",
    "basis",
    "precheck",
    "shown_markers",
]

#: How the reason starts where no maintainer has recorded a position under the table's stream
#: (a listing that declines on it names the state table it read: another ``--state-table``
#: may be where the maintainer records).
NO_MAINTAINER = "no maintainer has recorded a position in the table's stream"
#: What a running follower does where the stream was turned off and on (helper-99 F4; status
#: says it on a line of its own beside its Fix: helper-102 F5).
MOVED = (
    "or nothing, if `index follow --backfill` runs: a follower moves to a stream turned off and "
    "on within seconds, and backfills under it once the margin has passed"
)
#: Where a maintainer records that none was found in the state table read (status and the
#: listing's reason say it after naming that table).
RECORDS_ELSEWHERE = "another --state-table or DDBKEYS_STATE_TABLE records its positions there"


def _keys(clashes: Sequence[str], most: int = 5) -> str:
    shown = []
    for text in clashes[:most]:
        try:
            value = next(iter(json.loads(text).values()))
        except (ValueError, AttributeError, StopIteration):
            value = text
        shown.append(brief_key(value))
    return ", ".join(shown) + (f" and {len(clashes) - most} more" if len(clashes) > most else "")


def basis(evidence: Evidence, stream: str | None, margin: float) -> Evidence:
    """``evidence`` as the proof reads it: while its backfill has not finished (at work,
    killed or stopped), or finished proving nothing (it met a clash, did not count), with
    the last backfill that proved (``kept``) in its place, where that one still proves the
    index (else as it is: the newer one's words are the reason).

    Sound because a backfill only stands for what the log does not hold: every write after
    the kept backfill began, the new backfill's marker writes and removals among them, has a
    record in the stream, which the maintainer applies and the listing replays past its
    positions as for any other writer. So the kept backfill proves as much as it did before
    the new one began, and a redundant backfill (a cron job, a runbook step), or one killed
    half way, no longer withdraws the proof (each did, for its whole run or until the next
    one finished). Not where the new one knows markers otherwise (a switch, ``--force``).
    Pure."""
    current, kept = evidence.backfill, evidence.kept
    if current is None or kept is None:
        return evidence
    if None not in (current.markers, kept.markers) and current.markers != kept.markers:
        # (one run with --force to change the markers: the maintainers it runs beside keep
        # its markers, not the kept one's, whose positions then prove nothing of them; a
        # helper's listings with either settings lost up to 90% of the keys, "proven")
        return evidence
    if current.finished is not None and backfill_reason(evidence, stream, margin)[0]:
        return evidence  # (finished, and it proves: its own outcome stands)
    held = replace(evidence, backfill=kept, kept=None)
    proven, _ = backfill_reason(held, stream, margin)
    return held if proven is not None else evidence


def backfill_reason(
    evidence: Evidence, stream: str | None, margin: float
) -> tuple[Backfill | None, str | None]:
    backfill = evidence.backfill
    if stream is None:  # (the first step: `index stream`, before any backfill that counts)
        return None, (
            "the table's stream is off, so the changes since the index's snapshot cannot be read"
        )
    if backfill is None:
        return None, f"there is no record of a backfill ({RUN_BACKFILL})"
    if backfill.stream is None:
        return None, (
            "the backfill ran while the table's stream was off, so what changed meanwhile is in "
            "no log: run `index backfill` again now that it is on (with `index follow` or the "
            "Lambda handler running)"
        )
    if backfill.stream != stream:
        return None, (
            "the backfill was made under another stream than the table's stream now (the "
            "stream was turned off and on since, or the table made anew, and what happened "
            "meanwhile is in no log): run `index backfill` again"
        )
    if backfill.finished is None:
        return None, _unfinished(backfill)
    if backfill.uncounted is not None:
        return None, f"the backfill does not count: {backfill.uncounted}"
    if backfill.clashes:
        return None, (
            f"{CLASHED} of collection(s) "
            f"{_keys(backfill.clashes)}: move those items, then run `index backfill` again"
        )
    if backfill.maintained_since is None:
        return None, (
            "no maintainer had recorded a position in the stream when the backfill began: run "
            "`index backfill` again while `index follow` or the Lambda handler runs"
        )
    if backfill.started - backfill.maintained_since < margin:
        if backfill.margin is not None and backfill.margin < margin:
            short = backfill.margin < DEFAULT_REPLAY_MARGIN
            return None, (
                f"the backfill was begun for a replay margin of {backfill.margin:g} s, less than "
                f"this listing's ({margin:g} s): run `index backfill --replay-margin {margin:g}` "
                f"again, or list with --replay-margin {backfill.margin:g}"
                + (
                    f" (shorter than the default {DEFAULT_REPLAY_MARGIN:g} s, meant for AWS)"
                    if short
                    else ""
                )
            )
        return None, (
            f"the backfill began {backfill.started - backfill.maintained_since:.0f} s after the "
            f"maintainer's first position, less than the replay margin ({margin:g} s): run "
            "`index backfill` again"
        )
    return backfill, None


#: The role ``index follow --backfill`` gives its backfills' owner
#: (``backfill_claim.owner_name(FOLLOW_ROLE)``), and how such an ``owner`` ends.
FOLLOW_ROLE = "index follow"
FOLLOW_OWNED = f"({FOLLOW_ROLE})"


def _unfinished(backfill: Backfill) -> str:
    """Why an unfinished backfill proves nothing, and what to run: where ``index follow
    --backfill`` ran it (and is no longer at work on it: killed or stopped), that follower
    again, which backfills once more and maintains the index; a bare ``index backfill`` would
    leave no maintainer (helper-70 F2: every listing then replayed all since the dead one's
    position, 70x a scan)."""
    if backfill.owner is not None and backfill.owner.endswith(FOLLOW_OWNED):
        who = backfill.owner.removesuffix(FOLLOW_OWNED).strip()
        return (
            f"its backfill, begun by `index follow --backfill` ({who}), has not finished (that "
            "follower was stopped or killed): run `index follow --backfill` again (it backfills "
            "once more, and keeps the index)"
        )
    return "its backfill has not finished (or was stopped): run `index backfill`"


def _unmaintained(evidence: Evidence, stream: str | None, why: str) -> str | None:
    """The reason to give where a backfill is recorded, proves nothing, and no maintainer has
    recorded a position under ``stream``: no backfill can count until one does, so the fix is
    a maintainer (``index follow --backfill`` does both), whatever the backfill's own words
    advised (helper-71 F4: they said to run `index backfill` again, beside a `Fix:` line naming
    `index follow --backfill`; done, that backfill did not count either); ``why``, those words,
    follow without their advice. Not for clashes: those items must be moved first."""
    backfill = evidence.backfill
    if stream is None or backfill is None or backfill.clashes:
        return None
    if any(mark.stream == stream for mark in evidence.shards.values()):
        return None
    own = re.split(r"[:;] run `", why, maxsplit=1)[0]  # (its advice: superseded by this one)
    # (helper-99 F4: for the seconds a running follower takes to find the stream turned off and
    # on, this named the command that ran: a newcomer might start a second one)
    moved = f"; {MOVED}" if evidence.shards and evidence.maintainer == "follow" else ""
    return (
        f"{NO_MAINTAINER}, so no backfill can count: "
        "run `index follow --backfill`, which keeps the markers and backfills once the margin "
        "has passed (with the Lambda handler as the maintainer, `index backfill "
        f"--wait-for-maintainer` once it runs{moved}); the backfill recorded: {own}"
    )


def shown_markers(text: str | None) -> str:
    """``state.markers_key`` as a reader would say it."""
    try:
        attribute, sort_key = json.loads(text or "")
        value = next(iter(json.loads(sort_key).values()))
    except (ValueError, TypeError, StopIteration, AttributeError):
        return "not recorded"
    return f"attribute {attribute!r} at sort key {value!r}"


def precheck(
    evidence: Evidence | None, stream: str | None, margin: float, markers: str | None = None
) -> Decline | None:
    """Why ``evidence`` proves nothing whatever the stream holds (no backfill under the stream
    as it is now, or clashes recorded), if so: the part of :func:`replay_window` that needs no
    shard list."""
    if evidence is None:
        evidence = Evidence("", "")
    if evidence.corrupt is not None:
        return Decline(f"the index's record in the state table is broken: {evidence.corrupt}")
    evidence = basis(evidence, stream, margin)
    _, why = backfill_reason(evidence, stream, margin)
    if why is not None:
        return Decline(_unmaintained(evidence, stream, why) or why)
    assert evidence.backfill is not None
    if markers is not None and evidence.backfill.markers != markers:
        return Decline(
            "the backfill knew markers by another attribute or sort key than this listing "
            f"({shown_markers(evidence.backfill.markers)}, not {shown_markers(markers)}): "
            "list with the index's own (marker_sort_key=, marker_attribute=; to change "
            "them, `index backfill --force` with the new ones)"
        )
    if evidence.clashes:
        return Decline(
            f"a maintainer found data at the marker's key of collection(s) "
            f"{_keys(list(evidence.clashes))}: move those items, then run `index repair`"
        )
    assert stream is not None
    saved = {s: [t for _, t in m.marks] for s, m in evidence.shards.items() if m.stream == stream}
    out_of_order = trigger_decline(
        stream,
        saved,
        evidence.triggers,
        evidence.parallelized,
        evidence.maintainer == "lambda",
        evidence.backfill.started,
        margin,
    )
    if out_of_order is not None:
        return Decline(out_of_order)
    return None
