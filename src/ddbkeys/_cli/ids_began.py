"""The note ``ids put --strategy gapless`` gives as a sequence begins beside another's ids."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._entity import ENTITY_ATTRIBUTE

if TYPE_CHECKING:
    from ddbkeys._cli.items import Item
    from ddbkeys.ids import GaplessSequence

__all__ = ["BEGAN_LOOK", "said_began"]


#: Items the check of a sequence begun reads at most (one Scan page, once per sequence).
BEGAN_LOOK = 50


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
