"""The main job, as a library: mint ids with every strategy from concurrent writers while a fault
proxy loses responses, then list a sample table's distinct partition keys with every method.

``ddbkeys demo`` is a thin shell over :func:`run_demo`; the tests call the same functions.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ddbkeys._connect import is_loopback, make_client
from ddbkeys._demo_ids import IdsResult, Sizes, run_ids
from ddbkeys._demo_keys import (
    KeysResult,
    MaintainedResult,
    Progress,
    run_maintained,
    run_partition_keys,
)
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    pass

__all__ = ["DemoReport", "run_demo"]


@dataclass
class DemoReport:
    endpoint_url: str
    faults: bool
    sizes: Sizes = field(default_factory=Sizes)
    ids: list[IdsResult] = field(default_factory=list)
    keys: list[KeysResult] = field(default_factory=list)
    table_items: int = 0
    index_setup: dict[str, float] = field(default_factory=dict)
    maintained: MaintainedResult | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            all(r.kept for r in self.ids if r.strategy != "naive")
            and all(r.correct for r in self.keys)
            and (self.maintained is None or self.maintained.ok)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint_url": self.endpoint_url,
            "faults": self.faults,
            "sizes": asdict(self.sizes),
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "ids": [r.as_dict() for r in self.ids],
            "partition_keys": {
                "table_items": self.table_items,
                "index_setup": self.index_setup,
                "methods": [r.as_dict() for r in self.keys],
                "maintained": self.maintained.as_dict() if self.maintained else None,
            },
        }


# --- partition keys -----------------------------------------------------------------------


def run_demo(
    endpoint_url: str,
    *,
    quick: bool = False,
    sizes: Sizes | None = None,
    progress: Progress | None = None,
    region: str | None = None,
    profile: str | None = None,
) -> DemoReport:
    """Both halves of the demo against ``endpoint_url``, in tables it creates and deletes.

    The fault proxy sits in front of loopback endpoints only (it rewrites the Host header, so it
    cannot carry a SigV4-signed request to AWS); elsewhere the ids run without injected faults.
    """
    sizes = sizes or (Sizes.quick() if quick else Sizes())
    began = time.perf_counter()
    client = make_client(endpoint_url, region, profile)
    factory = TableFactory(client, prefix="ddbkeys-demo")
    faults = is_loopback(endpoint_url)
    report = DemoReport(endpoint_url=endpoint_url, faults=faults, sizes=sizes)
    try:
        report.ids = run_ids(
            endpoint_url,
            factory,
            sizes=sizes,
            faults=faults,
            progress=progress,
            region=region,
            profile=profile,
        )
        table, state_table, report.table_items, report.index_setup, report.keys = (
            run_partition_keys(client, factory, keys=sizes.keys, progress=progress)
        )
        report.maintained = run_maintained(
            client, table, state_table, keys=sizes.keys, changes=sizes.changes, progress=progress
        )
    finally:
        factory.delete_all()
    report.seconds = time.perf_counter() - began
    return report
