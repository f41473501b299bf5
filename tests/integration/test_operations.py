"""What the operator of the nightly load sees: warnings apart from errors, freshness,
``pos-etl status``."""

import contextlib
import http.server
import io
import json
import threading
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from pipeline.cli import main
from pipeline.lake.store import Lake
from pipeline.orchestration.code_location import build_defs
from pipeline.orchestration.configs import load_settings
from pipeline.orchestration.instance import open_instance
from pipeline.warehouse.freshness import freshness
from pos_sandbox import world
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import SandboxData
from pos_sandbox.server import running_sandbox
from tests.conftest import write_config

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAY = "2026-11-20"
VIENNA = ZoneInfo("Europe/Vienna")


def run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def cent_short(tmp_path_factory):
    """A till that books a payment a cent short each day, loaded for ``DAY`` by the CLI:
    the config file, the load's exit code and what it printed."""
    folder = tmp_path_factory.mktemp("cent_short")
    with pytest.MonkeyPatch.context() as mp:
        for loc in world.LOCATIONS:
            mp.setenv(f"POS_TEST_KEY_{loc.id}", loc.api_key)
        with running_sandbox(SandboxConfig(data=SandboxData(cent_short_per_day=1))) as url:
            config = write_config(folder, url)
            code, out = run_cli(["load", "--config", str(config), "--start", DAY,
                                 "--end", DAY, "--no-catalog"])
    return config, code, out


def test_a_till_a_cent_short_is_a_warning_and_fails_only_with_warn_error(cent_short):
    """Every figure is right, so the load exits 0 and its runs succeed; the day that does
    not close is a WARN line naming check, location and date; ``--warn-error`` fails."""
    config, code, out = cent_short
    assert code == 0, out
    assert "WARN warehouse/rpt_daily_close_current: day_is_closed at location 1001 " \
           f"business date {DAY}" in out
    assert "result: OK, 1 warning" in out
    assert "CHECK FAILED" not in out
    with open_instance(load_settings(str(config))) as instance:
        runs = instance.get_run_records()
        assert len(runs) == 2 and all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS
                                      for r in runs)
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey(["warehouse", "rpt_daily_close_current"]),
                              "day_is_closed")])
        evaluation = next(iter(check.values())).event.dagster_event.event_specific_data
        assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN

    code, out = run_cli(["build", "--config", str(config), "--warn-error"])
    assert code == 1
    assert "WARN warehouse/rpt_daily_close_current: day_is_closed" in out
    assert "result: FAILED (1 warning, --warn-error)" in out
    assert run_cli(["build", "--config", str(config)])[0] == 0


def test_freshness_follows_the_deadline_in_local_time(cent_short):
    """``DAY`` is due at 06:00 Vienna time the day after: fresh before and at it, stale
    once the next day is due."""
    config = cent_short[0]
    settings = load_settings(str(config))
    lake = Lake(settings.warehouse.lake_dir)

    def state(local: datetime):
        [one] = freshness(settings, lake, local.replace(tzinfo=VIENNA).astimezone(UTC))
        return one

    before = state(datetime(2026, 11, 21, 5, 59))
    assert before.due == date(2026, 11, 19) and before.lake_fresh and before.close_fresh
    due = state(datetime(2026, 11, 21, 6, 0))
    assert due.due == date(2026, 11, 20) and due.lake_fresh and due.close_fresh
    late = state(datetime(2026, 11, 22, 6, 0))
    assert late.due == date(2026, 11, 21) and not late.lake_fresh and not late.close_fresh
    assert late.lake_newest == date(2026, 11, 20) and late.lag_days == 1


def test_status_and_the_freshness_checks_see_a_stale_lake(cent_short):
    """Today the lake holds ``DAY`` only: stale. ``pos-etl status`` says so and exits 1;
    the Dagster freshness checks of the lake and the daily close fail."""
    config = cent_short[0]
    code, out = run_cli(["status", "--config", str(config)])
    assert code == 1, out
    assert f"1001      {DAY}" in out and "STALE" in out
    assert "ATTENTION location 1001 VIE01: lake has 2026-11-20" in out
    assert "WARN warehouse/rpt_daily_close_current: day_is_closed at location 1001" in out
    code, out = run_cli(["status", "--config", str(config), "--json"])
    status = json.loads(out)
    assert code == 1 and not status["ok"]
    assert status["locations"][0]["lake_newest"] == DAY
    assert {r["job"]: r["status"] for r in status["runs"]} == {
        "load_job": "SUCCESS", "warehouse_job": "SUCCESS"}

    settings = load_settings(str(config))
    with open_instance(settings) as instance:
        result = build_defs(settings).resolve_job_def("freshness_job").execute_in_process(
            instance=instance, raise_on_error=False)
    assert result.success  # a check that fails is not a run that fails
    failed = {(e.asset_key.to_user_string(), e.check_name): e
              for e in result.get_asset_check_evaluations()}
    assert set(failed) == {("lake/revenue", "fresh_by_deadline"),
                           ("lake/revenue", "history_complete"),
                           ("warehouse/rpt_daily_close", "fresh_by_deadline")}
    fresh = {key: e for key, e in failed.items() if key[1] == "fresh_by_deadline"}
    assert not any(e.passed for e in fresh.values())
    assert "1001 (newest 2026-11-20" in fresh["lake/revenue", "fresh_by_deadline"].description


class Receiver:
    """An incoming webhook on 127.0.0.1: records each JSON body and answers ``status``;
    with ``hang``, only once ``close`` releases it (at most after 120 s), and
    ``answered`` says whether it has."""

    def __init__(self, hang: bool = False, status: int = 200):
        self.bodies: list[dict] = []
        self.release, self.answered = threading.Event(), False
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(json.loads(body))
                if hang:
                    receiver.release.wait(120)
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")
                receiver.answered = True

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/secret-token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def alerting(config: Path, **alerts) -> Path:
    """``config`` with an ``[alerts]`` section (the webhook's URL in ``ALERT_URL``)."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in
             {"webhook_url_env": "ALERT_URL", **alerts}.items()]
    other = config.with_name("alerting.toml")
    other.write_text(config.read_text() + "[alerts]\n" + "\n".join(lines) + "\n")
    return other


def test_a_failed_load_is_posted_without_the_key(sandbox_url, tmp_path, receiver,
                                                 monkeypatch, capsys):
    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1002")  # another location's key
    monkeypatch.setenv("ALERT_URL", receiver.url)
    config = alerting(write_config(tmp_path, sandbox_url))
    assert main(["load", "--config", str(config), "--start", DAY, "--end", DAY,
                 "--no-catalog", "--no-models"]) == 1
    err = capsys.readouterr().err
    assert "alert sent" in err and "secret-token" not in err
    [body] = receiver.bodies
    assert set(body) == {"text"} and body["text"].startswith("pos-etl load FAILED")
    assert f"FAILED 1001 {DAY}" in body["text"] and "HTTP 403" in body["text"]
    assert "sandbox-key" not in json.dumps(body)


def test_warnings_and_a_stale_lake_are_posted(cent_short, receiver, monkeypatch):
    monkeypatch.setenv("ALERT_URL", receiver.url)
    config = alerting(cent_short[0])
    assert main(["build", "--config", str(config)]) == 0  # warnings: posted only if asked
    assert receiver.bodies == []
    config = alerting(cent_short[0], on_warning=True)
    assert main(["build", "--config", str(config)]) == 0
    [body] = receiver.bodies
    assert "WARN warehouse/rpt_daily_close_current: day_is_closed at location 1001" in body["text"]

    # The freshness checks' run (the sensor freshness starts it): the lake is stale.
    settings = load_settings(str(config))
    defs = build_defs(settings)
    with open_instance(settings) as instance:
        result = defs.resolve_job_def("freshness_job").execute_in_process(instance=instance)
        sensor = defs.get_repository_def().get_sensor_def("alert_on_checks")
        sensor(dg.build_run_status_sensor_context(
            sensor_name="alert_on_checks", dagster_instance=instance,
            dagster_run=result.dagster_run, dagster_event=result.get_run_success_event()))
    stale = receiver.bodies[-1]["text"]
    assert "freshness_job" in stale and "FAILED lake/revenue: fresh_by_deadline" in stale
    assert "1001 (newest 2026-11-20" in stale


def test_a_failing_or_hanging_webhook_delays_nothing_beyond_its_timeout(
        cent_short, monkeypatch, capsys):
    failing = Receiver(status=500)
    try:
        monkeypatch.setenv("ALERT_URL", failing.url)
        assert main(["build", "--config", str(alerting(cent_short[0], on_warning=True))]) == 0
    finally:
        failing.close()
    assert "alert not sent: the webhook answered HTTP 500" in capsys.readouterr().err
    hanging = Receiver(hang=True)
    try:
        monkeypatch.setenv("ALERT_URL", hanging.url)
        config = alerting(cent_short[0], on_warning=True, timeout_seconds=1)
        assert main(["build", "--config", str(config)]) == 0
        # the command gave up on the webhook (its timeout) while it still hung: it
        # returned before the webhook answered, whatever the machine's speed
        assert hanging.bodies and not hanging.answered
    finally:
        hanging.close()
    err = capsys.readouterr().err
    assert "alert not sent" in err and "secret-token" not in err


def test_status_names_locations_the_warehouse_holds_but_the_config_no_longer_does(
        cent_short):
    config = cent_short[0]
    other = config.with_name("without_1001.toml")
    other.write_text(config.read_text().replace("id = 1001", "id = 1002")
                     .replace("VIE01", "GRZ01").replace("POS_TEST_KEY_1001",
                                                         "POS_TEST_KEY_1002"))
    code, out = run_cli(["status", "--config", str(other)])
    assert "note: in the warehouse, not configured: 1001 (their history stays; " \
           "see docs/operations.md)" in out
    code, out = run_cli(["status", "--config", str(other), "--json"])
    assert json.loads(out)["unconfigured_locations"] == [1001]


def test_status_names_a_run_whose_process_is_gone(tmp_path):
    import socket

    from pipeline.orchestration.runs import HOST_TAG, PID_TAG, STARTED_TAG
    from pipeline.orchestration.schedules import LOAD_JOB

    config = write_config(tmp_path, "http://127.0.0.1:9")
    with open_instance(load_settings(str(config))) as instance:
        run = instance.create_run_for_job(
            dg.GraphDefinition(LOAD_JOB).to_job(),
            tags={HOST_TAG: socket.gethostname(), PID_TAG: "999999999", STARTED_TAG: "1.0"})
        instance.handle_run_event(run.run_id, dg.DagsterEvent(
            dg.DagsterEventType.RUN_START.value, LOAD_JOB))
    code, out = run_cli(["status", "--config", str(config)])
    assert code == 1
    assert f"ATTENTION load_job: its last run {run.run_id} is still marked started, but " \
           "its process is gone (killed or crashed)" in out
