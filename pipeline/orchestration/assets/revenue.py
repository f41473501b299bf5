"""Revenue report -> the lake: every location's receipts of each business date."""

import time
from collections import Counter
from datetime import date
from decimal import Decimal

import dagster as dg

from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.core import stops
from pipeline.core.outcomes import REPORTED_KEY, FailedPartition
from pipeline.core.reporting import Reporter, RevenueProgress
from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.load.steps import DayOutcome, load_revenue_days
from pipeline.orchestration.assets.metadata import failures_metadata, markdown_table
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource
from pipeline.orchestration.runs import stopped_by_name
from pipeline.orchestration.summaries import LoadedCheck, RevenueDay

REVENUE_KEY = dg.AssetKey(["lake", "revenue"])
REVENUE_STEP = REVENUE_KEY.to_python_identifier()
"""The step (op) of ``REVENUE_KEY`` in a run."""
LOADED_CHECK = "every_location_loaded"
PROGRESS_SECONDS = 2
"""How often a long load says how far it is (each line is an event in the run's log)."""
WARNED_PER_DATE = 20
"""Failed partitions a date's warning event names; the check's metadata lists them all."""


def day_summary(day: DayOutcome) -> RevenueDay:
    """What a person checks first about one business date of the revenue lake."""
    return RevenueDay(
        receipts=sum(p.receipts for p in day.partitions),
        turnover_net=sum((p.turnover_net for p in day.partitions), Decimal(0)),
        complete=day.complete,
        partitions_kept=sum(p.kept for p in day.partitions),
        pages=sum(p.pages for p in day.partitions),
        failed_locations={str(p.location_id): p.failure.message for p in day.failed}
        | {str(loc): "never loaded" for loc in day.missing},
        unknown_fields=dict(sum((Counter(p.unknown_fields) for p in day.partitions),
                                Counter())),
        provisional_locations=[p.location_id for p in day.partitions if p.provisional],
        overtook={str(p.location_id): p.overtook for p in day.partitions if p.overtook})


def locations_table(day: DayOutcome) -> dg.MetadataValue:
    """The date's partitions, one row per location, to read in the UI."""
    return dg.MetadataValue.md(markdown_table(
        ["location", "receipts", "turnover_net", "pages", "retries", "duplicates dropped",
         "other days' receipts skipped", "unknown transaction types", "unknown fields",
         "error"],
        [[p.location_id, p.receipts, p.turnover_net, p.pages, p.retries,
          p.duplicates_dropped, p.outside_day,
          ", ".join(f"{k} ({v})" for k, v in p.unknown_types.items()),
          ", ".join(f"{k} ({v})" for k, v in p.unknown_fields.items()),
          p.failure.message if p.failure else ""]
         for p in day.partitions]))


def build_revenue_asset(settings: Settings,
                        partitions_def: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    """The revenue lake asset of these settings, partitioned by business date.

    One run loads a range of dates (``BackfillPolicy.single_run``, a Beta parameter of
    Dagster's: it warns where the code loads; ``pos-etl`` hides that one warning,
    ``pipeline.cli.BACKFILL_BETA``). Each date is recorded as it is done: a
    materialization when every location of the run has it in the lake, else an
    observation (what loaded, what failed). The asset has no output of its own, so a
    date with a failed location stays unmaterialized: Dagster shows it failed (the step
    fails at the end), and a "failed and missing" backfill loads it again, like a run
    killed halfway leaves the dates it had not finished. The warehouse is built by its
    own run (``pipeline.orchestration.schedules``).
    """
    @dg.asset(
        key=REVENUE_KEY,
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        output_required=False,
        pool="pos_api",
        group_name="lake",
        kinds={"parquet"},
        check_specs=[dg.AssetCheckSpec(
            LOADED_CHECK, asset=REVENUE_KEY,
            description="every location the run loads has its revenue of every date in the lake")],
        metadata={"tables": ", ".join(REVENUE_TABLES)},
    )
    def revenue(context: dg.AssetExecutionContext, config: LoadConfig,
                pos: PosResource, lake: dg.ResourceParam[LakeStore],
                reporter: dg.ResourceParam[Reporter]):
        """Receipts, item lines, side dishes and payments of each business date, every location."""
        with stopped_by_name(context):
            location_ids = selected_locations(settings, config)
            days = [date.fromisoformat(key) for key in context.partition_keys]
            configured = [loc.id for loc in settings.locations]
            failed: list[FailedPartition] = []
            never_loaded: dict[int, int] = {}
            receipts = skipped = 0
            said = time.monotonic()
            loaded = load_revenue_days(pos.source, lake, days, location_ids, configured,
                                       config.missing_only)
            for n, day in enumerate(loaded, 1):
                stops.check()  # a Ctrl-C a signal handler dropped (pipeline.core.stops)
                said_today = []
                for p in day.failed:
                    failure = FailedPartition(p.location_id, day.business_date, p.failure)
                    failed.append(failure)
                    if not p.failure.tried:  # said once, with the first failure
                        skipped += 1
                        continue
                    said_today.append(str(p.failure))  # "location N: ..."
                    reporter.failed("revenue", failure)
                if said_today:  # one event per date, however many locations failed
                    more = len(said_today) - WARNED_PER_DATE
                    context.log.warning(
                        f"revenue {day.business_date}: {len(said_today)} partition(s) failed: "
                        + "; ".join(said_today[:WARNED_PER_DATE])
                        + (f"; {more} more in the check {LOADED_CHECK}" if more > 0 else ""))
                for loc in day.missing:
                    never_loaded[loc] = never_loaded.get(loc, 0) + 1
                summary = day_summary(day)
                event = dg.AssetMaterialization if day.complete else dg.AssetObservation
                partition = day.business_date.isoformat()
                context.log_event(event(asset_key=REVENUE_KEY, partition=partition,
                                        metadata=summary.to_metadata(
                                            locations=locations_table(day),
                                            lake=dg.MetadataValue.path(lake.describe("receipts")))))
                receipts += summary.receipts
                if time.monotonic() - said > PROGRESS_SECONDS or n == len(days):
                    said = time.monotonic()
                    progress = RevenueProgress(n, len(days), len(location_ids), receipts, skipped)
                    context.log.info(str(progress))
                    reporter.revenue(progress)
            if failed:
                reporter.say(f"check failed: {REVENUE_KEY.to_user_string()} {LOADED_CHECK}")
            yield dg.AssetCheckResult(
                check_name=LOADED_CHECK, asset_key=REVENUE_KEY, passed=not failed,
                metadata=LoadedCheck(len(days), len(location_ids), failed, never_loaded)
                .to_metadata(failures_metadata(failed)))
            if failed:
                raise dg.Failure(description=f"{len(failed)} of {len(days) * len(location_ids)} "
                                 f"revenue partitions of {days[0]}..{days[-1]} not loaded; "
                                 f"first error: {failed[0].failure}",
                                 metadata={REPORTED_KEY: len(failed)})

    return revenue
