"""Each unit test starts with no table description kept by the process (the id strategies keep
them per endpoint, region and table: a fake client's answer must not reach another test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ddbkeys.ids import described


@pytest.fixture(autouse=True)
def _no_kept_descriptions() -> Iterator[None]:
    described.forget_all()
    yield
    described.forget_all()
