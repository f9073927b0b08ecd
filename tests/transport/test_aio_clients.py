"""ddbkeys.aio given an aiobotocore client that is not open: one never entered is refused where
it is given, one closed is told after botocore's own retries. No server is needed: the one is
refused before any request, the other fails before it connects.

Not unit tests: what is checked is how ddbkeys reads the state of aiobotocore's own client
objects (an entered session, a closed one, its retry handlers), which a stand-in would only
echo. What ddbkeys concludes from what aiobotocore raises is in tests/unit/test_aio_loops.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._client import as_async_client


def aiobotocore_client(**config: Any) -> Any:
    aio_session = pytest.importorskip("aiobotocore.session")
    aio_config = pytest.importorskip("aiobotocore.config")
    return aio_session.get_session().create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=aio_config.AioConfig(**config),
    )


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_a_client_not_entered_is_refused_where_it_is_given() -> None:
    from ddbkeys.aio import make_client  # noqa: PLC0415 (imports aiobotocore)

    for given in (aiobotocore_client(), make_client()):
        with pytest.raises(ConfigurationError) as caught:
            as_async_client(given, "orders")
        assert str(caught.value).startswith(
            f"ddbkeys.aio was given a client that was not entered ({type(given).__name__}): "
            "open it with async with session.create_client('dynamodb') as client: (or async "
            "with ddbkeys.aio.make_client() as client:)"
        )


def test_a_closed_client_is_told_after_botocores_own_retries() -> None:
    # standard mode retries HTTPClientError: a closed client fails the same way each time, and
    # ddbkeys registers nothing on a client the caller passed (ddbkeys.aio.make_client()'s
    # clients make one attempt), so the error comes after the client's own attempts
    from ddbkeys.aio import AtomicCounter  # noqa: PLC0415

    async def closed() -> tuple[str, int]:
        async with aiobotocore_client(retries={"mode": "standard", "max_attempts": 2}) as c:
            pass
        sent: list[object] = []
        c.meta.events.register("before-send.dynamodb", lambda **_: sent.append(1))
        with pytest.raises(ConfigurationError) as caught:
            await AtomicCounter(c, "orders", "order").next()
        return str(caught.value), len(sent)

    message, sent = asyncio.run(closed())
    assert "is closed, or was never entered" in message
    assert 1 <= sent <= 3  # (max_attempts counts the retries)
