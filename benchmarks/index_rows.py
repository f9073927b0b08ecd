"""benchmarks/partition_keys.py's rows once the marker index is built: the backfill against a plain
Scan and skip-pages (issue 33's target), and the changes a maintainer held behind must replay."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from measure import Row, plain_scan
from shapes import Shape, sort_value, typed

from ddbkeys._capacity import Usage
from ddbkeys._demo_keys import DEMO_MARGIN
from ddbkeys.partition_keys import MarkerIndex

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The backfill's target (issue 33): its read units at most this times the cheaper of a plain
#: Scan and skip-pages of the table as it is when it begins, plus ``PER_RECHECK`` a collection
#: it re-checked; a write unit per marker written or removed on the table, and one on the
#: marker index (ConsumedCapacity TOTAL counts the GSI's write too), and its record's few writes.
BACKFILL_WITHIN = 1.2
PER_RECHECK = 2.0
WCU_PER_MARKER = 2.0
RECORD_WRITES = 4


@dataclass
class BackfillRow(Row):
    """The backfill's row, with what its target is measured against."""

    scan_rcu: float = 0.0
    skip_rcu: float = 0.0
    rechecked: int = 0
    wcu: float = 0.0
    markers: int = 0

    @property
    def target(self) -> float:
        return BACKFILL_WITHIN * min(self.scan_rcu, self.skip_rcu) + PER_RECHECK * self.rechecked

    def line(self) -> str:
        return (
            f"{self.rcu:.1f} RCU against a plain Scan's {self.scan_rcu:g} and skip-pages' "
            f"{self.skip_rcu:g} ({self.rcu / min(self.scan_rcu, self.skip_rcu):.2f}x the "
            f"cheaper), {self.rechecked:,} collections re-checked: target <= {self.target:.1f}; "
            f"{self.wcu:g} WCU for {self.markers:,} markers written or removed (the table's and "
            "the marker index's)"
        )

    def problems(self, shape: str) -> list[str]:
        found = []
        if self.rcu > self.target:
            found.append(
                f"{shape}: {self.method} RCU {self.rcu:g} > {BACKFILL_WITHIN} x min(scan "
                f"{self.scan_rcu:g}, skip-pages {self.skip_rcu:g}) + {PER_RECHECK:g} x "
                f"{self.rechecked} re-checked"
            )
        if self.wcu > WCU_PER_MARKER * self.markers + RECORD_WRITES:
            found.append(f"{shape}: {self.method} WCU {self.wcu:g} > {self.markers} markers")
        return found


def backfill_row(client: DynamoDBClient, table: str, state_table: str, skip: Row) -> BackfillRow:
    """``index backfill`` (``auto``: the row names the mode it ran), after a plain Scan of the
    table as it is when the backfill begins; ``skip`` is skip-pages' row of the same table."""
    _, scan = plain_scan(client, table)
    usage = Usage()
    measured = MarkerIndex(client, table, usage=usage)
    started = time.perf_counter()
    report = measured.backfill(state_table=state_table, replay_margin=DEMO_MARGIN)
    seconds = time.perf_counter() - started
    rechecked = report.rechecked if report.mode == "read" else report.written + report.present
    return BackfillRow(
        f"backfill ({report.mode})",
        usage.requests,
        usage.items,
        usage.read_units,
        seconds,
        not report.clashes and report.uncounted is None,
        scan_rcu=scan.read_units,
        skip_rcu=skip.rcu,
        rechecked=rechecked,
        wcu=usage.write_units,
        markers=report.written + report.removed,
    )


def changes_behind(client: DynamoDBClient, table: str, spec: Shape, count: int) -> int:
    """``count`` writes nobody applies: items added to collections, new collections, and
    collections emptied (each a write in the stream)."""
    rng = random.Random(11)
    keys = [key for key, _ in spec.collections]
    small = [key for key, sizes in spec.collections if len(sizes) == 1]
    done = 0
    while done < count:
        roll = rng.random()
        if roll < 0.4:
            new = f"lag#{done:05}" if spec.pk_type == "S" else f"lag#{done:05}".encode()
            client.put_item(
                TableName=table,
                Item={"pk": typed(spec.pk_type, new), "sk": sort_value(spec.sort_type, 0, rng)},
            )
        elif roll < 0.6 and small:
            emptied = client.query(
                TableName=table,
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": typed(spec.pk_type, small.pop())},
                ConsistentRead=True,
            )["Items"]
            for found in emptied:
                client.delete_item(TableName=table, Key={"pk": found["pk"], "sk": found["sk"]})
                done += 1
            continue
        else:
            client.put_item(
                TableName=table,
                Item={
                    "pk": typed(spec.pk_type, rng.choice(keys)),
                    "sk": sort_value(spec.sort_type, 10_000 + done, rng),
                },
            )
        done += 1
    return done
