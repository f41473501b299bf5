"""The revenue area's lake tables: receipts, their lines, side dishes and payments
(spec 2.1), each column naming its wire path (``pipeline.extract.schemas``)."""

from __future__ import annotations

import pyarrow as pa

from pipeline.extract.schemas import I32, LOCAL_TS, MONEY, PERCENT, UTC_TS, S, lake_schema, wired

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
