"""Jobs, the nightly schedule and the sensor that builds the warehouse after a load.

The nightly run loads yesterday plus the lookback into the lake; when it ends, the sensor
``build_after_load`` requests the warehouse build (``warehouse_job``), as it does after any
run that changed the lake (a backfill, a materialization in the UI). A load and the build
are two runs because a date the load could not finish must stay unmaterialized for
Dagster (its "failed and missing" backfill), while the build still publishes what did load.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta

import dagster as dg

from pipeline.core.settings import Settings
from pipeline.orchestration.partitions import range_tags

LOAD_JOB = "load_job"
WAREHOUSE_JOB = "warehouse_job"


BUILD_SENSOR = "build_after_load"
NIGHT_SENSOR = "build_after_night"

NIGHT_TAG = "pos_etl/night"
"""The business date whose night a run loads (the shares of a sharded night)."""
SHARD_TAG = "pos_etl/shard"
"""Which share of the night's locations a run loads, ``k/n``."""
POS_HOST_TAG = "pos_etl/pos_host"
"""The POS host a nightly run reads: ``dagster.yaml`` limits the runs per host."""

BUILDS_ITSELF = {"pos_etl/build": "after"}
"""The tag of a run whose command builds the warehouse itself once the run is over
(``pos-etl load``, ``verify``): the sensor leaves its change to that build."""
BUILT_AFTER_NIGHT = {"pos_etl/build": "after-night"}
"""The tag of a share of a sharded night: ``build_after_night`` builds after the last
one, so the condition below leaves each share's change to that build."""

AFTER_LOAD = (
    dg.AutomationCondition.any_deps_match(
        (dg.AutomationCondition.newly_updated()
         & ~dg.AutomationCondition.executed_with_tags(tag_values=BUILDS_ITSELF)
         & ~dg.AutomationCondition.executed_with_tags(tag_values=BUILT_AFTER_NIGHT))
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


def shards_of(settings: Settings) -> list[list[int]]:
    """The configured locations in ``schedule.shards`` shares (in turn, so each holds
    as many as the next, give or take one); no empty share."""
    ids = [loc.id for loc in settings.locations]
    count = min(settings.schedule.shards, len(ids))
    return [ids[k::count] for k in range(count)]


def build_nightly_schedule(settings: Settings,
                           lake_assets: dict[dg.AssetKey, bool] | None = None
                           ) -> dg.ScheduleDefinition:
    """The nightly load: yesterday and the ``lookback_days`` before it, as one run, or
    as ``schedule.shards`` runs of a share of the locations each (``lake_assets``: the
    load's assets, each whether it is read per location; the tenant's, the voucher
    ledger, are loaded by the first share alone)."""
    schedule = settings.schedule

    # Default "30 3 * * *": every day at 03:30 in the schedule's time zone (Europe/Vienna),
    # when service has ended everywhere.
    @dg.schedule(cron_schedule=schedule.cron, execution_timezone=schedule.timezone,
                 job_name=LOAD_JOB, default_status=dg.DefaultScheduleStatus.STOPPED)
    def nightly_load(context: dg.ScheduleEvaluationContext):
        """Load yesterday and the lookback days of every location (the warehouse is built
        after it, by the sensor ``build_after_load``, or ``build_after_night`` after the
        last of the night's shares)."""
        yesterday = last_complete_business_date(settings, context.scheduled_execution_time)
        start = max(yesterday - timedelta(days=schedule.lookback_days), schedule.start_date)
        if yesterday < start:
            return dg.SkipReason(f"no business date since schedule.start_date {start}")
        night = yesterday.isoformat()
        tags = range_tags(start, yesterday) | {POS_HOST_TAG: settings.pos_host}
        shares = shards_of(settings)
        if len(shares) == 1 or not lake_assets:
            return dg.RunRequest(run_key=f"nightly:{night}", tags=tags)
        return [dg.RunRequest(
            run_key=f"nightly:{night}:{k}/{len(shares)}",
            tags=tags | BUILT_AFTER_NIGHT | {NIGHT_TAG: night, SHARD_TAG: f"{k}/{len(shares)}"},
            asset_selection=[key for key, located in lake_assets.items() if located or k == 1],
            run_config={"ops": {key.to_python_identifier(): {"config": {"locations": share}}
                                for key, located in lake_assets.items() if located}})
            for k, share in enumerate(shares, 1)]

    return nightly_load


def build_night_sensor() -> dg.SensorDefinition:
    """Builds the warehouse once the last share of a sharded night has ended (whether it
    succeeded or not: the build publishes what loaded, ``status`` names what did not)."""
    @dg.sensor(name=NIGHT_SENSOR, job_name=WAREHOUSE_JOB, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Build the warehouse once every share of a sharded night has ended.")
    def build_after_night(context: dg.SensorEvaluationContext):
        return night_builds(context.instance)

    return build_after_night


def night_builds(instance: dg.DagsterInstance, days: int = 3) -> list[dg.RunRequest]:
    """A build for each sharded night of the last ``days`` whose shares have all ended;
    its run key names the night and its shares' runs, so it is requested once, and once
    more after a share is run again."""
    nights: dict[str, list[dg.RunRecord]] = {}
    for record in instance.get_run_records(dg.RunsFilter(
            job_name=LOAD_JOB, tags=BUILT_AFTER_NIGHT,
            created_after=datetime.now(UTC) - timedelta(days=days))):
        night = record.dagster_run.tags.get(NIGHT_TAG)
        if night:
            nights.setdefault(night, []).append(record)
    requests = []
    for night, records in sorted(nights.items()):
        runs = [r.dagster_run for r in records]
        wanted = int(runs[0].tags[SHARD_TAG].split("/")[1])
        if len({r.tags[SHARD_TAG] for r in runs}) < wanted or \
                not all(r.is_finished for r in runs):
            continue
        ids = hashlib.sha256(",".join(sorted(r.run_id for r in runs)).encode()).hexdigest()
        requests.append(dg.RunRequest(run_key=f"night:{night}:{ids[:12]}",
                                      tags={NIGHT_TAG: night}))
    return requests


def build_warehouse_sensor() -> dg.AutomationConditionSensorDefinition:
    """Builds the warehouse (the models' ``AFTER_LOAD`` condition) every 30 seconds at
    most; running from the start, since it only acts on a changed lake."""
    return dg.AutomationConditionSensorDefinition(
        BUILD_SENSOR, target=dg.AssetSelection.key_prefixes("warehouse"),
        default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
        description="Build and check the warehouse after a run changed the lake.")
