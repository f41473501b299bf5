"""Voucher ledger -> a daily snapshot of every voucher and its transactions."""

import dagster as dg

from pipeline.assets.pos_calls import call_pos, snapshot_results
from pipeline.extract.snapshots import snapshot_date
from pipeline.extract.vouchers import VOUCHER_TABLES, load_voucher_snapshot
from pipeline.partitions import SETTINGS
from pipeline.resources import PosApiResource

VOUCHER_SPECS = [
    dg.AssetSpec(["lake", name], description=f"Voucher ledger snapshot table {name}, per "
                 "snapshot date (tenant-wide).", group_name="lake", kinds={"parquet"},
                 skippable=True)
    for name in VOUCHER_TABLES
]


@dg.multi_asset(
    specs=VOUCHER_SPECS,
    name="voucher_lake",
    pool="pos_api",
    description="Snapshot the voucher ledger into the lake, where source.voucher_url is set.",
)
def voucher_lake(context: dg.AssetExecutionContext, pos: PosApiResource):
    """Snapshot the voucher ledger into the lake, where source.voucher_url is set."""
    snap = call_pos(context, load_voucher_snapshot, pos.source, snapshot_date(SETTINGS))
    if snap is None:
        context.log.warning("voucher ledger not loaded: source.voucher_url is not configured")
        return
    yield from snapshot_results(snap)
