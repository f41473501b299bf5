"""The snapshot areas (``pipeline.areas``: catalog, menu, vouchers) -> today's
snapshot in the lake, every location's or the tenant's."""

from collections import Counter

import dagster as dg

from pipeline.areas import SNAPSHOTS, LakeArea
from pipeline.core.outcomes import REPORTED_KEY, FailedPartition
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.extract.snapshots import snapshot_date
from pipeline.lake.store import LakeStore
from pipeline.load.steps import SnapshotOutcome, take_snapshots
from pipeline.orchestration.assets.metadata import failures_metadata, markdown_table
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource
from pipeline.orchestration.runs import stopped_by_name
from pipeline.orchestration.summaries import SnapshotTaken

SNAPSHOT_CHECK = "every_location_snapshotted"


def snapshot_results(key: dg.AssetKey, outcomes: list[SnapshotOutcome], lake: LakeStore,
                     reporter: Reporter):
    """A materialization of what was taken (row counts per table and location) and the check."""
    taken = [o for o in outcomes if o.snapshot]
    failed = [FailedPartition(o.location_id, None, o.failure) for o in outcomes if o.failure]
    check = dg.AssetCheckResult(
        check_name=SNAPSHOT_CHECK, asset_key=key, passed=not failed,
        metadata={"taken": len(taken), **failures_metadata(failed)})
    said = f"check failed: {key.to_user_string()} {SNAPSHOT_CHECK}"
    if not taken:
        reporter.say(said)
        yield check
        raise dg.Failure(description=f"{key.to_user_string()}: no snapshot taken; first "
                         f"error: {failed[0].failure}", metadata={REPORTED_KEY: len(failed)})
    totals = sum((Counter(o.snapshot.row_counts) for o in taken), Counter())
    tables = list(taken[0].snapshot.tables)
    summary = SnapshotTaken(taken[0].snapshot.snapshot_date.isoformat(),
                            {t: totals[t] for t in tables})
    reporter.say(f"{key.path[-1]} snapshot {summary.snapshot_date}: "
                 f"{sum(summary.row_counts.values()):,} rows")
    if failed:
        reporter.say(said)
    yield dg.MaterializeResult(asset_key=key, check_results=[check], metadata=summary.to_metadata(
        tables=dg.MetadataValue.md(markdown_table(
            ["location", *tables],
            [[o.location_id or "(tenant)", *(o.snapshot.row_counts[t] for t in tables)]
             for o in taken])),
        lake=dg.MetadataValue.path(lake.describe())))


def _snapshot_asset(settings: Settings, area: LakeArea) -> dg.AssetsDefinition:
    key = dg.AssetKey(["lake", area.name])
    whose = "every location's snapshot was taken" if area.per_location else \
        "the snapshot was taken"

    @dg.asset(key=key, pool="pos_api", group_name="lake", kinds={"parquet"},
              description=area.description,
              check_specs=[dg.AssetCheckSpec(SNAPSHOT_CHECK, asset=key, description=whose)],
              metadata={"tables": ", ".join(area.tables)})
    def snapshot(context: dg.AssetExecutionContext, config: LoadConfig, pos: PosResource,
                 lake: dg.ResourceParam[LakeStore], reporter: dg.ResourceParam[Reporter]):
        with stopped_by_name(context):
            location_ids = selected_locations(settings, config) if area.per_location \
                else [None]
            outcomes = take_snapshots(area.extract, pos.source, lake, location_ids,
                                      snapshot_date(settings), area.name)
            yield from snapshot_results(key, outcomes, lake, reporter)

    return snapshot


def build_snapshot_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The snapshot assets of these settings (``pipeline.areas.SNAPSHOTS``): those of
    a source the settings have (``pipeline.sources``: configured, or the sandbox)."""
    return [_snapshot_asset(settings, area) for area in SNAPSHOTS if area.wired(settings)]
