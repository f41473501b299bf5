"""The drift area's table (``pipeline.load.drift`` commits it): each committed day the POS
changed afterwards, before and after."""

from __future__ import annotations

import pyarrow as pa

SOURCE_DRIFT = pa.schema([
    pa.field("location_id", pa.int32(), False),
    pa.field("business_date", pa.date32(), False),
    pa.field("detected_at", pa.timestamp("us", tz="UTC"), False),
    pa.field("receipts_before", pa.int64(), False),
    pa.field("receipts_after", pa.int64(), False),
    pa.field("turnover_net_before", pa.decimal128(38, 8), False),
    pa.field("turnover_net_after", pa.decimal128(38, 8), False),
    pa.field("replaced_load_id", pa.string()),
    pa.field("new_load_id", pa.string(), False),
])
DRIFT_TABLES = {"source_drift": SOURCE_DRIFT}
