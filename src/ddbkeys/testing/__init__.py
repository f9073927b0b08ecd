"""Test helpers shipped with ddbkeys: a fault-injecting proxy and throwaway tables.

The pytest fixtures live in :mod:`ddbkeys.testing.plugin`, which pytest loads on its own.
"""

from ddbkeys.testing.proxy import Fault, FaultPlan, FaultProxy
from ddbkeys.testing.tables import TableFactory

__all__ = ["Fault", "FaultPlan", "FaultProxy", "TableFactory"]
