"""``index create``: add the marker index (:func:`create_flow`), and wait for its status
(:func:`until_status`, which ``index drop`` waits with too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._core.steps import Flow, Pause, update_table
from ddbkeys._errors import DdbKeysError
from ddbkeys._retry import Deadline
from ddbkeys._translate import maybe_own, unanswered
from ddbkeys.partition_keys._index.marker_core import send
from ddbkeys.partition_keys._index.markers import check_index, create_request, index_status

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = ["create_flow", "until_status"]


def create_flow(core: MarkerCore, wait: bool, timeout: float) -> Flow[bool]:
    """Add the KEYS_ONLY index on the marker attribute (nothing when it exists); with
    ``wait``, until it is ACTIVE (``timeout`` seconds at most). True where this call's
    UpdateTable added it, also where its answer was lost and the retry found the index
    (taken for this call's own: another's create at that moment cannot be told apart);
    False where it was there, or another's made it before this call sent a request."""
    deadline = core.begin()
    raw = yield from core.describe(deadline)
    info = yield from core.table_info(deadline)
    if index_status(info, core.name) == "DELETING":  # (`index drop` just before: helper-100)
        yield from until_status(
            core,
            lambda status: status != "DELETING",
            timeout,
            f"Index {core.name!r} of table {core.table!r} is still DELETING after "
            f"{timeout:.0f} s (`index drop` before?): create it once it is gone.",
        )
        deadline = core.begin()
        raw = yield from core.describe(deadline)
        info = yield from core.table_info(deadline)
    created = False
    if index_status(info, core.name) is not None:
        check_index(info, core.name, core.attribute, active=False)
        if not wait or index_status(info, core.name) == "ACTIVE":
            return False
    else:
        request = create_request(
            raw, core.table, core.name, core.attribute, info.partition_key.type
        )
        lost: list[bool] = []  # (a try whose answer never came: it may have added it)

        def update(_: int) -> Flow[Any]:
            try:
                return (yield from send(update_table(request)))
            except BotoCoreError as exc:
                lost.append(unanswered(exc))
                raise

        try:
            yield from core.attempts(update, f"UpdateTable (adding index {core.name!r})", deadline)
            created = True
        except DdbKeysError as exc:  # (another's create, or an answer lost and tried again)
            yield from core.describe(deadline)
            if index_status((yield from core.table_info(deadline)), core.name) is None:
                raise
            # (a try before the one refused, ours or the client's own, went unanswered: it
            # added the index; a helper's `index create` said "there already: nothing
            # created" so)
            cause = exc.cause
            created = maybe_own(cause, lost) if isinstance(cause, ClientError) else any(lost)
    if not wait:
        yield from core.describe()
        return created
    yield from until_status(
        core,
        lambda status: status == "ACTIVE",
        timeout,
        f"Index {core.name!r} of table {core.table!r} is not ACTIVE after {timeout:.0f} s; "
        "it may still be building.",
    )
    return created


def until_status(
    core: MarkerCore, wanted: Callable[[str | None], bool], timeout: float, late: str
) -> Flow[None]:
    """Describe the table until the index's status (None: not there) is ``wanted``: at
    most ``timeout`` seconds, then a :class:`~ddbkeys.DdbKeysError` saying ``late``."""
    ends = Deadline(timeout, clock=core.retry.clock)
    pause = 0.1  # DynamoDB Local is ready at once; the service takes minutes
    while True:
        yield from core.describe()
        if wanted(index_status((yield from core.table_info()), core.name)):
            return
        if not ends.allows(pause):
            raise DdbKeysError(late, table=core.table)
        yield Pause(pause, core.retry.sleep)
        pause = min(pause * 1.5, 5.0)
