"""Catalog, menu and voucher ledger -> today's snapshot in the lake, every location."""

from collections import Counter
from collections.abc import Callable

import dagster as dg

from pipeline.core.outcomes import REPORTED_KEY, ConfigError, FailedPartition, Failure
from pipeline.core.settings import Settings
from pipeline.extract.catalog import CATALOG_TABLES, load_catalog_snapshot
from pipeline.extract.menu import MENU_TABLES, load_menu_snapshot
from pipeline.extract.snapshots import Snapshot, snapshot_date
from pipeline.extract.vouchers import VOUCHER_TABLES, load_voucher_snapshot
from pipeline.lake.store import LakeStore
from pipeline.load.steps import SnapshotOutcome, take_snapshots
from pipeline.orchestration.assets.report import failures_metadata, markdown_table
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource
from pipeline.pos_api.errors import PosApiError

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


def _snapshot_asset(settings: Settings, area: str, tables: dict, description: str,
                    load: Callable[..., Snapshot]) -> dg.AssetsDefinition:
    key = dg.AssetKey(["lake", area])

    @dg.asset(key=key, pool="pos_api", group_name="lake", kinds={"parquet"},
              description=description,
              check_specs=[dg.AssetCheckSpec(SNAPSHOT_CHECK, asset=key,
                                             description="every location's snapshot was taken")],
              metadata={"tables": ", ".join(tables)})
    def snapshot(config: LoadConfig, pos: PosResource,
                 lake: dg.ResourceParam[LakeStore]):
        location_ids = selected_locations(settings, config)
        outcomes = take_snapshots(load, pos.source, lake, location_ids, snapshot_date(settings),
                                  area)
        yield from snapshot_results(key, outcomes, lake)

    return snapshot


def build_snapshot_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The catalog, menu and voucher ledger snapshot assets of these settings.

    The ledger's is wired only where there is one: ``source.voucher_url`` (or the sandbox).
    """
    vouchers_key = dg.AssetKey(["lake", "vouchers"])

    @dg.asset(key=vouchers_key, pool="pos_api", group_name="lake", kinds={"parquet"},
              check_specs=[dg.AssetCheckSpec(SNAPSHOT_CHECK, asset=vouchers_key,
                                             description="the ledger's snapshot was taken")],
              metadata={"tables": ", ".join(VOUCHER_TABLES)})
    def vouchers(pos: PosResource,
                 lake: dg.ResourceParam[LakeStore]):
        """Every voucher of the ledger and its transactions, today."""
        try:
            outcome = SnapshotOutcome(None, load_voucher_snapshot(pos.source, lake,
                                                                  snapshot_date(settings)))
        except (PosApiError, ConfigError) as exc:
            outcome = SnapshotOutcome(None, failure=Failure.of(exc, pos.source.redact))
        yield from snapshot_results(vouchers_key, [outcome], lake)

    ledger = [vouchers] if settings.uses_sandbox or settings.source.voucher_url else []
    return [
        _snapshot_asset(settings, "catalog", CATALOG_TABLES,
                        "Products, categories and spots of every location, today.",
                        load_catalog_snapshot),
        _snapshot_asset(settings, "menu", MENU_TABLES,
                        "The public menu tree of every location, today.", load_menu_snapshot),
        *ledger,
    ]
