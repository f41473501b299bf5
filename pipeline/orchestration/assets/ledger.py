"""The lake's closed booking periods and its record of booking exports
(``pipeline.accounting.ledger``): written by ``pos-etl close-period`` and ``pos-etl export``, not by
a run, so external assets that the models read."""

from __future__ import annotations

import dagster as dg

LEDGER_KEY = dg.AssetKey(["lake", "ledger"])
LEDGER_SPEC = dg.AssetSpec(
    LEDGER_KEY, group_name="lake", kinds={"parquet"},
    description="Closed booking periods: the file each was closed with and its bookings "
                "(written by `pos-etl close-period`; tables closed_periods, closed_bookings).")
EXPORTS_SPEC = dg.AssetSpec(
    dg.AssetKey(["lake", "exports"]), group_name="lake", kinds={"parquet"},
    description="Every DATEV or BMD file an export wrote: its name, SHA-256 and bookings, "
                "and its totals per location and account (written by `pos-etl export`; "
                "tables exported_files, exported_totals).")
