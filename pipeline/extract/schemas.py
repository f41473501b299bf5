"""How a lake table is declared: its Arrow schema, money and quantities DECIMAL, never float.

Each column that comes from the wire names its path in the spec's object (``Receipt``,
``Product``, ...) in the field's metadata (``wire``: ``business.id``, ``tax.value``); the
flattening derives what it reads from these paths, and a test holds them against the
pydantic models field by field, so a field of the spec cannot be dropped on the way
silently. Columns without a
path are derived: the partition keys, the parent's ``transaction_id``, dedupe keys.
"""

from __future__ import annotations

import pyarrow as pa

MONEY = pa.decimal128(18, 4)
"""Amounts and quantities: 14 integer digits, 4 decimals (the POS sends at most 2-3)."""
PERCENT = pa.decimal128(9, 4)
LOCAL_TS = pa.timestamp("s")
UTC_TS = pa.timestamp("s", tz="UTC")
S, I32 = pa.string(), pa.int32()
WIRE = b"wire"


def wired(name: str, type_: pa.DataType, nullable: bool = True,
          wire: str | None = None) -> pa.Field:
    return pa.field(name, type_, nullable, metadata={WIRE: wire.encode()} if wire else None)


def wire_path(field: pa.Field) -> str | None:
    """The field's path in the wire object (``tax.value``), or None for a derived column."""
    meta = field.metadata or {}
    return meta[WIRE].decode() if WIRE in meta else None


SOURCES = b"sources"
SELF = "."
"""The wire path of a column that holds the list element itself (a list of strings)."""


def lake_schema(sources: tuple[str, ...], fields: list[pa.Field]) -> pa.Schema:
    """A lake table's schema: ``sources`` are the spec's paths of the objects its rows are
    made of (``Receipt.items``, ``Product.localizations``), each ``wired`` field the path
    of its value in such an object. The lineage, the row builders and the Arrow schema
    all derive from it."""
    return pa.schema(fields, metadata={SOURCES: ",".join(sources).encode()} if sources
                     else None)


def sources_of(schema: pa.Schema) -> list[str]:
    """The spec paths a table's rows are made of (none for a table the spec does not name)."""
    meta = schema.metadata or {}
    return meta[SOURCES].decode().split(",") if SOURCES in meta else []


def landing(tables: dict[str, pa.Schema]) -> dict[str, str]:
    """``Resource.path.to.field`` -> ``table.column`` of every wired column of ``tables``."""
    return {(source if path == SELF else f"{source}.{path}"): f"{table}.{field.name}"
            for table, schema in tables.items() for source in sources_of(schema)
            for field in schema if (path := wire_path(field)) is not None}


def value_at(record: dict | None, path: str):
    """The value at a wire path (``pricing.defaultPrice``) of one object, alias names;
    None where a parent is absent."""
    if path == SELF:
        return record
    for key in path.split("."):
        if record is None:
            return None
        record = record.get(key)
    return record
