"""Public menu tree -> daily snapshot tables per location."""

import dagster as dg

from pipeline.extract.menu import MENU_TABLES, load_menu_snapshot
from pipeline.partitions import SETTINGS, locations
from pipeline.pos_api.errors import PosApiError, TransientError
from pipeline.resources import PosApiResource
from pipeline.snapshot import snapshot_date

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
    location_id = int(context.partition_key)
    try:
        snap = load_menu_snapshot(pos.source, location_id, snapshot_date(SETTINGS))
    except TransientError as exc:
        raise dg.RetryRequested(max_retries=2, seconds_to_wait=60) from exc
    except PosApiError as exc:
        raise dg.Failure(description=str(exc)) from None
    for name, table in snap.tables.items():
        yield dg.MaterializeResult(asset_key=["lake", name], metadata={
            "dagster/row_count": table.num_rows,
            "path": dg.MetadataValue.path(str(snap.paths[name])),
            "snapshot_date": snap.snapshot_date.isoformat(),
        })
