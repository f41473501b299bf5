"""The lake never shrinks in silence: a build whose lake lost a revenue partition the
warehouse was built from fails by name and keeps the warehouse, or keeps that day's
figures; dropping it is deliberate (``pos-etl build --forget-missing``), and then
``status`` names the hole. Over real HTTP, with the CLI as a person runs it."""

from __future__ import annotations

from datetime import date

import duckdb
import pytest

from pipeline.cli import main

pytestmark = pytest.mark.usefixtures("dagster_in_memory")



def _turnover(data) -> list:
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        return con.execute("select location_id, business_date, turnover_net "
                           "from fct_turnover_daily order by all").fetchall()


def test_a_lost_lake_file_never_publishes_other_figures(sandbox_url, tmp_path, capsys,
                                                          monkeypatch):
    """The data file of one day deleted: the next full build fails naming the location
    and date, and keeps that day's figures; never a warehouse without it and exit 0.
    Then the day removed from the lake by a Delta commit (as a person's ``DELETE``
    would): a build fails naming it, until the loss is dropped on purpose
    (``--forget-missing``); then the day is gone, and status names the hole."""
    from deltalake import DeltaTable

    from tests.conftest import write_config

    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    with open(config, "a") as fh:
        fh.write('first_business_date = "2026-10-01"\nlast_business_date = "2026-10-03"\n')
    assert main(["load", "--config", str(config), "--start", "2026-10-01", "--end",
                 "2026-10-03", "--no-catalog"]) == 0
    data = tmp_path / "data"
    before = _turnover(data)
    (lost,) = (data / "lake" / "revenue" / "business_date=2026-10-02").glob("*.parquet")
    aside = tmp_path / "aside"
    lost.rename(aside)
    capsys.readouterr()
    code = main(["build", "--config", str(config), "--full"])
    out = capsys.readouterr().out
    aside.rename(lost)
    assert _turnover(data) == before  # the warehouse in place is the same
    assert code == 1 and "FAILED warehouse_models" in out, out
    assert "lake revenue partition location_id 1001, business_date 2026-10-02: its file" \
        in out, out

    DeltaTable(str(data / "lake" / "revenue")).delete("business_date = '2026-10-02'")
    capsys.readouterr()
    assert main(["build", "--config", str(config)]) == 1
    assert "location 1001 2026-10-02" in capsys.readouterr().out
    assert _turnover(data) == before
    assert main(["build", "--config", str(config), "--forget-missing"]) == 0
    assert [row[1] for row in _turnover(data)] == [date(2026, 10, 1), date(2026, 10, 3)]
    capsys.readouterr()
    assert main(["status", "--config", str(config)]) == 1
    assert "location 1001 VIE01: missing 2026-10-02 (1 day of 3)" in capsys.readouterr().out


def test_a_lake_that_went_back_to_an_older_version_fails_the_build_by_name(
        sandbox_url, tmp_path, capsys, monkeypatch):
    """A lake restored from an older copy (every day still there, but older loads): the
    build names the table and both versions and keeps the warehouse; --forget-missing
    accepts the lake as it is."""
    import shutil

    from tests.conftest import write_config

    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    load = ["load", "--config", str(config), "--start", "2026-10-01", "--end", "2026-10-02",
            "--no-catalog"]
    assert main(load) == 0
    data = tmp_path / "data"
    shutil.copytree(data / "lake", tmp_path / "older")
    assert main(load) == 0  # the same days again: newer versions
    before = _turnover(data)
    shutil.rmtree(data / "lake")
    shutil.copytree(tmp_path / "older", data / "lake")
    capsys.readouterr()
    assert main(["build", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "the lake went back: lake revenue at version 1, the warehouse was built from " \
           "version 2" in out, out
    assert _turnover(data) == before
    assert main(["build", "--config", str(config), "--forget-missing"]) == 0
    assert _turnover(data) == before  # the same receipts, older loads


def test_a_lake_that_shrank_across_an_upgrade_fails_the_build_by_name(sandbox_url, tmp_path):
    """The first build after an upgrade that changed the state's format (a new file) still
    compares the days the warehouse in place was built from, in its state of the release
    before, with the lake."""
    import pytest
    from deltalake import DeltaTable

    from pipeline.warehouse import build_warehouse
    from pipeline.warehouse.shrink import LakeShrank
    from pipeline.warehouse.state import state_file
    from tests.conftest import loaded_warehouse

    settings = loaded_warehouse(sandbox_url, tmp_path / "data", date(2026, 10, 1),
                                date(2026, 10, 3), [1001])
    lake, target = settings.warehouse.lake_dir, settings.warehouse.warehouse_path
    with duckdb.connect(str(state_file(target))) as con:  # as format 6 kept its versions
        con.execute("create table _state.parts as select m.model, p.part_group, "
                    "m.hash || p.version as version from _state.model_hashes as m "
                    "inner join _state.part_versions as p using (area)")
        con.execute("drop table _state.part_versions")
        con.execute("drop table _state.model_hashes")
        con.execute("update _state.meta set value = '6' where key = 'format'")
    before = _turnover(target.parent)
    DeltaTable(str(lake / "revenue")).delete("business_date = '2026-10-02'")
    with pytest.raises(LakeShrank, match="location 1001 2026-10-02"):
        build_warehouse(lake, target)
    assert _turnover(target.parent) == before
