"""Files that follow loads (``benchmarks/run.py --only delta``; part of ``make bench``).

20 locations x 10 business dates of the sandbox's receipts (its generator, the
pipeline's own flattening, no HTTP), committed as a load commits them (``[lake]
commit_partitions`` at a time), then the last 3 dates of every location loaded again (a
night's lookback), then housekeeping. Measured: the files of the revenue table's newest
version after each step (target after housekeeping: <= 30; the earlier lake held 200 in
the receipts table alone, a file per location and date), and the bytes of the lake per
receipt beside what the earlier lake's files of the same rows took (snappy, a file per
table and partition; target: <= 0.65x). Checked: the turnover Polars reads from the
Delta table equals the warehouse's built from it, to the cent.
"""

from __future__ import annotations

import tempfile
from datetime import date, timedelta
from pathlib import Path

LOCATIONS = 20
DAYS = 10
FIRST_DAY = date(2025, 6, 1)


def _parts(location_ids: list[int], days: list[date]):
    from benchmarks.peers import client_page
    from pipeline.areas.revenue.extract import flatten_receipts
    from pos_sandbox import world
    from pos_sandbox.receipts import SandboxData
    from pos_sandbox.revenue import RevenueBook

    book = RevenueBook(SandboxData(), days_kept=2)
    chain = world.chain(max(location_ids)).locations
    for day in days:
        for location_id in location_ids:
            location = chain[location_id - 1]
            bodies = [r.body for r in book.calendar_date(location.id, day)]
            yield flatten_receipts([client_page(b"[" + b",".join(bodies) + b"]")],
                                   location_id=location.id, business_date=day,
                                   tz=location.tz, short_code=location.short_code)


def _earlier_bytes(parts) -> int:
    """What the earlier lake's files of these partitions took: a snappy file per table
    and partition, without dictionaries or statistics."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = 0
    for part in parts:
        for table in part.tables.values():
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="snappy", use_dictionary=False,
                           write_statistics=False, write_page_checksum=True)
            size += sink.getvalue().size
    return size


def bench_files(locations: int = LOCATIONS, days: int = DAYS) -> dict:
    import duckdb
    import polars as pl

    from pipeline.areas.revenue.commits import lake_partition, with_turnovers
    from pipeline.areas.revenue.macros import macro_sql
    from pipeline.core.settings import LakeSettings
    from pipeline.lake.housekeeping import tidy
    from pipeline.lake.store import Lake
    from pipeline.warehouse import build_warehouse
    from pos_sandbox import world

    most = LakeSettings().commit_partitions
    dates = [FIRST_DAY + timedelta(days=n) for n in range(days)]
    ids = list(range(1, locations + 1))
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp) / "lake")
        parts = list(_parts(ids, dates))
        receipts = sum(p.row_counts["receipts"] for p in parts)
        earlier = _earlier_bytes(parts)
        for start in range(0, len(parts), most):
            lake.write_batch("revenue", [lake_partition(p) for p in
                                         with_turnovers(parts[start:start + most])])
        loaded = len(lake.area_table("revenue").snapshot().files())
        again = list(_parts(ids, dates[-3:]))
        for start in range(0, len(again), most):
            lake.write_batch("revenue", [lake_partition(p) for p in
                                         with_turnovers(again[start:start + most])])
        reloaded = len(lake.area_table("revenue").snapshot().files())
        tidy(lake, retention_hours=0)
        files = lake.area_table("revenue").snapshot().files()
        size = sum((lake.root / "revenue" / f).stat().st_size for f in files)
        warehouse = Path(tmp) / "warehouse.duckdb"
        build_warehouse(lake.root, warehouse)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            built = dict(((loc, day), t) for loc, day, t in con.execute(
                "select location_id, business_date, turnover_net from fct_turnover_daily"
            ).fetchall())
        rows = pl.read_delta(str(lake.root / "revenue"))
        with duckdb.connect() as con:
            for sql in macro_sql():
                con.execute(sql)
            for table, alias in (("receipts", "r"), ("receipt_items", "i")):
                con.register(alias, rows.select("location_id", "business_date", table)
                             .explode(table).drop_nulls(table).unnest(table).to_arrow())
            read = dict(((loc, day), t) for loc, day, t in con.execute("""
                select i.location_id, i.business_date,
                       sum(line_amount(i.net_amount, i.quantity))
                from i join r using (location_id, business_date, transaction_id)
                where is_revenue_effective(r.payment_group_name, r.transaction_type)
                group by all""").fetchall())
    ratio = size / earlier
    return {"locations": locations, "days": days, "receipts": receipts,
            "commit_partitions": most, "chain_sample": [loc.short_code for loc in
                                                        world.chain(locations).locations[:2]],
            "files_after_load": loaded, "files_after_reload_of_3_days": reloaded,
            "files_after_housekeeping": len(files),
            "bytes_per_receipt": round(size / receipts, 1),
            "earlier_bytes_per_receipt": round(earlier / receipts, 1),
            "bytes_ratio": round(ratio, 3),
            "turnover_equal_to_the_cent": read == built,
            "targets_of_43": {"files": 30, "bytes_ratio": 0.65},
            "met": len(files) <= 30 and ratio <= 0.65 and read == built}
