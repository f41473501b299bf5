"""Everything Dagster runs, built from one configuration: assets, checks, jobs, schedules,
sensors, resources. The code location (``pipeline/definitions.py``) and the CLI's runs
(``pipeline.orchestration.loader``) build theirs here."""

from __future__ import annotations

import dagster as dg

from pipeline.areas import SNAPSHOTS
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.orchestration.alert_sensors import build_alert_sensors
from pipeline.orchestration.assets.drift import DRIFT_KEY, build_drift_asset
from pipeline.orchestration.assets.freshness import (
    build_freshness_checks,
    build_freshness_sensor,
    freshness_job,
)
from pipeline.orchestration.assets.ledger import EXPORTS_SPEC, LEDGER_SPEC
from pipeline.orchestration.assets.revenue import REVENUE_KEY, build_revenue_asset
from pipeline.orchestration.assets.snapshots import build_snapshot_assets
from pipeline.orchestration.assets.warehouse import build_warehouse_asset
from pipeline.orchestration.housekeeping import build_housekeeping
from pipeline.orchestration.partitions import business_dates
from pipeline.orchestration.resources import PosResource, build_resources
from pipeline.orchestration.schedules import (
    build_jobs,
    build_night_sensor,
    build_nightly_schedule,
    build_warehouse_sensor,
)


def build_defs(settings: Settings, executor: dg.ExecutorDefinition | None = None,
               reporter: Reporter | None = None,
               pos: PosResource | None = None) -> dg.Definitions:
    """Everything of one configuration: assets, checks, jobs, the schedule, the resources;
    ``executor``: how runs execute their steps (default: Dagster's multiprocess executor,
    ``pos-etl load`` runs in process; ``k8s_job_executor`` or ``celery_executor`` on a
    cluster); ``reporter``: what the runs tell as they go (``pipeline.core.reporting``);
    ``pos``: the POS its runs read (default: the configured one, ``pos_resource``)."""
    fresh = build_freshness_checks(settings)
    housekeeping, weekly = build_housekeeping(settings.lake.retention_hours,
                                              settings.schedule.timezone)
    jobs = [*build_jobs(apart=fresh), freshness_job(fresh), housekeeping]
    # the nightly's assets, each whether a share of the locations loads it (sharded nights)
    located = {REVENUE_KEY: True, DRIFT_KEY: True} | {
        dg.AssetKey(["lake", area.name]): area.per_location
        for area in SNAPSHOTS if area.wired(settings)}
    return dg.Definitions(
        assets=[build_revenue_asset(settings, business_dates(settings)),
                *build_snapshot_assets(settings), build_drift_asset(settings),
                build_warehouse_asset(), LEDGER_SPEC, EXPORTS_SPEC],
        asset_checks=fresh,
        jobs=jobs,
        schedules=[build_nightly_schedule(settings, located), weekly],
        sensors=[build_warehouse_sensor(), build_night_sensor(), build_freshness_sensor(settings),
                 *build_alert_sensors(settings, jobs)],
        resources=build_resources(settings, reporter, pos),
        executor=executor,
    )
