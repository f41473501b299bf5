"""`pos-etl report` looked at as a person would: rendered by a real headless Chromium, the
chart with one point per business day, the totals shown equal to the warehouse's. The
screenshots stay in test-artifacts/."""

import re
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from pipeline.cli import main
from pipeline.core.money import format_money
from tests.conftest import loaded_warehouse

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
END = date(2026, 11, 20)
DAYS = 32  # more than the report's 30


def chromium() -> str:
    found = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    if found is None:
        pytest.fail("no headless Chromium: `make browser` installs Debian's package")
    return found


@pytest.fixture(scope="module")
def report(sandbox_url, tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    settings = loaded_warehouse(sandbox_url, folder / "data", END - timedelta(days=DAYS - 1),
                                END, [1001, 1002])
    mp = pytest.MonkeyPatch()
    mp.setenv("POS_ETL_DATA_DIR", str(settings.warehouse.data_dir))
    page = folder / "report.html"
    assert main(["report", "-o", str(page)]) == 0
    mp.undo()
    return settings, page


def render(page: Path, name: str) -> str:
    """The DOM Chromium built from the page, and a screenshot of it kept as an artifact."""
    ARTIFACTS.mkdir(exist_ok=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    shot = ARTIFACTS / f"{name}.png"
    subprocess.run([chromium(), *flags, "--window-size=1100,2400", f"--screenshot={shot}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000  # a page, not a blank
    dom = subprocess.run([chromium(), *flags, "--dump-dom", page.as_uri()], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return dom


def test_the_report_renders_with_a_point_per_day_and_the_warehouses_totals(report):
    settings, page = report
    dom = render(page, "report")
    assert "<h1>Turnover and daily close</h1>" in dom
    sections = re.findall(r'<section class="location" id="location-(\d+)"(.*?)</section>',
                          dom, flags=re.S)
    assert [int(loc) for loc, _ in sections] == [1001, 1002]
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        for loc, body in sections:
            days = con.execute(
                "select business_date, revenue_amount, payment_amount from rpt_daily_close "
                "where location_id = ? order by business_date desc limit 30",
                [int(loc)]).fetchall()
            points = re.findall(r'<circle class="point"[^>]*data-date="([\d-]+)"'
                                r'[^>]*data-revenue="([\d.-]+)"', body)
            assert len(points) == 30 == len(days)  # one point per day of the last 30
            assert sorted(points) == sorted((str(d), str(r)) for d, r, _ in days)
            total = sum(r for _, r, _ in days)
            assert f'data-revenue-total="{total}"' in body
            assert f'<strong class="revenue-total">{format_money(total)}</strong>' in body
            assert f'data-payment-total="{sum(p for *_, p in days)}"' in body
            assert "Payment mix" in body and "Bar" in body
        outstanding = con.execute(
            "select sum(outstanding_balance_amount) from fct_voucher_liability_daily "
            "where snapshot_date = (select max(snapshot_date) "
            "from fct_voucher_liability_daily)").fetchone()[0]
    assert outstanding > 0 and 'id="vouchers"' in dom
    # the only check that does not pass: the sandbox's deliberate short counts, a warning
    listed = re.findall(r"<li>(.*?)</li>", dom.split('id="failed-checks"')[1].split(
        "</section>")[0], re.S)
    assert listed and all(line.startswith("WARN rpt_cash_book_current: cash_count_matches_the_book")
                          for line in listed)


def test_a_failed_check_shows_on_the_report(report, tmp_path):
    settings, _ = report
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(settings.warehouse.warehouse_path, copy)
    with duckdb.connect(str(copy)) as con:  # negative voucher balances: the ledger is off
        con.execute("create or replace table main.dim_vouchers as "
                    "select * replace (-1 as balance_amount) from main.dim_vouchers")
    from pipeline.outputs.report import write_report

    page = tmp_path / "report.html"
    write_report(copy, page, {})
    dom = render(page, "report-failed-check")
    assert 'id="failed-checks"' in dom
    assert "WARN dim_vouchers: balance_within_bounds" in dom


def test_markup_in_a_pos_name_shows_as_text(report, tmp_path):
    settings, _ = report
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(settings.warehouse.warehouse_path, copy)
    markup = "<img src=x onerror=alert(1)>Bar & <b>Co</b>"
    with duckdb.connect(str(copy)) as con:  # a payment type named so at the POS
        con.execute("update rpt_daily_close_payments set payment_type_name = ? "
                    "where payment_type_name = 'Bar'", [markup])
    from pipeline.outputs.report import write_report

    page = tmp_path / "report.html"
    write_report(copy, page, {1001: "<script>document.title='owned'</script>Wien"})
    dom = render(page, "report-markup")
    assert "<img" not in dom and "<script>" not in dom and "<b>Co" not in dom
    assert "&lt;img src=x onerror=alert(1)&gt;Bar &amp; &lt;b&gt;Co&lt;/b&gt;" in dom
    assert "1001 &lt;script&gt;document.title='owned'&lt;/script&gt;Wien</h2>" in dom
    assert "<title>pos-etl report</title>" in dom
