"""Load a range of partitions outside Dagster (the ``pos-etl load`` command).

Runs the same functions as the Dagster assets, partitions in parallel under the
source's request budget, and reports every partition's outcome.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from pipeline.extract.revenue import load_revenue_partition
from pipeline.pos_api.errors import PosApiError
from pipeline.settings import ConfigError
from pipeline.source import PosSource


@dataclass
class PartitionOutcome:
    location_id: int
    business_date: date
    receipts: int = 0
    turnover_net: Decimal | None = None
    error: str | None = None


@dataclass
class LoadReport:
    partitions: list[PartitionOutcome] = field(default_factory=list)
    catalog: dict[int, dict[str, int]] = field(default_factory=dict)
    catalog_errors: dict[int, str] = field(default_factory=dict)
    vouchers: dict[str, int] | None = None
    vouchers_note: str | None = None
    voucher_error: str | None = None
    models: list[str] = field(default_factory=list)
    warehouse_path: str | None = None
    check_failures: list[str] = field(default_factory=list)
    model_error: str | None = None

    @property
    def failed(self) -> list[PartitionOutcome]:
        return [p for p in self.partitions if p.error]

    @property
    def ok(self) -> bool:
        return not (self.failed or self.catalog_errors or self.check_failures
                    or self.voucher_error or self.model_error)

    def summary(self) -> str:
        """What a person reads after a load: counts, turnover, and every failure by name."""
        loaded = [p for p in self.partitions if not p.error]
        lines = [f"revenue partitions: {len(loaded)} loaded, {len(self.failed)} failed; "
                 f"{sum(p.receipts for p in loaded)} receipts"]
        for p in self.failed:
            lines.append(f"  FAILED {p.location_id} {p.business_date.isoformat()}: {p.error}")
        if self.catalog or self.catalog_errors:
            lines.append(f"catalog and menu snapshots: {len(self.catalog)} locations taken, "
                         f"{len(self.catalog_errors)} failed")
            for loc, err in self.catalog_errors.items():
                lines.append(f"  FAILED catalog/menu {loc}: {err}")
        if self.vouchers is not None:
            lines.append(f"voucher ledger: {self.vouchers['vouchers']} vouchers, "
                         f"{self.vouchers['voucher_transactions']} transactions")
        elif self.vouchers_note:
            lines.append(f"voucher ledger: {self.vouchers_note}")
        if self.voucher_error:
            lines.append(f"  FAILED voucher ledger: {self.voucher_error}")
        if self.warehouse_path:
            lines.append(f"warehouse: {self.warehouse_path} ({len(self.models)} models)")
            for failure in self.check_failures:
                lines.append(f"  CHECK FAILED {failure}")
        if self.model_error:
            lines.append(f"  FAILED warehouse build (the previous warehouse is kept): "
                         f"{self.model_error}")
        lines.append("result: OK" if self.ok else "result: FAILED")
        return "\n".join(lines)


def date_range(start: date, end: date) -> list[date]:
    """Every date from ``start`` to ``end``, both included."""
    if end < start:
        raise ConfigError(f"--end {end} is before --start {start}")
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def load_revenue_range(source: PosSource, location_ids: list[int], days: list[date],
                       progress: Callable[[str], None] | None = None) -> list[PartitionOutcome]:
    """Load every (location, day) partition; a failing partition does not stop the others."""
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    jobs = iter([(loc, day) for day in days for loc in location_ids])
    total = len(days) * len(location_ids)
    outcomes: list[PartitionOutcome] = []
    workers = min(total, source.settings.source.max_concurrent_requests) or 1
    # At most `workers` partitions in flight, and each result dropped once reported, so
    # memory is bounded by a few partitions however long the range is.
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="load") as pool:
        running: dict = {}

        def submit_next() -> None:
            job = next(jobs, None)
            if job is not None:
                running[pool.submit(load_revenue_partition, source, *job)] = job

        for _ in range(workers):
            submit_next()
        while running:
            done_set, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done_set:
                loc, day = running.pop(future)
                outcome = PartitionOutcome(loc, day)
                try:
                    part = future.result()
                    outcome.receipts = part.row_counts["receipts"]
                    outcome.turnover_net = part.turnover_net
                    status = f"{outcome.receipts:6d} receipts  turnover {part.turnover_net:,.2f}"
                    del part
                except (PosApiError, ConfigError) as exc:
                    outcome.error = str(exc)
                    status = f"FAILED: {exc}"
                outcomes.append(outcome)
                progress(f"[{len(outcomes):>4}/{total}] revenue {loc} {day.isoformat()}  "
                         f"{status}")
                submit_next()
    outcomes.sort(key=lambda o: (o.location_id, o.business_date))
    return outcomes


def load_catalogs(source: PosSource, location_ids: list[int], report: LoadReport,
                  progress: Callable[[str], None]) -> None:
    """Take today's catalog and menu snapshot of each location, and the voucher ledger's.

    Failures are recorded, not raised; a ledger without ``voucher_url`` is reported.
    """
    from pipeline.extract.catalog import load_catalog_snapshot
    from pipeline.extract.menu import load_menu_snapshot
    from pipeline.extract.snapshots import snapshot_date
    from pipeline.extract.vouchers import load_voucher_snapshot

    day = snapshot_date(source.settings)
    for loc in location_ids:
        try:
            snap = load_catalog_snapshot(source, loc, day)
            menus = load_menu_snapshot(source, loc, day)
            report.catalog[loc] = {**snap.row_counts, **menus.row_counts}
            progress(f"catalog {loc} {day.isoformat()}  {snap.row_counts['products']} products, "
                     f"{snap.row_counts['product_categories']} categories, "
                     f"{snap.row_counts['spots']} spots, "
                     f"{menus.row_counts['menu_entries']} menu entries")
        except PosApiError as exc:
            report.catalog_errors[loc] = str(exc)
            progress(f"catalog {loc} FAILED: {exc}")
    try:
        vouchers = load_voucher_snapshot(source, day)
    except (PosApiError, ConfigError) as exc:
        report.voucher_error = str(exc)
        progress(f"voucher ledger FAILED: {exc}")
        return
    if vouchers is None:
        report.vouchers_note = "not loaded: source.voucher_url is not configured"
    else:
        report.vouchers = vouchers.row_counts
    progress(f"voucher ledger: {report.vouchers or report.vouchers_note}")


def run_load(settings, start: date, end: date, location_ids: list[int] | None = None, *,
             catalog: bool = True, models: bool = True,
             progress: Callable[[str], None] | None = None, source: PosSource | None = None
             ) -> LoadReport:
    """``pos-etl load``: revenue partitions of the range, catalog snapshots, then the models."""
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    ids = location_ids or [loc.id for loc in settings.locations]
    for loc in ids:
        settings.location(loc)
    settings.require_keys(ids)
    days = date_range(start, end)
    report = LoadReport()
    with (source or PosSource(settings)) as src:
        report.partitions = load_revenue_range(src, ids, days, progress)
        if catalog:
            load_catalogs(src, ids, report, progress)
    if models:
        from pipeline.checks import run_checks
        from pipeline.warehouse import ModelError, build_warehouse

        outcomes = []
        try:
            result = build_warehouse(settings.warehouse.lake_dir,
                                     settings.warehouse.warehouse_path,
                                     on_built=lambda con: outcomes.extend(run_checks(con)))
        except ModelError as exc:  # the old warehouse stays in place
            report.model_error = str(exc)
            progress(f"warehouse build FAILED: {exc}")
            return report
        report.models = result.order
        report.warehouse_path = str(result.path)
        report.check_failures = [f"{o.check.model}.{o.check.name}: {o.failing_rows} rows"
                                 for o in outcomes if not o.passed]
        progress(f"warehouse {result.path}: {len(result.order)} models built, "
                 f"{len(outcomes) - len(report.check_failures)}/{len(outcomes)} checks passed")
    return report
