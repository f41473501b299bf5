"""Source drift: older days read again, a changed day replaced and recorded (over real
HTTP, through ``pos-etl verify``); the nightly rotation covers every older day."""

from dataclasses import replace
from datetime import date, timedelta

import dagster as dg
import duckdb
import pytest

from pipeline.cli import main
from pipeline.core.settings import ScheduleSettings
from pipeline.load.drift import rotation_days
from pipeline.orchestration.assets.revenue import REVENUE_KEY
from pipeline.orchestration.summaries import RevenueDay
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import Correction, SandboxData, receipts_on
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings, truth_turnover, write_config

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAYS = [date(2026, 11, 16), date(2026, 11, 17), date(2026, 11, 18)]



def query(folder, sql):
    with duckdb.connect(str(folder / "data" / "warehouse.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_verify_replaces_a_day_the_pos_changed_and_records_the_drift(
        sandbox_url, tmp_path, sandbox_keys, capsys, dagster_in_memory):
    dates = ["--start", str(DAYS[0]), "--end", str(DAYS[-1])]
    assert main(["load", "--config", str(write_config(tmp_path, sandbox_url)), "--no-catalog",
                 *dates]) == 0
    before = SandboxData()
    late = next(r for r in receipts_on(1001, DAYS[0], before)
                if r.transaction_type == "Abrechnen" and len(r.items) >= 2
                and r.payment_group.name == "Umsatzwirksam")
    after = replace(before, corrections=(Correction(1001, late.transaction_id,
                                                    late.date_time),))  # a line fewer
    capsys.readouterr()
    with running_sandbox(SandboxConfig(data=after)) as changed_pos:
        assert main(["verify", "--config", str(write_config(tmp_path, changed_pos)), *dates]) == 0
        first = capsys.readouterr().out
        assert main(["verify", "--config", str(write_config(tmp_path, changed_pos)), *dates]) == 0
        again = capsys.readouterr().out
    assert "3 partitions read again, 1 drifted" in first
    assert "3 partitions read again, 0 drifted" in again
    assert dict(query(tmp_path, "select business_date, turnover_net from fct_turnover_daily")
                ) == {day: truth_turnover(1001, day, after) for day in DAYS}
    assert query(tmp_path, """
        select location_id, business_date, turnover_net_before, turnover_net_after,
               receipts_before, receipts_after from rpt_source_drift""") == [
        (1001, DAYS[0], truth_turnover(1001, DAYS[0], before), truth_turnover(1001, DAYS[0], after),
         len(receipts_on(1001, DAYS[0], before)), len(receipts_on(1001, DAYS[0], after)))]
    # the day the check rewrote is an event of the asset that holds it, lake/revenue
    instance = dagster_in_memory[(tmp_path / "data" / "dagster_home").resolve()]
    events = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=REVENUE_KEY), limit=100).records
    replaced = [RevenueDay.from_metadata(e.asset_materialization.metadata)
                for e in events if e.partition_key == str(DAYS[0])]
    assert [(d.replaced_by, d.receipts, d.turnover_net) for d in replaced
            if d.replaced_by] == [("drift check", len(receipts_on(1001, DAYS[0], after)),
                                   truth_turnover(1001, DAYS[0], after))]


def test_the_nightly_rotation_reads_every_older_day_in_turn():
    settings = make_settings("http://pos.test", "data").model_copy(update={
        "schedule": ScheduleSettings(start_date=date(2026, 1, 1), lookback_days=3,
                                     drift_check_days=7)})
    today = date(2026, 11, 23)
    last_older = today - timedelta(days=5)  # yesterday minus the lookback, minus one
    older = {date(2026, 1, 1) + timedelta(days=n)
             for n in range((last_older - date(2026, 1, 1)).days + 1)}
    # 46 stretches of 7 days: a cycle of 64 nights (the next power of two)
    nights = [rotation_days(settings, today + timedelta(days=n)) for n in range(64)]
    assert all(len(days) <= 7 and days == sorted(days) for days in nights)
    assert nights[0] and all(d <= last_older for d in nights[0])
    assert older <= {d for days in nights for d in days}
    assert rotation_days(settings.model_copy(update={"schedule": ScheduleSettings(
        drift_check_days=0)}), today) == []
