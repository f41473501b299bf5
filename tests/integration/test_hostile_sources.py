"""Hostile or broken sources over real HTTP: a receipt of another location, a value the
warehouse cannot hold, a huge but valid line. Each failure stays in its own partition,
named by location, date, transaction and field; nothing already loaded is lost."""

import json
import subprocess
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.cli import main
from pipeline.core.reporting import Reporter
from pipeline.orchestration.loader import run_load
from tests.conftest import (
    make_settings,
    run_load_in_memory,
    truth_turnover,
    write_config,
)
from tests.hostile import (
    DECODER,
    ENCODER,
    VOUCHER_LIST,
    altered_sandbox,
    endless_pages,
    trickling_pos,
)

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAY1, DAY2 = date(2026, 11, 19), date(2026, 11, 20)


def on_day(rows: list[dict], day: date) -> list[dict]:
    prefix = day.strftime("%d.%m.%Y")
    return [r for r in rows if r["dateTime"].startswith(prefix)]


def settled(rows: list[dict]) -> dict:
    return next(r for r in rows if r["transactionType"] == "Abrechnen" and r["items"]
                and r["paymentGroup"]["name"] == "Umsatzwirksam")


def turnover(settings) -> dict:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return dict(con.execute("select business_date, turnover_net from fct_turnover_daily "
                                "where location_id = 1001").fetchall())


def load(url, data_dir, start, end):
    return run_load_in_memory(make_settings(url, data_dir), start, end, [1001],
                              catalog=False, progress=Reporter())


def test_receipts_of_another_location_fail_the_cli_and_keep_the_loaded_day(
        sandbox_url, tmp_path, sandbox_keys, capsys):
    data_dir = tmp_path / "data"
    assert load(sandbox_url, data_dir, DAY2, DAY2).ok
    before = turnover(make_settings(sandbox_url, data_dir))

    def foreign(location, rows):
        for r in on_day(rows, DAY2)[:1]:
            r["location"]["id"] = "1002"
        return rows

    with altered_sandbox(foreign) as url:
        config = write_config(tmp_path, url)
        code = main(["load", "--config", str(config), "--start", str(DAY2), "--end",
                     str(DAY2), "--no-catalog"])
    out = capsys.readouterr().out
    assert code == 1
    failed = next(line for line in out.splitlines() if "FAILED 1001 2026-11-20" in line)
    assert "location.id is '1002'" in failed and "bound to" in failed and "receipt " in failed
    assert turnover(make_settings(sandbox_url, data_dir)) == before


@pytest.mark.parametrize("value", [Decimal("1e300"), 2**128 + 5, 10**400],
                         ids=["1e300", "2^128+5", "10^400"])
def test_a_value_the_warehouse_cannot_hold_fails_only_its_own_day(
        sandbox_url, tmp_path, sandbox_keys, value):
    poisoned = {}

    def poison(location, rows):
        target = settled(on_day(rows, DAY2)) if on_day(rows, DAY2) else None
        if target:
            for line in target["items"]:  # every copy the wire lists
                if line["id"] == target["items"][0]["id"]:
                    line["netAmount"] = value
            poisoned["txn"] = target["transactionId"]
        return rows

    with altered_sandbox(poison) as url:
        report = load(url, tmp_path / "data", DAY1, DAY2)
    assert not report.ok
    (failure,) = report.failed_partitions
    assert failure.location_id == 1001 and str(failure.business_date) == "2026-11-20"
    assert poisoned["txn"] in failure.message and "field netAmount" in failure.message
    assert "cannot be stored as DECIMAL(18,4)" in failure.message
    assert turnover(make_settings(url, tmp_path / "data")) == {DAY1: truth_turnover(1001, DAY1)}


@pytest.mark.parametrize("stamp, said", [
    ("31.02.2026 12:00:00", "is not a real date and time"),
    ("20.11.1990 12:00:00", "lies outside the requested window"),
], ids=["impossible date", "far away"])
def test_a_receipt_stamped_impossibly_or_far_away_fails_its_partition_by_name(
        sandbox_url, tmp_path, sandbox_keys, stamp, said):
    moved = {}

    def restamp(location, rows):
        midday = [r for r in on_day(rows, DAY2) if r["dateTime"][11:13] >= "12"]
        if midday:  # served in this day's answer only, not in a neighbour's margin
            receipt = settled(midday)
            receipt["dateTime"] = stamp
            moved["txn"] = receipt["transactionId"]
        return rows

    with altered_sandbox(restamp) as url:
        report = load(url, tmp_path / "data", DAY1, DAY2)
    (failure,) = report.failed_partitions
    assert str(failure.business_date) == "2026-11-20" and failure.location_id == 1001
    assert moved["txn"] in failure.message and "field dateTime" in failure.message
    assert said in failure.message
    assert turnover(make_settings(url, tmp_path / "data")) == {DAY1: truth_turnover(1001, DAY1)}


def test_the_margins_neighbours_are_skipped_and_counted(settings, lake):
    from pipeline.areas.revenue.commits import load_revenue_partition
    from pipeline.orchestration.resources import opened, pos_resource

    with opened(pos_resource(settings)) as source:
        part = load_revenue_partition(source, lake, 1001, DAY2)
    assert part.outside_day > 0 and part.turnover_net == truth_turnover(1001, DAY2)


def test_two_versions_of_one_transaction_fail_the_partition_and_identical_repeats_do_not(
        sandbox_url, tmp_path, sandbox_keys):
    def twice(change):
        def alter(location, rows):
            day = on_day(rows, DAY2)
            if day:
                original = settled(day)
                copy = DECODER.decode(ENCODER.encode(original))
                if change:
                    copy["totalAmount"] += 1
                rows.insert(rows.index(original) + 1, copy)
                twice.txn = copy["transactionId"]
            return rows
        return alter

    with altered_sandbox(twice(change=False)) as url:
        assert load(url, tmp_path / "same", DAY2, DAY2).ok
    with altered_sandbox(twice(change=True)) as url:
        report = load(url, tmp_path / "changed", DAY2, DAY2)
    (failure,) = report.failed_partitions
    assert twice.txn in failure.message and "two different versions" in failure.message
    assert "totalAmount" in failure.message


@pytest.mark.parametrize("case, said", [
    ("gzip_bomb", "larger than source.max_response_mb"),
    ("huge_page", "larger than source.max_response_mb"),
    ("endless_catalog", "more than 100,000 records"),
])
def test_hostile_answers_fail_by_name_within_a_gigabyte(tmp_path, case, said):
    """Each in a fresh interpreter, whose peak RSS is the figure."""
    out = subprocess.run([sys.executable, "-m", "tests.memory_probe", case, str(tmp_path)],
                         capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    errors = [f["error"] for f in result["failed"]] + list(result["snapshots"].values())
    assert not result["ok"] and any(said in e and "location 1001" in e for e in errors), errors
    assert result["peak_rss_mb"] < 1024, result


def test_a_huge_valid_line_is_summed_exactly_and_later_builds_still_work(
        sandbox_url, tmp_path, sandbox_keys):
    extra = {}

    def huge(location, rows):
        if on_day(rows, DAY2):
            receipt = settled(on_day(rows, DAY2))
            item = receipt["items"][0]
            # the item may be listed once per payment (a wire quirk): change every copy
            for r in rows:
                for line in r["items"]:
                    if line["id"] == item["id"]:
                        old = line["netAmount"] * line["quantity"]
                        old_gross = line["grossAmount"] * line["quantity"]
                        line["netAmount"], line["quantity"] = Decimal(10**6), Decimal(10**4)
                        line["grossAmount"] = Decimal(12 * 10**5)
            extra["delta"] = Decimal(10**10) - old
            # the receipt stays consistent: its total and its first payment carry the line
            gross_delta = Decimal(12 * 10**9) - old_gross
            receipt["totalAmount"] += gross_delta
            first = receipt["payments"][0]["id"]
            for payment in receipt["payments"]:
                if payment["id"] == first:
                    payment["amount"] += gross_delta
        return rows

    with altered_sandbox(huge) as url:
        report = load(url, tmp_path / "data", DAY2, DAY2)
        assert report.ok, report.summary()
        again = load(url, tmp_path / "data", DAY1, DAY1)
        assert again.ok, again.summary()
    assert turnover(make_settings(url, tmp_path / "data")) == {
        DAY1: truth_turnover(1001, DAY1), DAY2: truth_turnover(1001, DAY2) + extra["delta"]}


def test_a_voucher_balance_beyond_64_bits_fails_the_ledger_snapshot_by_name(
        sandbox_url, tmp_path, sandbox_keys):
    def huge_balance(location, body):
        vouchers = body["data"] if isinstance(body, dict) else body
        vouchers[0]["gift"]["balance"] = 2**64
        huge_balance.voucher = vouchers[0]["id"]
        return body

    with altered_sandbox(huge_balance, suffix=VOUCHER_LIST) as url:
        report = run_load(make_settings(url, tmp_path / "data", voucher_url=url), DAY2, DAY2,
                          [1001], models=False, progress=Reporter())
    assert not report.ok
    error = report.snapshot_failures["vouchers"].message
    assert f"record {huge_balance.voucher}: field balance_cents: {2**64}" in error
    assert "64-bit" in error
    assert report.failed_partitions == []  # the revenue of the day loaded


def test_a_trickling_report_fails_its_partition_at_the_deadline_instead_of_hanging(
        tmp_path, sandbox_keys):
    with trickling_pos() as url:
        report = run_load(make_settings(url, tmp_path / "data", request_deadline_seconds=0.5,
                                        max_attempts=1), DAY2, DAY2, [1001], catalog=False,
                          models=False, progress=Reporter())
    # the trickle ends after 8 s in a whole, empty report, which would load: the deadline
    # cut it before (a failure by name, not a duration measured)
    assert not report.ok
    (failure,) = report.failed_partitions
    assert failure.location_id == 1001 and "ReadTimeout" in failure.message


def test_a_pos_that_never_stops_paging_is_stopped_at_the_ceiling_by_name(
        tmp_path, sandbox_keys):
    with endless_pages() as url:
        report = run_load(make_settings(url, tmp_path / "data", page_size=100,
                                        max_receipts_per_partition=500), DAY2, DAY2, [1001],
                          catalog=False, models=False, progress=Reporter())
    assert not report.ok
    (failure,) = report.failed_partitions
    assert "more than 500 receipts" in failure.message
    assert "max_receipts_per_partition" in failure.message and "1001" in failure.message


def test_a_resumed_load_fetches_only_the_missing_partitions(tmp_path, sandbox_keys, capsys):
    """A long load killed part-way and started again with --missing-only: what was committed
    is not fetched again, and the warehouse holds every day to the cent."""
    from pos_sandbox.app import create_app
    from pos_sandbox.server import serving

    asked: list[str] = []  # the window start of every revenue request
    app = create_app()

    async def counting(scope, receive, send):
        async def recorded():
            message = await receive()
            if scope["path"].endswith("/reports/receipts") and message.get("body"):
                asked.append(DECODER.decode(message["body"])["after"][:10])
            return message
        await app(scope, recorded, send)

    day3 = date(2026, 11, 21)
    with serving(counting) as url:
        config = write_config(tmp_path, url)
        base = ["load", "--config", str(config), "--no-catalog", "--start", str(DAY1)]
        assert main([*base, "--end", str(DAY2)]) == 0  # the part done before the kill
        first = len(asked)
        assert main([*base, "--end", str(day3), "--missing-only"]) == 0
    assert set(asked[first:]) == {"2026-11-20"}  # only the window of the missing day 3
    out = capsys.readouterr().out
    assert "3 of 3 partitions loaded" in out and "2 of them committed before" in out
    settings = make_settings(url, tmp_path / "data")
    assert turnover(settings) == {d: truth_turnover(1001, d) for d in (DAY1, DAY2, day3)}


@pytest.mark.parametrize("field", ["items", "payments"])
def test_a_receipt_whose_items_or_payments_are_null_fails_its_partition_by_name(
        tmp_path, sandbox_keys, field):
    """``items`` and ``payments`` are arrays (``Item[]``, ``Payment[]``; only
    ``sideDishes`` may be null): a paid receipt with null there fails its day by name,
    the other day loads."""
    nulled = {}

    def null(location, rows):
        day = on_day(rows, DAY2)
        if day:
            receipt = settled(day)
            receipt[field] = None
            nulled["txn"] = receipt["transactionId"]
        return rows

    with altered_sandbox(null) as url:
        report = load(url, tmp_path / "data", DAY1, DAY2)
    assert not report.ok
    (failure,) = report.failed_partitions
    assert (failure.location_id, failure.business_date) == (1001, DAY2)
    assert f"receipt {nulled['txn']}: field {field} is null" in failure.message
    assert turnover(make_settings(url, tmp_path / "data")) == {DAY1: truth_turnover(1001, DAY1)}
