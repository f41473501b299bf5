"""Load a range of partitions outside Dagster (the ``pos-etl load`` command).

Runs the same functions as the Dagster assets, partitions in parallel under the
source's request budget, and reports every partition's outcome.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
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
    models: list[str] = field(default_factory=list)
    warehouse_path: str | None = None

    @property
    def failed(self) -> list[PartitionOutcome]:
        return [p for p in self.partitions if p.error]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.catalog_errors


def date_range(start: date, end: date) -> list[date]:
    """Every date from ``start`` to ``end``, both included."""
    if end < start:
        raise ConfigError(f"--end {end} is before --start {start}")
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def load_revenue_range(source: PosSource, location_ids: list[int], days: list[date],
                       progress: Callable[[str], None] | None = None) -> list[PartitionOutcome]:
    """Load every (location, day) partition; a failing partition does not stop the others."""
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    jobs = [(loc, day) for day in days for loc in location_ids]
    outcomes: list[PartitionOutcome] = []
    workers = min(len(jobs), source.settings.source.max_concurrent_requests) or 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="load") as pool:
        futures = {pool.submit(load_revenue_partition, source, loc, day): (loc, day)
                   for loc, day in jobs}
        for done, future in enumerate(as_completed(futures), start=1):
            loc, day = futures[future]
            outcome = PartitionOutcome(loc, day)
            try:
                part = future.result()
                outcome.receipts = part.row_counts["receipts"]
                outcome.turnover_net = part.turnover_net
                status = f"{outcome.receipts:6d} receipts  turnover {part.turnover_net:,.2f}"
            except (PosApiError, ConfigError) as exc:
                outcome.error = str(exc)
                status = f"FAILED: {exc}"
            outcomes.append(outcome)
            progress(f"[{done:>4}/{len(jobs)}] revenue {loc} {day.isoformat()}  {status}")
    outcomes.sort(key=lambda o: (o.location_id, o.business_date))
    return outcomes
