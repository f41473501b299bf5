"""Fault injection: ``pos-etl load`` killed (SIGKILL) at random points, seed by seed.

Each seed starts from the same loaded lake and warehouse (the old state) and kills a
load of changed source data (a corrected receipt: the new state) after a random delay
somewhere in the load's run time: in Dagster's start, mid-partition, between a
partition's files and its commit, in the warehouse build. After each kill:

- the revenue table's newest Delta version (what our warehouse, Spark or Polars read)
  holds every partition once, in whole files: its receipt count that of its load, no
  line or payment without its receipt;
- the warehouse opens and equals either the old or the new state, never a mix;
- a rerun ends in exactly the new state.

``POS_ETL_FAULT_SEEDS`` sets how many seeds (default 2 in ``make test``; ``make faults``
runs 30).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import date, datetime
from datetime import time as clock
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from pipeline.lake.store import Lake
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import Correction, SandboxData, receipts_on
from pos_sandbox.server import running_sandbox
from tests.conftest import write_config

ROOT = Path(__file__).resolve().parents[2]
DAY1, DAY2 = date(2026, 11, 19), date(2026, 11, 20)
SEEDS = int(os.environ.get("POS_ETL_FAULT_SEEDS", "2"))


def load_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", "load", "--config", str(config),
            "--start", str(DAY1), "--end", str(DAY2), "--no-catalog"]


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG")}
    return env | {"POS_TEST_KEY_1001": "sandbox-key-1001"}


def run(config: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(load_command(config), cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return time.monotonic() - started


def state(folder: Path) -> tuple:
    """What an analyst sees: turnover per day and the row counts of the facts."""
    with duckdb.connect(str(folder / "data" / "warehouse.duckdb"), read_only=True) as con:
        return (con.execute("select business_date, revenue_receipt_count, turnover_net "
                            "from fct_turnover_daily order by 1").fetchall(),
                con.execute("select (select count(*) from fct_receipts), "
                            "(select count(*) from fct_receipt_items), "
                            "(select count(*) from fct_payments)").fetchall())


def assert_lake_whole(folder: Path) -> None:
    """The revenue table's newest version: each partition once, in whole files, its
    tables agreeing with each other and with its load's count (for our reader and for
    deltalake's, which reads the same version)."""
    lake = Lake(folder / "data" / "lake")
    records = lake.records("revenue")
    assert len(records) == 2
    for path, record in records.items():
        partition = dict(part.split("=") for part in path.split("/"))
        tables = {name: lake.read("revenue", name, partition) for name in record.tables}
        assert tables["receipts"].num_rows == int(record.metadata["receipts"])
        receipts = set(tables["receipts"]["transaction_id"].to_pylist())
        for child in ("receipt_items", "payments"):
            assert set(pc.unique(tables[child]["transaction_id"]).to_pylist()) <= receipts
    table = DeltaTable(str(lake.root / "revenue"))
    for uri in table.file_uris():
        pq.read_table(uri)  # whole
    rows = pl.read_delta(str(lake.root / "revenue")).select("location_id", "business_date")
    assert rows.height == rows.n_unique() == 2  # each day once


@pytest.fixture(scope="module")
def corrected_pos():
    """The POS after it corrected one receipt of DAY1: moved to DAY2, a line fewer."""
    moved = next(r for r in receipts_on(1001, DAY1, SandboxData())
                 if r.transaction_type == "Abrechnen" and len(r.items) >= 3)
    data = replace(SandboxData(), corrections=(Correction(
        1001, moved.transaction_id, datetime.combine(DAY2, clock(13, 0))),))
    with running_sandbox(SandboxConfig(data=data)) as url:
        yield url


def test_kill_9_at_random_points_keeps_old_or_new_and_reruns_to_new(
        sandbox_url, corrected_pos, tmp_path):
    old_dir = tmp_path / "old"
    old_dir.mkdir()
    run(write_config(old_dir, sandbox_url))
    old = state(old_dir)
    new_dir = tmp_path / "new"
    shutil.copytree(old_dir, new_dir)
    duration = run(write_config(new_dir, corrected_pos))
    new = state(new_dir)
    assert old != new

    rng = random.Random(20261123)
    outcomes = {"old": 0, "new": 0}
    for seed in range(SEEDS):
        folder = tmp_path / f"seed{seed}"
        shutil.copytree(old_dir, folder)
        config = write_config(folder, corrected_pos)
        delay = rng.uniform(0.2, duration * 0.75)  # the last quarter is the exit
        load = subprocess.Popen(load_command(config), cwd=ROOT, env=environment(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        load.send_signal(signal.SIGKILL)
        load.wait(timeout=30)
        assert_lake_whole(folder)
        seen = state(folder)
        assert seen in (old, new), f"seed {seed}, killed after {delay:.2f} s: {seen}"
        outcome = "old" if seen == old else "new"
        outcomes[outcome] += 1
        print(f"seed {seed}: killed after {delay:.2f} s: {outcome} state")
        run(config)
        assert state(folder) == new, f"seed {seed}: the rerun after the kill"
        assert_lake_whole(folder)
    print(f"fault injection: {SEEDS} kills in a {duration:.1f} s load, outcomes {outcomes}")
