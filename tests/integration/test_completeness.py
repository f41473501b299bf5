"""No incomplete range is presented as complete: a month with a four-day hole is named as
such by ``status`` (exit 1), by every export of it (the file is still written), and
``close-period`` refuses it naming the dates until they are loaded. Over real HTTP, with
the CLI as a person runs it; the location closed on 31 October, so the dates expected do
not depend on the day the test runs."""

from __future__ import annotations

import json
from datetime import date

import duckdb
import openpyxl
import pytest

from pipeline.cli import main

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


HOLE = "2026-10-08 .. 2026-10-11 (4 days of 31)"


@pytest.fixture(scope="module")
def holed(sandbox_url, tmp_path_factory):
    """A config of location 1001 from 1 to 31 October, loaded but for 8-11 October."""
    folder = tmp_path_factory.mktemp("holed")
    config = folder / "pos.toml"
    config.write_text(
        f'[source]\nbase_url = "{sandbox_url}"\n[warehouse]\ndata_dir = "data"\n'
        '[schedule]\nstart_date = "2026-09-01"\n'
        '[accounting.datev]\nconsultant_number = 29098\nclient_number = 55003\n'
        # the staff meals' payment group has an account: nothing waits on suspense
        '[accounting.accounts]\nnon_revenue_accounts = { "Nicht umsatzwirksam" = "6700" }\n'
        '[[locations]]\nid = 1001\nshort_code = "VIE01"\napi_key_env = "POS_TEST_KEY_1001"\n'
        'first_business_date = "2026-10-01"\nlast_business_date = "2026-10-31"\n')
    mp = pytest.MonkeyPatch()
    mp.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    try:
        for start, end in (("2026-10-01", "2026-10-07"), ("2026-10-12", "2026-10-31")):
            assert main(["load", "--config", str(config), "--start", start, "--end", end,
                         "--no-catalog"]) == 0
    finally:
        mp.undo()
    return config


def test_status_names_the_hole_and_exits_1(holed, capsys):
    capsys.readouterr()
    assert main(["status", "--config", str(holed)]) == 1
    out = capsys.readouterr().out
    assert f"ATTENTION location 1001 VIE01: missing {HOLE} (not in the lake; pos-etl load " \
           f"--start 2026-10-08 --end 2026-10-11 --missing-only --config {holed})" in out
    assert main(["status", "--config", str(holed), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["history"] == [{
        "location_id": 1001, "short_code": "VIE01", "first": "2026-10-01",
        "last": "2026-10-31", "expected": 31, "present": 27, "missing": 4,
        "missing_ranges": [["2026-10-08", "2026-10-11"]]}]
    assert not found["ok"]


def test_the_dagster_ui_shows_the_hole_as_a_warning_on_the_revenue_lake(holed):
    import dagster as dg

    from pipeline.orchestration.code_location import build_defs
    from pipeline.orchestration.configs import load_settings
    from pipeline.orchestration.instance import open_instance

    settings = load_settings(holed)
    with open_instance(settings) as instance:
        result = build_defs(settings).resolve_job_def("freshness_job").execute_in_process(
            instance=instance, raise_on_error=False)
    history, = [e for e in result.get_asset_check_evaluations()
                if e.check_name == "history_complete"]
    assert history.asset_key == dg.AssetKey(["lake", "revenue"]) and not history.passed
    assert history.severity == dg.AssetCheckSeverity.WARN
    assert history.description == f"location 1001 VIE01: missing {HOLE}"


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "parquet", "datev", "bmd"])
def test_every_export_of_the_month_names_the_missing_dates(holed, tmp_path, fmt, capsys):
    target = tmp_path / ("out" if fmt in ("datev", "bmd") else f"close.{fmt}")
    capsys.readouterr()
    assert main(["export", "rpt_daily_close", "--config", str(holed), "--start", "2026-10-01",
                 "--end", "2026-10-31", "--format", fmt, "-o", str(target)]) == 0
    said = capsys.readouterr()
    assert f"warning: rpt_daily_close lacks business dates of the range: location 1001 " \
           f"VIE01: missing {HOLE}" in said.err
    assert target.exists()  # written all the same: the accountant decides
    if fmt == "xlsx":
        sheet = openpyxl.load_workbook(target)["missing dates"]
        rows = [[c.value for c in row] for row in sheet.iter_rows()]
        assert rows[0] == ["location_id", "short_code", "missing_from", "missing_to",
                           "days_missing", "dates_expected"]
        assert [r[:2] + [r[2].date(), r[3].date()] + r[4:] for r in rows[1:]] == \
            [[1001, "VIE01", date(2026, 10, 8), date(2026, 10, 11), 4, 31]]


def test_a_complete_range_exports_without_a_word(holed, tmp_path, capsys):
    capsys.readouterr()
    assert main(["export", "rpt_daily_close", "--config", str(holed), "--start", "2026-10-12",
                 "--end", "2026-10-31", "-o", str(tmp_path / "x.xlsx")]) == 0
    assert "lacks" not in capsys.readouterr().err
    assert openpyxl.load_workbook(tmp_path / "x.xlsx").sheetnames == ["rpt_daily_close"]


def test_the_report_says_how_many_dates_are_loaded_and_draws_the_hole_as_a_gap(
        holed, tmp_path):
    import re

    page = tmp_path / "report.html"
    assert main(["report", "--config", str(holed), "-o", str(page)]) == 0
    html = page.read_text()
    # its window: the 30 days up to the newest close, 2 to 31 October
    assert '<p class="coverage bad" data-expected="30" data-loaded="26">' in html
    assert "26 of 30 business dates loaded, 2026-10-02 to 2026-10-31; missing " \
           "2026-10-08 .. 2026-10-11 (4 days of 30)." in html
    lines = re.findall(r'<polyline points="([^"]*)"', html)
    assert len(lines) == 2  # before the hole and after it: no line across it
    assert [len(line.split()) for line in lines] == [6, 20]
    dates = re.findall(r'<circle class="point"[^>]*data-date="([\d-]+)"', html)
    assert len(dates) == 26 and not {"2026-10-08", "2026-10-11"} & set(dates)


def test_the_incomplete_month_is_not_closed_until_it_is_complete(holed, capsys, monkeypatch):
    capsys.readouterr()
    assert main(["close-period", "2026-10", "--config", str(holed)]) == 1
    err = capsys.readouterr().err
    assert f"close-period: period 2026-10 is incomplete: 4 business dates missing in the " \
           f"warehouse; location 1001 VIE01: missing {HOLE}." in err
    assert "--allow-incomplete closes it anyway" in err
    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    assert main(["load", "--config", str(holed), "--start", "2026-10-01", "--end",
                 "2026-10-31", "--no-catalog", "--missing-only"]) == 0
    capsys.readouterr()
    assert main(["close-period", "2026-10", "--config", str(holed), "-o",
                 str(holed.parent / "closed")]) == 0
    said = capsys.readouterr()
    assert "closed 2026-10:" in said.out and "incomplete" not in said.err
    warehouse = holed.parent / "data" / "warehouse.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select period, incomplete from rpt_closed_periods"
                           ).fetchall() == [("2026-10", None)]
    assert main(["status", "--config", str(holed)]) == 0
    assert "every business date from 2026-10-01 to 2026-10-31 loaded (31)" in \
        capsys.readouterr().out


def test_rpt_coverage_holds_a_row_per_date_due_a_closed_day_as_data(tmp_path, monkeypatch):
    """The warehouse's own answer: loaded, loaded_empty (the POS had no receipts: the
    restaurant was closed), missing; the same dates pipeline.warehouse.coverage names."""
    from datetime import UTC, datetime

    from pipeline.lake.open import make_lake
    from pipeline.orchestration.configs import load_settings
    from pipeline.warehouse.coverage import gaps, lake_days
    from tests.hostile import altered_sandbox

    closed = date(2026, 10, 5).strftime("%d.%m.%Y")

    def closed_on_monday(location, rows):
        return [r for r in rows if not r["dateTime"].startswith(closed)]

    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1001")
    with altered_sandbox(closed_on_monday) as url:
        config = tmp_path / "pos.toml"
        config.write_text(
            f'[source]\nbase_url = "{url}"\n[warehouse]\ndata_dir = "data"\n'
            '[[locations]]\nid = 1001\nshort_code = "VIE01"\n'
            'api_key_env = "POS_TEST_KEY_1001"\n'
            'first_business_date = "2026-10-01"\nlast_business_date = "2026-10-09"\n')
        for start, end in (("2026-10-01", "2026-10-05"), ("2026-10-08", "2026-10-09")):
            assert main(["load", "--config", str(config), "--start", start, "--end", end,
                         "--no-catalog"]) == 0
    with duckdb.connect(str(tmp_path / "data" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select business_date, coverage_status, receipts, "
                           "expected_through from rpt_coverage order by 1").fetchall()
    status = {day.day: how for day, how, _, _ in rows}
    assert status == {1: "loaded", 2: "loaded", 3: "loaded", 4: "loaded",
                      5: "loaded_empty", 6: "missing", 7: "missing", 8: "loaded",
                      9: "loaded"}
    assert [n for day, _, n, _ in rows if day.day in (5, 6)] == [0, None]
    assert all(through == rows[0][3] for *_, through in rows)
    settings = load_settings(config)
    found, = gaps(settings, lake_days(make_lake(settings)), datetime.now(UTC))
    assert [d.day for d in found.missing] == [d for d, how in status.items()
                                              if how == "missing"]
