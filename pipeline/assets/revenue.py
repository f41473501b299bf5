"""Revenue report -> the lake: every location's receipts of each business date."""

import contextlib
import os
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from decimal import Decimal

import dagster as dg
import duckdb

from pipeline.assets.report import markdown_table
from pipeline.extract.schemas import REVENUE_TABLES
from pipeline.lake import Lake
from pipeline.partitions import LoadConfig, selected_locations
from pipeline.pos_api.errors import NOT_TRIED
from pipeline.settings import Settings
from pipeline.source import PosSource
from pipeline.steps import DayOutcome, load_revenue_days, partition_key
from pipeline.warehouse import ModelError, Warehouse

REVENUE_KEY = dg.AssetKey(["lake", "revenue"])
LOADED_CHECK = "every_location_loaded"
PROGRESS_SECONDS = 2
"""How often a long load says how far it is (each line is an event in the run's log)."""


def day_metadata(day: DayOutcome, lake: Lake) -> dict:
    """What a person checks first about one business date of the revenue lake."""
    turnover = sum((p.turnover_net for p in day.partitions), Decimal(0))
    unknown = dict(sum((Counter(p.unknown_fields) for p in day.partitions), Counter()))
    return {
        "dagster/row_count": sum(p.receipts for p in day.partitions),
        "turnover_net": dg.MetadataValue.text(str(turnover)),
        "complete": day.complete,
        "partitions_kept": sum(p.kept for p in day.partitions),
        "pages": sum(p.pages for p in day.partitions),
        "failed_locations": dg.MetadataValue.json(
            {str(p.location_id): p.error for p in day.failed}
            | {str(loc): "never loaded" for loc in day.missing}),
        "unknown_fields": dg.MetadataValue.json(unknown),
        "locations": dg.MetadataValue.md(markdown_table(
            ["location", "receipts", "turnover_net", "pages", "retries", "duplicates dropped",
             "other days' receipts skipped", "unknown transaction types", "unknown fields",
             "error"],
            [[p.location_id, p.receipts, p.turnover_net, p.pages, p.retries,
              p.duplicates_dropped, p.outside_day,
              ", ".join(f"{k} ({v})" for k, v in p.unknown_types.items()),
              ", ".join(f"{k} ({v})" for k, v in p.unknown_fields.items()), p.error or ""]
             for p in day.partitions])),
        "lake": dg.MetadataValue.path(lake.describe("receipts")),
    }


class Prebuilds:
    """The warehouse's parts of a load's months, computed while the load goes on
    (``Warehouse.prebuild``), so that the build after it has little left to do.

    A month is ready once every date of it in the load is done; the last month is left
    to the build. One prebuild runs at a time, in a thread of the lowest priority (the
    load and the POS come first), and takes every month that became ready meanwhile. A
    prebuild that fails costs the build that work only: it is kept in ``problems`` and
    the load goes on. Use as a context manager: leaving it drops a prebuild not started
    and waits for the one under way.
    """

    def __init__(self, warehouse: Warehouse, days: list[date]):
        self.warehouse = warehouse
        self.problems: list[str] = []
        self.left = Counter(day.strftime("%Y-%m") for day in days)
        self.last = max(self.left, default=None)
        self.loaded: dict[str, list[str]] = {}
        self.ready: dict[str, list[str]] = {}  # months for the next prebuild
        self.lock = threading.Lock()
        self.futures: list = []
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prebuild",
                                       initializer=_lower_priority)

    def __enter__(self) -> "Prebuilds":
        return self

    def __exit__(self, *exc) -> None:
        for future in self.futures:
            future.cancel()
        self.pool.shutdown(wait=True)

    def day_done(self, day: DayOutcome) -> None:
        month = day.business_date.strftime("%Y-%m")
        self.loaded.setdefault(month, []).extend(
            "/".join(f"{k}={v}" for k, v in partition_key(p.location_id, day.business_date)
                     .items()) for p in day.partitions if not p.error)
        self.left[month] -= 1
        if self.left[month] or month == self.last:
            return
        with self.lock:
            if not self.ready:  # else the prebuild waiting to start takes it too
                self.futures.append(self.pool.submit(self._prebuild))
            self.ready[month] = self.loaded.pop(month)

    def _prebuild(self) -> int:
        with self.lock:
            ready, self.ready = self.ready, {}
        try:
            return self.warehouse.prebuild(
                {"revenue": [p for partitions in ready.values() for p in partitions]})
        except (ModelError, duckdb.Error, OSError) as exc:
            self.problems.append(f"prebuild of {', '.join(ready)} failed (the build "
                                 f"computes it): {exc}")
            return 0


def _lower_priority() -> None:
    """This thread (and the threads it starts, DuckDB's) yields the CPU to the others."""
    with contextlib.suppress(AttributeError, OSError):  # Linux only: a thread's own policy
        os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))


def _builds_warehouse(context: dg.AssetExecutionContext) -> bool:
    """The run builds the warehouse after this step (it selected the warehouse's models)."""
    keys = context.run.asset_selection or context.job_def.asset_layer.selected_asset_keys
    return any(key.path[0] == "warehouse" for key in keys)


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
                pos: dg.ResourceParam[PosSource], lake: dg.ResourceParam[Lake],
                warehouse: dg.ResourceParam[Warehouse]):
        """Receipts, item lines, side dishes and payments of each business date, every location."""
        location_ids = selected_locations(settings, config)
        days = [date.fromisoformat(key) for key in context.partition_keys]
        configured = [loc.id for loc in settings.locations]
        failed: list[list] = []
        never_loaded: dict[int, int] = {}
        loaded = receipts = 0
        said = time.monotonic()
        skipped = 0
        with (Prebuilds(warehouse, days) if _builds_warehouse(context)
              else contextlib.nullcontext()) as prebuilds:
            for n, day in enumerate(load_revenue_days(pos, lake, days, location_ids,
                                                      configured, config.missing_only), 1):
                if prebuilds:
                    prebuilds.day_done(day)
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
        for problem in prebuilds.problems if prebuilds else []:
            context.log.warning(problem)
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
