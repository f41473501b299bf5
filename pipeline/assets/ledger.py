"""The lake's closed booking periods (``pipeline.ledger``): written by ``pos-etl
close-period``, not by a run, so an external asset that the models read."""

from __future__ import annotations

import dagster as dg

LEDGER_KEY = dg.AssetKey(["lake", "ledger"])
LEDGER_SPEC = dg.AssetSpec(
    LEDGER_KEY, group_name="lake", kinds={"parquet"},
    description="Closed booking periods: the file each was closed with and its bookings "
                "(written by `pos-etl close-period`; tables closed_periods, closed_bookings).")
