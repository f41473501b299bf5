"""Revenue report -> the lake: every location's receipts of each business date."""

import time
import warnings
from datetime import date
from decimal import Decimal

import dagster as dg

from pipeline.assets.report import markdown_table
from pipeline.extract.schemas import REVENUE_TABLES
from pipeline.lake import Lake
from pipeline.partitions import LoadConfig, selected_locations
from pipeline.pos_api.errors import NOT_TRIED
from pipeline.settings import Settings
from pipeline.source import PosSource
from pipeline.steps import DayOutcome, load_revenue_days

REVENUE_KEY = dg.AssetKey(["lake", "revenue"])
LOADED_CHECK = "every_location_loaded"
PROGRESS_SECONDS = 2
"""How often a long load says how far it is (each line is an event in the run's log)."""


def day_metadata(day: DayOutcome, lake: Lake) -> dict:
    """What a person checks first about one business date of the revenue lake."""
    turnover = sum((p.turnover_net for p in day.partitions), Decimal(0))
    return {
        "dagster/row_count": sum(p.receipts for p in day.partitions),
        "turnover_net": dg.MetadataValue.text(str(turnover)),
        "complete": day.complete,
        "failed_locations": dg.MetadataValue.json(
            {str(p.location_id): p.error for p in day.failed}
            | {str(loc): "never loaded" for loc in day.missing}),
        "locations": dg.MetadataValue.md(markdown_table(
            ["location", "receipts", "turnover_net", "pages", "retries", "duplicates dropped",
             "unknown transaction types", "error"],
            [[p.location_id, p.receipts, p.turnover_net, p.pages, p.retries,
              p.duplicates_dropped, ", ".join(f"{k} ({v})" for k, v in p.unknown_types.items()),
              p.error or ""]
             for p in day.partitions])),
        "lake": dg.MetadataValue.path(lake.describe("receipts")),
    }


def build_revenue_asset(settings: Settings,
                        partitions_def: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    """The revenue lake asset of these settings, partitioned by business date.

    One run loads a range of dates (``BackfillPolicy.single_run``, a Beta parameter of
    Dagster's whose warning is silenced here).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return _revenue_asset(settings, partitions_def)


def _revenue_asset(settings: Settings,
                   partitions_def: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        key=REVENUE_KEY,
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool="pos_api",
        group_name="lake",
        kinds={"parquet"},
        check_specs=[dg.AssetCheckSpec(
            LOADED_CHECK, asset=REVENUE_KEY,
            description="every location the run loads has its revenue of every date in the lake")],
        metadata={"tables": ", ".join(REVENUE_TABLES)},
    )
    def revenue(context: dg.AssetExecutionContext, config: LoadConfig,
                pos: dg.ResourceParam[PosSource], lake: dg.ResourceParam[Lake]):
        """Receipts, item lines, side dishes and payments of each business date, every location."""
        location_ids = selected_locations(settings, config)
        days = [date.fromisoformat(key) for key in context.partition_keys]
        configured = [loc.id for loc in settings.locations]
        failed: list[list] = []
        never_loaded: dict[int, int] = {}
        loaded = receipts = 0
        said = time.monotonic()
        skipped = 0
        for n, day in enumerate(load_revenue_days(pos, lake, days, location_ids, configured), 1):
            for p in day.failed:
                if p.error.startswith(NOT_TRIED):  # said once, with the first failure
                    skipped += 1
                    continue
                context.log.warning(f"revenue {p.location_id} {day.business_date}: {p.error}")
            failed += [[p.location_id, day.business_date, p.error] for p in day.failed]
            for loc in day.missing:
                never_loaded[loc] = never_loaded.get(loc, 0) + 1
            loaded += len(day.partitions) - len(day.failed)
            meta = day_metadata(day, lake)
            context.add_asset_metadata(meta, partition_key=day.business_date.isoformat())
            receipts += meta["dagster/row_count"]
            if time.monotonic() - said > PROGRESS_SECONDS or n == len(days):
                said = time.monotonic()
                context.log.info(f"revenue: {n}/{len(days)} business dates x "
                                 f"{len(location_ids)} locations, {receipts:,} receipts"
                                 + (f", {skipped:,} partitions not tried (see above)"
                                    if skipped else ""))
        check = dg.AssetCheckResult(
            check_name=LOADED_CHECK, asset_key=REVENUE_KEY, passed=not failed,
            metadata={"dates": len(days), "locations": len(location_ids),
                      "failed_partitions": len(failed),
                      "dates_never_loaded_by_location": dg.MetadataValue.json(
                          {str(loc): n for loc, n in never_loaded.items()}),
                      "failed_list": dg.MetadataValue.json([
                          {"location": loc, "business_date": day.isoformat(), "error": error}
                          for loc, day, error in failed]),
                      "failed": dg.MetadataValue.md(markdown_table(
                          ["location", "business date", "error"], failed[:100]))})
        if not loaded:
            yield check
            raise dg.Failure(description=f"no revenue partition of {days[0]}..{days[-1]} "
                             f"loaded; first error: {failed[0][2]}")
        yield dg.MaterializeResult(check_results=[check])


    return revenue
