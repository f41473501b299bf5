"""External catalog -> daily snapshot tables per location."""


import dagster as dg

from pipeline.extract.catalog import CATALOG_TABLES, load_catalog_snapshot
from pipeline.partitions import SETTINGS, locations
from pipeline.pos_api.errors import PosApiError, TransientError
from pipeline.resources import PosApiResource
from pipeline.snapshot import snapshot_date

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
    location_id = int(context.partition_key)
    day = snapshot_date(SETTINGS)
    try:
        snap = load_catalog_snapshot(pos.source, location_id, day)
    except TransientError as exc:
        context.log.warning(f"{exc}; the run is retried")
        raise dg.RetryRequested(max_retries=2, seconds_to_wait=60) from exc
    except PosApiError as exc:
        raise dg.Failure(description=str(exc)) from None
    for name, table in snap.tables.items():
        yield dg.MaterializeResult(asset_key=["lake", name], metadata={
            "dagster/row_count": table.num_rows,
            "path": dg.MetadataValue.path(str(snap.paths[name])),
            "snapshot_date": day.isoformat(),
            "pages": snap.stats.pages,
        })
