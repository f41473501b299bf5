"""The snapshot areas (catalog, menu, voucher ledger: ``pipeline.load.areas``) -> today's
snapshot in the lake, every location's or the tenant's."""

from collections import Counter

import dagster as dg

from pipeline.core.outcomes import REPORTED_KEY, FailedPartition
from pipeline.core.settings import Settings
from pipeline.extract.snapshots import snapshot_date
from pipeline.lake.store import LakeStore
from pipeline.load.areas import SNAPSHOTS, LakeArea
from pipeline.load.steps import SnapshotOutcome, take_snapshots
from pipeline.orchestration.assets.report import failures_metadata, markdown_table
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource

SNAPSHOT_CHECK = "every_location_snapshotted"


def snapshot_results(key: dg.AssetKey, outcomes: list[SnapshotOutcome], lake: LakeStore):
    """A materialization of what was taken (row counts per table and location) and the check."""
    taken = [o for o in outcomes if o.snapshot]
    failed = [FailedPartition(o.location_id, None, o.failure) for o in outcomes if o.failure]
    check = dg.AssetCheckResult(
        check_name=SNAPSHOT_CHECK, asset_key=key, passed=not failed,
        metadata={"taken": len(taken), **failures_metadata(failed)})
    if not taken:
        yield check
        raise dg.Failure(description=f"{key.to_user_string()}: no snapshot taken; first "
                         f"error: {failed[0].failure}", metadata={REPORTED_KEY: len(failed)})
    day = taken[0].snapshot.snapshot_date
    totals = sum((Counter(o.snapshot.row_counts) for o in taken), Counter())
    tables = list(taken[0].snapshot.tables)
    yield dg.MaterializeResult(asset_key=key, check_results=[check], metadata={
        "dagster/row_count": sum(totals.values()),
        "snapshot_date": day.isoformat(),
        "row_counts": dg.MetadataValue.json({t: totals[t] for t in tables}),
        "tables": dg.MetadataValue.md(markdown_table(
            ["location", *tables],
            [[o.location_id or "(tenant)", *(o.snapshot.row_counts[t] for t in tables)]
             for o in taken])),
        "lake": dg.MetadataValue.path(lake.describe()),
    })


def _snapshot_asset(settings: Settings, area: LakeArea) -> dg.AssetsDefinition:
    key = dg.AssetKey(["lake", area.name])
    whose = "every location's snapshot was taken" if area.per_location else \
        "the snapshot was taken"

    @dg.asset(key=key, pool="pos_api", group_name="lake", kinds={"parquet"},
              description=area.description,
              check_specs=[dg.AssetCheckSpec(SNAPSHOT_CHECK, asset=key, description=whose)],
              metadata={"tables": ", ".join(area.tables)})
    def snapshot(config: LoadConfig, pos: PosResource,
                 lake: dg.ResourceParam[LakeStore]):
        location_ids = selected_locations(settings, config) if area.per_location else [None]
        outcomes = take_snapshots(area.load, pos.source, lake, location_ids,
                                  snapshot_date(settings), area.name)
        yield from snapshot_results(key, outcomes, lake)

    return snapshot


def build_snapshot_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The snapshot assets of these settings (``pipeline.load.areas.SNAPSHOTS``): those of
    a source the settings have (the voucher ledger's: ``source.voucher_url``, or the
    sandbox)."""
    return [_snapshot_asset(settings, area) for area in SNAPSHOTS if area.wired(settings)]
