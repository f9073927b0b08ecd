"""Each unit test builds no boto3 client, and starts with no table description kept by the
process (the id strategies keep them per endpoint, region and table: a fake client's answer
must not reach another test)."""

from __future__ import annotations

from collections.abc import Iterator

import botocore.session
import pytest

from ddbkeys.ids import _described as described


@pytest.fixture(autouse=True)
def _no_kept_descriptions() -> Iterator[None]:
    described.forget_all()
    yield
    described.forget_all()


@pytest.fixture(autouse=True)
def _no_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test builds no boto3 or aiobotocore client: the cores are values, driven by
    hand (tests that need a client are in tests/transport and tests/integration)."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a unit test built a botocore client")

    monkeypatch.setattr(botocore.session.Session, "create_client", refuse)
    try:
        from aiobotocore.session import AioSession  # noqa: PLC0415 (an optional extra)
    except ImportError:
        return
    monkeypatch.setattr(AioSession, "create_client", refuse)
