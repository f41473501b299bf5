"""The lake is Delta alone: one table per area, a row per partition, files per date, and
every other engine reads what our warehouse reads (#25, #43)."""

import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from deltalake import DeltaTable

from pipeline.areas import AREAS
from pipeline.areas.revenue.commits import lake_partition
from pipeline.lake.store import Lake
from pipeline.warehouse import build_warehouse
from tests.conftest import loaded_warehouse, make_settings, write_config
from tests.integration.test_integrity import commit_days, revenue_parts

DAYS = [date(2026, 9, 29) + timedelta(days=n) for n in range(3)]
REVENUE = ("receipts", "receipt_items", "item_side_dishes", "payments")


def delta_files(lake: Lake, area: str = "revenue") -> dict[str, list[str]]:
    """date folder -> the files the table's newest version holds there."""
    found: dict[str, list[str]] = {}
    for path in DeltaTable(str(lake.root / area)).file_uris():
        folder, name = path.rsplit("/", 1)
        found.setdefault(folder.rsplit("/", 1)[1], []).append(name)
    return found


def flat(lake: Lake, table: str, area: str = "revenue", version: int | None = None
         ) -> pl.DataFrame:
    """A lake table as a Delta reader flattens it (docs/lake.md's Polars query)."""
    rows = pl.read_delta(str(lake.root / area), version=version)
    keys = [k for k in ("location_id", "business_date", "snapshot_date") if k in rows.columns]
    return rows.select(*keys, "load_id", table).explode(table).drop_nulls(table) \
        .unnest(table)


def turnover_by_day(receipts: pl.DataFrame, items: pl.DataFrame
                    ) -> dict[tuple[int, date], Decimal]:
    """The revenue rule over a Delta reader's rows: lines of revenue-effective receipts."""
    with duckdb.connect() as con:
        from pipeline.areas.revenue.macros import macro_sql
        for sql in macro_sql():
            con.execute(sql)
        con.register("r", receipts.to_arrow())
        con.register("i", items.to_arrow())
        return {(loc, day): t for loc, day, t in con.execute("""
            select i.location_id, i.business_date, sum(line_amount(i.net_amount, i.quantity))
            from i join r using (location_id, business_date, transaction_id)
            where is_revenue_effective(r.payment_group_name, r.transaction_type)
            group by all""").fetchall()}


@pytest.fixture(scope="module")
def loaded(sandbox_url, tmp_path_factory):
    """Every area loaded from the sandbox over HTTP and built, as a night does."""
    settings = loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("delta") / "data",
                                date(2026, 10, 30), date(2026, 11, 1))
    return settings, Lake(settings.warehouse.lake_dir)


def test_every_area_is_one_delta_table_that_polars_reads_like_the_warehouse(loaded):
    settings, lake = loaded
    assert lake.areas() == sorted(a.name for a in AREAS if a.name not in (
        "drift", "ledger", "exports", "bank"))  # nothing closed, exported, drifted or banked
    # a file per business date: the night's three loaded the 3 locations together
    assert {d: len(f) for d, f in delta_files(lake).items()} == {
        f"business_date={d}": 1 for d in ("2026-10-30", "2026-10-31", "2026-11-01")}
    receipts, items = flat(lake, "receipts"), flat(lake, "receipt_items")
    assert receipts["total_amount"].dtype == pl.Decimal(18, 4)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        warehouse = {(loc, day): t for loc, day, t in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily"
        ).fetchall()}
        assert turnover_by_day(receipts, items) == warehouse
        assert receipts.height == con.execute("select count(*) from fct_receipts").fetchone()[0]
        assert flat(lake, "products", "catalog").height == con.execute(
            "select count(*) from dim_products").fetchone()[0]
    assert receipts.n_unique(["location_id", "transaction_id"]) == receipts.height


@pytest.fixture
def lake(tmp_path) -> Lake:
    return Lake(make_settings("http://127.0.0.1:9", tmp_path / "data").warehouse.lake_dir)


def test_a_day_loaded_again_is_in_delta_once_and_its_old_file_stays_for_older_versions(lake):
    # both locations' days in one commit: a file per date holds both
    lake.write_batch("revenue", [lake_partition(p) for loc in (1001, 1002)
                                 for p in revenue_parts(loc, DAYS)])
    first = DeltaTable(str(lake.root / "revenue")).version()
    old = delta_files(lake)
    assert {d: len(f) for d, f in old.items()} == {f"business_date={d}": 1 for d in DAYS}
    others = {p: r.load_id for p, r in lake.records("revenue").items() if "1002" in p}
    commit_days(lake, 1001, DAYS[:1])  # one location's day again
    receipts = flat(lake, "receipts")
    counts = {(loc, day): n for loc, day, n in receipts.group_by(
        "location_id", "business_date").len().iter_rows()}
    assert counts == {  # each location's day once, as its load counted it
        (int(p.split("/")[0].split("=")[1]), date.fromisoformat(p.split("=")[-1])):
            int(r.metadata["receipts"]) for p, r in lake.records("revenue").items()}
    # the date's file rewritten (predicate overwrite): 1002's rows copied over with their
    # own load; the other dates untouched
    now = delta_files(lake)
    day = f"business_date={DAYS[0]}"
    assert len(now[day]) == 1 and now[day] != old[day]
    assert {d: f for d, f in now.items() if d != day} == {
        d: f for d, f in old.items() if d != day}
    assert {p: r.load_id for p, r in lake.records("revenue").items() if "1002" in p} == others
    # A reader of the version before the reload still reads the old day, from its file.
    before = flat(lake, "receipts", version=first)
    assert before.height == receipts.height
    assert (lake.root / "revenue" / day / old[day][0]).exists()


def test_a_load_killed_before_its_commit_is_invisible_and_vacuumed(lake, tmp_path):
    commit_days(lake, 1001, DAYS[:1])
    before = delta_files(lake)
    day = f"business_date={DAYS[0]}"
    (written,) = before[day]
    killed = lake.root / "revenue" / day / "part-20260101T000000000000Z-deadbeef-0000.parquet"
    shutil.copy(lake.root / "revenue" / day / written, killed)  # its file, then the kill
    assert delta_files(lake) == before
    warehouse = tmp_path / "warehouse.duckdb"
    result = build_warehouse(lake.root, warehouse)
    assert result.row_counts["fct_receipts"] == flat(lake, "receipts").height

    from pipeline.lake.housekeeping import tidy
    tidied = {t.table: t for t in tidy(lake, retention_hours=0)}
    assert not killed.exists() and tidied["revenue"].deleted == 1
    assert delta_files(lake) == before


def _write_location(args: tuple[str, int]) -> None:
    root, location_id = args
    commit_days(Lake(Path(root)), location_id, DAYS)


def test_two_loads_of_other_locations_on_the_same_dates_both_commit(lake):
    commit_days(lake, 1003, DAYS)  # the table and the dates' files exist
    # (An executor, not a Pool: a Pool stops its workers with SIGTERM, which hangs where
    # the process was started with SIGTERM ignored; an executor asks them to end.)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_write_location, [(str(lake.root), 1001), (str(lake.root), 1002)]))
    assert sorted(lake.records("revenue")) == sorted(
        f"location_id={loc}/business_date={day}" for loc in (1001, 1002, 1003) for day in DAYS)
    receipts = flat(lake, "receipts")
    assert receipts.n_unique(["location_id", "transaction_id"]) == receipts.height
    assert set(receipts["location_id"]) == {1001, 1002, 1003}


def test_a_dates_file_gives_each_row_groups_locations_so_a_reader_skips_the_others(lake):
    """The file of a date holds its locations sorted, a row group per ``ROWS_PER_GROUP`` of
    them, each group with the range of its keys (what a build reading one location's day
    prunes by); the nested tables' leaves carry no statistics (they prune nothing)."""
    import pyarrow.parquet as pq

    from pipeline.lake.areafiles import ROWS_PER_GROUP

    day = DAYS[0]
    [part] = revenue_parts(1001, [day])
    batch = []
    for location_id in range(2001, 2001 + ROWS_PER_GROUP + 4):
        part.location_id = location_id  # the same receipts, as another location's
        batch.append(lake_partition(part))  # (its row keyed now: the next may change it)
    lake.write_batch("revenue", batch)
    folder = f"business_date={day}"
    [name] = delta_files(lake)[folder]
    meta = pq.ParquetFile(lake.root / "revenue" / folder / name).metadata
    assert meta.num_row_groups == 2
    ranges = []
    for group in range(meta.num_row_groups):
        columns = {meta.schema.column(i).path: meta.row_group(group).column(i)
                   for i in range(meta.num_columns)}
        stats = columns["location_id"].statistics
        ranges.append((stats.min, stats.max))
        assert columns["load_id"].is_stats_set
        assert not columns["receipt_items.list.element.net_amount"].is_stats_set
    assert ranges == [(2001, 2000 + ROWS_PER_GROUP),
                      (2001 + ROWS_PER_GROUP, 2000 + ROWS_PER_GROUP + 4)]


def test_housekeeping_compacts_each_date_and_deletes_what_no_version_holds(tmp_path, capsys):
    import dagster as dg

    from pipeline.cli import main
    from pipeline.lake.housekeeping import tidy
    from pipeline.orchestration.housekeeping import HOUSEKEEPING_JOB

    settings = make_settings("http://127.0.0.1:9", tmp_path / "data")
    lake = Lake(settings.warehouse.lake_dir)
    for location_id in (1001, 1002):  # a commit per location and day: 2 files a date
        commit_days(lake, location_id, DAYS)
    commit_days(lake, 1001, DAYS[:1])  # replaces one of its date's two files
    assert sum(map(len, delta_files(lake).values())) == 6
    warehouse = tmp_path / "warehouse.duckdb"
    build_warehouse(lake.root, warehouse)
    on_disk = set((lake.root / "revenue").glob("business_date=*/*.parquet"))

    # Within the retention (the job the schedule runs, from the command line): the
    # dates are compacted, nothing is deleted.
    assert main(["housekeeping", "--config", str(write_config(tmp_path, "http://x"))]) == 0
    said = capsys.readouterr()
    assert said.err.startswith(f"housekeeping: the lake {lake.root}: compact, delete what "
                               "no version of the last 168 h holds, checkpoint\n")  # first
    assert "revenue: version " in said.err and "3 dates compacted" in said.err
    # what it kept, and till when (the lake grew: the compacted files are added, the
    # replaced ones stay for readers of older versions)
    assert f"; {len(on_disk)} replaced or compacted files (" in said.err
    assert "MB) kept for readers of older versions, removable by the first housekeeping " \
           "after " in said.err
    assert "result: OK" in said.out
    assert {d: len(f) for d, f in delta_files(lake).items()} == {
        f"business_date={d}": 1 for d in DAYS}
    assert on_disk <= set((lake.root / "revenue").glob("business_date=*/*.parquet"))
    with dg.DagsterInstance.from_config(str(tmp_path / "data" / "dagster_home")) as instance:
        assert [r.job_name for r in instance.get_runs()] == [HOUSEKEEPING_JOB]
    # Past it: what no version within the retention holds goes.
    tidied = {t.table: t for t in tidy(lake, retention_hours=0)}
    assert tidied["revenue"].files == 3 and tidied["revenue"].deleted == len(on_disk)
    assert tidied["revenue"].waiting == 0 and "kept for readers" not in tidied["revenue"].line()
    assert sorted(p.name for p in (lake.root / "revenue").glob("business_date=*/*.parquet")) \
        == sorted(
        f for files in delta_files(lake).values() for f in files)
    assert (lake.root / "revenue" / "_delta_log" / "_last_checkpoint").exists()
    rebuilt = tmp_path / "rebuilt.duckdb"
    build_warehouse(lake.root, rebuilt, full=True)
    with duckdb.connect(str(warehouse), read_only=True) as before, \
            duckdb.connect(str(rebuilt), read_only=True) as after:
        query = "select * from fct_turnover_daily order by all"
        assert before.execute(query).fetchall() == after.execute(query).fetchall()


def test_a_partition_key_that_is_text_is_read_and_replaced(tmp_path):
    import pyarrow as pa

    lake = Lake(tmp_path / "lake")
    partition = {"location_id": 1, "business_date": "2026-11-24",
                 "detected": "20261124T100000000000Z"}
    schema = pa.schema([("location_id", pa.int32()), ("n", pa.int64())])
    for n in (1, 2):
        lake.write("drift", {"source_drift": pa.table({"location_id": [1], "n": [n]},
                                                      schema=schema)}, partition)
    rows = flat(lake, "source_drift", "drift")
    assert rows["n"].to_list() == [2]
    assert pl.read_delta(str(lake.root / "drift"))["detected"].to_list() == [
        "20261124T100000000000Z"]
