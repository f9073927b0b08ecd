"""What the ids commands read of a table for a note: the note ``ids put --strategy gapless``
gives as a sequence begins beside another's ids, and whether a table an audit found nothing in
holds items of yours (not ddbkeys' own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._entity import ENTITY_ATTRIBUTE

if TYPE_CHECKING:
    from ddbkeys._cli.items import Item
    from ddbkeys.ids import GaplessSequence

__all__ = ["BEGAN_LOOK", "OWN_LOOK", "holds_yours", "said_began"]


#: Items the check of a sequence begun reads at most (one Scan page, once per sequence).
BEGAN_LOOK = 50
#: Scan pages :func:`holds_yours` reads at most (of 100 items each).
OWN_LOOK = 10


def said_began(gapless: GaplessSequence, which: str, items: list[Item]) -> None:
    """A note where a sequence that began with this call finds the table's items holding its
    id attribute already (among the first ``BEGAN_LOOK`` items a Scan reads, but those just
    written and ddbkeys' own): likely ids of another sequence, which these repeat (helper-87
    F4: ``--sequence users`` beside ``user``, or none beside it, wrote id 1 a second time into
    the table's items with no word). Said once, as the sequence begins; nothing where the id
    is the item's key (a repeated id is refused there) or the Scan is refused (advice only)."""
    info = gapless.table_info()
    keys = [info.partition_key.name] + ([info.sort_key.name] if info.sort_key else [])
    table, attribute = gapless.table, gapless.id_attribute
    if attribute in keys:
        return
    names = {f"#k{n}": name for n, name in enumerate(keys)}
    try:
        page = gapless.client.scan(
            TableName=table,
            Limit=BEGAN_LOOK,
            FilterExpression="attribute_exists(#i) AND attribute_not_exists(#t)",
            ProjectionExpression=", ".join(names),
            ExpressionAttributeNames={**names, "#i": attribute, "#t": ENTITY_ATTRIBUTE},
        )
    except (BotoCoreError, ClientError):
        return
    written = [{name: item.get(name) for name in keys} for item in items]
    others = [item for item in page.get("Items", []) if item not in written]
    if others:
        click.echo(
            f"Note: sequence {which!r} of table {table!r} began with this call, at 1, and the "
            f"table's items hold {attribute!r} already ({len(others)} of the first "
            f"{BEGAN_LOOK} read): if they come from another sequence (a misspelt or "
            f"forgotten --sequence), these ids repeat theirs (`ddbkeys ids audit -t {table} "
            "--strict` finds duplicates).",
            err=True,
        )


def holds_yours(client: Any, table: str) -> bool:
    """Whether ``table`` holds an item that is not ddbkeys' own (a counter item, a marker:
    ``ddbkeys_type``), among the first ``OWN_LOOK`` Scan pages of 100 items (keys only); True
    where it cannot tell (a refusal, or only own items that far): an audit's --strict fails
    where the items it read hold no value of the attribute (a typo), not where the table holds
    only ddbkeys' counters, as it does before its first item."""
    request: dict[str, Any] = {
        "TableName": table,
        "Limit": 100,
        "Select": "COUNT",
        "FilterExpression": "attribute_not_exists(#t)",
        "ExpressionAttributeNames": {"#t": ENTITY_ATTRIBUTE},
    }
    try:
        for _ in range(OWN_LOOK):
            page = client.scan(**request)
            if page.get("Count", 0):
                return True
            if "LastEvaluatedKey" not in page:
                return False
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except (BotoCoreError, ClientError):
        return True
    return True
