"""Three years of a 200-location chain in the lake's Delta tables, and what the weekly
housekeeping keeps of them (``make bench-housekeeping``, ``benchmarks/run.py --only
housekeeping``; not part of ``make bench``: about 20 minutes on two cores).

1,095 days, by the pipeline's own code (``Lake.write``, a process per core; the
publications and housekeeping of ``pipeline.lake.delta`` and ``pipeline.lake.housekeeping``):

- the first 1,046 in bulk: every location's revenue partition of each day (4 tables) and
  its voucher snapshot of the next (2 tables) committed once, then published together, as
  an older lake's conversion is. What the nights of those days would have left beyond
  that is gone by the end anyway: replaced files after the vacuum's 7 days, log entries
  after the log's 30 days;
- the last 49 (seven weeks) played night by night, as the nightly schedule runs them:
  each location's yesterday and the ``lookback_days`` (3) before it written again, the
  night's voucher snapshot, the revenue published as a 200-location nightly does (every
  ``PUBLISH_SECONDS`` of its 67.3 s, ``--only nightly``, and at its end), the snapshots
  once; on Sundays at 05:00, housekeeping (``tidy``, the default retention of 168 h).

The partitions hold no rows: files and commits, what is counted, do not depend on them.
Delta's retentions compare times, so the nights run in a process under libfaketime
(Debian's ``faketime``; ``make bench-housekeeping`` installs it) whose clock is set to
each night; file modification times, which the kernel sets, are set to the night's
(``os.utime``) once the night is done, as if it had happened then. The lake lies in
``/dev/shm`` where it has the inodes (some 4.4 million; fsyncs on disk would take most
of the time), else in the temp folder.

Measured: per table, before and after the last housekeeping, its data files on disk, the
files of its snapshot, its log's commit files and checkpoints; the seconds of the bulk
publication, of each housekeeping and of each played night's publications.
"""

from __future__ import annotations

import glob
import json
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_DAY = date(2023, 6, 1)
"""The first business date: every night lies before the real date, so a file the kernel
stamped with the real time is one the simulation has not stamped yet."""
NIGHTLY_SECONDS = 67.3
"""The 200-location nightly's wall time (``benchmarks/run.py --only nightly``)."""
LOOKBACK_DAYS = 3
PLAYED_NIGHTS = 49
"""Nights played one by one at the end: seven weeks, so that the last housekeeping finds
a checkpoint older than the log's 30 days (what lets it remove log entries)."""
RETENTION_HOURS = 168
FAKETIME = "/usr/lib/*/faketime/libfaketimeMT.so.1"
REVENUE = ("receipts", "receipt_items", "item_side_dishes", "payments")
VOUCHERS = ("vouchers", "voucher_transactions")


def bench_housekeeping(locations: int, years: int) -> dict:
    """Play the nights in a process under libfaketime; its figures."""
    libraries = glob.glob(FAKETIME)
    if not libraries:
        raise SystemExit("libfaketime is missing: make bench-housekeeping installs Debian's "
                         "faketime")
    with tempfile.TemporaryDirectory(dir=_memory_folder(locations, years * 365)) as tmp:
        clock = Path(tmp) / "clock"
        _set_clock(clock, datetime.combine(FIRST_DAY, datetime.min.time()))
        env = os.environ | {"LD_PRELOAD": libraries[0], "FAKETIME_TIMESTAMP_FILE": str(clock),
                            "FAKETIME_NO_CACHE": "1", "DONT_FAKE_MONOTONIC": "1",
                            "PYTHONPATH": str(ROOT)}
        out = Path(tmp) / "result.json"
        subprocess.run([sys.executable, __file__, str(Path(tmp) / "lake"), str(clock),
                        str(locations), str(years * 365), str(out)], env=env, check=True)
        return json.loads(out.read_text())


def _memory_folder(locations: int, days: int) -> Path | None:
    """``/dev/shm`` if it has the inodes the lake takes (files and folders: about 20 per
    partition of both areas), else None (the temp folder on disk)."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return None
    return shm if os.statvfs(shm).f_favail > 20 * locations * days else None


def _set_clock(clock: Path, at: datetime) -> None:
    temp = clock.with_suffix(".tmp")
    temp.write_text(f"@{at:%Y-%m-%d %H:%M:%S}\n")
    os.replace(temp, clock)


def _write(args: tuple[str, list[int], list[date], list[date]]) -> list[str]:
    """Partitions of ``locations``: revenue of ``days``, voucher snapshots of
    ``snapshot_days``; the files written."""
    from pipeline.lake.store import Lake
    from pipeline.warehouse.models import LAKE_AREAS

    root, locations, days, snapshot_days = args
    lake = Lake(Path(root))
    revenue = {t: LAKE_AREAS["revenue"][t].empty_table() for t in REVENUE}
    vouchers = {t: LAKE_AREAS["vouchers"][t].empty_table() for t in VOUCHERS}
    written = []
    for location_id in locations:
        for day in days:
            written += map(str, lake.write("revenue", revenue, {
                "location_id": location_id, "business_date": day.isoformat()},
                publish=False).values())
        for day in snapshot_days:
            written += map(str, lake.write("vouchers", vouchers, {
                "location_id": location_id, "snapshot_date": day.isoformat()},
                publish=False).values())
    return written


def _stamp(paths: list[str], now: float) -> None:
    """Give files the kernel stamped with the real time the simulated one."""
    for path in paths:
        if os.stat(path).st_mtime > now + 3600:
            os.utime(path, (now, now))


def _logs(root: Path) -> list[str]:
    return [str(p) for t in (*REVENUE, *VOUCHERS) for p in (root / t / "_delta_log").glob("*")]


def _count(root: Path) -> dict:
    from deltalake import DeltaTable

    found = {}
    for table in (*REVENUE, *VOUCHERS):
        log = root / table / "_delta_log"
        snapshot = DeltaTable(str(root / table))
        found[table] = {
            "files_on_disk": sum(1 for _ in (root / table).rglob("part-*.parquet")),
            "files_in_snapshot": len(snapshot.file_uris()),
            "log_commits": len(list(log.glob("*.json"))),
            "log_checkpoints": len(list(log.glob("*.checkpoint.parquet"))),
            "version": snapshot.version()}
    return found


def play(root: Path, clock: Path, locations: int, nights: int) -> dict:
    """The nights, one after another (see the module)."""
    from pipeline.lake.housekeeping import tidy
    from pipeline.lake.store import Lake
    from pipeline.load.steps import PUBLISH_SECONDS

    lake = Lake(root)
    workers = os.cpu_count() or 1
    chain = list(range(1, locations + 1))
    publications = max(1, math.ceil(NIGHTLY_SECONDS / PUBLISH_SECONDS))
    groups = [chain[i::publications] for i in range(publications)]
    publish_seconds: list[float] = []
    tidy_seconds: list[float] = []
    before = after = None
    started = time.perf_counter()
    bulk = max(0, nights - PLAYED_NIGHTS)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        days = [FIRST_DAY + timedelta(days=n) for n in range(bulk)]
        _set_clock(clock, datetime.combine(FIRST_DAY + timedelta(days=bulk),
                                           datetime.min.time()))
        list(pool.map(_write, [(str(root), [location_id], days,
                                [d + timedelta(days=1) for d in days])
                               for location_id in chain]))
        bulk_written = time.perf_counter()
        lake.sync()
        bulk_published = time.perf_counter()
        _stamp(_logs(root), time.time())
        for n in range(bulk, nights):
            day = FIRST_DAY + timedelta(days=n)
            night = datetime.combine(day + timedelta(days=1), datetime.min.time())
            _set_clock(clock, night.replace(hour=3))
            days = [day - timedelta(days=k) for k in range(LOOKBACK_DAYS, -1, -1)
                    if day - timedelta(days=k) >= FIRST_DAY]
            # (the bulk wrote the days before; the lookback writes them again)
            written: list[str] = []
            seconds = 0.0
            for group in groups:
                for paths in pool.map(_write, [(str(root), group[w::workers], days,
                                                [night.date()]) for w in range(workers)]):
                    written += paths
                t0 = time.perf_counter()
                lake.publish("revenue")
                seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            lake.publish("vouchers")
            publish_seconds.append(seconds + time.perf_counter() - t0)
            _stamp(written + _logs(root), time.time())
            if night.weekday() == 6:  # Sunday
                last = n + 7 >= nights
                _set_clock(clock, night.replace(hour=5))
                before = _count(root) if last else before
                t0 = time.perf_counter()
                tidy(lake, RETENTION_HOURS)
                tidy_seconds.append(time.perf_counter() - t0)
                _stamp(_logs(root), time.time())
                after = _count(root) if last else after
    return {
        "locations": locations, "days": nights, "bulk_days": bulk,
        "played_nights": nights - bulk, "lookback_days": LOOKBACK_DAYS,
        "revenue_publications_per_night": publications, "retention_hours": RETENTION_HOURS,
        "bulk_write_seconds": round(bulk_written - started, 1),
        "bulk_publish_seconds": round(bulk_published - bulk_written, 1),
        "before_last_housekeeping": before, "after_last_housekeeping": after,
        "publish_seconds_per_night": [round(s, 2) for s in publish_seconds],
        "housekeeping_seconds": [round(s, 1) for s in tidy_seconds],
        "wall_seconds": round(time.perf_counter() - started, 1)}


if __name__ == "__main__":
    lake_root, clock_file, chain_size, night_count, result = sys.argv[1:]
    figures = play(Path(lake_root), Path(clock_file), int(chain_size), int(night_count))
    Path(result).write_text(json.dumps(figures))
