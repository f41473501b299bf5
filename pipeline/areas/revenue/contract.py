"""What a receipt of an answer must be to enter its partition, and what it may carry
besides: the checks that reject a partition by name, and the fields the spec does not
name (kept as JSON, counted)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import msgspec
from pydantic import BaseModel

from pipeline.pos_api import models
from pipeline.pos_api.timestamps import parse_pos_datetime, to_local_wall_clock


class Rejected(Exception):
    """A receipt that rejects its partition: another location's, two versions of one
    transaction in one answer, a stamp that is no date or lies far outside the window."""


NEIGHBOUR_SLACK = timedelta(hours=1)
"""How far beyond the requested window a served stamp may lie and still count as a
neighbour of the margin: a wall clock in the repeated autumn hour reads an hour early."""


def _aliases(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(f.alias or name for name, f in model.model_fields.items())


KNOWN_FIELDS = {
    "receipts": _aliases(models.Receipt),
    "receipt_items": _aliases(models.Item),
    "item_side_dishes": _aliases(models.Item),  # a side dish reuses the Item shape (2.1)
    "payments": _aliases(models.Payment),
}
"""The wire fields of each table's object (from the spec's models): any other field of
the object is kept as JSON in the table's ``extra_fields`` and counted."""
_EXTRA_ENCODER = msgspec.json.Encoder()


def check_neighbour(receipt: dict, stamp, tz: ZoneInfo,
                    window: tuple[datetime, datetime] | None) -> None:
    """A receipt of another business day: it must be a real stamp from the window."""
    txn = receipt.get("transactionId")
    try:
        local = to_local_wall_clock(parse_pos_datetime(stamp), tz)
    except ValueError:
        raise Rejected(f"receipt {txn}: field dateTime: {stamp!r} is not a real date and "
                       "time; the partition is rejected") from None
    if window is None:
        return
    after, before = window
    if not after - NEIGHBOUR_SLACK <= local.replace(tzinfo=tz) <= before + NEIGHBOUR_SLACK:
        raise Rejected(f"receipt {txn}: field dateTime: {stamp} lies outside the requested "
                       f"window {after.isoformat()} .. {before.isoformat()}; the partition "
                       "is rejected")


def difference(first: dict, second: dict) -> str:
    """Where two versions of a receipt differ, for the message: the first field."""
    for key in sorted(first.keys() | second.keys()):
        if first.get(key) != second.get(key):
            return f" (field {key} differs)"
    return ""


def extra_fields(objects: list[dict], table: str, counts: Counter) -> list[str | None]:
    """Each object's fields the spec does not name, as a JSON object (None where it has
    none), counted per ``table.field``."""
    known = KNOWN_FIELDS[table]
    out: list[str | None] = []
    keep = out.append
    for obj in objects:
        if obj.keys() <= known:
            keep(None)
            continue
        extra = {k: v for k, v in obj.items() if k not in known}
        for key in extra:
            counts[f"{table}.{key}"] += 1
        keep(_EXTRA_ENCODER.encode(extra).decode())
    return out
