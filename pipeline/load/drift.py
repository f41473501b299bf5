"""Source drift: days already in the lake read again from the POS and compared.

The nightly run re-pulls yesterday and ``lookback_days`` before it; a POS can still
change older days (a late correction). Each night one older stretch of
``schedule.drift_check_days`` days is read again in rotation, and ``pos-etl verify``
does the same for any range. A day whose receipt count or turnover differs from its
committed load is replaced (one commit, as every lake write) and the drift is recorded
in the lake table ``source_drift`` (which day, before and after), which the warehouse
shows as ``rpt_source_drift``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pyarrow as pa

from pipeline.areas.drift.tables import SOURCE_DRIFT
from pipeline.areas.revenue.commits import with_turnovers, write_revenue_partition
from pipeline.areas.revenue.extract import extract_revenue_partition
from pipeline.core.outcomes import ConfigError, Failure
from pipeline.core.settings import Settings
from pipeline.lake.layout import LoadRecord
from pipeline.lake.store import LakeStore, partition_path
from pipeline.load.steps import partition_key
from pipeline.pos_api.errors import PosApiError
from pipeline.pos_api.source import PosSource


@dataclass
class DayCheck:
    """One location's business date read again: unchanged, drifted (and replaced) or failed."""

    location_id: int
    business_date: date
    drifted: bool = False
    before: tuple[int, Decimal] | None = None
    after: tuple[int, Decimal] | None = None
    failure: Failure | None = None


def rotation_days(settings: Settings, today: date) -> list[date]:
    """Tonight's stretch of older days (before the nightly's lookback).

    The older days are cut into stretches of ``drift_check_days`` from
    ``schedule.start_date`` on, and each night takes the next one: night number modulo
    the number of stretches rounded up to a power of two (so the cycle keeps its length
    while the history grows; a night past the last stretch takes one of the second
    half again). Every older day comes round within that many nights.
    """
    size = settings.schedule.drift_check_days
    first = settings.schedule.start_date
    last = today - timedelta(days=settings.schedule.lookback_days + 2)
    if size == 0 or last < first:
        return []
    stretches = (last - first).days // size + 1
    cycle = 1 << (stretches - 1).bit_length()
    stretch = today.toordinal() % cycle
    if stretch >= stretches:
        stretch -= cycle // 2
    start = first + timedelta(days=size * stretch)
    return [day for day in (start + timedelta(days=n) for n in range(size)) if day <= last]


def check_day(source: PosSource, lake: LakeStore, location_id: int, day: date,
              committed: LoadRecord | None) -> DayCheck:
    """Read one committed day (``committed``: its load) again; replace it and record the
    drift when it changed."""
    check = DayCheck(location_id, day)
    partition = partition_key(location_id, day)
    if committed is None:
        return check  # never loaded: the load's business, not drift
    try:
        part = extract_revenue_partition(source, location_id, day)
    except (PosApiError, ConfigError) as exc:
        check.failure = Failure.of(exc, source.redact)
        return check
    meta = committed.metadata
    with_turnovers([part])
    check.after = (part.row_counts["receipts"], part.turnover_net)
    check.before = (int(meta["receipts"]), Decimal(meta["turnover_net"]))
    if check.before == check.after:
        return check
    check.drifted = True
    write_revenue_partition(lake, part)
    new_load = lake.committed("revenue", partition).load_id
    now = datetime.now(UTC)
    record = pa.Table.from_pylist([{
        "location_id": location_id, "business_date": day, "detected_at": now,
        "receipts_before": check.before[0],
        "receipts_after": check.after[0],
        "turnover_net_before": check.before[1],
        "turnover_net_after": check.after[1],
        "replaced_load_id": committed.load_id, "new_load_id": new_load,
    }], schema=SOURCE_DRIFT)
    lake.write("drift", {"source_drift": record},
               {**partition, "detected": f"{now:%Y%m%dT%H%M%S%fZ}"})
    return check


def check_days(source: PosSource, lake: LakeStore, location_ids: list[int],
               days: list[date]) -> list[DayCheck]:
    """``check_day`` for every location and day, ``max_concurrent_requests`` at a time (a
    chain's night reads its stretch of every location: 1,400 days for 200 locations)."""
    jobs = [(loc, day) for loc in location_ids for day in days]
    # the loads of the whole stretch read at once: a date's file holds its locations
    loads = lake.records("revenue", [partition_key(*job) for job in jobs])
    workers = max(1, min(len(jobs), source.settings.source.max_concurrent_requests))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="drift") as pool:
        return list(pool.map(lambda job: check_day(
            source, lake, *job, loads.get(partition_path(partition_key(*job)))), jobs))
