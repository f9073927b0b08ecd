"""boto3's resource layer on a test endpoint, as a boto3 user builds it."""

from __future__ import annotations

from typing import Any

import boto3


def resource(endpoint: str) -> Any:
    """A DynamoDB service resource on ``endpoint`` (dummy credentials, us-east-1)."""
    return boto3.resource(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
