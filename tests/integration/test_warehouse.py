"""The warehouse: marts against independent Python totals, lineage, checks, atomic rebuilds."""

import re
import shutil
import textwrap
import threading
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from pipeline.areas.catalog.extract import CATALOG_TABLES
from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.lake.layout import new_load_id
from pipeline.lake.store import Lake
from pipeline.sqlrunner.checks import run_checks
from pipeline.warehouse import MODELS_DIR, build_order, build_warehouse, discover_models
from pipeline.warehouse.project import read_project, shipped
from pipeline.warehouse.state import recorded_failures
from pos_sandbox.receipts import SandboxData, receipts_on
from tests.conftest import loaded_warehouse, unexpected

DAYS = [date(2026, 11, 18), date(2026, 11, 19), date(2026, 11, 20)]
LOCATIONS = (1001, 1002, 1003)
TRUTH = SandboxData()


@pytest.fixture(scope="module")
def built(sandbox_url, tmp_path_factory):
    return loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("wh") / "data", DAYS[0],
                            DAYS[-1])


def query(settings, sql):
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def truth_receipts():
    return {(loc, day): receipts_on(loc, day, TRUTH) for loc in LOCATIONS for day in DAYS}


def test_turnover_daily_equals_the_spec_rule_computed_in_python(built):
    expected = {}
    for (loc, day), receipts in truth_receipts().items():
        kept = [r for r in receipts if r.payment_group.name == "Umsatzwirksam"
                and r.transaction_type in ("Abrechnen", "RechnungZurückholen")]
        expected[(loc, day)] = (
            len(kept),
            sum((i.net_amount * i.quantity for r in kept for i in r.items), Decimal(0)),
            sum((r.tip for r in kept), Decimal(0)),
            sum((r.discount for r in kept), Decimal(0)),
        )
    rows = query(built, "select location_id, business_date, revenue_receipt_count, turnover_net, "
                        "tip_amount, discount_amount from fct_turnover_daily")
    assert {(r[0], r[1]): tuple(r[2:]) for r in rows} == expected


def test_fact_tables_hold_each_distinct_line_and_payment_once(built):
    truth = truth_receipts()
    n_items = sum(len(r.items) for rs in truth.values() for r in rs)
    n_payments = sum(len(r.payments) for rs in truth.values() for r in rs)
    paid = sum((p.amount for rs in truth.values() for r in rs for p in r.payments), Decimal(0))
    assert query(built, "select count(*) from fct_receipt_items")[0][0] == n_items
    assert query(built, "select count(*), sum(amount) from fct_payments")[0] == (n_payments, paid)
    assert query(built, "select count(*) from fct_receipts")[0][0] == sum(
        len(rs) for rs in truth.values())


def test_turnover_by_tax_rate_adds_up_to_the_daily_turnover(built):
    by_rate = query(built, "select sum(net_amount), sum(gross_amount) "
                           "from rpt_turnover_by_tax_rate")
    daily = query(built, "select sum(turnover_net), sum(turnover_gross) from fct_turnover_daily")
    assert by_rate == daily
    rates = {r[0] for r in query(built, "select distinct tax_rate_percent from "
                                        "rpt_turnover_by_tax_rate")}
    # 0 %: the hotel's tourist tax (the spec's turnover knows no pass-through line)
    assert {Decimal(10), Decimal(20)} <= rates <= {Decimal(0), Decimal(10), Decimal(13),
                                                   Decimal(20)}


def test_daily_close_balances_and_flags_a_difference(built, tmp_path):
    assert query(built, "select count(*), count(*) filter (where is_closed) "
                        "from rpt_daily_close") == [(9, 9)]
    # Tamper with one payment in a copy of the lake: the report and the check must flag it.
    lake_copy = tmp_path / "lake"
    import shutil
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    part = {"location_id": 1001, "business_date": "2026-11-19"}
    tables = {t: Lake(lake_copy).read("revenue", t, part) for t in REVENUE_TABLES}
    payments = tables["payments"].to_pylist()
    payments[0]["amount"] += Decimal("5.00")
    tables["payments"] = pa.Table.from_pylist(payments, tables["payments"].schema)
    Lake(lake_copy).write("revenue", tables, part)
    result = build_warehouse(lake_copy, tmp_path / "wh.duckdb")
    with duckdb.connect(str(result.path), read_only=True) as con:
        flagged = con.execute("select location_id, business_date, difference_amount "
                              "from rpt_daily_close where not is_closed").fetchall()
        bridge = con.execute("select amount from rpt_payment_reconciliation "
                             "where location_id = 1001 and business_date = '2026-11-19' "
                             "and line = 'difference'").fetchall()
    assert flagged == [(1001, date(2026, 11, 19), Decimal("5.00"))]
    assert bridge == [(Decimal("5.00"),)]
    failed = {o.check.name for o in unexpected(result.failed_checks)}
    assert failed == {"payments_settle_total", "day_is_closed"}


def test_all_data_checks_pass_on_sandbox_data(built):
    path = built.warehouse.warehouse_path
    project = shipped()
    with duckdb.connect(str(path), read_only=True) as con:
        outcomes = run_checks(con, project.checks, project.models, recorded_failures(path))
    assert outcomes and not unexpected([o for o in outcomes if not o.passed]), [
        (o.check.name, o.sample) for o in outcomes if not o.passed]


def test_unmatched_items_are_the_voucher_sales(built):
    names = {r[0] for r in query(built, "select product_name from rpt_unmatched_items")}
    assert names and all(n.startswith("Gutschein") for n in names)


def test_dimensions_hold_the_latest_snapshot_and_history_keeps_all(built, tmp_path):
    import shutil
    lake_copy = tmp_path / "lake"
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    copy = Lake(lake_copy)
    (day,) = {p["snapshot_date"] for p in copy.partitions("catalog")}
    for location_id in LOCATIONS:
        current = {"location_id": location_id, "snapshot_date": day}
        tables = {t: copy.read("catalog", t, current) for t in CATALOG_TABLES}
        rows = tables["products"].to_pylist()  # the older snapshot had one product more
        rows.append({**rows[0], "product_id": 999999})
        tables["products"] = pa.Table.from_pylist(rows, tables["products"].schema)
        copy.write("catalog", tables, {**current, "snapshot_date": "2020-01-01"})
    result = build_warehouse(lake_copy, tmp_path / "wh.duckdb")
    current = query(built, "select count(*) from dim_products")[0][0]
    assert result.row_counts["dim_products"] == current
    assert result.row_counts["dim_products_history"] == 2 * current + len(LOCATIONS)


def test_dependencies_are_parsed_from_sql_and_ordered():
    models = discover_models()
    order = build_order(models)
    assert models["fct_turnover_daily"].model_deps == {"fct_receipts"}
    assert models["stg_pos__receipts"].source_deps == {"receipts"}
    for name, model in models.items():
        assert all(order.index(dep) < order.index(name) for dep in model.model_deps)
    assert {m.stage for m in models.values()} == {"staging", "marts", "reports"}


def test_every_mart_and_report_carries_location_id(built):
    # The voucher ledger is tenant-wide: its records name no location (spec 2.6); a
    # period is closed, a booking file exported, for every location at once; an acquirer
    # pays out the card sales of every location.
    for name, model in discover_models().items():
        if model.stored and "voucher" not in name and \
                name not in ("rpt_closed_periods", "rpt_exported_files", "dim_bank_acquirers"):
            cols = [r[0] for r in query(built, f"describe {name}")]
            assert "location_id" in cols, name


def test_reader_keeps_a_consistent_warehouse_during_a_rebuild(built):
    path = built.warehouse.warehouse_path
    reader = duckdb.connect(str(path), read_only=True)
    before = reader.execute("select sum(turnover_net) from fct_turnover_daily").fetchone()
    errors = []

    def rebuild():
        try:
            build_warehouse(built.warehouse.lake_dir, path)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=rebuild) for _ in range(2)]
    for t in threads:
        t.start()
    during = [reader.execute("select sum(turnover_net) from fct_turnover_daily").fetchone()
              for _ in range(20)]
    for t in threads:
        t.join()
    assert not errors
    assert set(during) == {before}
    reader.close()
    assert query(built, "select sum(turnover_net) from fct_turnover_daily")[0] == before
    assert not list(path.parent.glob(".*.building*"))


def test_the_documented_queries_run_on_the_warehouse(built):
    from pipeline.core.project import start_page

    text = start_page()  # the data dictionary's first page holds them
    queries = re.findall(r"```sql\n(.*?)```", text, flags=re.S)
    assert len(queries) >= 4
    for sql in queries:  # rpt_coverage is empty: this warehouse is built without a config
        assert query(built, sql) or "from rpt_coverage" in sql, sql


def test_files_of_a_load_killed_before_its_commit_are_not_read(built, tmp_path):
    import shutil
    lake_copy = tmp_path / "lake"
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    # a load wrote its file of the date, then died before its Delta commit
    folder = lake_copy / "revenue" / "business_date=2026-11-19"
    (committed,) = folder.glob("part-*.parquet")
    (folder / f"part-{new_load_id()}-0000.parquet").write_bytes(committed.read_bytes())
    result = build_warehouse(lake_copy, tmp_path / "wh.duckdb")
    expected = query(built, "select count(*) from fct_receipts")[0][0]
    assert result.row_counts["fct_receipts"] == expected


def test_no_api_key_in_the_lake_or_the_warehouse(built):
    files = [built.warehouse.warehouse_path,
             *(p for p in built.warehouse.lake_dir.rglob("*") if p.is_file())]
    assert len(files) > 10  # data files and every Delta log entry
    for path in files:
        assert b"sandbox-key-" not in path.read_bytes(), path


def test_a_broken_model_fails_the_build_and_keeps_the_old_warehouse(built, tmp_path):
    import shutil

    from pipeline.warehouse import MODELS_DIR, ModelError

    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    (models_dir / "reports" / "rpt_broken.sql").write_text(
        "-- grain: nothing\nselect no_such_column from fct_receipts\n")
    target = tmp_path / "wh.duckdb"
    build_warehouse(built.warehouse.lake_dir, target)
    before = target.read_bytes()
    with pytest.raises(ModelError, match="rpt_broken"):
        build_warehouse(built.warehouse.lake_dir, target, read_project(models_dir))
    assert target.read_bytes() == before
    assert not list(tmp_path.glob(".*.building*"))


def test_a_build_without_sql_models_fails_loudly(tmp_path):
    from pipeline.warehouse import ModelError

    with pytest.raises(ModelError, match="no SQL models found .* without its SQL files"):
        build_warehouse(tmp_path / "lake", tmp_path / "warehouse.duckdb",
                        read_project(tmp_path / "empty"))
    assert not (tmp_path / "warehouse.duckdb").exists()


def test_a_stale_wal_of_a_dead_session_does_not_break_the_next_warehouse(built, tmp_path):
    target = tmp_path / "warehouse.duckdb"
    build_warehouse(built.warehouse.lake_dir, target)
    # A read-write session that died before its checkpoint leaves its WAL behind.
    other = tmp_path / "session.duckdb"
    con = duckdb.connect(str(other))
    con.execute("set checkpoint_threshold = '1TB'")
    con.execute("create table scratch as select 1 as x")
    shutil.copy(f"{other}.wal", f"{target}.wal")
    con.close()
    build_warehouse(built.warehouse.lake_dir, target)
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.execute("select count(*) from fct_turnover_daily").fetchone()[0] > 0


def test_files_left_by_killed_builds_are_removed_by_the_next_build(built, tmp_path):
    # (files a killed load wrote are in no Delta version: housekeeping's vacuum deletes
    # them, tests/integration/test_delta.py)
    lake_copy = tmp_path / "lake"
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    target = tmp_path / "warehouse.duckdb"
    killed = tmp_path / ".warehouse.duckdb.0123abcd.building"
    killed.write_bytes(b"half a warehouse")
    Path(f"{killed}.wal").write_bytes(b"its wal")
    build_warehouse(lake_copy, target)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".warehouse")) \
        == [".warehouse.duckdb.lock"]


def test_a_replaced_file_stays_for_readers_of_older_versions_until_housekeeping(built,
                                                                                 tmp_path):
    lake_copy = tmp_path / "lake"
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    lake = Lake(lake_copy)
    part = {"location_id": 1002, "business_date": "2026-11-19"}
    folder = lake_copy / "revenue" / "business_date=2026-11-19"
    first = {p.name for p in folder.iterdir()}
    before = DeltaTable(str(lake_copy / "revenue")).version()

    def write_again() -> None:
        lake.write("revenue", {t: lake.read("revenue", t, part) for t in REVENUE_TABLES}, part)

    write_again()
    write_again()
    # Replaced files stay (a build, or a Delta reader of an older version, may read
    # them) until housekeeping deletes them past the retention
    # (tests/integration/test_delta.py); the newest version holds one file of the date,
    # and the older version still reads as it was.
    assert first < {p.name for p in folder.iterdir()}
    newest = DeltaTable(str(lake_copy / "revenue"))
    assert [u for u in newest.file_uris() if "business_date=2026-11-19/" in u] != \
        [str(folder / name) for name in first]
    assert len([u for u in newest.file_uris() if "business_date=2026-11-19/" in u]) == 1
    old = pl.read_delta(str(lake_copy / "revenue"), version=before)
    assert old.filter(pl.col("business_date") == date(2026, 11, 19)).height == 3


def test_builds_while_a_load_rewrites_the_days_they_read_all_succeed(built, tmp_path):
    lake_copy = tmp_path / "lake"
    shutil.copytree(built.warehouse.lake_dir, lake_copy)
    lake = Lake(lake_copy)
    parts = [{"location_id": loc, "business_date": day} for loc in (1001, 1002, 1003)
             for day in ("2026-11-19", "2026-11-20")]
    tables = {i: {t: lake.read("revenue", t, p) for t in REVENUE_TABLES}
              for i, p in enumerate(parts)}
    done = threading.Event()
    writes = []

    def load() -> None:  # the same receipts committed again and again
        while not done.is_set():
            for i, part in enumerate(parts):
                lake.write("revenue", tables[i], part)
                writes.append(part)

    loader = threading.Thread(target=load)
    loader.start()
    try:
        results = [build_warehouse(lake_copy, tmp_path / "wh.duckdb", full=True)
                   for _ in range(3)]
    finally:
        done.set()
        loader.join()
    assert len(writes) > 6 and all(not unexpected(r.failed_checks) for r in results)
    expected = query(built, "select sum(turnover_net) from fct_turnover_daily")
    with duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True) as con:
        assert con.execute("select sum(turnover_net) from fct_turnover_daily"
                           ).fetchall() == expected


def test_a_data_dir_with_a_quote_in_its_path_builds(built, tmp_path):
    folder = tmp_path / "O'Brien's data"
    shutil.copytree(built.warehouse.lake_dir, folder / "lake")
    result = build_warehouse(folder / "lake", folder / "warehouse.duckdb")
    expected = query(built, "select count(*) from fct_receipts")[0][0]
    assert result.row_counts["fct_receipts"] == expected
    assert not unexpected(result.failed_checks)


def test_a_check_of_staging_fails_in_the_build_and_the_report_reads_it_from_the_state(
        built, tmp_path):
    """Staging is not stored (#44): its checks run in the build that computes it, which
    records their failing rows, and a check run on the published file reads them there."""
    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    for model, check in (("stg_pos__spots", "no_spot_is_named"),
                         ("stg_pos__payments", "no_payment_is_positive")):
        expression = "spot_name is null" if model == "stg_pos__spots" else "amount <= 0"
        schema = models_dir / "staging" / f"{model}.yml"
        entry = f"  - name: {model}\n"
        schema.write_text(schema.read_text().replace(entry, entry + textwrap.indent(
            textwrap.dedent(f"""\
            data_tests:
              - expression_is_true:
                  name: {check}
                  expression: {expression}
                  config: {{severity: warn}}
            """), "    "), 1))
    project = read_project(models_dir)
    result = build_warehouse(built.warehouse.lake_dir, tmp_path / "wh.duckdb", project)
    in_build = {o.check.name: o.failing_rows for o in result.failed_checks
                if o.check.name.startswith("no_")}
    assert in_build["no_spot_is_named"] > 0 and in_build["no_payment_is_positive"] > 0
    with duckdb.connect(str(result.path), read_only=True) as con:
        assert con.execute("select count(*) from duckdb_tables() "
                           "where schema_name <> 'main'").fetchone()[0] == 0
        later = run_checks(con, project.checks, project.models, recorded_failures(result.path))
    assert {o.check.name: o.failing_rows for o in later
            if o.check.name.startswith("no_")} == in_build


def test_a_column_name_means_one_thing_and_dim_locations_names_the_locations(built):
    """A line's unit prices are ``unit_*_price`` and its totals ``line_*_amount``: the
    naive sum over lines a BI user writes (``sum(line_net_amount)`` of the revenue lines)
    is the turnover, and no line table has an ``*_amount`` that is a unit price.
    ``dim_locations`` holds each configured location with its code and name."""
    from tests.conftest import build_directly

    build_directly(built)  # as the config builds it (other tests build bare)
    columns = {(t, c) for t, c in query(built, """
        select table_name, column_name from duckdb_columns()
        where table_name in ('fct_receipt_items', 'fct_item_side_dishes')""")}
    for table in ("fct_receipt_items", "fct_item_side_dishes"):
        assert {(table, "unit_net_price"), (table, "unit_gross_price")} <= columns
        assert not {(table, "net_amount"), (table, "gross_amount")} & columns
    assert query(built, "select sum(line_net_amount) from fct_receipt_items "
                        "where is_revenue_effective") == \
        query(built, "select sum(turnover_net) from fct_turnover_daily")
    assert query(built, "select location_id, short_code, location_name from dim_locations "
                        "order by location_id") == \
        [(loc.id, loc.short_code, loc.name or loc.short_code) for loc in built.locations]
