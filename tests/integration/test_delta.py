"""Every lake table is a Delta table that engines other than ours read correctly (#25)."""

import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from pipeline.lake.delta import versions_that_agree
from pipeline.lake.store import (
    LOADS_DIR,
    UNPUBLISHED_DIR,
    Lake,
    data_file_name,
    parse_partition,
    partition_path,
)
from pipeline.warehouse import build_warehouse
from pipeline.warehouse.build import Warehouse
from pipeline.warehouse.models import LAKE_TABLES
from tests.conftest import loaded_warehouse, make_settings, write_config
from tests.integration.test_integrity import commit_days

DAYS = [date(2026, 9, 29) + timedelta(days=n) for n in range(3)]
REVENUE = ("receipts", "receipt_items", "item_side_dishes", "payments")


def delta_files(table: Path) -> dict[str, list[str]]:
    """partition -> the files the table's current Delta snapshot holds there."""
    found: dict[str, list[str]] = {}
    for path in DeltaTable(str(table)).file_uris():
        folder, name = path.rsplit("/", 1)
        found.setdefault(folder.split(f"{table.name}/", 1)[1], []).append(name)
    return found


def recorded_files(lake: Lake, area: str, table: str) -> dict[str, list[str]]:
    """partition -> the file its commit record names."""
    found = {}
    for partition in lake.partitions(area):
        record = lake.committed(area, partition)
        if table in record.tables:
            found[partition_path(partition)] = [f"part-{record.load_id}.parquet"]
    return found


def turnover_by_day(receipts: pl.DataFrame, items: pl.DataFrame) -> dict[date, Decimal]:
    """The revenue rule over a Delta reader's rows: lines of revenue-effective receipts."""
    with duckdb.connect() as con:
        from pipeline.extract.macros import macro_sql
        for sql in macro_sql():
            con.execute(sql)
        con.register("r", receipts.to_arrow())
        con.register("i", items.to_arrow())
        return dict(con.execute("""
            select i.business_date, sum(line_amount(i.net_amount, i.quantity))
            from i join r using (location_id, business_date, transaction_id)
            where is_revenue_effective(r.payment_group_name, r.transaction_type)
            group by all""").fetchall())


@pytest.fixture(scope="module")
def loaded(sandbox_url, tmp_path_factory):
    """Every area loaded from the sandbox over HTTP and built, as a night does."""
    settings = loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("delta") / "data",
                                date(2026, 10, 30), date(2026, 11, 1))
    return settings, Lake(settings.warehouse.lake_dir)


def test_every_lake_table_is_a_delta_table_that_polars_and_deltalake_read_like_the_warehouse(
        loaded):
    settings, lake = loaded
    tables = [t for t in LAKE_TABLES if (lake.root / t).is_dir()]
    assert {"receipts", "receipt_items", "products", "menus", "vouchers"} <= set(tables)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        for table in tables:
            frame = pl.read_delta(str(lake.root / table))
            arrow = pa.table(DeltaTable(str(lake.root / table)).to_pyarrow_table())
            assert frame.height == arrow.num_rows > 0, table
            # The lake's columns and types, DECIMAL as DECIMAL (timestamps in Delta's unit).
            for field in LAKE_TABLES[table]:
                read = arrow.schema.field(field.name).type
                assert read == field.type or (pa.types.is_timestamp(read)
                                              and read.tz == field.type.tz), (table, field)
            assert delta_files(lake.root / table) == recorded_files(
                lake, _area(lake, table), table), table
        receipts = pl.read_delta(str(lake.root / "receipts"))
        items = pl.read_delta(str(lake.root / "receipt_items"))
        assert receipts["total_amount"].dtype == pl.Decimal(18, 4)
        warehouse = dict(con.execute("select business_date, sum(turnover_net) "
                                     "from fct_turnover_daily group by 1").fetchall())
        assert turnover_by_day(receipts, items) == warehouse
        assert receipts.height == con.execute("select count(*) from fct_receipts").fetchone()[0]


def _area(lake: Lake, table: str) -> str:
    for folder in (lake.root / LOADS_DIR).iterdir():
        if folder.name != UNPUBLISHED_DIR and folder.is_dir():
            sample = next(iter(lake.partitions(folder.name)), None)
            if sample and table in lake.committed(folder.name, sample).tables:
                return folder.name
    raise AssertionError(f"no area writes {table}")


@pytest.fixture
def lake(tmp_path) -> Lake:
    return Lake(make_settings("http://127.0.0.1:9", tmp_path / "data").warehouse.lake_dir)


def test_a_day_loaded_again_is_in_delta_once_and_its_old_file_stays_for_older_snapshots(lake):
    commit_days(lake, 1001, DAYS)
    first = DeltaTable(str(lake.root / "receipts")).version()
    old = delta_files(lake.root / "receipts")
    commit_days(lake, 1001, DAYS[:1])
    for table in REVENUE:
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)
    receipts = pl.read_delta(str(lake.root / "receipts"))
    counts = dict(receipts.group_by("business_date").len().iter_rows())
    assert counts == {  # each day once, as its record counts it
        day: int(lake.committed("revenue", {"location_id": 1001,
                                            "business_date": day.isoformat()})
                 .metadata["receipts"]) for day in DAYS}
    # A reader of the snapshot before the reload still reads the old day.
    before = pa.table(DeltaTable(str(lake.root / "receipts"), version=first)
                      .to_pyarrow_table())
    assert before.num_rows == receipts.height
    day = partition_path({"location_id": 1001, "business_date": DAYS[0].isoformat()})
    assert (lake.root / "receipts" / day / old[day][0]).exists()


def test_a_load_killed_before_it_published_is_published_next_and_no_build_writes_it(lake, tmp_path):
    commit_days(lake, 1001, DAYS[:1])
    published = delta_files(lake.root / "receipts")
    # A load commits (its record) and is killed before its Delta publication.
    commit_days(lake, 1001, DAYS[1:2], publish=False)
    assert delta_files(lake.root / "receipts") == published  # Delta readers: the old state
    assert list((lake.root / LOADS_DIR / UNPUBLISHED_DIR / "revenue").iterdir())
    # a build only reads the lake: every file as it was, the mark too
    before = {p: p.stat().st_mtime_ns for p in lake.root.rglob("*")}
    Warehouse(tmp_path / "warehouse.duckdb", lake).build()
    assert {p: p.stat().st_mtime_ns for p in lake.root.rglob("*")} == before
    assert lake.sync() == 1  # what the area's next load, or housekeeping, does first
    for table in REVENUE:
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)
    assert not list((lake.root / LOADS_DIR / UNPUBLISHED_DIR / "revenue").iterdir())


def test_a_lake_without_delta_logs_is_converted_with_its_turnover_unchanged(lake, tmp_path):
    for location_id in (1001, 1002):
        commit_days(lake, location_id, DAYS)
    for table in REVENUE:
        shutil.rmtree(lake.root / table / "_delta_log")
    warehouse = tmp_path / "warehouse.duckdb"
    build_warehouse(lake.root, warehouse)
    assert lake.sync() == 6
    for table in REVENUE:
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)
    receipts = pl.read_delta(str(lake.root / "receipts"))
    items = pl.read_delta(str(lake.root / "receipt_items"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert turnover_by_day(receipts, items) == dict(con.execute(
            "select business_date, sum(turnover_net) from fct_turnover_daily group by 1"
        ).fetchall())
    assert lake.sync() == 0  # converted once


def _write_location(args: tuple[str, int]) -> None:
    root, location_id = args
    commit_days(Lake(Path(root)), location_id, DAYS)


def test_two_loads_publishing_at_once_both_land_each_partition_once(lake):
    commit_days(lake, 1003, DAYS[:1])  # the tables exist: both commit to the same logs
    # (An executor, not a Pool: a Pool stops its workers with SIGTERM, which hangs where
    # the process was started with SIGTERM ignored; an executor asks them to end.)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_write_location, [(str(lake.root), 1001), (str(lake.root), 1002)]))
    for table in REVENUE:
        files = delta_files(lake.root / table)
        assert files == recorded_files(lake, "revenue", table)
        assert len(files) == 7 and all(len(f) == 1 for f in files.values())
    receipts = pl.read_delta(str(lake.root / "receipts"))
    assert receipts.n_unique(["location_id", "transaction_id"]) == receipts.height


def test_housekeeping_deletes_what_no_snapshot_within_the_retention_holds(tmp_path, capsys):
    import dagster as dg

    from pipeline.cli import main
    from pipeline.lake.housekeeping import tidy
    from pipeline.orchestration.housekeeping import HOUSEKEEPING_JOB

    settings = make_settings("http://127.0.0.1:9", tmp_path / "data")
    lake = Lake(settings.warehouse.lake_dir)
    commit_days(lake, 1001, DAYS)
    day = partition_path({"location_id": 1001, "business_date": DAYS[0].isoformat()})
    replaced = lake.root / "receipts" / day / delta_files(lake.root / "receipts")[day][0]
    commit_days(lake, 1001, DAYS[:1])
    killed = replaced.with_name("part-20260101T000000000000Z-deadbeef.parquet")
    shutil.copy(replaced, killed)  # renamed in by a load killed before its commit
    warehouse = tmp_path / "warehouse.duckdb"
    build_warehouse(lake.root, warehouse)

    # Within the retention (the job the schedule runs, from the command line): nothing goes.
    assert main(["housekeeping", "--config", str(write_config(tmp_path, "http://x"))]) == 0
    said = capsys.readouterr()
    assert "receipts: version " in said.err and "result: OK" in said.out
    assert replaced.exists() and killed.exists()
    with dg.DagsterInstance.from_config(str(tmp_path / "data" / "dagster_home")) as instance:
        assert [r.job_name for r in instance.get_runs()] == [HOUSEKEEPING_JOB]
    # Past it: the replaced file and the killed load's go, every committed one stays.
    tidied = {t.table: t for t in tidy(lake, retention_hours=0)}
    assert not replaced.exists() and not killed.exists()
    assert tidied["receipts"].deleted == 2 and tidied["receipts"].files == 3
    assert (lake.root / "receipts" / "_delta_log" / "_last_checkpoint").exists()
    for table in REVENUE:
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)
        assert all((lake.root / table / p / f[0]).exists()
                   for p, f in recorded_files(lake, "revenue", table).items())
    rebuilt = tmp_path / "rebuilt.duckdb"
    build_warehouse(lake.root, rebuilt, full=True)
    with duckdb.connect(str(warehouse), read_only=True) as before, \
            duckdb.connect(str(rebuilt), read_only=True) as after:
        query = "select * from fct_turnover_daily order by all"
        assert before.execute(query).fetchall() == after.execute(query).fetchall()


def test_housekeeping_never_deletes_a_committed_file_its_log_lacks(lake):
    from pipeline.lake.housekeeping import tidy

    commit_days(lake, 1001, DAYS[:1])
    day = partition_path({"location_id": 1001, "business_date": DAYS[0].isoformat()})
    # Committed, its mark lost (as if removed by hand): no log names the new file.
    lake.write("revenue", {t: lake.read("revenue", t, {"location_id": 1001,
                                                      "business_date": DAYS[0].isoformat()})
                           for t in REVENUE}, parse_partition(day), publish=False)
    shutil.rmtree(lake.root / LOADS_DIR / UNPUBLISHED_DIR)
    committed = lake.record("revenue", day).load_id
    assert delta_files(lake.root / "receipts")[day] != [data_file_name(committed)]
    tidied = {t.table: t for t in tidy(lake, retention_hours=0)}
    for table in REVENUE:
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)
        assert (lake.root / table / day / data_file_name(committed)).exists()
        assert tidied[table].deleted == 1  # the replaced file only


def test_a_partition_value_that_a_uri_encodes_is_read_and_replaced(tmp_path):
    lake = Lake(tmp_path / "lake")
    partition = {"detected": "2026-11-24T10:00:00Z", "location_id": 1}
    schema = pa.schema([("n", pa.int64())])
    for n in (1, 2):
        lake.write("drift", {"source_drift": pa.table({"n": [n]}, schema=schema)}, partition)
    frame = pl.read_delta(str(lake.root / "source_drift"))
    assert frame["n"].to_list() == [2] and frame["detected"].to_list() == [
        "2026-11-24T10:00:00Z"]


def test_a_publication_cut_between_tables_leaves_versions_a_reader_can_match(
        lake, monkeypatch):
    import pipeline.lake.delta

    commit_days(lake, 1001, DAYS[:1])
    uris = [str(lake.root / t) for t in REVENUE]
    before = {t: delta_files(lake.root / t) for t in REVENUE}
    publish, calls = pipeline.lake.delta.publish_table, []

    def killed_at_the_third_table(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 3:
            raise OSError("killed")
        return publish(*args, **kwargs)

    monkeypatch.setattr(pipeline.lake.delta, "publish_table", killed_at_the_third_table)
    with pytest.raises(OSError):
        commit_days(lake, 1001, DAYS[:1])  # the day loaded again, its publication cut
    monkeypatch.undo()
    ahead = [t for t in REVENUE if delta_files(lake.root / t) != before[t]]
    assert len(ahead) == 2  # two tables hold the new load, two the old
    # A reader that matches versions by publication reads the old load in all four.
    versions = versions_that_agree(uris)
    for table, uri in zip(REVENUE, uris, strict=True):
        at = DeltaTable(uri, version=versions[uri]).file_uris()
        assert [u.rsplit("/", 1)[1] for u in at] == [
            f[0] for f in before[table].values()], table
    lake.sync()  # the next build: all four hold the new load, in one publication again
    versions = versions_that_agree(uris)
    for table, uri in zip(REVENUE, uris, strict=True):
        assert versions[uri] == DeltaTable(uri).version()
        assert delta_files(lake.root / table) == recorded_files(lake, "revenue", table)


def test_a_mark_stays_while_its_write_has_not_committed(lake):
    commit_days(lake, 1001, DAYS[:1])
    marks = lake.root / LOADS_DIR / UNPUBLISHED_DIR / "revenue"
    day = partition_path({"location_id": 1001, "business_date": DAYS[0].isoformat()})
    # A write under way: marked, its record not written yet (a later load id).
    under_way = marks / "29991231T000000000000Z-0000abcd"
    under_way.write_text(day)
    killed = marks / "20200101T000000000000Z-0000dead"  # a write killed long ago
    killed.write_text(day)
    lake.sync()
    assert under_way.exists()  # its own publication, or the next, takes it
    assert not killed.exists()
