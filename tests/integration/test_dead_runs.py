"""A run that died (kill -9, OOM, power loss) never keeps a pool slot: the next command
fails it, frees its slots and says so in one line. A command waiting for a slot held by
a live run says what it waits for, and SIGTERM or Ctrl-C stops it (143, 130); Ctrl-C
anywhere (starting, loading, building) exits 130 with no traceback and says what was
done and what finishes the rest. All on a real data dir, with the CLI in its own
processes, signalled as a terminal signals them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.orchestration.assets.revenue import REVENUE_KEY
from pipeline.orchestration.runs import IN_PROGRESS, PID_TAG
from pos_sandbox.app import Faults, SandboxConfig, create_app
from pos_sandbox.server import serving
from tests.conftest import write_config

ROOT = Path(__file__).resolve().parents[2]
DAY1, DAY2 = date(2026, 11, 19), date(2026, 11, 20)


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG")}
    return env | {"POS_TEST_KEY_1001": "sandbox-key-1001"}


def cli(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", *args[:1], "--config", str(config), *args[1:]]


LOAD = ("load", "--start", str(DAY1), "--end", str(DAY2), "--no-catalog")


def figures(folder: Path) -> list:
    with duckdb.connect(str(folder / "data" / "warehouse.duckdb"), read_only=True) as con:
        return con.execute("select business_date, revenue_receipt_count, turnover_net "
                           "from fct_turnover_daily order by 1").fetchall()


def instance_of(folder: Path) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(folder / "data" / "dagster_home"))


def prepared_instance(folder: Path) -> None:
    """The data dir's instance, its storage created, before a command runs on it (two
    processes creating Dagster's SQLite tables at once: one fails)."""
    from pipeline.orchestration.instance import prepare_home

    prepare_home(folder / "data" / "dagster_home")
    with instance_of(folder):
        pass


def holders(instance: dg.DagsterInstance, pool: str) -> set[str]:
    return {s.run_id for s in instance.event_log_storage.get_concurrency_info(pool).claimed_slots}


def kill_once_it_holds(instance, command: list[str], pool: str) -> None:
    """Start ``command``, wait until its run holds a slot of ``pool``, kill -9 it."""
    process = subprocess.Popen(command, cwd=ROOT, env=environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            runs = [instance.get_run_by_id(r) for r in holders(instance, pool)]
            if any(r and r.tags.get(PID_TAG) == str(process.pid) for r in runs):
                return
            assert process.poll() is None, "the command ended before it held a slot"
            time.sleep(0.05)
        pytest.fail(f"{command} never held a slot of {pool}")
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def loaded_once(tmp_path_factory):
    """A data dir loaded over DAY1..DAY2 by ``pos-etl load`` from a sandbox served over
    HTTP for the module; yields its folder."""
    folder = tmp_path_factory.mktemp("loaded")
    with serving(create_app()) as url:
        config = write_config(folder, url)
        done = subprocess.run(cli(config, *LOAD), cwd=ROOT, env=environment(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        yield folder


@pytest.fixture
def loaded(loaded_once, tmp_path):
    """A copy of that data dir (its lake, warehouse and Dagster instance, whose files
    no command has open) in the test's folder; its config."""
    shutil.copytree(loaded_once, tmp_path, dirs_exist_ok=True)
    return tmp_path / "pos.toml"


POOL_SLOTS = 2
"""The slots of each pool (``pos_api``, ``warehouse``) in this test: an operator's
``dagster instance concurrency set``, fewer than the shipped 4, so that one kill more
than the slots takes 3 processes of each kind, not 5."""


def test_more_killed_builds_and_loads_than_a_pool_has_slots_never_wedge_the_instance(
        loaded, tmp_path):
    """One kill more than each pool's slots: were a dead run's slot not freed, the last
    command of each kind would wait for good."""
    before = figures(tmp_path)
    with instance_of(tmp_path) as instance:
        for pool in ("warehouse", "pos_api"):
            assert instance.event_log_storage.get_concurrency_info(pool).slot_count == 4
            instance.event_log_storage.set_concurrency_slots(pool, POOL_SLOTS)
        for _ in range(POOL_SLOTS + 1):
            kill_once_it_holds(instance, cli(loaded, "build", "--full"), "warehouse")
        for _ in range(POOL_SLOTS + 1):
            kill_once_it_holds(instance, cli(loaded, *LOAD), "pos_api")
        assert {instance.event_log_storage.get_concurrency_info(pool).slot_count
                for pool in ("warehouse", "pos_api")} == {POOL_SLOTS}
        assert holders(instance, "pos_api")  # the last one's slot is still taken
        done = subprocess.run(cli(loaded, "build"), cwd=ROOT, env=environment(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        # it freed the dead runs' slots at once: it never waited for one
        assert "waiting for a free slot" not in done.stderr, done.stderr
        died = [line for line in done.stderr.splitlines() if "died without finishing" in line]
        assert len(died) == 1 and "(load_job, pid " in died[0], done.stderr
        assert figures(tmp_path) == before
        assert not holders(instance, "pos_api") and not holders(instance, "warehouse")
        assert not instance.get_runs(dg.RunsFilter(statuses=IN_PROGRESS))
        failed = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert len(failed) == 2 * (POOL_SLOTS + 1)


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


HOLDER = textwrap.dedent("""
    import sys, time
    import dagster as dg
    from pipeline.orchestration.runs import process_tags
    instance = dg.DagsterInstance.from_config(sys.argv[1])
    instance.event_log_storage.set_concurrency_slots("warehouse", 1)
    run = instance.create_run_for_job(dg.GraphDefinition("held").to_job(),
                                      tags=process_tags())
    instance.event_log_storage.claim_concurrency_slot("warehouse", run.run_id, "hold")
    print(run.run_id, flush=True)
    time.sleep(600)
""")


def test_a_command_waiting_for_a_live_runs_slot_says_so_and_stops_on_a_signal(
        loaded, tmp_path):
    home = tmp_path / "data" / "dagster_home"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], cwd=ROOT,
                              env=environment(), stdout=subprocess.PIPE, text=True)
    try:
        held_by = holder.stdout.readline().strip()[:8]
        for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
            # as from a terminal: Ctrl-C's SIGINT at its default (a child inherits an
            # ignored SIGINT, as it was in the whole suite's run: the command then waited on)
            waiting = subprocess.Popen(cli(loaded, "build"), cwd=ROOT, env=environment(),
                                       stderr=subprocess.PIPE, text=True,
                                       preexec_fn=_sigint_as_from_a_terminal)
            said = waiting.stderr.readline()  # what it is about to do, first
            assert said.startswith("build: the warehouse "), said
            line = waiting.stderr.readline()
            assert f"waiting for a free slot: pool 'warehouse' (1 of 1 slots taken by " \
                   f"run(s) {held_by})" in line
            waiting.send_signal(sig)
            try:
                waiting.wait(timeout=30)
            except subprocess.TimeoutExpired:
                waiting.kill()
                pytest.fail(f"{sig!r} did not stop the waiting command: "
                            f"{waiting.communicate()[1][-2000:]}")
            assert waiting.returncode == code, waiting.stderr.read()
            assert "stopped" in waiting.stderr.read()
        holder.kill()
        holder.wait()
        done = subprocess.run(cli(loaded, "build"), cwd=ROOT, env=environment(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"run {held_by} " in done.stderr and "died without finishing" in done.stderr
    finally:
        holder.kill()
        holder.wait()


def _as_from_a_terminal() -> None:
    """A command started as from a shell: its own process group, Ctrl-C's SIGINT at its
    default. ``ctrl_c`` then signals the whole group, as a terminal does: every process
    the command started gets it too."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c(process: subprocess.Popen) -> tuple[str, str]:
    os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=60)


def stopped_as_the_ui_shows_it(folder: Path, job: str) -> None:
    """The run that Ctrl-C stopped is ``CANCELED`` with the reason, as a termination
    asked for in the UI, not a failure "interrupted unexpectedly"."""
    with instance_of(folder) as instance:
        [run] = instance.get_runs(dg.RunsFilter(job_name=job), limit=1)
        messages = [e.message or "" for e in instance.all_logs(run.run_id)]
    assert run.status == dg.DagsterRunStatus.CANCELED, run.status
    assert "stopped (Ctrl-C)" in messages, messages[-5:]
    assert not [m for m in messages if "No user initiated termination" in m]


def test_ctrl_c_during_a_load_exits_130_and_says_what_was_committed(tmp_path):
    from pipeline.lake.store import Lake
    from pipeline.load.steps import partition_key

    slow = SandboxConfig(faults=Faults(latency_ms=400))
    first = date(2026, 10, 1)
    days = [first + timedelta(days=n) for n in range((DAY2 - first).days + 1)]
    with serving(create_app(slow)) as url:
        config = write_config(tmp_path, url)
        prepared_instance(tmp_path)
        load = subprocess.Popen(cli(config, "load", "--start", str(days[0]), "--end",
                                    str(days[-1]), "--no-catalog"),
                                cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=_as_from_a_terminal)
        deadline = time.monotonic() + 60
        while not (tmp_path / "data" / "dagster_home" / "dagster.yaml").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with instance_of(tmp_path) as instance:
            while len(instance.get_materialized_partitions(REVENUE_KEY)) < 2:
                assert load.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        out, err = ctrl_c(load)
    assert load.returncode == 130, out + err
    assert "Traceback" not in out + err  # Dagster's helper processes get Ctrl-C as well
    lake = Lake(tmp_path / "data" / "lake")
    committed = sum(lake.has("revenue", partition_key(1001, d)) for d in days)
    assert 2 <= committed < len(days)
    # each date is reported once its partitions are committed: at most the ones in
    # flight when Ctrl-C came are committed but not reported (fetched again)
    done = int(out.split("revenue: stopped with ")[1].split(" of ")[0])
    assert 2 <= done <= committed, out
    assert f"of {len(days)} business dates done" in out
    assert "FAILED lake__revenue: stopped (Ctrl-C or SIGTERM)" in out
    assert "to finish: the same command with --missing-only" in out
    stopped_as_the_ui_shows_it(tmp_path, "load_job")


def test_ctrl_c_during_a_build_exits_130_keeps_the_warehouse_and_says_how_to_finish(
        loaded, tmp_path):
    before = figures(tmp_path)
    data = tmp_path / "data"
    build = subprocess.Popen(cli(loaded, "build", "--full"), cwd=ROOT, env=environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 120
    while not list(data.glob(".warehouse.duckdb.*.building")):  # its queries run
        assert build.poll() is None and time.monotonic() < deadline, build.communicate()
        time.sleep(0.01)
    out, err = ctrl_c(build)
    assert build.returncode == 130, out + err
    assert "FAILED warehouse_models: stopped (Ctrl-C or SIGTERM)" in out
    assert "to finish: pos-etl build --config " in out  # the hint repeats its options
    assert "(the previous warehouse is in place" in out
    assert "Traceback" not in out + err and "Query interrupted" not in out + err
    assert figures(tmp_path) == before
    assert not list(data.glob(".warehouse.duckdb.*.building*"))  # its scratch files gone
    stopped_as_the_ui_shows_it(tmp_path, "warehouse_job")


def _mapped(pid: int, library: str) -> bool:
    """Whether the process ``pid`` has loaded a shared library named ``library``."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # (it ended)
        return False


def test_ctrl_c_while_the_command_starts_exits_130_without_a_traceback(tmp_path):
    """Ctrl-C once the command's imports are under way, early (pydantic's core, the
    settings) and later (pyarrow's, the lake): events the test waits for, not a time (a
    Ctrl-C 0.2 s after the start landed in Python's own start-up, before any line of
    pos-etl ran, on a busy machine). A command's imports (Dagster's) take seconds."""
    command = Path(sys.executable).with_name("pos-etl")
    for library in ("_pydantic_core", "libarrow"):
        started = subprocess.Popen([str(command), "status"], cwd=tmp_path,
                                   env=environment(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   preexec_fn=_as_from_a_terminal)
        deadline = time.monotonic() + 120
        while not _mapped(started.pid, library):  # bounded: it loads it, or it ended
            assert started.poll() is None and time.monotonic() < deadline, \
                started.communicate()
            time.sleep(0.005)
        out, err = ctrl_c(started)
        assert started.returncode == 130, out + err
        # (click closes the terminal's ^C echo with a blank line first)
        assert err.strip("\n") == "stopped (Ctrl-C)", err


def test_a_killed_load_leaves_exactly_its_finished_dates_materialized(tmp_path):
    """What the UI's "failed and missing" backfill loads again after a load was killed
    part-way: the dates it had not finished. Each date is recorded once its partitions
    are committed, so Dagster never counts a date the lake lacks; the lake may have a few
    more, those committed between the last record and the kill (at most one commit's,
    ``[lake] commit_partitions``: they are fetched again)."""
    from pipeline.lake.store import Lake
    from pipeline.load.steps import partition_key
    from pipeline.orchestration.assets.revenue import REVENUE_KEY

    days = [date(2026, 11, d) for d in range(1, 21)]
    slow = create_app(SandboxConfig(faults=Faults(latency_ms=150)))
    with serving(slow) as url:
        config = write_config(tmp_path, url)
        with open(config, "a") as fh:
            fh.write("[lake]\ncommit_partitions = 2\n")
        prepared_instance(tmp_path)
        process = subprocess.Popen(
            cli(config, "load", "--start", str(days[0]), "--end", str(days[-1]),
                "--no-catalog"), cwd=ROOT, env=environment(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        home = tmp_path / "data" / "dagster_home"
        try:
            deadline = time.monotonic() + 120
            while not (home / "dagster.yaml").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            with instance_of(tmp_path) as instance:
                while len(instance.get_materialized_partitions(REVENUE_KEY)) < 3:
                    assert process.poll() is None and time.monotonic() < deadline
                    time.sleep(0.02)
        finally:
            process.kill()
            process.wait()
    lake = Lake(tmp_path / "data" / "lake")
    committed = {d.isoformat() for d in days if lake.has("revenue", partition_key(1001, d))}
    with instance_of(tmp_path) as instance:
        materialized = instance.get_materialized_partitions(REVENUE_KEY)
    assert 3 <= len(materialized) < len(days)
    assert materialized <= committed
    assert len(committed - materialized) <= 2  # one commit's


def test_two_loads_of_the_same_days_at_once_both_end_green(tmp_path):
    """Two operators (or a schedule and an operator) load overlapping days at once: the
    partitions they both write are committed in turn, their builds one at a time (the
    warehouse pool's one slot; a build that waits for it names the run that holds it),
    and both exit 0 with the figures of the POS."""
    from tests.conftest import truth_turnover

    days = ("--start", "2026-11-10", "--end", str(DAY2), "--no-catalog")
    with serving(create_app()) as url:
        config = write_config(tmp_path, url)
        prepared_instance(tmp_path)
        loads = [subprocess.Popen(cli(config, "load", *days), cwd=ROOT, env=environment(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outputs = [load.communicate(timeout=300) for load in loads]
    for load, (out, err) in zip(loads, outputs, strict=True):
        assert load.returncode == 0, out + err
    assert [(d, t) for d, _, t in figures(tmp_path)] == [
        (d, truth_turnover(1001, d)) for d in (date(2026, 11, n) for n in range(10, 21))]
