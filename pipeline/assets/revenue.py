"""Revenue report -> the four lake tables, one partition per location and business date."""


from datetime import date

import dagster as dg

from pipeline.assets.pos_calls import call_pos
from pipeline.extract.revenue import load_revenue_partition
from pipeline.extract.schemas import REVENUE_TABLES
from pipeline.partitions import DATE_DIM, LOCATION_DIM, revenue_partitions
from pipeline.resources import PosApiResource

DESCRIPTIONS = {
    "receipts": "Fiscal receipts of the revenue report, one row per transactionId.",
    "receipt_items": "Item lines of the receipts, one row per (transactionId, uniqueId or id).",
    "item_side_dishes": "Side dishes booked under an item line, one row per uniqueId per item.",
    "payments": "Payments settling the receipts, one row per payment id.",
}
REVENUE_SPECS = [
    dg.AssetSpec(["lake", name], description=DESCRIPTIONS[name], group_name="lake",
                 kinds={"parquet"})
    for name in REVENUE_TABLES
]


@dg.multi_asset(
    specs=REVENUE_SPECS,
    name="revenue_lake",
    partitions_def=revenue_partitions,
    pool="pos_api",
    description="Load one location's revenue report for one business date into the lake.",
)
def revenue_lake(context: dg.AssetExecutionContext, pos: PosApiResource):
    """Load one location's revenue report for one business date into the lake."""
    keys = context.partition_key.keys_by_dimension
    location_id, business_date = int(keys[LOCATION_DIM]), date.fromisoformat(keys[DATE_DIM])
    part = call_pos(context, load_revenue_partition, pos.source, location_id, business_date)
    shared = {
        "receipts_seen": part.receipts_seen,
        "receipts_outside_day": part.outside_day,
        "pages": part.stats.pages,
        "retries": part.stats.retries,
        "unknown_transaction_types": dict(part.unknown_types),
    }
    for name, table in part.tables.items():
        metadata = {
            "dagster/row_count": table.num_rows,
            "path": dg.MetadataValue.path(str(part.paths[name])),
            "duplicates_dropped": part.duplicates_dropped.get(name, 0),
            **shared,
        }
        if name == "receipts":
            metadata["turnover_net"] = dg.MetadataValue.text(str(part.turnover_net))
        yield dg.MaterializeResult(asset_key=["lake", name], metadata=metadata)
