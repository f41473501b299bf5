"""External catalog -> daily snapshot tables per location."""


import dagster as dg

from pipeline.assets.pos_calls import call_pos, snapshot_results
from pipeline.extract.catalog import CATALOG_TABLES, load_catalog_snapshot
from pipeline.extract.snapshots import snapshot_date
from pipeline.partitions import SETTINGS, locations
from pipeline.resources import PosApiResource

CATALOG_SPECS = [
    dg.AssetSpec(["lake", name], description=f"Catalog snapshot table {name}, per location "
                 "and snapshot date.", group_name="lake", kinds={"parquet"})
    for name in CATALOG_TABLES
]


@dg.multi_asset(
    specs=CATALOG_SPECS,
    name="catalog_lake",
    partitions_def=locations,
    pool="pos_api",
    description="Snapshot one location's products, categories and spots into the lake.",
)
def catalog_lake(context: dg.AssetExecutionContext, pos: PosApiResource):
    """Snapshot one location's products, categories and spots into the lake."""
    snap = call_pos(context, load_catalog_snapshot, pos.source, int(context.partition_key),
                    snapshot_date(SETTINGS))
    yield from snapshot_results(snap)
