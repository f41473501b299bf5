"""Jobs and the nightly schedule: one run loads yesterday plus the lookback and ends with
the warehouse rebuilt and checked."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import dagster as dg

from pipeline.partitions import range_tags
from pipeline.settings import Settings

LOAD_JOB = "load_job"
WAREHOUSE_JOB = "warehouse_job"


def build_jobs() -> list[dg.UnresolvedAssetJobDefinition]:
    """``load_job``: every lake asset then the models; ``warehouse_job``: the models only."""
    return [
        dg.define_asset_job(
            LOAD_JOB, selection=dg.AssetSelection.all(),
            description="Load business dates of every location (revenue, today's catalog, "
                        "menu and voucher snapshots), then rebuild and check the warehouse."),
        dg.define_asset_job(
            WAREHOUSE_JOB, selection=dg.AssetSelection.key_prefixes("warehouse"),
            description="Rebuild the DuckDB warehouse from the lake and run its checks."),
    ]


def last_complete_business_date(settings: Settings, instant: datetime) -> date:
    """The newest business date that has ended at ``instant`` for every location: the
    day before the earliest business date still under way (each location's day starts
    at its own ``business_day_starts``, in its own time zone)."""
    return min(loc.business_date_at(instant) for loc in settings.locations) - timedelta(days=1)


def build_nightly_schedule(settings: Settings) -> dg.ScheduleDefinition:
    """The nightly load: one run over yesterday and the ``lookback_days`` before it."""
    schedule = settings.schedule

    # Default "30 3 * * *": every day at 03:30 in the schedule's time zone (Europe/Vienna),
    # when service has ended everywhere.
    @dg.schedule(cron_schedule=schedule.cron, execution_timezone=schedule.timezone,
                 job_name=LOAD_JOB, default_status=dg.DefaultScheduleStatus.STOPPED)
    def nightly_load(context: dg.ScheduleEvaluationContext):
        """Load yesterday and the lookback days of every location, then rebuild the warehouse."""
        yesterday = last_complete_business_date(settings, context.scheduled_execution_time)
        start = max(yesterday - timedelta(days=schedule.lookback_days), schedule.start_date)
        if yesterday < start:
            return dg.SkipReason(f"no business date since schedule.start_date {start}")
        return dg.RunRequest(run_key=f"nightly:{yesterday.isoformat()}",
                             tags=range_tags(start, yesterday))

    return nightly_load
