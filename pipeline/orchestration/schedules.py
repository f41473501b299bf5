"""Jobs, the nightly schedule and the sensor that builds the warehouse after a load.

The nightly run loads yesterday plus the lookback into the lake; when it ends, the sensor
``build_after_load`` requests the warehouse build (``warehouse_job``), as it does after any
run that changed the lake (a backfill, a materialization in the UI). A load and the build
are two runs because a date the load could not finish must stay unmaterialized for
Dagster (its "failed and missing" backfill), while the build still publishes what did load.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import dagster as dg

from pipeline.core.settings import Settings
from pipeline.orchestration.partitions import range_tags

LOAD_JOB = "load_job"
WAREHOUSE_JOB = "warehouse_job"


BUILD_SENSOR = "build_after_load"

BUILDS_ITSELF = {"pos_etl/build": "after"}
"""The tag of a run whose command builds the warehouse itself once the run is over
(``pos-etl load``, ``verify``): the sensor leaves its change to that build."""

AFTER_LOAD = (
    dg.AutomationCondition.any_deps_match(
        (dg.AutomationCondition.newly_updated()
         & ~dg.AutomationCondition.executed_with_tags(tag_values=BUILDS_ITSELF))
        | dg.AutomationCondition.will_be_requested()
    ).since_last_handled()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("after the lake changed")
"""When a model is built: something it reads changed (a load ended, a backfill's runs are
done) and nothing it reads is being loaded. Dates never loaded do not hold it back. A
change by a run whose command builds right after it (``BUILDS_ITSELF``: a CLI load) is
left to that build: one build per change, not a second one by the daemon beside it."""


def build_jobs(apart: list[dg.AssetChecksDefinition] = ()) -> list[dg.UnresolvedAssetJobDefinition]:
    """``load_job``: the lake assets; ``warehouse_job``: the models; both without the
    checks ``apart`` (the freshness checks, which have their own job)."""
    others = dg.AssetSelection.checks(*apart)
    return [
        dg.define_asset_job(
            LOAD_JOB, selection=dg.AssetSelection.key_prefixes("lake") - others,
            description="Load business dates of every location (revenue, today's catalog, "
                        "menu and voucher snapshots) into the lake; the sensor "
                        f"{BUILD_SENSOR} then builds the warehouse."),
        dg.define_asset_job(
            WAREHOUSE_JOB, selection=dg.AssetSelection.key_prefixes("warehouse") - others,
            description="Rebuild the DuckDB warehouse from the lake and run its checks."),
    ]


def last_complete_business_date(settings: Settings, instant: datetime) -> date:
    """The newest business date that has ended at ``instant`` for every location
    (``Settings.last_date_over``)."""
    return settings.last_date_over(instant)


def build_nightly_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The nightly load: one run over yesterday and the ``lookback_days`` before it."""
    schedule = settings.schedule

    # Default "30 3 * * *": every day at 03:30 in the schedule's time zone (Europe/Vienna),
    # when service has ended everywhere.
    @dg.schedule(cron_schedule=schedule.cron, execution_timezone=schedule.timezone,
                 job_name=LOAD_JOB, default_status=dg.DefaultScheduleStatus.STOPPED)
    def nightly_load(context: dg.ScheduleEvaluationContext):
        """Load yesterday and the lookback days of every location (the warehouse is built
        after it, by the sensor ``build_after_load``)."""
        yesterday = last_complete_business_date(settings, context.scheduled_execution_time)
        start = max(yesterday - timedelta(days=schedule.lookback_days), schedule.start_date)
        if yesterday < start:
            return dg.SkipReason(f"no business date since schedule.start_date {start}")
        return dg.RunRequest(run_key=f"nightly:{yesterday.isoformat()}",
                             tags=range_tags(start, yesterday))

    return nightly_load


def build_warehouse_sensor() -> dg.AutomationConditionSensorDefinition:
    """Builds the warehouse (the models' ``AFTER_LOAD`` condition) every 30 seconds at
    most; running from the start, since it only acts on a changed lake."""
    return dg.AutomationConditionSensorDefinition(
        BUILD_SENSOR, target=dg.AssetSelection.key_prefixes("warehouse"),
        default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
        description="Build and check the warehouse after a run changed the lake.")
