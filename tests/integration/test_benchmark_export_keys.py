"""benchmarks/export_keys.py at a small size: the exports it synthesizes hold the keys it says
(two items a key, each key in two files), and both of its fresh-process listings (ddbkeys'
from_export against DynamoDB Local, and the gzip + json.loads baseline) count them exactly."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from export_keys import FILES, measure, synthesize  # noqa: E402

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing import TableFactory


@pytest.mark.parametrize("fmt", ["DYNAMODB_JSON", "ION"])
def test_the_benchmark_counts_its_exports(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    fmt: Literal["DYNAMODB_JSON", "ION"],
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    arn = ddb_client.describe_table(TableName=table)["Table"]["TableArn"]
    folder = synthesize(tmp_path, arn, 500, fmt)
    entries = [json.loads(x) for x in Path(folder, "manifest-files.json").read_text().splitlines()]
    assert len(entries) == FILES and sum(e["itemCount"] for e in entries) == 1000
    bucket = Path(folder).parents[2]  # (the bucket's root: <prefix>/AWSDynamoDB/<id>/ below)
    if fmt == "DYNAMODB_JSON":
        per_file = 0
        for entry in entries:
            lines = gzip.decompress((bucket / entry["dataFileS3Key"]).read_bytes()).split(b"\n")
            per_file += len({json.loads(x)["Item"]["pk"]["S"] for x in lines if x})
        assert per_file == 1000  # (each key's two items in two files)
        baseline = measure("baseline", ddb_endpoint_url, table, folder)
        assert baseline.keys == 500 and baseline.peak_mib > 0
    run = measure("ddbkeys", ddb_endpoint_url, table, folder)
    assert run.keys == 500 and run.peak_mib > 0 and run.seconds > 0
