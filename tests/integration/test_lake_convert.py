"""A lake made by the release before the one lake (a table per source table, a folder
per partition, commit records beside) converts once, to one Delta table per area, with
every partition's rows and load, and the warehouse built from it unchanged."""

import json
import tarfile
from pathlib import Path

import duckdb
import polars as pl

from pipeline.lake.convert import needs_conversion, place_of
from pipeline.lake.open import make_lake
from pipeline.lake.store import Lake
from pipeline.warehouse import build_warehouse
from tests.conftest import make_settings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lake-4.tar.gz"
"""Made by main before the one lake: locations 1001 (2026-11-18 twice, 2026-11-19) and
1002 (2026-11-18), 12 transactions a day; an empty voucher snapshot of 2026-11-19."""


def test_an_earlier_lake_converts_once_with_every_partition_and_load(tmp_path, capsys):
    settings = make_settings("http://127.0.0.1:9", tmp_path / "data")
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(settings.warehouse.data_dir, filter="data")
    root = settings.warehouse.lake_dir
    old = {p.relative_to(root / "_loads").parent.as_posix(): pl.read_parquet(p).row(0)
           for p in (root / "_loads").glob("*/**/load.parquet")}
    receipts = pl.read_parquet(root / "receipts" / "**" / "*.parquet", hive_partitioning=True)

    lake = make_lake(settings)

    assert "converting it to one Delta table per area (once)" in capsys.readouterr().err
    assert not needs_conversion(place_of(lake))
    assert sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(
        ".")) == ["revenue", "vouchers"]
    records = {f"{a}/{p}": r for a in ("revenue", "vouchers")
               for p, r in lake.records(a).items()}
    assert sorted(records) == sorted(old)
    for path, (load_id, loaded_at, _, _) in old.items():
        assert (records[path].load_id, records[path].loaded_at) == (load_id, loaded_at)
    # the committed rows only (the replaced load of 1001's 2026-11-18 is left behind)
    converted = pl.read_delta(str(root / "revenue")).select(
        "location_id", "receipts").explode("receipts").unnest("receipts")
    committed = {r.load_id for r in lake.records("revenue").values()}
    expected = sum(int(json.loads(r[3])["receipts"]) for p, r in old.items()
                   if p.startswith("revenue/"))
    assert converted.height == sum(int(r.metadata["receipts"])
                                   for r in lake.records("revenue").values()) == expected
    assert converted.height < receipts.height  # the old folders held a replaced file
    assert {r.load_id for r in lake.records("revenue").values()} == committed
    warehouse = tmp_path / "warehouse.duckdb"
    build_warehouse(lake.root, warehouse)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from fct_receipts").fetchone()[0] == expected
    assert make_lake(settings).root == Lake(root).root  # once: nothing more to do
    assert "converting" not in capsys.readouterr().err
