"""The lake's tables that are not the POS's: what accounting commits. The ``ledger`` area
(``pipeline.accounting.ledger``): each closed booking period and every booking it booked;
the ``exports`` area: every booking file an export wrote, and its totals."""

from __future__ import annotations

import pyarrow as pa

MONEY = pa.decimal128(18, 2)
LEDGER_TABLES: dict[str, pa.Schema] = {
    "closed_periods": pa.schema([
        pa.field("period", pa.string(), False), pa.field("first_date", pa.date32(), False),
        pa.field("last_date", pa.date32(), False), pa.field("year_start", pa.date32(), False),
        pa.field("closed_at", pa.timestamp("us", tz="UTC"), False),
        pa.field("format", pa.string(), False), pa.field("file_name", pa.string(), False),
        pa.field("sha256", pa.string(), False), pa.field("content", pa.binary(), False),
        pa.field("bookings", pa.int64(), False),
        # closed with dates missing (--allow-incomplete): which; null when complete
        pa.field("incomplete", pa.string()),
        # closed with bookings on the suspense account (--allow-suspense): which; else null
        pa.field("suspense", pa.string())]),
    "closed_bookings": pa.schema([
        pa.field("period", pa.string(), False), pa.field("location_id", pa.int32(), False),
        pa.field("business_date", pa.date32(), False),
        pa.field("original_date", pa.date32(), False),
        pa.field("booking_number", pa.int32(), False),
        pa.field("document_number", pa.string(), False),
        pa.field("debit_account", pa.string(), False),
        pa.field("credit_account", pa.string(), False), pa.field("amount", MONEY, False),
        pa.field("tax_rate_percent", pa.decimal128(9, 4)), pa.field("tax_amount", MONEY),
        pa.field("booking_kind", pa.string(), False),
        pa.field("booking_text", pa.string(), False), pa.field("cost_center", pa.string())]),
}
"""The ledger area's tables: one row per closed period, one per booking it booked."""

EXPORTS = "exports"
EXPORT_TABLES: dict[str, pa.Schema] = {
    "exported_files": pa.schema([
        pa.field("export_id", pa.string(), False),
        pa.field("exported_at", pa.timestamp("us", tz="UTC"), False),
        pa.field("format", pa.string(), False), pa.field("period", pa.string(), False),
        pa.field("file_name", pa.string(), False), pa.field("sha256", pa.string(), False),
        pa.field("bookings", pa.int64(), False),
        pa.field("is_closed_period", pa.bool_(), False)]),
    "exported_totals": pa.schema([
        pa.field("export_id", pa.string(), False), pa.field("period", pa.string(), False),
        pa.field("location_id", pa.int32(), False), pa.field("account", pa.string(), False),
        pa.field("debit_amount", MONEY, False), pa.field("credit_amount", MONEY, False)]),
}
"""The exports area's tables: every booking file an export wrote, and its totals per
location and account."""
