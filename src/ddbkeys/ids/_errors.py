"""The errors of the id strategies that callers branch on. All are :class:`DdbKeysError`."""

from __future__ import annotations

from ddbkeys._errors import ConfigurationError, DdbKeysError

__all__ = [
    "CounterStateError",
    "GlobalTableError",
    "ItemExistsError",
    "ItemKeyClashError",
    "NewCounterAttributeWarning",
    "SequenceExhaustedError",
]


class ItemExistsError(DdbKeysError):
    """An item with the key of the item to write already exists, and this put did not write it.
    No id was used up. ``key`` is that key, as DynamoDB holds it (typed)."""

    def __init__(
        self,
        message: str,
        *,
        key: dict[str, object] | None = None,
        table: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, table=table, cause=cause)
        self.key = key


class ItemKeyClashError(ConfigurationError):
    """The items of one call cannot all be written: two of them share a key, or one has the key
    of the counter item itself. Nothing was sent."""


class SequenceExhaustedError(DdbKeysError):
    """The next id would pass the configured maximum (or no longer fits its key)."""


class CounterStateError(DdbKeysError):
    """A counter item holds something that is not a valid counter (a string, a fraction, a
    negative number, a number past the maximum, a list...). Nothing was moved."""


class GlobalTableError(ConfigurationError):
    """The table has replicas in other regions, where last-writer-wins breaks the strategy."""


class NewCounterAttributeWarning(UserWarning):
    """A counter began in an attribute its item did not hold, though the item was a counter
    already: a second counter on one item (``counter_attribute=`` of another sequence), or a
    misspelt attribute, whose ids start again from the first while the item's counter goes
    on elsewhere. Warned once, as the attribute is made; the ids given are the new counter's."""
