"""The exports area's tables (``pipeline.accounting.ledger`` commits them): every booking
file an export wrote, and its totals."""

from __future__ import annotations

import pyarrow as pa

from pipeline.areas.ledger.tables import MONEY

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
