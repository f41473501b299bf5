"""Receipts the POS corrects after they were loaded: the newest loaded version wins, with
exactly its own lines, on its own business date (over real HTTP, through ``pos-etl load``)."""

from datetime import date
from decimal import Decimal

import duckdb
import polars as pl

from pipeline.core.reporting import Reporter
from pipeline.lake.store import Lake
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import SandboxData
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings, moved_receipt, run_load_in_memory, truth_turnover

OLD_DAY, NEW_DAY = date(2026, 11, 17), date(2026, 11, 18)


def warehouse_rows(settings, sql):
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def lake_receipts(data_dir) -> pl.DataFrame:
    """The lake's revenue receipts as a reader of the Delta table sees them (Polars): one
    row per receipt of each day's row, with the load it came with."""
    rows = pl.read_delta(str(data_dir / "lake" / "revenue"))
    return rows.select("location_id", "business_date", "loaded_at", "receipts").explode(
        "receipts").unnest("receipts")


def test_a_receipt_moved_to_a_later_day_counts_once_with_its_new_lines(
        sandbox_url, tmp_path, sandbox_keys):
    data_dir = tmp_path / "data"
    first = run_load_in_memory(make_settings(sandbox_url, data_dir), OLD_DAY, NEW_DAY, [1001],
                               catalog=False, progress=Reporter())
    assert first.ok, first.summary()
    before = SandboxData()
    moved, after = moved_receipt(1001, OLD_DAY, NEW_DAY, before)
    assert truth_turnover(1001, OLD_DAY, after) != truth_turnover(1001, OLD_DAY, before)

    # The POS now serves the corrected receipt; the nightly run loads only the new day.
    with running_sandbox(SandboxConfig(data=after)) as corrected_pos:
        nightly = run_load_in_memory(make_settings(corrected_pos, data_dir), NEW_DAY, NEW_DAY,
                                     [1001], catalog=False, progress=Reporter())
    assert nightly.ok, nightly.summary()  # the turnover check passes: no stale lines

    daily = dict(warehouse_rows(
        make_settings(sandbox_url, data_dir),
        "select business_date, turnover_net from fct_turnover_daily where location_id = 1001"))
    assert daily == {OLD_DAY: truth_turnover(1001, OLD_DAY, after),
                     NEW_DAY: truth_turnover(1001, NEW_DAY, after)}
    settings = make_settings(sandbox_url, data_dir)
    assert warehouse_rows(settings, f"""
        select business_date, count(*) from fct_receipts where transaction_id =
        '{moved.transaction_id}' group by all""") == [(NEW_DAY, 1)]
    assert warehouse_rows(settings, f"""
        select count(*) from fct_receipt_items where transaction_id =
        '{moved.transaction_id}'""") == [(len(moved.items) - 1,)]
    # The lake holds each day as the POS answered it when it was loaded: the nightly read
    # nothing back, so the old day's row keeps the receipt until that day is loaded again.
    # A reader of the Delta table (Polars) that keeps a receipt's newest load counts it
    # once, on its new day, as the warehouse does.
    receipts = lake_receipts(data_dir)
    assert sorted(receipts.filter(pl.col("transaction_id") == moved.transaction_id)[
        "business_date"].to_list()) == [OLD_DAY, NEW_DAY]
    newest = receipts.sort("loaded_at").unique(["location_id", "transaction_id"], keep="last")
    assert newest.filter(pl.col("transaction_id") == moved.transaction_id)[
        "business_date"].to_list() == [NEW_DAY]
    # Loading the old day again (the nightly's lookback, or the drift check) leaves the
    # lake with the receipt once, the old day's figures the POS's corrected ones.
    with running_sandbox(SandboxConfig(data=after)) as corrected_pos:
        again = run_load_in_memory(make_settings(corrected_pos, data_dir), OLD_DAY, OLD_DAY,
                                   [1001], catalog=False, progress=Reporter())
    assert again.ok, again.summary()
    receipts = lake_receipts(data_dir)
    assert receipts.filter(pl.col("transaction_id") == moved.transaction_id)[
        "business_date"].to_list() == [NEW_DAY]
    old = Lake(data_dir / "lake").committed(
        "revenue", {"location_id": 1001, "business_date": OLD_DAY.isoformat()})
    assert int(old.metadata["receipts"]) == receipts.filter(
        pl.col("business_date") == OLD_DAY).height
    assert Decimal(old.metadata["turnover_net"]) == truth_turnover(1001, OLD_DAY, after)
    assert warehouse_rows(settings, f"""
        select business_date, count(*) from fct_receipts where transaction_id =
        '{moved.transaction_id}' group by all""") == [(NEW_DAY, 1)]
