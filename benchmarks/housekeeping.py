"""Three years of a 200-location chain's revenue in the lake, a night's commits on top of
30 days and of 3 years of it, and what housekeeping keeps (``make bench-housekeeping``,
``benchmarks/run.py --only housekeeping``; not part of ``make bench``).

By the pipeline's own code (``Lake.write_batch``, ``pipeline.lake.housekeeping.tidy``),
in one process:

1. the first 30 days in bulk, each day's 200 partitions committed together (a file a
   date, as a backfill commits them);
2. 7 nights played as the nightly runs them: yesterday and the ``lookback_days`` (3)
   before it of every location, committed ``[lake] commit_partitions`` (200) at a time,
   and the night's voucher snapshot; each night's commits timed;
3. the days up to 3 years (1,095) in bulk;
4. 7 more nights, timed the same;
5. housekeeping with a retention of 0 hours (everything no newest version holds goes).

The partitions hold no rows: files, commits and the log, what is measured, do not
depend on them (the chain benchmark measures bytes on real rows). Measured: the median
of each 7 nights' commit seconds and their ratio (target: within 1.2x), the files of the
revenue table's newest version after housekeeping (target: <= 1,500), the files on
disk, the log's commits and checkpoints.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

FIRST_DAY = date(2023, 6, 1)
LOOKBACK_DAYS = 3
NIGHTS = 7


def _count(root: Path, area: str) -> dict:
    from deltalake import DeltaTable

    log = root / area / "_delta_log"
    newest = DeltaTable(str(root / area))
    return {"files_on_disk": sum(1 for _ in (root / area).glob("*=*/*.parquet")),
            "files_in_newest_version": len(newest.file_uris()),
            "log_commits": len(list(log.glob("*.json"))),
            "log_checkpoints": len(list(log.glob("*.checkpoint.parquet"))),
            "version": newest.version()}


def bench_housekeeping(locations: int = 200, years: int = 3) -> dict:
    from pipeline.core.settings import LakeSettings
    from pipeline.lake.housekeeping import tidy
    from pipeline.lake.store import Lake, Replacement
    from pipeline.warehouse.lake_tables import LAKE_AREAS

    revenue = {t: s.empty_table() for t, s in LAKE_AREAS["revenue"].items()}
    vouchers = {t: s.empty_table() for t, s in LAKE_AREAS["vouchers"].items()}
    chain = list(range(1, locations + 1))
    most = LakeSettings().commit_partitions
    days = 365 * years

    def commit(lake: Lake, dates: list[date]) -> None:
        batch = [Replacement({"location_id": loc, "business_date": d.isoformat()}, revenue,
                             {"receipts": 0, "turnover_net": 0})
                 for d in dates for loc in chain]
        for start in range(0, len(batch), most):
            lake.write_batch("revenue", batch[start:start + most])

    def night(lake: Lake, n: int) -> float:
        day = FIRST_DAY + timedelta(days=n)
        t0 = time.perf_counter()
        commit(lake, [day - timedelta(days=k) for k in range(LOOKBACK_DAYS, -1, -1)])
        lake.write("vouchers", vouchers, {"snapshot_date": (day + timedelta(days=1))
                                          .isoformat()})
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp))
        started = time.perf_counter()
        for n in range(30):
            commit(lake, [FIRST_DAY + timedelta(days=n)])
        early = [night(lake, 30 + k) for k in range(NIGHTS)]
        for n in range(30 + NIGHTS, days - NIGHTS):
            commit(lake, [FIRST_DAY + timedelta(days=n)])
        late = [night(lake, days - NIGHTS + k) for k in range(NIGHTS)]
        before = _count(lake.root, "revenue")
        t0 = time.perf_counter()
        tidied = {t.table: t for t in tidy(lake, retention_hours=0)}
        tidy_seconds = time.perf_counter() - t0
        after = _count(lake.root, "revenue")
        ratio = statistics.median(late) / statistics.median(early)
        return {
            "locations": locations, "days": days, "lookback_days": LOOKBACK_DAYS,
            "commit_partitions": most,
            "night_seconds_at_30_days": [round(s, 3) for s in early],
            "night_seconds_at_3_years": [round(s, 3) for s in late],
            "night_ratio_3_years_to_30_days": round(ratio, 2),
            "revenue_before_housekeeping": before, "revenue_after_housekeeping": after,
            "dates_compacted": tidied["revenue"].compacted,
            "housekeeping_seconds": round(tidy_seconds, 1),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "targets_of_43": {"night_ratio": 1.2, "files_per_table": 1500},
            "met": ratio <= 1.2 and after["files_in_newest_version"] <= 1500}
