"""Test helpers shipped with ddbkeys: a fault-injecting proxy and throwaway tables.

The pytest fixtures live in :mod:`ddbkeys.testing._plugin`, which pytest loads on its own.
"""

from ddbkeys.testing._proxy import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

__all__ = ["Fault", "FaultProxy", "Faults", "TableFactory"]
