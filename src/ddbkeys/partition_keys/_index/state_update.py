"""The UpdateItem that writes a marker index's record in the state table
(:mod:`ddbkeys.partition_keys._index.state`): plain values as DynamoDB's types. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import UpdateItemInputTypeDef

__all__ = ["counted_request", "update_request"]


def update_request(
    name: str, key: dict[str, Any], values: dict[str, Any], remove: tuple[str, ...] = ()
) -> UpdateItemInputTypeDef:
    """The UpdateItem that sets ``values`` and removes ``remove`` on the record ``key``."""
    names: dict[str, str] = {}
    typed: dict[str, Any] = {}
    sets: list[str] = []
    for n, (attribute, value) in enumerate(sorted(values.items())):
        names[f"#a{n}"] = attribute
        typed[f":v{n}"] = _typed(value)
        sets.append(f"#a{n} = :v{n}")
    expression = "SET " + ", ".join(sets) if sets else ""
    if remove:
        for n, attribute in enumerate(remove):
            names[f"#r{n}"] = attribute
        expression += " REMOVE " + ", ".join(f"#r{n}" for n in range(len(remove)))
    request: UpdateItemInputTypeDef = {
        "TableName": name,
        "Key": key,
        "UpdateExpression": expression.strip(),
        "ExpressionAttributeNames": names,
    }
    if typed:
        request["ExpressionAttributeValues"] = typed
    return request


def counted_request(
    name: str, key: dict[str, Any], values: dict[str, Any], counter: str, seen: int | None
) -> UpdateItemInputTypeDef:
    """:func:`update_request` that also adds one to the number ``counter`` and answers with
    it, only where it is at least ``seen`` (None: anywhere)."""
    request: Any = update_request(name, key, values)
    request["UpdateExpression"] = f"{request['UpdateExpression']} ADD #count :one".strip()
    request["ExpressionAttributeNames"]["#count"] = counter
    request.setdefault("ExpressionAttributeValues", {})[":one"] = {"N": "1"}
    request["ReturnValues"] = "UPDATED_NEW"
    if seen is not None:
        request["ConditionExpression"] = "#count >= :seen"
        request["ExpressionAttributeValues"][":seen"] = {"N": str(seen)}
    return request  # type: ignore[no-any-return]


def _typed(value: Any) -> dict[str, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"N": repr(float(value))}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": {str(k): {"S": str(v)} for k, v in value.items()}}
    if isinstance(value, (list, tuple, set)):
        return {"SS": sorted(str(v) for v in value)} if value else {"NULL": True}
    raise TypeError(f"cannot store {value!r} in the state table")
