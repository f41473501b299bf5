"""The lake never shrinks in silence: a build whose lake lost a revenue partition the
warehouse was built from fails by name and keeps the warehouse, or keeps that day's
figures; dropping it is deliberate (``pos-etl build --forget-missing``), and then
``status`` names the hole. Over real HTTP, with the CLI as a person runs it."""

from __future__ import annotations

from datetime import date

import duckdb

from pipeline.cli import main


def _turnover(data) -> list:
    with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
        return con.execute("select location_id, business_date, turnover_net "
                           "from fct_turnover_daily order by all").fetchall()


def test_a_lost_lake_file_never_publishes_other_figures(sandbox_url, tmp_path, capsys,
                                                          monkeypatch):
    """A single lake file of one day deleted in turn (its commit record; the data file of
    its biggest and of its smallest revenue table, the receipts and the side dishes:
    the other two are read alike): the next full build fails naming the location and
    date, and keeps that day's figures; never a warehouse without it and exit 0. Then the
    same loss dropped on purpose: the day is gone, and status names the hole."""
    from tests.conftest import write_config

    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    with open(config, "a") as fh:
        fh.write('first_business_date = "2026-10-01"\nlast_business_date = "2026-10-03"\n')
    assert main(["load", "--config", str(config), "--start", "2026-10-01", "--end",
                 "2026-10-03", "--no-catalog"]) == 0
    data = tmp_path / "data"
    before = _turnover(data)
    day = "location_id=1001/business_date=2026-10-02"
    files = [data / "lake" / "_loads" / "revenue" / day / "load.parquet"] + sorted(
        (data / "lake").glob(f"*/{day}/*.parquet"))
    assert len(files) == 5  # the commit record, receipts, lines, side dishes, payments
    tried = [files[0], *(f for f in files[1:]
                         if f.parts[-4] in ("receipts", "item_side_dishes"))]
    assert len(tried) == 3
    for lost in tried:
        aside = tmp_path / "aside"
        lost.rename(aside)
        capsys.readouterr()
        code = main(["build", "--config", str(config), "--full"])
        out = capsys.readouterr().out
        aside.rename(lost)
        assert _turnover(data) == before, lost  # the warehouse in place is the same
        assert code == 1 and "FAILED warehouse_models" in out, (lost, out)
        assert "location 1001 2026-10-02" in out or \
            "location_id 1001, business_date 2026-10-02" in out, (lost, out)

    files[0].unlink()  # the commit record: the partition is gone from the lake
    assert main(["build", "--config", str(config), "--forget-missing"]) == 0
    assert [row[1] for row in _turnover(data)] == [date(2026, 10, 1), date(2026, 10, 3)]
    capsys.readouterr()
    assert main(["status", "--config", str(config)]) == 1
    assert "location 1001 VIE01: missing 2026-10-02 (1 day of 3)" in capsys.readouterr().out
