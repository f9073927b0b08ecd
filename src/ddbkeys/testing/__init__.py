"""Test helpers shipped with ddbkeys: a fault-injecting proxy (:class:`FaultProxy`, told what
to do by :class:`Faults`), throwaway tables (:class:`TableFactory`), an export of a table in
AWS's layout for a DynamoDB that has no exports (:func:`write_export`), and a recorder of id
calls (:class:`History`) whose histories :func:`check_history` checks against the strategy's
promise (unique; increasing in real time; gapless, as far as each promise reaches).

Installing ddbkeys also gives pytest three fixtures, loaded on their own (the ``pytest11``
entry point ``ddbkeys``; ``-p no:ddbkeys`` leaves them out): ``ddb_endpoint_url`` and
``ddb_client`` (for the session: an embedded DynamoDB Local, or the endpoint in
``DDBKEYS_TEST_ENDPOINT_URL`` when set) and ``ddb_table_factory`` (tables with unique names,
deleted when the test ends).
"""

from ddbkeys.testing._export import write_export
from ddbkeys.testing._history import (
    History,
    HistoryReport,
    HistoryViolation,
    Operation,
    check_history,
)
from ddbkeys.testing._proxy import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

__all__ = [
    "Fault",
    "FaultProxy",
    "Faults",
    "History",
    "HistoryReport",
    "HistoryViolation",
    "Operation",
    "TableFactory",
    "check_history",
    "write_export",
]
