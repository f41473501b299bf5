"""Public menu tree -> daily snapshot tables per location."""

import dagster as dg

from pipeline.assets.pos_calls import call_pos, snapshot_results
from pipeline.extract.menu import MENU_TABLES, load_menu_snapshot
from pipeline.extract.snapshots import snapshot_date
from pipeline.partitions import SETTINGS, locations
from pipeline.resources import PosApiResource

MENU_SPECS = [
    dg.AssetSpec(["lake", name], description=f"Menu snapshot table {name}, per location and "
                 "snapshot date.", group_name="lake", kinds={"parquet"})
    for name in MENU_TABLES
]


@dg.multi_asset(
    specs=MENU_SPECS,
    name="menu_lake",
    partitions_def=locations,
    pool="pos_api",
    description="Snapshot one location's public menu tree into the lake.",
)
def menu_lake(context: dg.AssetExecutionContext, pos: PosApiResource):
    """Snapshot one location's public menu tree into the lake."""
    snap = call_pos(context, load_menu_snapshot, pos.source, int(context.partition_key),
                    snapshot_date(SETTINGS))
    yield from snapshot_results(snap)
