"""The nightly schedule: yesterday plus a lookback for late postings, and the catalog."""


from datetime import timedelta

import dagster as dg

from pipeline.assets.catalog import catalog_lake
from pipeline.assets.menu import menu_lake
from pipeline.assets.models import warehouse_models
from pipeline.assets.revenue import revenue_lake
from pipeline.assets.vouchers import voucher_lake
from pipeline.partitions import SETTINGS, revenue_partition_key

revenue_job = dg.define_asset_job(
    "revenue_job", selection=dg.AssetSelection.assets(revenue_lake),
    description="Load revenue partitions (location x business date) into the lake.",
)
catalog_job = dg.define_asset_job(
    "catalog_job", selection=dg.AssetSelection.assets(catalog_lake, menu_lake),
    description="Take the catalog and menu snapshots of a location.",
)
voucher_job = dg.define_asset_job(
    "voucher_job", selection=dg.AssetSelection.assets(voucher_lake),
    description="Take the voucher ledger's snapshot.",
)
warehouse_job = dg.define_asset_job(
    "warehouse_job", selection=dg.AssetSelection.assets(warehouse_models),
    description="Rebuild the DuckDB warehouse from the lake.",
)


# Default "30 3 * * *": every day at 03:30 in the schedule's time zone (Europe/Vienna),
# when service has ended everywhere. Loads yesterday plus `lookback_days` earlier dates.
@dg.schedule(
    cron_schedule=SETTINGS.schedule.cron,
    execution_timezone=SETTINGS.schedule.timezone,
    job=revenue_job,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def nightly_revenue(context: dg.ScheduleEvaluationContext):
    """Request yesterday's and the lookback days' revenue partitions of every location."""
    today = context.scheduled_execution_time.date()
    tick = context.scheduled_execution_time.isoformat()
    for back in range(1, SETTINGS.schedule.lookback_days + 2):
        day = today - timedelta(days=back)
        if day < SETTINGS.schedule.start_date:
            continue
        for loc in SETTINGS.locations:
            yield dg.RunRequest(run_key=f"revenue:{day}:{loc.id}:{tick}",
                                partition_key=revenue_partition_key(day.isoformat(), loc.id))


# Same cron as the revenue schedule: the catalog and menu snapshots of every location,
# filed under the day the run takes them.
@dg.schedule(
    cron_schedule=SETTINGS.schedule.cron,
    execution_timezone=SETTINGS.schedule.timezone,
    job=catalog_job,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
def nightly_catalog(context: dg.ScheduleEvaluationContext):
    """Request today's catalog and menu snapshots of every location."""
    tick = context.scheduled_execution_time.isoformat()
    for loc in SETTINGS.locations:
        yield dg.RunRequest(run_key=f"catalog:{loc.id}:{tick}", partition_key=str(loc.id))


# Same cron: the voucher ledger's daily snapshot (skipped where no voucher_url is set).
nightly_vouchers = dg.ScheduleDefinition(
    name="nightly_vouchers",
    job=voucher_job,
    cron_schedule=SETTINGS.schedule.cron,
    execution_timezone=SETTINGS.schedule.timezone,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Take the voucher ledger's daily snapshot.",
)
