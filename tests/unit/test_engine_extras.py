"""The engines are optional extras: without its engine, ``import ddbkeys.engines.<engine>``
says in one line what to install (and the rest of ddbkeys does not need it)."""

from __future__ import annotations

import importlib
import sys

import pytest

from ddbkeys._errors import ConfigurationError


@pytest.mark.parametrize(
    ("engine", "hidden", "needs"),
    [("spark", ["pyspark"], "PySpark"), ("dask", ["dask", "dask.bag"], "Dask")],
)
def test_without_its_engine_the_import_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, engine: str, hidden: list[str], needs: str
) -> None:
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, f"ddbkeys.engines.{engine}", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        importlib.import_module(f"ddbkeys.engines.{engine}")
    message = str(caught.value)
    assert message.startswith(f"ddbkeys.engines.{engine} needs {needs} (")
    assert message.endswith(f"pip install 'ddbkeys[{engine}]'.") and "\n" not in message
    assert isinstance(caught.value.__cause__, ImportError)
    importlib.import_module("ddbkeys.partition_keys")  # (the listing itself needs no engine)
