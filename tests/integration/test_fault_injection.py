"""Fault injection: ``pos-etl load`` killed (SIGKILL) at random points, seed by seed.

Each seed starts from the same loaded lake and warehouse (the old state) and kills a
load of changed source data (a corrected receipt: the new state) after a random delay
somewhere in the load's run time: in Dagster's start, mid-partition, between a
partition's files and its commit, in the warehouse build. After each kill:

- every committed lake partition is whole (each of its tables has its committed file,
  the receipt count of the commit, no item without its receipt);
- each revenue table's Delta log (what Spark or Polars read) holds every partition once,
  in a whole committed file;
- the warehouse opens and equals either the old or the new state, never a mix;
- a rerun ends in exactly the new state, and the Delta logs hold what the records do.

``POS_ETL_FAULT_SEEDS`` sets how many seeds (default 3 in ``make test``; ``make faults``
runs 30).
"""

from __future__ import annotations

import json
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
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from pipeline.lake.store import LOAD_FILE, LOADS_DIR, data_file_name
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


def assert_lake_whole(folder: Path, published: bool = False) -> None:
    """Every committed partition whole; every table's Delta snapshot with each partition
    once, in a whole file (``published``: the file its record names)."""
    lake = folder / "data" / "lake"
    commits = list((lake / LOADS_DIR / "revenue").glob(f"**/{LOAD_FILE}"))
    assert len(commits) == 2
    named = {}
    for commit in commits:
        record = pq.read_table(commit).to_pylist()[0]
        partition = commit.parent.relative_to(lake / LOADS_DIR / "revenue")
        tables = {name: pq.read_table(lake / name / partition / data_file_name(
            record["load_id"])) for name in record["tables"]}
        assert tables["receipts"].num_rows == int(json.loads(record["metadata"])["receipts"])
        receipts = set(tables["receipts"]["transaction_id"].to_pylist())
        for child in ("receipt_items", "payments"):
            assert set(pc.unique(tables[child]["transaction_id"]).to_pylist()) <= receipts
        named[partition.as_posix()] = data_file_name(record["load_id"])
    for table in ("receipts", "receipt_items", "item_side_dishes", "payments"):
        files = [uri.split(f"/{table}/", 1)[1] for uri in
                 DeltaTable(str(lake / table)).file_uris()]
        partitions = [f.rsplit("/", 1)[0] for f in files]
        assert sorted(partitions) == sorted(named), table  # each day once
        for file in files:
            pq.read_table(lake / table / file)  # whole
        if published:
            assert sorted(files) == sorted(f"{p}/{n}" for p, n in named.items())


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
        assert_lake_whole(folder, published=True)
    print(f"fault injection: {SEEDS} kills in a {duration:.1f} s load, outcomes {outcomes}")
