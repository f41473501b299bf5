"""The incremental warehouse: a build computes what changed, and equals a full rebuild."""

import shutil
from dataclasses import replace
from datetime import date, datetime, time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute
import pytest

import pipeline.warehouse
import pipeline.warehouse.lakeviews
import pipeline.warehouse.plan
from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.lake.store import Lake
from pipeline.warehouse import MODELS_DIR, build_warehouse, discover_models
from pipeline.warehouse.project import read_project
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import Correction, SandboxData, receipts_on
from pos_sandbox.server import running_sandbox
from tests.conftest import (
    fingerprints,
    load_directly,
    make_settings,
    truth_turnover,
    unexpected,
)

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAYS = [date(2026, 9, 29), date(2026, 9, 30), date(2026, 10, 1)]
NEXT = date(2026, 10, 2)
"""A night on October 2 computes October 2 of each location and keeps the other days."""


def load(base_url, data_dir, start, end, locations=None):
    """The revenue of the days into the lake, as ``pos-etl load --no-catalog --no-models``
    loads it (the builds are each test's subject)."""
    load_directly(make_settings(base_url, data_dir), start, end, locations, catalog=False,
                  build=False)


def turnover(path: Path, location_id: int, day: date):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select turnover_net from fct_turnover_daily where location_id = ? "
                           "and business_date = ?", [location_id, day]).fetchone()[0]


@pytest.fixture(scope="module")
def history(sandbox_url, tmp_path_factory):
    """Three days of three locations, built; then a fourth day and a corrected receipt."""
    mp = pytest.MonkeyPatch()
    for loc in (1001, 1002, 1003):
        mp.setenv(f"POS_TEST_KEY_{loc}", f"sandbox-key-{loc}")
    data_dir = tmp_path_factory.mktemp("incremental") / "data"
    settings = make_settings(sandbox_url, data_dir)
    lake, target = settings.warehouse.lake_dir, settings.warehouse.warehouse_path
    load(sandbox_url, data_dir, DAYS[0], DAYS[-1])
    builds = {"first": build_warehouse(lake, target)}
    load(sandbox_url, data_dir, NEXT, NEXT)
    builds["night"] = build_warehouse(lake, target)
    builds["unchanged"] = build_warehouse(lake, target)
    yield settings, builds
    mp.undo()


def test_a_night_computes_only_its_new_partitions(history):
    _, builds = history
    assert builds["first"].rebuilt_partitions == {"revenue": 9}
    assert builds["night"].rebuilt_partitions == {"revenue": 3}
    assert builds["unchanged"].rebuilt_partitions == {"revenue": 0}
    assert not unexpected(builds["unchanged"].failed_checks)
    assert builds["unchanged"].row_counts == builds["night"].row_counts


def test_an_incremental_warehouse_equals_a_full_rebuild(history, tmp_path, sandbox_url):
    settings, _ = history
    lake, target = settings.warehouse.lake_dir, settings.warehouse.warehouse_path
    # A correction moves a receipt of the first day to the new day; only the new day is
    # loaded again, so the first day must be computed again too (it lost the receipt):
    # both days of location 1002.
    before = SandboxData()
    moved = next(r for r in receipts_on(1002, DAYS[0], before)
                 if r.transaction_type == "Abrechnen" and r.payment_group.name == "Umsatzwirksam")
    after = replace(before, corrections=(Correction(
        1002, moved.transaction_id, datetime.combine(NEXT, time(11, 0, 3))),))
    with running_sandbox(SandboxConfig(data=after)) as corrected:
        load(corrected, settings.warehouse.data_dir, NEXT, NEXT, [1002])
    reader = duckdb.connect(str(target), read_only=True)  # an analyst, before the build
    result = build_warehouse(lake, target)
    # The analyst's open file still reads the complete old state (the file it opened).
    old = reader.execute("select turnover_net from fct_turnover_daily where location_id = 1002 "
                         "and business_date = ?", [DAYS[0]]).fetchone()[0]
    assert old == truth_turnover(1002, DAYS[0], before)
    reader.close()  # (DuckDB shares one open file per process: close it to see the new one)
    assert result.rebuilt_partitions == {"revenue": 2}
    assert not unexpected(result.failed_checks)
    assert turnover(target, 1002, DAYS[0]) == truth_turnover(1002, DAYS[0], after)
    assert turnover(target, 1002, NEXT) == truth_turnover(1002, NEXT, after)

    full = build_warehouse(lake, tmp_path / "full.duckdb", full=True)
    assert full.rebuilt_partitions == {"revenue": 12}
    assert full.row_counts == result.row_counts
    assert fingerprints(target) == fingerprints(full.path)



def test_a_receipt_another_day_took_over_and_gave_back(history, tmp_path):
    """A receipt only a later load of another day holds (the POS moved it, and its old
    day was not loaded again) counts on that day only; when that day is loaded again
    without it, it counts on its old day again. Each night equals a full rebuild."""
    settings, _ = history
    lake, target = settings.warehouse.lake_dir, settings.warehouse.warehouse_path
    store = Lake(lake)
    old = {"location_id": 1003, "business_date": DAYS[1].isoformat()}
    new = {"location_id": 1003, "business_date": NEXT.isoformat()}
    was = {t: store.read("revenue", t, new) for t in REVENUE_TABLES}
    day = {t: store.read("revenue", t, old) for t in REVENUE_TABLES}
    taken = day["receipt_items"]["transaction_id"][0].as_py()  # a receipt with items
    before = turnover(target, 1003, DAYS[1])
    moved = {t: pa.concat_tables([was[t], day[t].filter(pa.compute.equal(
        day[t]["transaction_id"], taken)).cast(was[t].schema)])
        if "transaction_id" in day[t].column_names else was[t] for t in REVENUE_TABLES}
    for tables, computed in ((moved, 2), (was, 2)):
        store.write("revenue", tables, new)
        assert build_warehouse(lake, target).rebuilt_partitions == {"revenue": computed}
        full = build_warehouse(lake, tmp_path / "full.duckdb", full=True)
        assert fingerprints(target) == fingerprints(full.path)
        if tables is moved:
            assert turnover(target, 1003, DAYS[1]) < before
    assert turnover(target, 1003, DAYS[1]) == before


def test_a_reader_keeps_the_file_it_opened_while_a_build_replaces_it(history):
    settings, _ = history
    lake, target = settings.warehouse.lake_dir, settings.warehouse.warehouse_path
    reader = duckdb.connect(str(target), read_only=True)
    before = reader.execute("select sum(turnover_net) from fct_turnover_daily").fetchone()
    # The day is loaded again with one receipt less: its month is computed again.
    key = {"location_id": 1001, "business_date": NEXT.isoformat()}
    store = Lake(lake)
    tables = {t: store.read("revenue", t, key) for t in REVENUE_TABLES}
    gone = tables["receipt_items"]["transaction_id"][0].as_py()  # a receipt with items
    tables = {t: table.filter(pa.compute.not_equal(table["transaction_id"], gone))
              if "transaction_id" in table.column_names else table
              for t, table in tables.items()}
    store.write("revenue", tables, key)
    try:
        assert build_warehouse(lake, target).rebuilt_partitions == {"revenue": 1}
        assert reader.execute("select sum(turnover_net) from fct_turnover_daily"
                              ).fetchone() == before
    finally:
        reader.close()
    with duckdb.connect(str(target), read_only=True) as con:
        after = con.execute("select sum(turnover_net) from fct_turnover_daily").fetchone()
    assert after != before
    full = build_warehouse(lake, target.with_name("full.duckdb"), full=True)
    assert fingerprints(target) == fingerprints(full.path)


def test_a_changed_model_is_computed_again_for_every_partition(history, tmp_path):
    settings, _ = history
    models_dir = tmp_path / "models"
    import shutil
    shutil.copytree(MODELS_DIR, models_dir)
    path = models_dir / "marts" / "fct_turnover_daily.sql"
    target = tmp_path / "wh.duckdb"
    build_warehouse(settings.warehouse.lake_dir, target)
    # A comment and the layout are not what the rows derive from: nothing is recomputed.
    sql = path.read_text()
    path.write_text("-- reviewed: one more comment line\n"
                    + sql.replace("cast(sum(guest_count) as bigint) as guest_count",
                                  "cast(sum(guest_count)   as bigint) as guest_count  -- n"))
    result = build_warehouse(settings.warehouse.lake_dir, target, read_project(models_dir))
    assert result.rebuilt_partitions.get("revenue", 0) == 0
    path.write_text(sql.replace(
        "cast(sum(guest_count) as bigint) as guest_count",
        "cast(sum(guest_count) as bigint) as guest_count,\n"
        "        max(receipted_at_local) as last_receipt_at"))
    result = build_warehouse(settings.warehouse.lake_dir, target, read_project(models_dir))
    assert result.rebuilt_partitions == {"revenue": 12}
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.execute("select count(last_receipt_at) from fct_turnover_daily"
                           ).fetchone()[0] == 12


def test_build_command_builds_what_changed_or_everything(sandbox_url, tmp_path, monkeypatch,
                                                         capsys):
    from pipeline.cli import main
    from tests.conftest import write_config

    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    assert main(["load", "--config", str(config), "--start", "2026-10-05", "--end",
                 "2026-10-06", "--no-models", "--no-catalog"]) == 0
    computed = []
    for args in ([], [], ["--full"]):
        capsys.readouterr()
        assert main(["build", "--config", str(config), *args]) == 0
        out = capsys.readouterr().out
        assert "result: OK" in out and "partitions loaded" not in out
        computed.append(out.split(" partitions computed")[0].rsplit(" ", 1)[-1])
    assert computed == ["2", "0", "2"]


def test_a_build_in_small_batches_equals_one_in_one(history, tmp_path, monkeypatch):
    settings, _ = history
    target = settings.warehouse.warehouse_path
    monkeypatch.setattr(pipeline.warehouse.plan, "BATCH_GROUPS", 1)  # a location-month at a time
    monkeypatch.setattr(pipeline.warehouse.lakeviews, "KEYS_FILES_AT_ONCE", 1)
    monkeypatch.setattr(pipeline.warehouse.lakeviews, "FILES_AT_ONCE", 1)
    batched = build_warehouse(settings.warehouse.lake_dir, tmp_path / "batched.duckdb",
                              full=True)
    assert not unexpected(batched.failed_checks)
    assert fingerprints(batched.path) == fingerprints(target)


def test_a_night_that_loads_its_lookback_again_equals_a_full_rebuild_in_64_mb(
        history, tmp_path, sandbox_url, monkeypatch):
    """The nightly loads its last days again (new loads of the same receipts), so the build
    replaces rows the file has. DuckDB keeps deletes in memory until a checkpoint, so the
    build checkpoints the file it builds once enough rows are deleted (here: after every
    delete, the most often it can); with 64 MB for DuckDB the night equals a full rebuild."""
    settings, _ = history
    data_dir = tmp_path / "data"
    shutil.copytree(settings.warehouse.data_dir, data_dir)
    copied = make_settings(sandbox_url, data_dir)
    lake, target = copied.warehouse.lake_dir, copied.warehouse.warehouse_path
    load(sandbox_url, data_dir, DAYS[-1], NEXT)
    monkeypatch.setattr(pipeline.warehouse.plan, "DELETES_PER_CHECKPOINT", 1)
    night = build_warehouse(lake, target, memory_limit="64MB")
    assert night.rebuilt_partitions["revenue"] >= 6  # two days of three locations
    assert not unexpected(night.failed_checks)

    full = build_warehouse(lake, tmp_path / "full.duckdb", full=True)
    assert fingerprints(target) == fingerprints(full.path)


def test_a_partitioned_model_with_rows_of_other_months_fails_and_publishes_nothing(
        history, tmp_path):
    settings, _ = history
    models_dir = tmp_path / "models"
    import shutil
    shutil.copytree(MODELS_DIR, models_dir)
    path = models_dir / "marts" / "fct_turnover_daily.sql"  # a month too late: wrong
    sql = path.read_text()
    assert sql.rstrip().endswith("select * from rounded")
    path.write_text(sql.rstrip().removesuffix("select * from rounded") + "select * replace "
                    "(cast(business_date + interval 31 day as date) as business_date) "
                    "from rounded")
    target = tmp_path / "wh.duckdb"
    with pytest.raises(pipeline.warehouse.ModelError,
                       match="fct_turnover_daily has rows outside the partitions it was built "
                             "for: location_id=1001/business_date=2026-10-30"):
        build_warehouse(settings.warehouse.lake_dir, target, read_project(models_dir))
    assert not target.exists()
    assert not list(tmp_path.glob(".wh.duckdb.*.building*"))  # nor a half-built file


def test_the_file_is_written_in_the_storage_version_asked_for(history, tmp_path):
    settings, _ = history
    lake, target = settings.warehouse.lake_dir, tmp_path / "wh.duckdb"

    def storage(path: Path) -> str:
        with duckdb.connect(str(path), read_only=True) as con:
            return con.execute("select tags['storage_version'] from duckdb_databases() "
                               "where database_name = current_database()").fetchone()[0]

    build_warehouse(lake, target)
    assert storage(target) == "v1.0.0+"  # DuckDB's name of the format 1.0 and 1.1 read
    assert build_warehouse(lake, target).rebuilt_partitions == {"revenue": 0}
    newest = build_warehouse(lake, target, storage_version="latest")
    assert newest.rebuilt_partitions == {"revenue": 12}  # a new file
    assert storage(target) != "v1.0.0+"
    assert build_warehouse(lake, target, storage_version="latest").rebuilt_partitions \
        == {"revenue": 0}


def test_a_partitioned_model_may_not_read_the_configured_locations(tmp_path):
    """configured_locations() is not part of a partitioned model's version: a config
    change would leave its computed groups stale, so reading it is refused by name."""
    import shutil

    from pipeline.warehouse import discover_models

    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    path = models_dir / "marts" / "fct_turnover_daily.sql"
    path.write_text(path.read_text().replace(
        "from revenue_receipts", "from revenue_receipts semi join configured_locations() "
        "using (location_id)"))
    with pytest.raises(pipeline.warehouse.ModelError,
                       match="fct_turnover_daily is partitioned, so it may not read "
                             "configured_locations"):
        discover_models(models_dir)


def test_the_builds_bookkeeping_lives_beside_the_warehouse_and_survives_a_kill(
        history, tmp_path):
    """The warehouse holds the analyst's schemas only; its state file (named by its build)
    lies beside it. A build killed after it published its state file but before the
    warehouse leaves the warehouse in place with its own state: the next build is
    incremental and removes the stray file. Without its state file, a warehouse is built
    anew, to the same rows."""
    from pipeline.warehouse.standby import standby_path
    from pipeline.warehouse.state import build_id, state_dir, state_file

    settings, _ = history
    data = tmp_path / "data"
    shutil.copytree(settings.warehouse.data_dir, data,
                    ignore=shutil.ignore_patterns("dagster_home"))
    lake, target = data / "lake", data / "warehouse.duckdb"
    with duckdb.connect(str(target), read_only=True) as con:
        schemas = {s for (s,) in con.execute("select schema_name from duckdb_tables()")
                   .fetchall()}
    assert schemas == {"main"}  # staging: computed by each build, not stored
    assert state_file(target) == state_dir(target) / f"{build_id(target)}.duckdb"
    # beside it: the file it replaced (the standby the next build brings up to date) and
    # both files' state
    standby = standby_path(target)
    assert sorted(p.name for p in state_dir(target).iterdir()) == sorted([
        f"{build_id(target)}.duckdb", "standby.duckdb", f"{build_id(standby)}.duckdb"])
    stray = state_dir(target) / "0123456789abcdef.duckdb"  # a killed build's, published
    shutil.copyfile(state_file(target), stray)
    again = build_warehouse(lake, target)
    assert again.rebuilt_partitions == {"revenue": 0} and not stray.exists()
    rows = fingerprints(target, [m.qualified for m in discover_models().values()
                                 if m.materialized == "partitioned" and m.stored])
    shutil.rmtree(state_dir(target))
    anew = build_warehouse(lake, target)
    assert anew.rebuilt_partitions == {"revenue": 12}
    assert fingerprints(target, list(rows)) == rows
