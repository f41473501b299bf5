"""Arrow schemas of the revenue lake tables. Money and quantities are DECIMAL, never float.

Each column that comes from the wire names its path in the spec's receipt (2.1) in the
field's metadata (``wire``: ``business.id``, ``tax.value``); the flattening derives what
it reads from these paths, and a test holds them against the pydantic models field by
field, so a field of the spec cannot be dropped on the way silently. Columns without a
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


EXTRA_FIELDS = "extra_fields"
"""The column of every revenue table that keeps the object's fields the spec does not name,
as a JSON object (null where there are none)."""


def _schema(source: str, *fields: tuple, transaction_id_wire: str | None = None) -> pa.Schema:
    keys = [wired("location_id", I32, False), wired("business_date", pa.date32(), False),
            wired("transaction_id", S, False, transaction_id_wire)]
    return lake_schema((source,), keys + [wired(*f) for f in fields] + [wired(EXTRA_FIELDS, S)])


def _ref(prefix: str, wire: str) -> list[tuple]:
    """The id, number and name of a small record of the receipt (Staff, Table, Area, ...)."""
    return [(f"{prefix}_id", S, True, f"{wire}.id"),
            (f"{prefix}_number", I32, True, f"{wire}.number"),
            (f"{prefix}_name", S, True, f"{wire}.name")]


RECEIPTS = _schema(
    "Receipt",
    ("transaction_type", S, False, "transactionType"),
    ("receipt_type", S, True, "receiptType"),
    ("total_amount", MONEY, False, "totalAmount"),
    ("tip", MONEY, True, "tip"),
    ("discount", MONEY, True, "discount"),
    ("date_time_local", LOCAL_TS, False, "dateTime"),
    ("date_time_utc", UTC_TS, False, "dateTime"),
    ("business_id", S, True, "business.id"),
    ("business_name", S, True, "business.name"),
    ("resolved_location_id", S, True, "location.id"),
    ("resolved_location_name", S, True, "location.name"),
    *_ref("staff", "staff"),
    *_ref("table", "table"),
    *_ref("area", "area"),
    *_ref("customer", "customer"),
    ("payment_group_id", I32, True, "paymentGroup.id"),
    ("payment_group_name", S, True, "paymentGroup.name"),
    ("guest_count", I32, True, "guestCount"),
    transaction_id_wire="transactionId",
)

RECEIPT_ITEMS = _schema(
    "Receipt.items",
    ("item_key", S, False),
    ("line_number", I32, False),
    ("item_id", S, False, "id"),
    ("unique_id", S, True, "uniqueId"),
    ("external_id", S, True, "externalId"),
    ("product_number", I32, True, "number"),
    ("name", S, True, "name"),
    ("book_date_local", LOCAL_TS, True, "bookDate"),
    ("gross_amount", MONEY, False, "grossAmount"),
    ("net_amount", MONEY, False, "netAmount"),
    ("purchase_price", MONEY, True, "purchasePrice"),
    ("quantity", MONEY, False, "quantity"),
    ("course", I32, True, "course"),
    ("tax_id", S, True, "tax.id"),
    ("tax_rate_percent", PERCENT, True, "tax.value"),
    ("tax_name", S, True, "tax.name"),
    *_ref("category", "category"),
)

ITEM_SIDE_DISHES = _schema(
    "Receipt.items.sideDishes",
    ("item_key", S, False),
    ("side_dish_key", S, False),
    ("side_dish_id", S, True, "id"),
    ("unique_id", S, True, "uniqueId"),
    ("product_number", I32, True, "number"),
    ("name", S, True, "name"),
    ("gross_amount", MONEY, True, "grossAmount"),
    ("net_amount", MONEY, True, "netAmount"),
    ("quantity", MONEY, True, "quantity"),
)

PAYMENTS = _schema(
    "Receipt.payments",
    ("payment_id", S, False, "id"),
    ("amount", MONEY, False, "amount"),
    ("payment_type_id", I32, True, "paymentType.id"),
    ("payment_type_nr", I32, True, "paymentType.nr"),
    ("payment_type_name", S, True, "paymentType.name"),
    ("fibu_account_nr", S, True, "fibuAccountNr"),
)

REVENUE_TABLES: dict[str, pa.Schema] = {
    "receipts": RECEIPTS,
    "receipt_items": RECEIPT_ITEMS,
    "item_side_dishes": ITEM_SIDE_DISHES,
    "payments": PAYMENTS,
}
