"""A marker put answered too late for ``index drop``'s wait (helper-101 F6), and what a
maintainer does then: the drop waits ``recheck`` + 1 s after deleting the index before its sweep,
so a put answered later than that after the look it was sent on may have landed after the sweep
(held in the network, a paused process). The maintainer describes the table again and, where the
index is gone or DELETING, takes that marker back; where it cannot, its error names the marker
and says to run ``index drop`` again (helper-102 F3, helper-103 F2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ddbkeys._attributes import show_value
from ddbkeys._core.steps import Flow
from ddbkeys._errors import DdbKeysError, amend
from ddbkeys._translate import translate_error
from ddbkeys.partition_keys._index.markers import _IndexGoneError, index_gone

if TYPE_CHECKING:
    from ddbkeys._retry import Deadline
    from ddbkeys._schema import TableInfo

__all__ = ["Maintainer", "landed_late", "late"]


class Maintainer(Protocol):
    """What of a ``MarkerCore`` the take-back uses (that module calls this one)."""

    table: str
    name: str

    def begin(self) -> Deadline: ...

    def describe(self, deadline: Deadline | None = None) -> Flow[dict[str, Any]]: ...

    def table_info(self, deadline: Deadline | None = None) -> Flow[TableInfo]: ...

    def remove_marker(
        self, key: dict[str, Any], partition_key: str, deadline: Deadline
    ) -> Flow[bool]: ...


def late(value: Mapping[str, Any]) -> str:
    """What to do of the marker of collection ``value``, written (or maybe written) after an
    ``index drop``'s sweep, where the maintainer could not take it back."""
    return (
        f"the marker of collection {show_value(value)} may be left in the table after an `index "
        "drop`: where the index was dropped, run `index drop` again to remove it."
    )


def landed_late(core: Maintainer, key: dict[str, Any], partition_key: str) -> Flow[None]:
    """After ``core``'s put of the marker at ``key``, answered late: the table described again,
    and where the index is gone or DELETING the marker taken back and that error raised; where
    either fails (an outage then), the error says the marker may be left, and how to remove it.
    Within a deadline of its own: the put's may be all but spent."""
    deadline = core.begin()
    value = key[partition_key]
    try:
        yield from core.describe(deadline)
        index_gone((yield from core.table_info(deadline)), core.name)
    except _IndexGoneError as gone:
        try:
            yield from core.remove_marker(key, partition_key, deadline)
        except Exception as exc:  # (as the driver would say it, its advice left out)
            said = str(translate_error(exc, table=core.table)).removesuffix(" Try again later.")
            amend(
                gone,
                f"The marker of collection {show_value(value)}, written after the drop's "
                f"sweep, could not be taken back ({said.rstrip('.')}): run `index drop` again "
                "to remove it.",
            )
        raise
    except Exception as exc:
        error = translate_error(exc, table=core.table)
        if isinstance(error, DdbKeysError):
            amend(error, f"Its marker was written late: {late(value)}")
        raise error from exc
