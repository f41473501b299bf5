"""Dagster's production storage: runs, event log and schedules on a real PostgreSQL server
(Debian's package, ``make postgres``), started here on a free port in a temporary folder,
with the ``dagster.yaml`` that ``docs/production.md`` shows."""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import dagster as dg
import psycopg2
import pytest

from pipeline.cli import main
from pipeline.orchestration.assets.revenue import LOADED_CHECK, REVENUE_KEY
from tests.conftest import write_config

DAY = "2026-11-20"
DOC = Path(__file__).resolve().parents[2] / "docs" / "production.md"


def production_yaml(port: int) -> str:
    """The ``dagster.yaml`` of ``docs/production.md``, pointed at the server on ``port``."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert "hostname: db.internal" in block and "port: 5432" in block
    return block.replace("hostname: db.internal", "hostname: 127.0.0.1").replace(
        "port: 5432", f"port: {port}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of its own: a cluster in a temporary folder, on a free port,
    with the role and database ``dagster`` (password ``secret``); yields its port."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    assert found, "PostgreSQL is not installed: `make test` installs it (`make postgres`)"
    bin_dir = Path(found[-1]).parent
    # not under pytest's own temporary folder: only its owner may enter that
    folder = Path(tempfile.mkdtemp(prefix="pos-etl-postgres-"))
    as_owner: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to `postgres`
        shutil.chown(folder, "postgres")
        os.chmod(folder, 0o700)
        as_owner = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    password = folder / "pw"
    password.write_text("secret\n")
    if as_owner:
        shutil.chown(password, "postgres")
    subprocess.run([*as_owner, bin_dir / "initdb", "-D", data, "-U", "dagster",
                    "--pwfile", password, "-A", "scram-sha-256"], check=True,
                   capture_output=True)
    subprocess.run([*as_owner, bin_dir / "pg_ctl", "-D", data, "-l", folder / "log", "-w",
                    "-o", f"-p {port} -h 127.0.0.1 -k {folder}", "start"], check=True,
                   capture_output=True)
    try:
        con = psycopg2.connect(host="127.0.0.1", port=port, user="dagster", password="secret",
                               dbname="postgres")
        con.autocommit = True  # create database runs outside a transaction
        con.cursor().execute("create database dagster")
        con.close()
        yield port
    finally:
        subprocess.run([*as_owner, bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_load_is_recorded_in_postgres(postgres, sandbox_url, sandbox_keys, tmp_path,
                                        monkeypatch, capsys):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(production_yaml(postgres))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "secret")
    config = write_config(tmp_path, sandbox_url)
    code = main(["load", "--config", str(config), "--start", DAY, "--end", DAY,
                 "--no-catalog"])
    assert code == 0, capsys.readouterr()
    assert (home / "dagster.yaml").read_text() == production_yaml(postgres)
    with dg.DagsterInstance.get() as instance:
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
        runs = instance.get_run_records()
        assert sorted(r.dagster_run.job_name for r in runs) == ["load_job", "warehouse_job"]
        assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert instance.get_materialized_partitions(REVENUE_KEY) == {DAY}
        loaded = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(REVENUE_KEY, LOADED_CHECK)])
        assert next(iter(loaded.values())).status.value == "SUCCEEDED"
    # and it is really there, in PostgreSQL's tables, not in SQLite files in the home
    with psycopg2.connect(host="127.0.0.1", port=postgres, user="dagster",
                          password="secret", dbname="dagster") as con:
        cur = con.cursor()
        cur.execute("select count(*) from runs")
        assert cur.fetchone()[0] == 2
        cur.execute("select count(*) from asset_check_executions")
        assert cur.fetchone()[0] > 0
    assert not (home / "history").exists() and not list(home.rglob("*.db"))


def _take_in_postgres(args: tuple[str, int]) -> None:
    """In a process of its own (as on another machine): ``n`` permits of the budget kept
    in PostgreSQL at ``url`` (12 an hour)."""
    from pipeline.pos_api.budget import RequestBudget

    url, n = args
    budget = RequestBudget.in_postgres(12, url, "pos.busy.example.com", per=3600)
    for _ in range(n):
        budget.take()
    budget.close()


def test_the_request_budget_in_postgres_is_every_processes_and_a_429_holds_them_all(
        postgres):
    """``[source] budget_database_env``: processes that share no disk (pods) share the
    POS host's permits and its 429 holds through PostgreSQL (#59)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from pipeline.pos_api.budget import RequestBudget
    from tests.unit.test_budget import Clock

    url = f"postgresql://dagster:secret@127.0.0.1:{postgres}/dagster"
    told, other, elsewhere = Clock(), Clock(), Clock()
    here = RequestBudget.in_postgres(50, url, "pos.example.com", sleep=told.sleep,
                                     clock=told.time)
    there = RequestBudget.in_postgres(50, url, "pos.example.com", sleep=other.sleep,
                                      clock=other.time)
    another_pos = RequestBudget.in_postgres(50, url, "pos.elsewhere.com",
                                            sleep=elsewhere.sleep, clock=elsewhere.time)
    here.hold(7)  # a 429 told to one process, "Retry-After: 7"
    there.take()
    another_pos.take()
    assert other.slept == [7] and elsewhere.slept == []  # that host's processes alone
    for budget in (here, there, another_pos):
        budget.close()
    # three processes taking 3 permits each: the one budget counts all 9
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_take_in_postgres, [(url, 3)] * 3))
    budget = RequestBudget.in_postgres(12, url, "pos.busy.example.com", per=3600)
    assert budget.taken() == 9
    budget.close()
