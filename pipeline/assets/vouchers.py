"""Voucher ledger -> a daily snapshot of every voucher and its transactions."""

import dagster as dg

from pipeline.extract.vouchers import VOUCHER_TABLES, load_voucher_snapshot
from pipeline.partitions import SETTINGS
from pipeline.pos_api.errors import PosApiError, TransientError
from pipeline.resources import PosApiResource
from pipeline.settings import ConfigError
from pipeline.snapshot import snapshot_date

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
    try:
        snap = load_voucher_snapshot(pos.source, snapshot_date(SETTINGS))
    except TransientError as exc:
        raise dg.RetryRequested(max_retries=2, seconds_to_wait=60) from exc
    except (PosApiError, ConfigError) as exc:
        raise dg.Failure(description=str(exc)) from None
    if snap is None:
        context.log.warning("voucher ledger not loaded: source.voucher_url is not configured")
        return
    for name, table in snap.tables.items():
        yield dg.MaterializeResult(asset_key=["lake", name], metadata={
            "dagster/row_count": table.num_rows,
            "path": dg.MetadataValue.path(str(snap.paths[name])),
            "snapshot_date": snap.snapshot_date.isoformat(),
        })
