"""A business day per location: from its ``business_day_starts`` (local wall clock) to the
next day's, on DST days too; every receipt in exactly one day; the nightly's yesterday."""

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import duckdb
import pytest

from pipeline.areas.revenue.extract import request_window
from pipeline.core.outcomes import ConfigError
from pipeline.core.reporting import Reporter
from pipeline.core.settings import LocationSettings
from pipeline.orchestration.configs import load_settings
from pipeline.orchestration.schedules import last_complete_business_date
from pos_sandbox.receipts import SandboxData, receipts_on
from tests.conftest import load_directly, make_settings, run_load_in_memory, truth_turnover

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


VIENNA = ZoneInfo("Europe/Vienna")
SPRING = [date(2026, 3, 28), date(2026, 3, 29), date(2026, 3, 30)]  # 29th: 02:00 -> 03:00
AUTUMN = [date(2026, 10, 24), date(2026, 10, 25), date(2026, 10, 26)]  # 25th: 03:00 -> 02:00
HOTEL = 1002


def with_cutoff(settings, starts: str):
    return settings.model_copy(update={"locations": [
        loc.model_copy(update={"business_day_starts": starts}) if loc.id == HOTEL else loc
        for loc in settings.locations]})


@pytest.mark.parametrize("days", [SPRING, AUTUMN], ids=["spring-forward", "fall-back"])
def test_every_receipt_lands_in_exactly_one_business_day(sandbox_url, tmp_path, sandbox_keys,
                                                         days):
    settings = with_cutoff(make_settings(sandbox_url, tmp_path / "data"), "02:30")
    load_directly(settings, days[0], days[-1], [HOTEL], catalog=False)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        rows = con.execute("select business_date, transaction_id, receipted_at_local "
                           "from fct_receipts where location_id = ?", [HOTEL]).fetchall()
        turnover = dict(con.execute("select business_date, turnover_net from "
                                    "fct_turnover_daily where location_id = ?",
                                    [HOTEL]).fetchall())
    starts = time(2, 30)
    loaded: dict[date, set[str]] = {}
    for day, txn, _ in rows:
        loaded.setdefault(day, set()).add(txn)
    expected = {day: {r.transaction_id for r in receipts_on(HOTEL, day, SandboxData(), starts)}
                for day in days}
    assert loaded == expected
    assert len(rows) == sum(map(len, expected.values()))  # none in two days
    assert turnover == {day: truth_turnover(HOTEL, day, starts=starts) for day in days}
    # the night after the cut-off belongs to the day before: the hotel serves until 04:00
    early = [(day, stamp) for day, _, stamp in rows if stamp.time() < starts]
    assert early and all(stamp.date() == day + timedelta(days=1) for day, stamp in early)
    assert all(stamp.date() == day for day, _, stamp in rows if stamp.time() >= starts)


def test_the_cut_off_stays_at_its_wall_clock_time_on_dst_days():
    margin = timedelta(0)
    starts = time(2, 30)
    # spring forward: 02:30 does not exist on March 29; the day of the 28th ends when the
    # clock jumps to 03:00 (01:00 UTC): the window asked for covers it
    after, before = request_window(date(2026, 3, 28), VIENNA, margin, starts)
    assert after.astimezone(UTC) == datetime(2026, 3, 28, 1, 30, tzinfo=UTC)
    assert before.astimezone(UTC) >= datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    # fall back: the day of October 25 runs 25 real hours, 02:30 summer to 02:30 winter time
    after, before = request_window(date(2026, 10, 25), VIENNA, margin, starts)
    assert after.astimezone(UTC) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert before.astimezone(UTC) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)
    hotel = LocationSettings(id=1, short_code="H", api_key_env="K", business_day_starts="02:30")
    assert hotel.business_date_at(datetime(2026, 3, 29, 1, 0, tzinfo=UTC)) == date(2026, 3, 29)
    assert hotel.business_date_at(datetime(2026, 3, 29, 0, 59, tzinfo=UTC)) == date(2026, 3,
                                                                                   28)


def test_the_nightly_waits_for_the_latest_business_day_to_end():
    settings = make_settings("http://pos.invalid", "data")
    tick = datetime(2026, 11, 23, 3, 30, tzinfo=VIENNA)
    assert last_complete_business_date(settings, tick) == date(2026, 11, 22)
    late = with_cutoff(settings, "05:00")  # the hotel's day of the 22nd runs until 05:00
    assert last_complete_business_date(late, tick) == date(2026, 11, 21)
    assert last_complete_business_date(late, tick.replace(hour=5)) == date(2026, 11, 22)


def test_a_bad_cut_off_is_named(tmp_path):
    config = tmp_path / "pos.toml"
    config.write_text('[[locations]]\nid = 1\nshort_code = "H"\napi_key_env = "K"\n'
                      'business_day_starts = "2:30"\n')
    with pytest.raises(ConfigError, match=r"locations\.0\.business_day_starts"):
        load_settings(config)


def test_a_day_under_way_loads_as_provisional_and_is_booked_nowhere(
        sandbox_url, tmp_path, sandbox_keys, capsys):
    """One rule for a day under way: an analyst loads it (the CLI and the Dagster partition
    of today), the lake, the warehouse and rpt_coverage mark it provisional, no booking
    file, close or cash book holds it, and the next load loads it again."""
    from pipeline.cli import main
    from pipeline.lake.open import make_lake
    from pipeline.outputs.export import export
    from pipeline.warehouse.coverage import lake_days, warehouse_days
    from pipeline.warehouse.selection import ExportError, Selection
    from tests.conftest import write_config
    from tests.integration.test_accounting import read_bmd

    settings = make_settings(sandbox_url, tmp_path / "data")
    now = datetime.now(UTC)
    over = settings.last_date_over(now)
    under_way = over + timedelta(days=1)
    # the location whose day under_way still runs (the others' may have ended)
    late = min(settings.locations, key=lambda loc: loc.business_date_at(now))
    config = write_config(tmp_path, sandbox_url)
    tomorrow = datetime.now(ZoneInfo(settings.schedule.timezone)).date() + timedelta(days=1)
    assert main(["load", "--config", str(config), "--start", str(tomorrow), "--end",
                 str(tomorrow)]) == 2
    assert f"--end {tomorrow} is in the future" in capsys.readouterr().err
    assert run_load_in_memory(settings, over, over, [late.id], catalog=False,
                              progress=Reporter()).ok
    report = run_load_in_memory(settings, under_way, under_way, [late.id], catalog=False,
                                progress=Reporter())
    assert report.ok, report.summary()
    assert report.provisional == {under_way.isoformat(): [late.id]}
    assert f"note: {under_way} is not over yet at location {late.id}: loaded as provisional" \
        in report.summary()
    lake = make_lake(settings)
    assert lake_days(lake)[late.id] == {over}  # not final: not there for completeness
    assert warehouse_days(settings.warehouse.warehouse_path)[late.id] == {over}
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        coverage = dict(con.execute(
            "select business_date, coverage_status from rpt_coverage where location_id = ? "
            "and business_date >= ?", [late.id, over]).fetchall())
        flagged = dict(con.execute(
            "select business_date, is_provisional from fct_turnover_daily "
            "where location_id = ?", [late.id]).fetchall())
        booked_days = {d for (d,) in con.execute(
            "select distinct business_date from rpt_daily_close_bookings").fetchall()}
        cash_days = {d for (d,) in con.execute(
            "select distinct business_date from rpt_cash_book_current").fetchall()}
    assert coverage[under_way] == "provisional" and coverage[over] == "loaded"
    assert flagged == {over: False, under_way: True}  # the analyst's figures, marked
    assert under_way not in booked_days | cash_days and over in booked_days
    end = under_way + timedelta(days=2)
    done = export(settings, Selection("rpt_daily_close", over, end, [late.id]), "bmd",
                  tmp_path / "bmd")
    booked = {r["belegdatum"] for f in done.files for r in read_bmd(f.read_bytes())}
    assert booked == {over.strftime("%d.%m.%Y")}
    assert f"the range reaches past the last business date that is over, {over}: " \
           f"{under_way} .. {end} are not over yet, not booked" in done.warnings
    with pytest.raises(ExportError, match="no business date of the range is over yet"):
        export(settings, Selection("rpt_daily_close", under_way, end, [late.id]), "bmd",
               tmp_path / "none")
    # a load of the missing partitions fetches a provisional one again (it is not final)
    again = run_load_in_memory(settings, over, under_way, [late.id], catalog=False,
                               missing_only=True, progress=Reporter())
    assert again.ok and again.partitions_kept == 1, again.summary()


def test_a_day_loaded_before_it_was_over_is_missing_for_a_close(sandbox_url, tmp_path,
                                                                sandbox_keys):
    """A day loaded while under way and never loaded again (the nightly did not run) is
    no day of the books: a close names it missing, and one made anyway without it
    (--allow-incomplete) books none of it and freezes none of its rows."""
    from pipeline.accounting.bookfiles import close_period
    from pipeline.areas.revenue.commits import write_revenue_partition
    from pipeline.areas.revenue.extract import extract_revenue_partition
    from pipeline.lake.open import make_lake
    from pipeline.orchestration.resources import opened, pos_resource
    from pipeline.warehouse.selection import ExportError
    from tests.conftest import build_directly

    oct30, oct31 = date(2026, 10, 30), date(2026, 10, 31)
    settings = make_settings(sandbox_url, tmp_path / "data")
    load_directly(settings, oct30, oct30, [1001], catalog=False)
    with opened(pos_resource(settings, [1001])) as source:  # fetched at 20:00 on the day
        part = extract_revenue_partition(source, 1001, oct31)
        part.provisional = True
        write_revenue_partition(make_lake(settings), part)
    build_directly(settings)
    with pytest.raises(ExportError, match=r"location 1001 VIE01: missing 2026-10-01 \.\. "
                                          r"2026-10-29, 2026-10-31 \(30 days of 31\)"):
        close_period(settings, oct31, "bmd")
    closed = close_period(settings, oct31, "bmd", allow_incomplete=True)
    assert "2026-10-31" in closed.incomplete
    lake = make_lake(settings)
    days = {row["business_date"] for row in lake.read(
        "ledger", "closed_bookings", {"period": "2026-10"}).to_pylist()}
    assert days == {oct30}
    for table in ("closed_daily_close", "closed_vat_by_rate", "closed_cash_book"):
        frozen = {row["business_date"] for row in lake.read(
            "ledger", table, {"period": "2026-10"}).to_pylist()}
        assert oct31 not in frozen, table
