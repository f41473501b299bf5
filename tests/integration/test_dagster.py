"""Dagster: one definition of a load, run by the schedule and the CLI alike, seen alike."""

import logging
import re
from contextlib import contextmanager
from dataclasses import replace
from datetime import date, datetime, timedelta

import dagster as dg
import pytest

from pipeline.core.outcomes import ErrorKind
from pipeline.core.reporting import Reporter
from pipeline.orchestration.assets.revenue import LOADED_CHECK, REVENUE_KEY
from pipeline.orchestration.code_location import build_defs
from pipeline.orchestration.configs import load_settings, sandbox_settings
from pipeline.orchestration.loader import run_load
from pipeline.orchestration.partitions import RANGE_END_TAG, RANGE_START_TAG
from pipeline.orchestration.resources import PosResource
from pipeline.orchestration.schedules import LOAD_JOB, WAREHOUSE_JOB
from tests.conftest import unexpected

DAYS = [date(2026, 11, 19), date(2026, 11, 20)]


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as instance:
        yield instance


def revenue_metadata(instance: dg.DagsterInstance, day: date, observed: bool = False) -> dict:
    """The metadata of the newest materialization (or observation: a date some location
    is missing) of one date of the revenue lake."""
    records = (instance.fetch_observations if observed else instance.fetch_materializations)(
        dg.AssetRecordsFilter(asset_key=REVENUE_KEY, asset_partitions=[day.isoformat()]),
        limit=1).records
    entry = records[0].event_log_entry
    meta = (entry.asset_observation if observed else entry.asset_materialization).metadata
    return {k: v.value for k, v in meta.items() if k not in ("lake",)}


def test_definitions_have_lineage_from_sql_and_one_partition_per_date():
    defs = build_defs(sandbox_settings())
    graph = defs.resolve_asset_graph()
    turnover = dg.AssetKey(["warehouse", "fct_turnover_daily"])
    # its receipts, and the lake's loads (lake.revenue_loads: which dates are provisional)
    assert graph.get(turnover).parent_keys == {dg.AssetKey(["warehouse", "fct_receipts"]),
                                               REVENUE_KEY}
    staging = graph.get(dg.AssetKey(["warehouse", "stg_pos__receipts"]))
    assert staging.parent_keys == {REVENUE_KEY}
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())
    partitions = graph.get(REVENUE_KEY).partitions_def
    assert isinstance(partitions, dg.DailyPartitionsDefinition)
    # the sandbox's history starts where `make demo` starts loading: no false gaps
    assert partitions.get_first_partition_key() == \
        (date.today() - timedelta(days=7)).isoformat()


def test_a_cli_load_is_a_run_of_the_load_job_with_the_schedules_metadata(
        settings, instance):
    report = run_load(settings, DAYS[0], DAYS[-1], progress=Reporter(),
                      instance=instance)
    assert report.ok, report.summary()
    run = instance.get_run_by_id(report.run_id)
    assert run.job_name == LOAD_JOB and run.is_success
    assert run.tags[RANGE_START_TAG] == "2026-11-19" and run.tags["pos_etl/trigger"] == "cli"
    assert instance.get_materialized_partitions(REVENUE_KEY) == {d.isoformat() for d in DAYS}
    build = instance.get_run_by_id(report.build_run_id)
    assert build.job_name == WAREHOUSE_JOB and build.is_success
    models = [k for k in build_defs(settings).resolve_asset_graph().get_all_asset_keys()
              if k.path[0] == "warehouse"]
    assert all(instance.get_latest_materialization_event(k) for k in models)
    cli_meta = revenue_metadata(instance, DAYS[-1])
    assert cli_meta["complete"] is True and cli_meta["dagster/row_count"] > 1000

    # The same partition materialized the way a schedule or the UI does it: same metadata.
    job = build_defs(settings).resolve_job_def(LOAD_JOB)
    scheduled = job.execute_in_process(
        instance=instance, partition_key=DAYS[-1].isoformat(),
        asset_selection=[REVENUE_KEY])
    assert scheduled.success
    assert revenue_metadata(instance, DAYS[-1]) == cli_meta


def test_the_nightly_run_loads_yesterday_and_the_lookback_then_the_sensor_builds(
        settings, instance):
    defs = build_defs(settings)
    schedule = defs.resolve_schedule_def("nightly_load")
    tick = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 21, 3, 30))
    request = schedule.evaluate_tick(tick).run_requests[0]
    lookback = settings.schedule.lookback_days
    assert request.tags[RANGE_START_TAG] == date(2026, 11, 20 - lookback).isoformat()
    assert request.tags[RANGE_END_TAG] == "2026-11-20"
    sensor = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert sensor.total_requested == 0  # nothing loaded yet

    result = defs.resolve_job_def(LOAD_JOB).execute_in_process(
        instance=instance, tags=request.tags)
    assert result.success
    dates = {e.partition for e in result.get_asset_materialization_events()
             if e.asset_key == REVENUE_KEY}
    assert dates == {date(2026, 11, 20 - n).isoformat() for n in range(lookback + 1)}
    assert all(e.asset_key.path[0] == "lake" for e in result.get_asset_materialization_events())

    # The sensor build_after_load asks for every model downstream of what the run
    # changed once the load is over (the voucher ledger: not configured here).
    loaded = {e.asset_key for e in result.get_asset_materialization_events()}
    assert REVENUE_KEY in loaded and dg.AssetKey(["lake", "vouchers"]) not in loaded
    graph = defs.resolve_asset_graph()
    models = {k for k in graph.materializable_asset_keys if k.path[0] == "warehouse"}
    sensor = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                               cursor=sensor.cursor)
    requested = {k for k in models if sensor.get_num_requested(k)}
    assert requested == models & dg.AssetSelection.assets(*loaded).downstream().resolve(graph)
    assert dg.AssetKey(["warehouse", "rpt_daily_close"]) in requested
    built = defs.resolve_job_def(WAREHOUSE_JOB).execute_in_process(instance=instance)
    assert built.success
    checks = result.get_asset_check_evaluations() + built.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks)
    sensor = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                               cursor=sensor.cursor)
    assert sensor.total_requested == 0  # built: nothing new until the next load


def test_the_sensor_leaves_a_cli_loads_change_to_the_cli_build(settings, instance):
    """One build per change: a CLI load builds right after itself, so the sensor
    build_after_load (``make dev``), evaluated between the load's run and the build's,
    does not start a second build for it; a load without its own build (--no-models, the
    nightly, the UI) is the sensor's to build."""
    defs = build_defs(settings)
    ticks = [dg.evaluate_automation_conditions(defs=defs, instance=instance)]

    class SensorBetweenLoadAndBuild(Reporter):
        def phase(self, name: str) -> None:  # the build's run starts next
            ticks.append(dg.evaluate_automation_conditions(
                defs=defs, instance=instance, cursor=ticks[-1].cursor))

    report = run_load(settings, DAYS[-1], DAYS[-1], catalog=False,
                      progress=SensorBetweenLoadAndBuild(), instance=instance)
    assert report.ok and report.build_run_id and len(ticks) == 2
    assert ticks[-1].total_requested == 0  # the CLI's own build is next
    ticks.append(dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                   cursor=ticks[-1].cursor))
    assert ticks[-1].total_requested == 0  # and it built

    assert run_load(settings, DAYS[0], DAYS[0], catalog=False, models=False,
                    progress=Reporter(), instance=instance).ok
    ticks.append(dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                   cursor=ticks[-1].cursor))
    assert ticks[-1].get_num_requested(dg.AssetKey(["warehouse", "rpt_daily_close"])) == 1


def test_a_refused_key_fails_the_run_after_the_others_are_in_the_warehouse(
        settings, instance, monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1003", "sandbox-key-1001")  # another location's key
    report = run_load(settings, DAYS[-1], DAYS[-1], progress=Reporter(),
                      instance=instance)
    assert not report.ok
    assert [f.location_id for f in report.failed_partitions] == [1003]
    assert "HTTP 403" in report.failed_partitions[0].message
    assert report.failed_partitions[0].failure.kind == ErrorKind.REFUSED_KEY  # as recorded
    run = instance.get_run_by_id(report.run_id)
    assert run.is_failure
    check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(REVENUE_KEY, LOADED_CHECK)])
    assert check[dg.AssetCheckKey(REVENUE_KEY, LOADED_CHECK)].status.value == "FAILED"
    # The date is not materialized (a "failed and missing" backfill takes it), but what
    # loaded and what failed is on record.
    assert DAYS[-1].isoformat() not in instance.get_materialized_partitions(REVENUE_KEY)
    meta = revenue_metadata(instance, DAYS[-1], observed=True)
    assert meta["complete"] is False and "1003" in meta["failed_locations"]
    assert meta["dagster/row_count"] > 0  # 1001's and 1002's
    assert report.warehouse_path and report.models > 30  # the others were published
    assert instance.get_run_by_id(report.build_run_id).is_success
    events = "".join(str(e) for e in instance.all_logs(report.run_id))
    assert "sandbox-key" not in events
    # The keys are EnvVar config: what the run stored names the variables, never a key.
    stored = repr(instance.get_job_snapshot(run.job_snapshot_id)) + repr(run)
    assert "POS_TEST_KEY_1003" in stored and "sandbox-key" not in stored


def test_a_night_of_failed_partitions_is_one_warning_event_per_date(
        settings, instance, monkeypatch):
    """Each event is a committed write of Dagster's storage: a bad night of a chain
    (every location refused) is one warning per business date naming each location."""
    for loc in (1002, 1003):
        monkeypatch.setenv(f"POS_TEST_KEY_{loc}", "sandbox-key-1001")
    report = run_load(settings, DAYS[-2], DAYS[-1], catalog=False, models=False,
                      progress=Reporter(), instance=instance)
    assert sorted(f.location_id for f in report.failed_partitions) == [1002, 1002, 1003, 1003]
    warnings = [e.message for e in instance.all_logs(report.run_id)
                if e.level == logging.WARNING and e.dagster_event is None]
    assert len(warnings) == 2, warnings
    for day, line in zip(DAYS[-2:], warnings, strict=True):
        assert line.startswith(f"revenue {day}: 2 partition(s) failed: location 1002: ")
        assert "; location 1003: " in line and "HTTP 403" in line


def test_a_warehouse_build_never_opens_the_pos(instance, settings, monkeypatch):
    run_load(settings, DAYS[-1], DAYS[-1], models=False, catalog=False,
             progress=Reporter(), instance=instance)

    class NoPos(PosResource):
        @contextmanager
        def yield_for_execution(self, context):
            raise AssertionError("the warehouse build opened the POS")

    for loc in settings.locations:  # nor needs a key
        monkeypatch.delenv(loc.api_key_env)
    assert build_defs(settings).resolve_job_def(WAREHOUSE_JOB).execute_in_process(
        instance=instance).success
    defs = build_defs(settings, pos=NoPos(settings=settings))
    assert defs.resolve_job_def(WAREHOUSE_JOB).execute_in_process(instance=instance).success
    load = defs.resolve_job_def(LOAD_JOB).execute_in_process(
        instance=instance, partition_key=DAYS[-1].isoformat(), raise_on_error=False)
    assert not load.success  # where a load does, the resource is swapped
    assert "opened the POS" in "".join(str(e.event_specific_data)
                                       for e in load.all_events if e.is_failure)


def test_the_code_location_reads_the_config_file_once(tmp_path, monkeypatch):
    reads = []
    import pipeline.definitions as definitions

    def counted(path=None):
        reads.append(path)
        return load_settings(path)

    monkeypatch.setattr(definitions, "load_settings", counted)
    defs = definitions.defs()
    defs.resolve_job_def(LOAD_JOB)
    defs.resolve_asset_graph()
    assert len(reads) == 1



def test_one_model_can_be_materialized_alone_and_has_owners(settings, instance):
    run_load(settings, DAYS[-1], DAYS[-1], models=False, catalog=False,
             progress=Reporter(), instance=instance)
    defs = build_defs(settings)
    close = dg.AssetKey(["warehouse", "rpt_daily_close"])
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, asset_selection=[close],
                                    raise_on_error=False)
    # the selection is exactly what is reported (the build is one atomic file)
    assert [e.asset_key for e in result.get_asset_materialization_events()] == [close]
    # its checks, the freshness check with them (as Dagster runs a materialized asset's)
    assert {e.check_name for e in result.get_asset_check_evaluations()} == {
        "unique_location_id_business_date", "fresh_by_deadline"}
    graph = defs.resolve_asset_graph()
    assert graph.get(close).owners == ["team:accounting"]
    assert graph.get(dg.AssetKey(["warehouse", "stg_pos__receipts"])).owners == [
        "team:data-engineering"]
    # the till's checks judge the data as it is now: on rpt_daily_close_current
    current = dg.AssetKey(["warehouse", "rpt_daily_close_current"])
    specs = {key.name: graph.get_check_spec(key) for key in graph.get(current).check_keys}
    assert specs["payments_add_up"].blocking and not specs["day_is_closed"].blocking


def test_a_failed_blocking_check_keeps_the_previous_warehouse(settings, instance, tmp_path):
    import duckdb

    from pipeline.sqlrunner.checks import DataCheck
    from pipeline.warehouse import BlockedBuild, build_warehouse
    from pipeline.warehouse.project import shipped

    run_load(settings, DAYS[-1], DAYS[-1], catalog=False, progress=Reporter(),
             instance=instance)
    target = settings.warehouse.warehouse_path
    with duckdb.connect(str(target), read_only=True) as con:
        before = con.execute("select sum(turnover_net) from fct_turnover_daily").fetchone()
    wrong = DataCheck("always_fails", "fct_turnover_daily", "a model bug, for the test",
                      "select * from fct_turnover_daily", blocking=True)
    with pytest.raises(BlockedBuild, match=r"not published.*fct_turnover_daily: always_fails"):
        build_warehouse(settings.warehouse.lake_dir, target, full=True, project=replace(
            shipped(), checks=(*shipped().checks, wrong)))
    with duckdb.connect(str(target), read_only=True) as con:
        assert con.execute("select sum(turnover_net) from fct_turnover_daily").fetchone() \
            == before
    again = build_warehouse(settings.warehouse.lake_dir, target)  # builds go on
    assert not unexpected(again.failed_checks) and again.path == target


def test_the_instance_settings_are_written_once_then_yours(tmp_path):
    import pipeline.orchestration.instance as inst

    home = tmp_path / "home"
    inst.prepare_home(home)
    config = home / "dagster.yaml"
    written = config.read_text()
    assert "telemetry" in written and "pools" in written and "event_log_storage" not in written
    config.write_text("telemetry:\n  enabled: false\n# mine\n")  # yours: kept
    inst.prepare_home(home)
    assert config.read_text().endswith("# mine\n")
    # one that pos-etl kept rewriting before names a storage class that is gone: replaced
    config.write_text(inst.OLD_MARKER + ": rewritten\nevent_log_storage:\n  module: "
                      "pipeline.instance\n  class: BatchedSqliteEventLogStorage\n")
    inst.prepare_home(home)
    assert config.read_text() == written
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        # no raw output mirrored through `tail` (a CLI run's terminal, Ctrl-C)
        assert type(instance.compute_log_manager).__name__ == "NoOpComputeLogManager"
    # the project's own file of an earlier release, unchanged, is brought up to date;
    # the same with one line of yours is yours
    # the last release (no retries of the run queue yet), the one before (no run limit
    # per POS host yet), the one before it (no tick retention yet), the one before that
    # (its comments named the modules before pipeline/ had layers), and the one before
    # that (no compute_logs yet)
    queued = re.sub(r"run_queue:\n(  .*\n)+", "", written)
    unsharded = re.sub(r"    tag_concurrency_limits:\n(      .*\n)+", "", queued)
    last = re.sub(r"retention:\n(  .*\n)+", "", unsharded)
    previous = last.replace("pipeline/orchestration/", "pipeline/")
    earlier = re.sub(r"compute_logs:\n(  .*\n)+", "", previous)
    assert queued != written and "run_queue" not in queued
    for shipped in (queued, unsharded, last, previous, earlier):
        config.write_text(shipped)
        inst.prepare_home(home)
        assert config.read_text() == written
    config.write_text(earlier + "# mine\n")
    inst.prepare_home(home)
    assert config.read_text() == earlier + "# mine\n"


def test_a_cli_load_records_its_dates_in_dagsters_own_storage(settings, monkeypatch):
    from pipeline.orchestration.instance import open_instance

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    report = run_load(settings, DAYS[0], DAYS[-1], catalog=False, models=False,
                      progress=Reporter())
    assert report.ok, report.summary()
    with open_instance(settings) as instance:
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert instance.get_materialized_partitions(REVENUE_KEY) == {d.isoformat() for d in DAYS}
        assert revenue_metadata(instance, DAYS[0])["complete"] is True


def test_make_dev_serves_the_ui_on_the_port_it_is_given(tmp_path):
    """``PORT=N make dev``: the UI answers on that port, and the first line says so."""
    import os
    import signal
    import socket
    import subprocess
    import time
    from pathlib import Path

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("POS_ETL_CONFIG", "DAGSTER_HOME")}
    env |= {"PORT": str(port), "POS_ETL_DATA_DIR": str(tmp_path / "data")}
    def as_from_a_terminal() -> None:  # its own group, Ctrl-C's SIGINT at its default (a
        os.setsid()  # child inherits the ignored SIGINT of a test worker: Ctrl-C was lost
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # and the test waited 60 s to kill it)

    with subprocess.Popen(["make", "--no-print-directory", "dev"], cwd=root, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          preexec_fn=as_from_a_terminal) as dev:
        try:
            first = dev.stdout.readline()
            assert f"Dagster UI on http://127.0.0.1:{port} " in first, first
            deadline = time.monotonic() + 180
            while True:  # bounded: the server answers, exits, or the deadline passes
                assert dev.poll() is None, "make dev exited"
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/server_info",
                                 timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the UI never answered"
                time.sleep(0.5)
        finally:
            os.killpg(dev.pid, signal.SIGINT)  # Ctrl-C, as the first line says, stops it
            try:
                dev.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(dev.pid, signal.SIGKILL)
                pytest.fail("Ctrl-C did not stop make dev within 60 s")
        deadline = time.monotonic() + 30
        while running := _alive_in_group(dev.pid):  # bounded: all ended, or the deadline
            assert time.monotonic() < deadline, f"left running after Ctrl-C: {running}"
            time.sleep(0.2)


def _alive_in_group(group: int) -> list[str]:
    """The processes of a process group that have not ended (zombies have)."""
    import os

    import psutil

    alive = []
    for process in psutil.process_iter(["name", "status"]):
        try:
            if os.getpgid(process.pid) == group and \
                    process.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(process.info["name"])
        except (ProcessLookupError, psutil.Error):
            pass
    return alive


def test_the_partitions_end_at_the_last_business_date_that_is_over():
    """The UI counts no business date under way as missing: the last partition is
    yesterday (in the schedule's time zone), the date a nightly loads."""
    from zoneinfo import ZoneInfo

    from pipeline.orchestration.partitions import business_dates

    settings = sandbox_settings()
    tz = ZoneInfo(settings.schedule.timezone)
    before = datetime.now(tz).date()
    last = business_dates(settings).get_last_partition_key()
    after = datetime.now(tz).date()  # (a run across midnight may see either)
    assert last in {(day - timedelta(days=1)).isoformat() for day in (before, after)}
