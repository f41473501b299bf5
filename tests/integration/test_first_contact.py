"""First contact: what a new user meets at the command line names what to fix."""

import json
import re
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from pipeline.cli import main
from pipeline.orchestration.configs import load_settings
from pipeline.orchestration.schedules import last_complete_business_date
from tests.conftest import write_config

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


ROOT = Path(__file__).resolve().parents[2]


def test_a_mistyped_command_or_option_gets_a_suggestion(capsys):
    assert main(["lod"]) == 2
    assert "No such command 'lod'. Did you mean 'load'?" in capsys.readouterr().err
    assert main(["load", "--strat", "2026-11-20"]) == 2
    assert "No such option '--strat'. Did you mean '--start'?" in capsys.readouterr().err
    assert main(["sandbox", "--limit-cp", "5"]) == 2
    assert "Did you mean '--limit-cap'?" in capsys.readouterr().err


def test_a_mistyped_location_gets_a_suggestion(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "data"))
    assert main(["load", "--location", "VIE1", "--days", "1"]) == 2
    err = capsys.readouterr().err
    assert "location VIE1 is not configured" in err and "did you mean VIE01?" in err


def test_a_bad_date_says_what_form_it_takes(capsys):
    assert main(["load", "--start", "20.11.2026"]) == 2
    assert "Invalid value for '--start': expected a date as YYYY-MM-DD (e.g. 2026-11-20), " \
           "got '20.11.2026'" in capsys.readouterr().err


def test_without_dates_a_load_takes_the_nightlys_range(sandbox_url, tmp_path, sandbox_keys,
                                                       capsys, monkeypatch):
    config = write_config(tmp_path, sandbox_url)
    assert main(["load", "--config", str(config), "--no-catalog", "--no-models"]) == 0
    out = capsys.readouterr().out
    settings = load_settings(config)  # its one location's day, not the sandbox's three
    now = datetime.now(ZoneInfo(settings.schedule.timezone))
    yesterday = last_complete_business_date(settings, now)
    start = yesterday - timedelta(days=settings.schedule.lookback_days)
    assert f"revenue: {(yesterday - start).days + 1} of {(yesterday - start).days + 1} " \
           "partitions loaded" in out
    assert main(["load", "--config", str(config), "--days", "2", "--no-catalog",
                 "--no-models"]) == 0
    said = capsys.readouterr()
    assert "revenue: 2 of 2 partitions loaded (2 business dates x 1 locations)" in said.out
    # the first line, before Dagster is loaded: what it is about to do
    assert said.err.startswith(f"load: business dates {yesterday - timedelta(days=1)} .. "
                               f"{yesterday}, 1 location\n"), said.err
    assert main(["load", "--config", str(config), "--days", "2", "--start", "2026-11-01"]) == 2
    assert "--days or --start/--end, not both" in capsys.readouterr().err


def test_a_dead_host_fails_fast_with_one_message_naming_the_url(tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1001", "key-that-must-not-show")
    config = write_config(tmp_path, "http://127.0.0.1:9")
    config.write_text(config.read_text().replace(
        "[source]\n", "[source]\nbackoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.02\n"))
    assert main(["load", "--config", str(config), "--start", "2026-10-01",
                 "--end", "2026-10-30", "--no-catalog"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "the POS at http://127.0.0.1:9 is unreachable" in out
    assert "not tried" in out
    assert len([line for line in out.splitlines() if "FAILED" in line]) <= 3
    assert "key-that-must-not-show" not in out


def test_a_refused_key_stops_its_location_and_names_the_variable(sandbox_url, tmp_path,
                                                                 capsys, monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1001", "not-the-key")
    config = write_config(tmp_path, sandbox_url)
    assert main(["load", "--config", str(config), "--start", "2026-11-10",
                 "--end", "2026-11-20", "--no-catalog"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "location 1001" in out and "POS_TEST_KEY_1001" in out and "not-the-key" not in out
    assert "not tried" in out
    assert len([line for line in out.splitlines() if "FAILED" in line]) <= 3


def test_an_order_without_a_configured_pos_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    assert main(["order", str(ROOT / "examples" / "order.json")]) == 2
    err = capsys.readouterr().err
    assert "no POS is configured" in err and "pos-etl sandbox" in err and "--config" in err


def test_the_example_order_is_accepted_by_the_sandbox(sandbox_url, tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    assert main(["order", str(ROOT / "examples" / "order.json"), "--config",
                 str(config)]) == 0
    out = capsys.readouterr().out
    assert "order guid: " in out and "HTTP 20" in out


def test_an_invalid_order_names_the_spec_fields(tmp_path, capsys, sandbox_url, monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    config = write_config(tmp_path, sandbox_url)
    order = json.loads((ROOT / "examples" / "order.json").read_text())
    del order["userInfo"]["email"]
    order["entries"][0]["quantity"] = "three"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(order))
    assert main(["order", str(bad), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "userInfo.email: Field required" in err
    assert "entries.0.quantity:" in err
    assert "pydantic" not in err and "https://" not in err


def test_exit_codes_are_documented():
    page = (ROOT / "docs" / "loading.md").read_text()
    section = page[page.index("## Exit codes"):]
    for code in ("`0`", "`1`", "`2`", "`130`", "`143`"):
        assert code in section[:1500]


def test_the_readme_is_short_and_every_link_of_the_docs_resolves():
    import re

    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith(("http://", "https://")):
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_spec_travels_with_the_repository():
    spec = ROOT / "docs" / "pos-api-spec.md"
    assert spec.exists() and "Revenue-effective turnover" in spec.read_text()
    assert "../shared/" not in (ROOT / "README.md").read_text()


def test_dates_in_the_future_are_refused_by_name(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "data"))
    later = (date.today() + timedelta(days=5)).isoformat()
    assert main(["load", "--start", later, "--end", later]) == 2
    assert f"--end {later} is in the future" in capsys.readouterr().err


def test_no_catalog_keeps_the_vouchers_and_no_vouchers_skips_them(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "data"))
    assert main(["load", "--days", "1", "--no-catalog", "--no-models"]) == 0
    out = capsys.readouterr().out
    assert "vouchers snapshot:" in out and "catalog snapshot" not in out
    assert main(["load", "--days", "1", "--no-catalog", "--no-vouchers", "--no-models"]) == 0
    assert "vouchers snapshot" not in capsys.readouterr().out


def test_progress_says_elapsed_rate_and_eta_on_a_terminal_and_off_it():
    import io

    from pipeline.core.reporting import RevenueProgress
    from pipeline.orchestration.progress import LoadProgress

    plain = io.StringIO()
    with LoadProgress(plain, plain=True) as progress:
        progress.revenue(RevenueProgress(10, 40, 3, 12_000))
        progress.say("catalog snapshot 2026-11-20: 1,993 rows")
    lines = plain.getvalue().splitlines()
    assert re.match(r"revenue: 10/40 business dates x 3 locations, 12,000 receipts "
                    r"\(0:00:0\d elapsed, [\d,]+ receipts/s, about [\d:]+ to go\)", lines[0])
    assert lines[1] == "catalog snapshot 2026-11-20: 1,993 rows"
    terminal = io.StringIO()
    with LoadProgress(terminal, plain=False) as progress:
        progress.revenue(RevenueProgress(40, 40, 3, 48_000))
    assert "40/40" in terminal.getvalue() and "48,000 receipts" in terminal.getvalue()


def test_a_load_shows_each_phase_once_and_the_build_a_line_per_model(
        sandbox_url, tmp_path, sandbox_keys):
    """The revenue's bar ends once, then the build's bar of models (on a terminal); off
    one, a line per model as dbt prints them. The models' lines are the run's log too."""
    import io

    from pipeline.orchestration.loader import run_load
    from pipeline.orchestration.progress import LoadProgress
    from pipeline.warehouse import discover_models
    from tests.conftest import make_settings

    settings = make_settings(sandbox_url, tmp_path / "data")
    terminal = io.StringIO()  # rich draws each bar's last state once where nothing animates
    with LoadProgress(terminal, plain=False) as progress:
        report = run_load(settings, date(2026, 11, 19), date(2026, 11, 19), [1001],
                          catalog=False, progress=progress)
    assert report.ok, report.summary()
    screen = terminal.getvalue()
    models = len(discover_models())
    assert screen.count("revenue ") == 1 and screen.count(f"{models}/{models} models") == 1
    assert screen.index("revenue ") < screen.index("warehouse rebuilt") \
        < screen.index(f"{models}/{models} models")

    plain = io.StringIO()
    with LoadProgress(plain, plain=True) as progress:
        assert run_load(settings, date(2026, 11, 19), date(2026, 11, 19), [1001],
                        catalog=False, progress=progress).ok
    lines = [line for line in plain.getvalue().splitlines()
             if line.startswith("warehouse: ")]
    assert [int(line.split()[1]) for line in lines] == list(range(1, models + 1))
    assert {line.split()[4] for line in lines} == set(discover_models())
    assert lines[0].startswith(f"warehouse: 1 of {models} stg_pos__item_side_dishes "
                               "(partitioned, not stored, 1 partition computed)")
    assert lines[-1].endswith(" s")  # a table's or view's time


def test_the_summary_is_a_table_on_a_terminal_and_lines_elsewhere():
    import io
    from decimal import Decimal

    from pipeline.core.outcomes import ErrorKind, FailedPartition, Failure
    from pipeline.orchestration.load_report import LoadReport
    from pipeline.orchestration.progress import print_summary

    report = LoadReport("run-1", True, days=2, locations=3, partitions=6, receipts=1234,
                        turnover_net=Decimal("1000.005"),
                        failed_partitions=[FailedPartition(
                            1001, date(2026, 11, 20),
                            Failure(ErrorKind.TRANSIENT, "location 1001: HTTP 500"))])

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen, log = Terminal(), io.StringIO()
    print_summary(report, screen)
    print_summary(report, log)
    assert "5 of 6 partitions" in screen.getvalue() and "1,000.01" in screen.getvalue()
    assert "FAILED 1001 2026-11-20: location 1001: HTTP 500" in screen.getvalue()
    assert "│" in screen.getvalue() and "│" not in log.getvalue()
    assert log.getvalue().splitlines()[-1] == "result: FAILED"


def test_a_command_without_a_config_never_writes_the_sandbox_into_a_real_lake(
        sandbox_url, tmp_path, sandbox_keys, capsys, monkeypatch):
    """In the folder of a real config (``data_dir = "data"``), a load without ``--config``
    says it uses the sandbox and writes into the sandbox's own folder; pointed at the real
    lake, it is refused by name (exit 2) and the lake is as it was; the hints of
    ``status`` repeat the ``--config`` it was given."""
    from deltalake import DeltaTable

    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    monkeypatch.delenv("POS_ETL_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, sandbox_url)
    day = (date.today() - timedelta(days=3)).isoformat()
    assert main(["load", "--config", "pos.toml", "--start", day, "--end", day,
                 "--no-catalog", "--no-models"]) == 0
    real = tmp_path / "data" / "lake" / "revenue"
    version = DeltaTable(str(real)).version()
    capsys.readouterr()

    assert main(["load", "--start", day, "--end", day, "--no-catalog", "--no-models"]) == 0
    err = capsys.readouterr().err
    assert "no config (--config or $POS_ETL_CONFIG): using the built-in sandbox, its data " \
           "in data/sandbox" in err
    assert (tmp_path / "data" / "sandbox" / "lake" / "revenue" / "_delta_log").is_dir()
    assert DeltaTable(str(real)).version() == version

    monkeypatch.setenv("POS_ETL_DATA_DIR", "data")  # the sandbox pointed at the real lake
    assert main(["load", "--start", day, "--end", day, "--no-catalog", "--no-models"]) == 2
    err = capsys.readouterr().err
    assert f"configuration error: lake data/lake holds the data of {sandbox_url} " \
           "(locations 1001), not of the built-in sandbox: nothing was written" in err, err
    assert DeltaTable(str(real)).version() == version
    assert len(list(real.glob("*/*.parquet"))) == 1

    monkeypatch.delenv("POS_ETL_DATA_DIR")
    config.write_text(config.read_text().replace('data_dir = "data"',
                                                 'data_dir = "data/sandbox"'))
    assert main(["load", "--config", "pos.toml", "--start", day, "--end", day,
                 "--no-catalog", "--no-models"]) == 2  # a real POS into the sandbox's lake
    assert "holds the data of the built-in sandbox (locations 1001, 1002, 1003), not of " \
           f"{sandbox_url}" in capsys.readouterr().err

    earlier = (date.today() - timedelta(days=5)).isoformat()
    config.write_text(config.read_text().replace('data_dir = "data/sandbox"',
                                                 'data_dir = "data"')
                      + f'[schedule]\nstart_date = "{earlier}"\n')
    assert main(["status", "--config", "pos.toml"]) == 1
    out = capsys.readouterr().out
    missing = (date.today() - timedelta(days=4)).isoformat()
    assert f"load --start {earlier} --end {missing} --missing-only --config pos.toml)" \
        in out, out
