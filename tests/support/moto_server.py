"""moto's server (``moto[server]``, a dev dependency) on a free port of 127.0.0.1, for what
DynamoDB Local does not have: ExportTableToPointInTime and DescribeExport, and an S3 endpoint.

What moto 5 does with exports (read in ``moto/dynamodb/models/table_export.py`` and checked by
tests/integration/test_export_start.py): PITR off is ``PointInTimeRecoveryUnavailableException``
(``UpdateContinuousBackups`` turns it on); an export starts IN_PROGRESS and a thread completes it
at once; an export to a bucket that does not exist ends FAILED (``S3NoSuchBucket``). It does
*not* honour ClientToken (the same token twice starts two exports), its ExportArn is not AWS's
form (``...:table/<the table's ARN>/import/<32 hex>``, not ``...:table/T/export/<id>``), its
answers carry no ExportTime, StartTime, EndTime, ClientToken or ExportManifest, it answers HTTP
500 to a request without S3Prefix and to DescribeExport of an unknown ARN, and it writes one
gzip of JSON lines under ``PREFIX/AWSDynamoDB/<another uuid>/data/`` with no manifest: not AWS's
layout, so its files are no export to read (the reader's tests use documented fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3.session
import pytest

from tests.support.s3 import moto_server

__all__ = ["MOTO_REGION", "moto_client", "moto_url"]

MOTO_REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """http://127.0.0.1:PORT of a moto server started for the session (stopped after it), by
    :func:`tests.support.s3.moto_server`."""
    with moto_server() as url:
        yield url


def moto_client(url: str, service: str = "dynamodb") -> Any:
    """A boto3 client of ``service`` on moto's server (any credentials do)."""
    session: Any = boto3.session.Session()
    return session.client(
        service,
        endpoint_url=url,
        region_name=MOTO_REGION,
        aws_access_key_id="moto",
        aws_secret_access_key="moto",
    )
