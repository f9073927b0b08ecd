"""Ever-increasing numeric ids: one module per strategy, behind one shape.

=====================  ==============  ==============  ==============  ==========================
strategy               unique          increasing      gapless         cost per id (service)
=====================  ==============  ==============  ==============  ==========================
AtomicCounter          yes             yes             no              1 WCU (plus your own put)
BlockAllocator         yes             per object      no              1 WCU per block
CollectionSequence     per collection  per collection  per collection  0-1 RCU + 1 WCU (2 batched)
GaplessSequence        yes             yes             yes             about 2-4 WCU, item included
=====================  ==============  ==============  ==============  ==========================

"yes": across processes; "increasing": an id returned before another call began is smaller
(real-time order); "per object": within one allocator. The promises are written once, in one
table: this table and the docs pages are tested against it, and
``ddbkeys.testing.check_history`` checks recorded calls against it.
"""

from ddbkeys.ids._audit import AuditReport, audit_attribute, audit_collection, audit_ids
from ddbkeys.ids._base import IdStrategy
from ddbkeys.ids._blocks import BlockAllocator
from ddbkeys.ids._cancellation import Cancellation, Verdict, read_cancellation
from ddbkeys.ids._collection import CollectionSequence
from ddbkeys.ids._counter import AtomicCounter, CounterBackwardsError
from ddbkeys.ids._errors import (
    CounterStateError,
    GlobalTableError,
    ItemExistsError,
    ItemKeyClashError,
    NewCounterAttributeWarning,
    SequenceExhaustedError,
)
from ddbkeys.ids._gapless import GaplessSequence

__all__ = [
    "AtomicCounter",
    "AuditReport",
    "BlockAllocator",
    "Cancellation",
    "CollectionSequence",
    "CounterBackwardsError",
    "CounterStateError",
    "GaplessSequence",
    "GlobalTableError",
    "IdStrategy",
    "ItemExistsError",
    "ItemKeyClashError",
    "NewCounterAttributeWarning",
    "SequenceExhaustedError",
    "Verdict",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "read_cancellation",
]
