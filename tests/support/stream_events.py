"""A table's stream read as Lambda's trigger would read it: each shard from TRIM_HORIZON, page
after page from where it was left, the records in the JSON shape of Lambda's events; and the
handler invoked as Lambda invokes it (a context, and its trigger to read)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from ddbkeys.partition_keys._streams.streams import streams_client_for
from ddbkeys.partition_keys.aws_lambda import StreamHandler


def lambda_json(value: Any) -> Any:
    """A value of a GetRecords answer as Lambda's event JSON carries it (numbers for times,
    base64 for binary)."""
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes(v)).decode()
            if k == "B" and isinstance(v, (bytes, bytearray))
            else lambda_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [lambda_json(v) for v in value]
    if hasattr(value, "timestamp"):
        return value.timestamp()
    return value


class ShardReader:
    """Reads the shards of the stream ``arn``, each from where it was last read."""

    def __init__(self, client: Any, arn: str) -> None:
        self.arn = arn
        self.streams = streams_client_for(client)
        self.iterators: dict[str, str] = {}

    def shards(self) -> list[str]:
        described = self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]
        return [str(shard["ShardId"]) for shard in described["Shards"]]

    def page(self, shard: str, limit: int = 1000) -> tuple[list[dict[str, Any]], bool]:
        """The next records of ``shard`` (as event records), and whether more may follow."""
        if shard not in self.iterators:
            self.iterators[shard] = self.streams.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
        if not self.iterators[shard]:
            return [], False  # read to the end of a closed shard
        answer = self.streams.get_records(ShardIterator=self.iterators[shard], Limit=limit)
        following = answer.get("NextShardIterator")
        self.iterators[shard] = following or ""
        records = [dict(lambda_json(r), eventSourceARN=self.arn) for r in answer["Records"]]
        return records, bool(following)


#: The handler's function as Lambda's context names it (invoked through an alias: qualified).
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:ddbkeys-marker-handler:live"


class FakeLambda:
    """Lambda's ``list_event_source_mappings`` for one trigger (``stream``, ``FUNCTION``,
    ``factor``). DynamoDB Local has no Lambda service, so the handler's Lambda client is this
    object; its DynamoDB requests (the table, the state table) still go to DynamoDB Local.
    ``requests`` are the requests it was sent."""

    def __init__(self, stream: str, factor: int = 1) -> None:
        self.stream = stream
        self.factor = factor
        self.requests: list[dict[str, Any]] = []

    def list_event_source_mappings(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if request.get("EventSourceArn") != self.stream or request.get("FunctionName") != FUNCTION:
            return {"EventSourceMappings": []}
        mapping = {
            "UUID": "e1a8c2d4-0000-4000-8000-000000000001",
            "EventSourceArn": self.stream,
            "FunctionArn": FUNCTION,
            "ParallelizationFactor": self.factor,
            "State": "Enabled",
        }
        return {"EventSourceMappings": [mapping]}


class Context:
    """What the handler reads of Lambda's context object."""

    invoked_function_arn = FUNCTION


class InvokedHandler(StreamHandler):
    """The handler as Lambda invokes it through its trigger: with a context naming
    ``FUNCTION``, and ``lambda_service`` (a :class:`FakeLambda`) as its Lambda client."""

    def __init__(self, client: Any, stream: str, *, factor: int = 1, **settings: Any) -> None:
        self.lambda_service = FakeLambda(stream, factor)
        super().__init__(client, lambda_client=lambda: self.lambda_service, **settings)

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        return super().handle(event, context or Context())
