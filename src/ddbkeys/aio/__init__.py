"""ddbkeys for asyncio: the same names and signatures as :mod:`ddbkeys`, with ``await`` and
``async for``, over an aiobotocore client (``pip install 'ddbkeys[async]'``).

The strategies and listing methods are the very flows the sync API runs (see
:mod:`ddbkeys.core`), sent by the asyncio driver (:mod:`ddbkeys.drivers.aio`).
"""

from ddbkeys.aio.ids import AtomicCounter

__all__ = ["AtomicCounter"]
