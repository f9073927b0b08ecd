"""How an old name of a setting is read (``renamed()``), without a client: the old name alone
still works with a DeprecationWarning that points at the caller's line, the new name alone says
nothing, and both at once are a ConfigurationError. The classes and functions that take old
names, as a caller meets them: tests/integration/test_renamed.py."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from ddbkeys.errors import ConfigurationError
from ddbkeys.renames import renamed

KEY = {"pk": "c", "sk": 0}


def counter_key(key: Any = None, counter_key: Any = None) -> Any:
    """A function that takes ``counter_key=`` and its old name ``key=``, as the classes do."""
    return renamed("key", "counter_key", key, counter_key, None)


def test_the_old_name_still_works_with_a_warning_at_the_callers_line() -> None:
    said = "key= is deprecated: pass counter_key= instead"
    with pytest.warns(DeprecationWarning, match=said) as w:
        assert counter_key(key=KEY) == KEY
    assert w[0].filename == __file__  # the line that called the function, not renamed's
    assert "the old name goes in the next release" in str(w[0].message)


def test_the_new_name_or_none_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert counter_key(counter_key=KEY) == KEY
        assert counter_key() is None
        assert renamed("attribute", "counter_attribute", None, "n", "last_id") == "n"


def test_both_names_at_once_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="key= is the old name of counter_key=: pass only"):
        counter_key(key=KEY, counter_key=KEY)
    with pytest.raises(ConfigurationError, match="attribute= is the old name of counter_attribute"):
        renamed("attribute", "counter_attribute", "a", "b", "last_id")
    # The new name at its default is not given: the old one is read, with its warning.
    with pytest.warns(DeprecationWarning, match="attribute= is deprecated"):
        assert renamed("attribute", "counter_attribute", "a", "last_id", "last_id") == "a"
