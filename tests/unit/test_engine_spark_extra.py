"""PySpark is an optional extra: without it, ``import ddbkeys.engines.spark`` says in one line
what to install (and the rest of ddbkeys does not need it)."""

from __future__ import annotations

import importlib
import sys

import pytest

from ddbkeys.errors import ConfigurationError


def test_without_pyspark_the_import_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "ddbkeys.engines.spark", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        importlib.import_module("ddbkeys.engines.spark")
    message = str(caught.value)
    assert message.startswith("ddbkeys.engines.spark needs PySpark (")
    assert message.endswith("pip install 'ddbkeys[spark]'.") and "\n" not in message
    assert isinstance(caught.value.__cause__, ImportError)
    importlib.import_module("ddbkeys.partition_keys")  # (the listing itself needs no engine)
