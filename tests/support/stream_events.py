"""A table's stream read as Lambda's trigger would read it: each shard from TRIM_HORIZON, page
after page from where it was left, the records in the JSON shape of Lambda's events."""

from __future__ import annotations

import base64
from typing import Any

from ddbkeys.partition_keys.follow import streams_client_for


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
