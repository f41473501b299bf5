"""Arrow schemas of the lake tables. Money and quantities are DECIMAL, never float."""

from __future__ import annotations

import pyarrow as pa

MONEY = pa.decimal128(18, 4)
"""Amounts and quantities: 14 integer digits, 4 decimals (the POS sends at most 2-3)."""
PERCENT = pa.decimal128(9, 4)
LOCAL_TS = pa.timestamp("s")
UTC_TS = pa.timestamp("s", tz="UTC")

_KEYS = [
    pa.field("location_id", pa.int32(), nullable=False),
    pa.field("business_date", pa.date32(), nullable=False),
    pa.field("transaction_id", pa.string(), nullable=False),
]


def _schema(*fields: tuple) -> pa.Schema:
    return pa.schema(_KEYS + [pa.field(*f) for f in fields])


RECEIPTS = _schema(
    ("transaction_type", pa.string(), False),
    ("receipt_type", pa.string()),
    ("total_amount", MONEY, False),
    ("tip", MONEY),
    ("discount", MONEY),
    ("date_time_local", LOCAL_TS, False),
    ("date_time_utc", UTC_TS, False),
    ("business_id", pa.string()),
    ("business_name", pa.string()),
    ("resolved_location_id", pa.string()),
    ("resolved_location_name", pa.string()),
    ("staff_id", pa.string()),
    ("staff_number", pa.int32()),
    ("staff_name", pa.string()),
    ("table_id", pa.string()),
    ("table_number", pa.int32()),
    ("table_name", pa.string()),
    ("area_id", pa.string()),
    ("area_number", pa.int32()),
    ("area_name", pa.string()),
    ("customer_id", pa.string()),
    ("customer_number", pa.int32()),
    ("customer_name", pa.string()),
    ("payment_group_id", pa.int32()),
    ("payment_group_name", pa.string()),
    ("guest_count", pa.int32()),
)

RECEIPT_ITEMS = _schema(
    ("item_key", pa.string(), False),
    ("line_number", pa.int32(), False),
    ("item_id", pa.string(), False),
    ("unique_id", pa.string()),
    ("external_id", pa.string()),
    ("product_number", pa.int32()),
    ("name", pa.string()),
    ("book_date_local", LOCAL_TS),
    ("gross_amount", MONEY, False),
    ("net_amount", MONEY, False),
    ("purchase_price", MONEY),
    ("quantity", MONEY, False),
    ("course", pa.int32()),
    ("tax_id", pa.string()),
    ("tax_rate_percent", PERCENT),
    ("tax_name", pa.string()),
    ("category_id", pa.string()),
    ("category_number", pa.int32()),
    ("category_name", pa.string()),
)

ITEM_SIDE_DISHES = _schema(
    ("item_key", pa.string(), False),
    ("side_dish_key", pa.string(), False),
    ("side_dish_id", pa.string()),
    ("unique_id", pa.string()),
    ("product_number", pa.int32()),
    ("name", pa.string()),
    ("gross_amount", MONEY),
    ("net_amount", MONEY),
    ("quantity", MONEY),
)

PAYMENTS = _schema(
    ("payment_id", pa.string(), False),
    ("amount", MONEY, False),
    ("payment_type_id", pa.int32()),
    ("payment_type_nr", pa.int32()),
    ("payment_type_name", pa.string()),
    ("fibu_account_nr", pa.string()),
)

REVENUE_TABLES: dict[str, pa.Schema] = {
    "receipts": RECEIPTS,
    "receipt_items": RECEIPT_ITEMS,
    "item_side_dishes": ITEM_SIDE_DISHES,
    "payments": PAYMENTS,
}
