"""A client for ddbkeys' drivers that answers from a :class:`~tests.support.proof_world.World`:
the requests the marker index's flows, the follower, the Lambda handler and the proven
listing send (DescribeTable, Query, GetItem, PutItem, DeleteItem, Scan, UpdateItem on the state
table, DescribeStream, GetShardIterator, GetRecords), with DynamoDB's errors as ClientErrors.

It answers I/O only: what each request means is DynamoDB's (conditions, pages, iterators,
trimmed records), never a decision of ddbkeys'. A request it does not know fails the test."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from ddbkeys.partition_keys._index.maintain import UnsettledError
from tests.support.proof_world import (
    ATTR,
    INDEX,
    ITERATOR_LIFE,
    MARKER_SK,
    PK,
    SK,
    STATE,
    TABLE,
    Item,
    ItemKey,
    Record,
    Shard,
    World,
    key_of,
)

#: The requests the model answers (each one counts for :meth:`ModelClient.between`).
_OPERATIONS = frozenset(
    {
        "describe_table",
        "create_table",
        "get_item",
        "query",
        "put_item",
        "delete_item",
        "scan",
        "update_item",
        "describe_stream",
        "get_shard_iterator",
        "get_records",
    }
)


def refuse(code: str, operation: str, **extra: Any) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": code}, **extra}
    return ClientError(response, operation)


def _names(params: dict[str, Any]) -> dict[str, str]:
    return dict(params.get("ExpressionAttributeNames", {}))


def _project(item: Item, params: dict[str, Any]) -> Item:
    expression = params.get("ProjectionExpression")
    if expression is None:
        return dict(item)
    names = _names(params)
    wanted = [names.get(p.strip(), p.strip()) for p in expression.split(",")]
    return {a: item[a] for a in wanted if a in item}


def _sort_value(value: dict[str, Any]) -> Decimal:
    return Decimal(value["N"])


class ModelClient:
    """Answers requests from ``world`` (its methods are boto3's, keyword arguments only)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._iterators: dict[str, tuple[str, str, int, float, int]] = {}
        #: (requests left, what happens then): another actor between two of ours.
        self._between: list[tuple[int, Callable[[], object]]] = []
        #: Hot collections: right after each marker write in one (this many more), the
        #: application empties it if it holds data, or puts an item in it if not.
        self.hot: dict[str, int] = {}

    def between(self, requests: int, action: Callable[[], object]) -> None:
        """Do ``action`` once, right after the next ``requests`` requests are answered."""
        self._between.append((requests, action))

    def clear_between(self) -> None:
        self._between = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """The operation ``name`` (a boto3 method name), counted for :meth:`between`."""
        if name not in _OPERATIONS:
            raise AttributeError(name)
        operation = getattr(self, "_" + name)

        def answered(**params: Any) -> Any:
            try:
                return operation(**params)
            finally:
                self._answered()

        return answered

    def _answered(self) -> None:
        due = [action for left, action in self._between if left <= 1]
        self._between = [(left - 1, action) for left, action in self._between if left > 1]
        for action in due:
            action()

    # --- tables ---------------------------------------------------------------------------------

    def _describe_table(self, **params: Any) -> dict[str, Any]:
        if params["TableName"] == TABLE:
            return {"Table": self.world.description()}
        if params["TableName"] == STATE:
            return {
                "Table": {
                    "TableName": STATE,
                    "TableStatus": "ACTIVE",
                    "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                    "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                }
            }
        raise refuse("ResourceNotFoundException", "DescribeTable")

    def _create_table(self, **params: Any) -> dict[str, Any]:
        raise refuse("ResourceInUseException", "CreateTable")

    def _get_item(self, **params: Any) -> dict[str, Any]:
        if params["TableName"] == STATE:
            found = self.world.state.get(params["Key"]["id"]["S"])
        else:
            assert params["TableName"] == TABLE, params
            found = self._read(params, [key_of(params["Key"])]).get(key_of(params["Key"]))
        return {"Item": _project(found, params)} if found is not None else {}

    def _read(self, params: dict[str, Any], keys: Iterable[ItemKey]) -> dict[ItemKey, Item]:
        """Items ``keys`` as a read sees them: as they are (``ConsistentRead``), or as they
        may have been up to ``scan_lag`` seconds ago (an eventually consistent GetItem or
        Query, as a Scan)."""
        world = self.world
        if params.get("ConsistentRead"):
            return {k: world.table[k] for k in keys if k in world.table}
        found = {k: world.stale(k) for k in keys}
        return {k: v for k, v in found.items() if v is not None}

    def _query(self, **params: Any) -> dict[str, Any]:
        assert params["TableName"] == TABLE and "IndexName" not in params, params
        assert params["KeyConditionExpression"] == "#pk = :pk", params
        pk = params["ExpressionAttributeValues"][":pk"]["S"]
        if pk in self.world.failing:
            raise refuse("AccessDeniedException", "Query")
        if pk in self.world.unsettled and "#v" in _names(params):  # a reconciliation's read
            raise UnsettledError(
                f"(the model: the reconciliation of {pk!r} gives up)",
                table=TABLE,
                partition_key={"S": pk},
            )
        keys = [k for k in self.world.history if k[0] == pk]  # (every write is in it)
        items = sorted(self._read(params, keys).items())  # a collection, by sort key
        start = params.get("ExclusiveStartKey")
        if start is not None:
            after = _sort_value(start[SK])
            items = [(k, v) for k, v in items if k[1] > after]
        limit = int(params.get("Limit", 1000))
        page = items[:limit]
        answer: dict[str, Any] = {
            "Items": [_project(v, params) for _, v in page],
            "Count": len(page),
            "ScannedCount": len(page),
        }
        if len(page) == limit and page:  # DynamoDB stops at the Limit, more or not
            answer["LastEvaluatedKey"] = {PK: page[-1][1][PK], SK: page[-1][1][SK]}
        return answer

    def _put_item(self, **params: Any) -> dict[str, Any]:
        assert params["TableName"] == TABLE, params
        item = params["Item"]
        key = key_of(item)
        condition = params.get("ConditionExpression")
        old = self.world.table.get(key)
        if condition is not None:
            assert condition == "attribute_not_exists(#pk)", condition
            if old is not None:
                extra = (
                    {"Item": dict(old)} if params.get("ReturnValuesOnConditionCheckFailure") else {}
                )
                raise refuse("ConditionalCheckFailedException", "PutItem", **extra)
        self.world.write(key, dict(item))
        self._flip(key)
        return {}

    def _delete_item(self, **params: Any) -> dict[str, Any]:
        assert params["TableName"] == TABLE, params
        key = key_of(params["Key"])
        old = self.world.table.get(key)
        if not _holds(params.get("ConditionExpression"), params, old):
            raise refuse("ConditionalCheckFailedException", "DeleteItem")
        self.world.write(key, None)
        self._flip(key)
        return {}

    def _flip(self, key: tuple[str, Decimal]) -> None:
        """After a marker write in a hot collection: the application changes it back."""
        pk = key[0]
        if key[1] != MARKER_SK or self.hot.get(pk, 0) <= 0:
            return
        self.hot[pk] -= 1
        data = [k for k, v in self.world.table.items() if k[0] == pk and k[1] != MARKER_SK]
        if data:
            for k in data:
                self.world.write(k, None)
        else:
            self.world.write((pk, Decimal(1)), {PK: {"S": pk}, SK: {"N": "1"}, "n": {"S": "h"}})

    def _scan(self, **params: Any) -> dict[str, Any]:
        assert params["TableName"] == TABLE, params
        index = params.get("IndexName") is not None
        rows: list[tuple[tuple[Any, ...], Item]]
        if index:
            assert params["IndexName"] == INDEX, params
            rows = [
                ((_segment_hash(v), v, k), {ATTR: {"S": v}, PK: {"S": k[0]}, SK: {"N": str(k[1])}})
                for k, v in self.world.index.items()
            ]
        else:
            rows = [((_segment_hash(k[0]), k[0], k), i) for k, i in self.world.scan_view().items()]
        rows.sort(key=lambda row: row[0])
        total = int(params.get("TotalSegments", 1))
        segment = int(params.get("Segment", 0))
        rows = [row for row in rows if row[0][0] % total == segment]
        start = params.get("ExclusiveStartKey")
        if start is not None:
            position = _scan_position(start, index)
            rows = [row for row in rows if row[0] > position]
        limit = min(int(params.get("Limit", 1000)), self.world.page_cap)
        page = rows[:limit]
        answer: dict[str, Any] = {
            "Items": [_project(item, params) for _, item in page],
            "Count": len(page),
            "ScannedCount": len(page),
            "ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": 0.5},
        }
        if len(page) == limit and page:
            last = page[-1][1]
            answer["LastEvaluatedKey"] = {a: last[a] for a in (ATTR, PK, SK) if a in last}
        return answer

    def _update_item(self, **params: Any) -> dict[str, Any]:
        assert params["TableName"] == STATE, params
        if len(params.get("UpdateExpression", "")) > 4096:  # (the service's limit)
            raise refuse("ValidationException", "UpdateItem")
        record = self.world.state.get(params["Key"]["id"]["S"])
        if not _state_holds(params, record):
            raise refuse("ConditionalCheckFailedException", "UpdateItem")
        record = self.world.state.setdefault(params["Key"]["id"]["S"], dict(params["Key"]))
        _update(record, params)
        if params.get("ReturnValues") == "UPDATED_NEW":
            named = {_names(params)[n] for n in re.findall(r"#\w+", params["UpdateExpression"])}
            return {"Attributes": {a: record[a] for a in named if a in record}}
        return {}

    # --- the stream ------------------------------------------------------------------------------

    def _shard(self, arn: str, shard_id: str, operation: str) -> Shard:
        stream = self.world.streams.get(arn)
        shard = stream.shards.get(shard_id) if stream is not None else None
        if shard is None:
            raise refuse("ResourceNotFoundException", operation)
        return shard

    def _describe_stream(self, **params: Any) -> dict[str, Any]:
        stream = self.world.streams.get(params["StreamArn"])
        if stream is None:
            raise refuse("ResourceNotFoundException", "DescribeStream")
        listed = sorted(stream.shards.values(), key=lambda s: s.start)
        start = params.get("ExclusiveStartShardId")
        now = self.world.now
        listed = [s for s in listed if s.hidden_until <= now or s.id == start]  # (new: not yet)
        if start is not None:
            ids = [s.id for s in listed]
            listed = listed[ids.index(start) + 1 :] if start in ids else []
        page = listed[:3]  # small pages: the flows must follow LastEvaluatedShardId
        shards = []
        for shard in page:
            described: dict[str, Any] = {
                "ShardId": shard.id,
                "SequenceNumberRange": {"StartingSequenceNumber": str(shard.start)},
            }
            if shard.parent is not None:
                described["ParentShardId"] = shard.parent
            if shard.ending is not None:
                described["SequenceNumberRange"]["EndingSequenceNumber"] = str(shard.ending)
            shards.append(described)
        description: dict[str, Any] = {
            "StreamArn": stream.arn,
            "StreamStatus": "ENABLED" if stream.enabled else "DISABLED",
            "Shards": shards,
        }
        if len(listed) > len(page):
            description["LastEvaluatedShardId"] = page[-1].id
        return {"StreamDescription": description}

    def _get_shard_iterator(self, **params: Any) -> dict[str, Any]:
        arn, shard_id = params["StreamArn"], params["ShardId"]
        shard = self._shard(arn, shard_id, "GetShardIterator")
        kind = params["ShardIteratorType"]
        if kind == "TRIM_HORIZON":
            after = max(shard.trimmed_to, shard.start - 1)
        elif kind == "LATEST":
            after = shard.last_seq()
        else:
            sequence = int(params["SequenceNumber"])
            after = sequence if kind == "AFTER_SEQUENCE_NUMBER" else sequence - 1
            if after < shard.trimmed_to:
                raise refuse("TrimmedDataAccessException", "GetShardIterator")
        return {"ShardIterator": self._iterator(arn, shard_id, after, self.world.hollow)}

    def _iterator(self, arn: str, shard_id: str, after: int, hollow: int = 0) -> str:
        token = f"it-{len(self._iterators)}"
        self._iterators[token] = (arn, shard_id, after, self.world.now, hollow)
        return token

    def _get_records(self, **params: Any) -> dict[str, Any]:
        arn, shard_id, after, issued, hollow = self._iterators[params["ShardIterator"]]
        if self.world.now - issued > ITERATOR_LIFE:
            raise refuse("ExpiredIteratorException", "GetRecords")
        shard = self._shard(arn, shard_id, "GetRecords")
        if after < shard.trimmed_to:
            raise refuse("TrimmedDataAccessException", "GetRecords")
        if hollow > 0:  # a portion of the shard without records, before the next ones
            return {
                "Records": [],
                "NextShardIterator": self._iterator(arn, shard_id, after, hollow - 1),
            }
        limit = min(int(params.get("Limit", 1000)), self.world.page_cap)
        records = [r for r in shard.records if r.seq > after][:limit]
        answer: dict[str, Any] = {
            "Records": [stream_record(arn, r, self.world.created(r.written)) for r in records]
        }
        last = records[-1].seq if records else after
        if shard.open or any(r.seq > last for r in shard.records):
            answer["NextShardIterator"] = self._iterator(arn, shard_id, last)
        return answer


def stream_record(
    arn: str, record: Record, created: float, *, event: bool = False
) -> dict[str, Any]:
    """A record as GetRecords gives it (``event``: as a Lambda event carries it)."""
    pk, sk = record.key
    return {
        "eventID": str(record.seq),
        "eventName": record.event,
        "eventSource": "aws:dynamodb",
        "eventSourceARN": arn,
        "dynamodb": {
            "ApproximateCreationDateTime": created
            if event
            else datetime.fromtimestamp(created, tz=UTC),
            "Keys": {PK: {"S": pk}, SK: {"N": str(sk)}},
            "SequenceNumber": str(record.seq),
            "StreamViewType": "KEYS_ONLY",
        },
    }


def _segment_hash(value: Any) -> int:
    return zlib.crc32(repr(value).encode()) % 1024


def _scan_position(start: dict[str, Any], index: bool) -> tuple[Any, ...]:
    """Where a Scan's ExclusiveStartKey points, in the order :meth:`ModelClient.scan` sorts."""
    pk = str(start[PK]["S"])
    sk = _sort_value(start[SK])
    if index:
        value = str(start[ATTR]["S"])
        return (_segment_hash(value), value, (pk, sk))
    return (_segment_hash(pk), pk, (pk, sk))


def _holds(condition: str | None, params: dict[str, Any], old: Item | None) -> bool:
    """Whether a DeleteItem's condition holds on ``old`` (the forms ddbkeys sends)."""
    if condition is None:
        return True
    names = _names(params)
    values = params.get("ExpressionAttributeValues", {})
    for part in condition.split(" AND "):
        if m := re.fullmatch(r"attribute_exists\((#\w+)\)", part):
            ok = old is not None and names[m[1]] in old
        elif m := re.fullmatch(r"attribute_not_exists\((#\w+)\)", part):
            ok = old is None or names[m[1]] not in old
        elif m := re.fullmatch(r"(#\w+) = (:\w+)", part):
            ok = old is not None and old.get(names[m[1]]) == values[m[2]]
        elif m := re.fullmatch(r"(#\w+) = (#\w+)", part):  # two attributes of the item
            ok = (
                old is not None
                and names[m[1]] in old
                and old.get(names[m[1]]) == old.get(names[m[2]])
            )
        else:
            raise AssertionError(f"a condition the model does not know: {condition!r}")
        if not ok:
            return False
    return True


def _state_holds(params: dict[str, Any], record: Item | None) -> bool:
    """Whether an UpdateItem's condition on a state record holds (the forms ddbkeys sends:
    ``attribute_not_exists(#a)``, ``#a = :v``, ``#a >= :n`` and ``size(#a) < :v``, joined by
    OR)."""
    condition = params.get("ConditionExpression")
    if condition is None:
        return True
    names = _names(params)
    values = params.get("ExpressionAttributeValues", {})
    record = record or {}
    for part in condition.split(" OR "):
        if m := re.fullmatch(r"attribute_not_exists\((#\w+)\)", part.strip()):
            if names[m[1]] not in record:
                return True
        elif m := re.fullmatch(r"(#\w+) = (:\w+)", part.strip()):
            if record.get(names[m[1]]) == values[m[2]]:
                return True
        elif m := re.fullmatch(r"(#\w+) >= (:\w+)", part.strip()):
            held = record.get(names[m[1]])
            if held is not None and Decimal(held["N"]) >= Decimal(values[m[2]]["N"]):
                return True
        elif m := re.fullmatch(r"size\((#\w+)\) < (:\w+)", part.strip()):
            held = record.get(names[m[1]])
            if held is not None and len(held["SS"]) < int(values[m[2]]["N"]):
                return True
        else:
            raise AssertionError(f"a condition the model does not know: {condition!r}")
    return False


def _update(record: Item, params: dict[str, Any]) -> None:
    """An UpdateItem's SET, REMOVE, ADD and DELETE (the forms the state table gets)."""
    names = _names(params)
    values = params.get("ExpressionAttributeValues", {})
    expression = params["UpdateExpression"]
    clauses = re.split(r"\b(SET|REMOVE|ADD|DELETE)\b", expression)
    for action, body in zip(clauses[1::2], clauses[2::2], strict=True):
        for part in (p.strip() for p in body.split(",") if p.strip()):
            if action == "SET":
                name, value = (s.strip() for s in part.split("="))
                record[names[name]] = values[value]
            elif action == "REMOVE":
                record.pop(names[part], None)
            elif "N" in values[part.split()[1]]:  # ADD to a number
                name, value = part.split()
                held = Decimal(record.get(names[name], {}).get("N", "0"))
                record[names[name]] = {"N": str(held + Decimal(values[value]["N"]))}
            else:
                name, value = part.split()
                old = set(record.get(names[name], {}).get("SS", []))
                given = set(values[value]["SS"])
                new = old | given if action == "ADD" else old - given
                if new:
                    record[names[name]] = {"SS": sorted(new)}
                else:
                    record.pop(names[name], None)
