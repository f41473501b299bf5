"""Closed booking periods (GoBD): a month exported and closed keeps its file; a receipt of
it that the POS corrects afterwards is booked as correction bookings in the next month's
file, which net to the change. Both files read back by an independent DATEV reader."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal

import duckdb
import pytest

from pipeline.accounting.bookfiles import close_period
from pipeline.core.accounting_settings import DatevSettings
from pipeline.core.reporting import Reporter
from pipeline.orchestration.loader import run_load
from pipeline.outputs.export import ExportError, Selection, export
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import SandboxData
from pos_sandbox.server import running_sandbox
from tests.conftest import build_directly, make_settings, moved_receipt
from tests.integration.test_accounting import read_independently, warehouse_balance

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


OCT30, OCT31, NOV1, NOV2 = date(2026, 10, 30), date(2026, 10, 31), date(2026, 11, 1), \
    date(2026, 11, 2)
OCTOBER = Selection("rpt_daily_close", date(2026, 10, 1), OCT31, None)
NOVEMBER = Selection("rpt_daily_close", NOV1, date(2026, 11, 30), None)


def _totals(read: dict) -> dict[str, Decimal]:
    return {k: Decimal(v) for k, v in read["totals"].items() if Decimal(v)}


def _minus(a: dict, b: dict) -> dict[str, Decimal]:
    out: dict[str, Decimal] = defaultdict(Decimal)
    for k, v in a.items():
        out[k] += v
    for k, v in b.items():
        out[k] -= v
    return {k: v for k, v in out.items() if v}


def test_a_closed_month_keeps_its_file_and_the_next_carries_the_corrections(
        sandbox_url, tmp_path, sandbox_keys):
    data_dir = tmp_path / "data"
    settings = make_settings(sandbox_url, data_dir)
    assert run_load(settings, OCT30, NOV2, [1001], catalog=False, progress=Reporter()).ok

    with pytest.raises(ExportError, match="period 2026-09 is incomplete: 90 business dates"):
        close_period(settings, date(2026, 9, 30), "datev")  # not loaded: not closed
    with pytest.raises(ExportError, match="2026-09: the warehouse has no daily close in it"):
        close_period(settings, date(2026, 9, 30), "datev", allow_incomplete=True)
    # DATEV's placeholder Berater and Mandant never go into a closed period's file
    with pytest.raises(ExportError, match="are the placeholders 1001 and 1, not your tax"):
        close_period(settings, OCT31, "datev", allow_incomplete=True)
    settings = settings.model_copy(update={"accounting": settings.accounting.model_copy(
        update={"datev": DatevSettings(consultant_number=29098, client_number=55003)})})
    # at 00:30 UTC on 1 November a location in New York is still in its 31 October: no
    # close books a business date that is not over at every location
    west = settings.model_copy(update={"locations": [
        *settings.locations[:2],
        settings.locations[2].model_copy(update={"timezone": "America/New_York"})]})
    with pytest.raises(ExportError, match="period 2026-10 has not ended for every location: "
                                          "its last business date 2026-10-31 is not over"):
        close_period(west, OCT31, "datev", today=NOV1, allow_incomplete=True,
                     now=datetime(2026, 11, 1, 0, 30, tzinfo=UTC))
    # October has two days of one location of three: closed only when told to, and so noted
    closed = close_period(settings, OCT31, "datev", allow_incomplete=True)
    assert closed.name == "2026-10" and closed.bookings > 0
    assert closed.incomplete.startswith("location 1001 VIE01: missing 2026-10-01 .. "
                                        "2026-10-29 (29 days of 31); location 1002 ")
    header = read_datev_header(closed.content)
    assert header[16] == "Kasse 2026-10 unvollständig"
    assert header[20] == "1"  # Festschreibung: DATEV locks a closed period's bookings
    with pytest.raises(ExportError, match="run `pos-etl build` first"):
        export(settings, NOVEMBER, "datev", tmp_path / "early.csv")  # not built since
    build_directly(settings)
    first = export(settings, OCTOBER, "datev", tmp_path / "oct.csv")
    assert (tmp_path / "oct.csv").read_bytes() == closed.content and first.rows == closed.bookings
    with pytest.raises(ExportError, match="was closed on"):
        close_period(settings, OCT31, "datev")
    reports = ("rpt_cash_book", "rpt_vat_by_rate", "rpt_daily_close")
    as_closed = {}
    for report in reports:  # October's reports as closed
        export(settings, Selection(report, date(2026, 10, 1), OCT31, None), "csv",
               tmp_path / f"{report}.csv")
        as_closed[report] = (tmp_path / f"{report}.csv").read_bytes()
        assert b"2026-10-31" in as_closed[report]

    # The POS corrects a receipt of 31 October: moved to the 30th, with a line fewer.
    before = SandboxData()
    moved, after = moved_receipt(1001, OCT31, OCT30, before, paid_in_cash=True)
    with running_sandbox(SandboxConfig(data=after)) as corrected:
        again = run_load(make_settings(corrected, data_dir), OCT30, OCT31, [1001],
                         catalog=False, progress=Reporter())
    assert again.ok, again.summary()
    # the person loading is told where the change goes (a warning: --warn-error fails it)
    assert again.warnings == ["2026-10-30 .. 2026-10-31 lie in the closed period 2026-10: "
                              "what changes there is booked as corrections in 2026-11"]
    # and the data as it is now has the cash counts differ from the book (the moved
    # receipt was paid in cash): the current cash book's check warns; October's cash book
    # as reported stays as closed (below)
    assert again.result == "OK, 2 warnings", again.summary()
    assert "WARN warehouse/rpt_cash_book_current: cash_count_matches_the_book" in \
        again.summary()
    assert "  WARN 2026-10-30 .. 2026-10-31 lie in the closed period" in again.summary()

    from pipeline.lake.open import make_lake
    from pipeline.orchestration.instance import open_instance
    from pipeline.orchestration.status import read_status

    with open_instance(settings) as instance:
        found = read_status(settings, make_lake(settings), instance, datetime.now(UTC))
    assert [(p, d, b) for p, d, _, b in found.corrections] == [("2026-10", 2, "2026-11-01")]
    assert any(line.startswith("note: ") and "pending for 2 dates of the closed period "
               "2026-10, booked on 2026-11-01" in line for line in found.lines())
    assert found.report_corrections and found.report_corrections[0][0] == "2026-10"
    assert any(line.startswith(f"note: {found.report_corrections[0][1]:,} correction rows for the "
                               "closed period 2026-10's days pending in the first open "
                               "period's cash book and VAT report") for line in found.lines())
    now = warehouse_balance(settings, settings, date(2026, 10, 1), OCT31)

    # October's file stays as it was closed, byte for byte, and so do its cash book, VAT
    # report and daily closes; what changed is in rpt_period_changes
    export(settings, OCTOBER, "datev", tmp_path / "oct-again.csv")
    assert (tmp_path / "oct-again.csv").read_bytes() == closed.content
    for report in reports:
        again_ = export(settings, Selection(report, date(2026, 10, 1), OCT31, None), "csv",
                        tmp_path / f"{report}-again.csv")
        assert (tmp_path / f"{report}-again.csv").read_bytes() == as_closed[report], report
        assert any("closed period 2026-10" in w and "rpt_period_changes" in w
                   for w in again_.warnings), again_.warnings
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        changes = dict(((r, d, m), c) for r, d, m, c in con.execute("""
            select report, business_date, measure, sum(change_amount)
            from rpt_period_changes where closed_period = '2026-10' group by all""").fetchall())
        for report, measure in (("rpt_vat_by_rate", "gross_after_discount"),
                                ("rpt_daily_close", "payment_amount"),
                                ("rpt_cash_book", "cash_takings")):
            for day in (OCT30, OCT31):
                ((now_, then_),) = con.execute(f"""
                    select (select coalesce(sum({measure}), 0) from {report}_current
                            where location_id = 1001 and business_date = ?),
                           (select coalesce(sum({measure}), 0) from {report}
                            where location_id = 1001 and business_date = ?)""",
                                              [day, day]).fetchall()
                assert changes.get((report, day, measure), 0) == now_ - then_, (report, day)
        assert changes[("rpt_daily_close", OCT31, "payment_amount")] < 0  # moved away
        assert changes[("rpt_daily_close", OCT30, "payment_amount")] > 0  # moved in
        # November carries the changes as correction rows dated its first day, naming the
        # day: the cash book's takings (a cash receipt moved: never a Kassendifferenz) and
        # the VAT report's figures per rate
        cash = con.execute("""
            select corrects_date, cash_takings, cash_difference, closing_cash
            from rpt_cash_book where location_id = 1001 and corrects_date is not null
            order by 1""").fetchall()
        assert cash == [(day, changes[("rpt_cash_book", day, "cash_takings")], None, None)
                        for day in (OCT30, OCT31)]
        assert cash[0][1] > 0 > cash[1][1]
        assert con.execute("select count(*) from rpt_cash_book where corrects_date is not "
                           "null and (business_date <> ? or closed_period is not null)",
                           [NOV1]).fetchone() == (0,)
        vat = dict(((d, rate), (g, v)) for d, rate, g, v in con.execute("""
            select corrects_date, tax_rate_percent, gross_after_discount, vat_after_discount
            from rpt_vat_by_rate where corrects_date is not null and business_date = ?""",
                                                                    [NOV1]).fetchall())
        now_vat = dict(((d, rate), (g, v)) for d, rate, g, v in con.execute("""
            select business_date, tax_rate_percent,
                   sum(gross_after_discount), sum(vat_after_discount)
            from (select * from rpt_vat_by_rate_current union all by name
                  select * exclude (closed_period, corrects_date) from rpt_vat_by_rate
                  where closed_period = '2026-10')
            where location_id = 1001 and business_date in (?, ?) group by all
            having sum(gross_after_discount) <> 0 or sum(vat_after_discount) <> 0""",
                                                                        [OCT30, OCT31]).fetchall())
        assert vat and {k for k, (g, v) in vat.items() if g or v} == set(now_vat)
    # rpt_period_corrections lists the change, booked on 1 November.
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        listed = con.execute("select original_date, closed_period, booking_date, "
                             "sum(amount) from rpt_period_corrections group by all "
                             "order by 1").fetchall()
    assert [(d, p, b) for d, p, b, _ in listed] == [(OCT30, "2026-10", NOV1),
                                                  (OCT31, "2026-10", NOV1)]

    nov = export(settings, NOVEMBER, "datev", tmp_path / "nov.csv")
    assert read_datev_header((tmp_path / "nov.csv").read_bytes())[20] == "0"  # open period

    from pipeline.accounting.datev import read_datev

    rows = read_datev(tmp_path / "nov.csv")[1]
    corrections = [r for r in rows if r["Belegfeld 1"].startswith("K1001-")]
    assert corrections and all(r["Belegdatum"] == "0111" for r in corrections)
    assert {r["Buchungstext"][:16] for r in corrections} == {"Korr. 30.10.2026",
                                                             "Korr. 31.10.2026"}
    # Read by the independent reader: October's file books what October booked; the
    # November file books November and, on top, the correction: October now minus then.
    oct_read, nov_read = read_independently([tmp_path / "oct.csv"]), \
        read_independently([tmp_path / "nov.csv"])
    change = _minus(now, _totals(oct_read))
    assert change  # the correction changed October's accounts
    november = warehouse_balance(settings, settings, NOV1, NOV2)
    assert _totals(nov_read) == _minus({**november, **{k: november.get(k, 0) + v
                                                       for k, v in change.items()}}, {})
    assert nov_read["legs"] == 2 * nov.rows

    # Every export is on record: its files' hashes and their totals per account.
    build_directly(settings)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        files = con.execute("select file_name, period, sha256, is_closed_period from "
                            "rpt_exported_files order by exported_at").fetchall()
        nov_id, = con.execute("select export_id from rpt_exported_files "
                              "where period = '2026-11' order by exported_at desc "
                              "limit 1").fetchone()
        booked = dict(con.execute("select account, sum(debit_amount - credit_amount) from "
                                  "rpt_exported_totals where export_id = ? "
                                  "group by all", [nov_id]).fetchall())
    name = "EXTF_Buchungsstapel_2026-10.csv"
    assert [f for f in files if f[1] == "2026-10"] == [(name, "2026-10", closed.sha256, True)] * 2
    assert files[-1] == ("EXTF_Buchungsstapel_2026-11.csv", "2026-11",
                         hashlib.sha256((tmp_path / "nov.csv").read_bytes()).hexdigest(), False)
    assert {k: v for k, v in booked.items() if v} == _totals(nov_read)

    # Closing November books the corrections, and freezes its cash book's and VAT
    # report's correction rows with it: none are outstanding afterwards, none carried twice.
    nov_cash = query(settings, "select * from rpt_cash_book where business_date = "
                               "'2026-11-01' order by all")
    close_period(settings, NOV2, "datev", today=date(2026, 12, 5), allow_incomplete=True)
    build_directly(settings)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        assert con.execute("select count(*) from rpt_period_corrections").fetchone() == (0,)
        assert con.execute("select count(*) from rpt_cash_book where corrects_date is not "
                           "null and closed_period is null").fetchone() == (0,)
        assert con.execute("select count(*) from rpt_vat_by_rate where corrects_date is not "
                           "null and closed_period = '2026-11'").fetchone()[0] == len(vat)
        assert [row[:-2] for row in con.execute(
            "select * from rpt_cash_book where business_date = '2026-11-01' order by all"
        ).fetchall()] == [row[:-2] for row in nov_cash]
    with open_instance(settings) as instance:
        assert not read_status(settings, make_lake(settings), instance,
                               datetime.now(UTC)).report_corrections


def read_datev_header(content: bytes) -> list[str]:
    import csv

    return next(csv.reader([content.decode("cp1252").split("\r\n")[0]], delimiter=";"))


def query(settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_close_period_command_writes_records_and_refuses_a_second_close(
        sandbox_url, tmp_path, sandbox_keys, capsys):
    from pipeline.cli import main
    from pipeline.orchestration.configs import load_settings
    from tests.conftest import write_config

    config = write_config(tmp_path, sandbox_url, accounts=False)
    assert run_load(load_settings(config), OCT31, NOV1, catalog=False,
                    progress=Reporter()).ok
    folder = tmp_path / "closed"
    # the config names no account for the staff meals' payment group: its settlements go
    # to the suspense account, and a close refuses that, naming group, day and amount
    ((meals,),) = query(load_settings(config), """
        select sum(amount) from rpt_payment_reconciliation
        where payment_group_name = 'Nicht umsatzwirksam' and business_date = '2026-10-31'""")
    assert meals
    assert main(["close-period", "2026-10", "--config", str(config), "--format", "bmd",
                 "-o", str(folder), "--allow-incomplete"]) == 1
    refused = capsys.readouterr().err
    assert "close-period: period 2026-10 books 1 line(s) of " \
           f"{abs(meals):,.2f} EUR to the suspense account 2899: payment group 'Nicht " \
           f"umsatzwirksam', location 1001, 2026-10-31: {abs(meals):,.2f} EUR." in refused
    assert "--allow-suspense closes it anyway" in refused
    assert not folder.exists()
    assert main(["close-period", "2026-10", "--config", str(config), "--format", "bmd",
                 "-o", str(folder), "--allow-incomplete", "--allow-suspense"]) == 0
    said = capsys.readouterr()
    out = said.out
    assert "closed 2026-10:" in out and "recorded in the lake" in out
    assert "WARNING closed incomplete (--allow-incomplete): location 1001 VIE01: missing " \
           "2026-10-01 .. 2026-10-30 (30 days of 31)" in said.err
    assert "WARNING closed with suspense bookings (--allow-suspense): 1 line(s) of " \
           f"{abs(meals):,.2f} EUR on the suspense account 2899" in said.err
    ((recorded,),) = query(load_settings(config),
                           "select suspense from rpt_closed_periods where period = '2026-10'")
    assert "payment group 'Nicht umsatzwirksam', location 1001, 2026-10-31" in recorded
    written = folder / "BMD_Buchungen_2026-10.csv"
    digest = hashlib.sha256(written.read_bytes()).hexdigest()
    assert written.is_file() and f"sha256 {digest[:16]}" in out
    assert main(["close-period", "2026-10", "--config", str(config)]) == 1
    assert "period 2026-10 was closed on" in capsys.readouterr().err
    assert main(["close-period", "2026-12", "--config", str(config)]) == 1
    assert "has not ended" in capsys.readouterr().err
    assert main(["close-period", "October", "--config", str(config)]) == 2

    # the auditor's pack: the booking files, the period's tables, a manifest; checked by
    # verify-pack and by sha256sum (coreutils, not ours)
    pack = folder / "pack_2026-10"
    assert f"wrote the auditor's pack {pack} (" in out
    names = sorted(p.name for p in pack.iterdir())
    assert names == ["BMD_Buchungen_2026-10.csv", "Buchungen_wie_gebucht.csv",
                     "EXTF_Buchungsstapel_2026-10.csv", "Kassenbuch.csv",
                     "Korrekturen_offen.csv", "SHA256SUMS", "Tagesabschluesse.csv",
                     "USt_nach_Steuersatz.csv", "Vollstaendigkeit.csv", "manifest.json"]
    assert (pack / "BMD_Buchungen_2026-10.csv").read_bytes() == written.read_bytes()
    first_cash_book = (pack / "Kassenbuch.csv").read_bytes()
    cash_book = (pack / "Kassenbuch.csv").read_text(encoding="utf-8-sig")
    assert cash_book.startswith("Standort;Geschäftstag;") and "2026-10-31" in cash_book
    import subprocess

    assert subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=pack,
                          capture_output=True).returncode == 0
    assert main(["verify-pack", str(pack), "--config", str(config)]) == 0
    assert "pack 2026-10: 8 files as written and against the lake's closed period" in \
        capsys.readouterr().out
    zipped = shutil.make_archive(str(tmp_path / "pack"), "zip", folder, "pack_2026-10")
    assert main(["verify-pack", zipped]) == 0
    capsys.readouterr()
    # one byte of the cash book changed: named, exit 1
    data = bytearray((pack / "Kassenbuch.csv").read_bytes())
    data[-3] = ord("9") if data[-3] != ord("9") else ord("8")
    (pack / "Kassenbuch.csv").write_bytes(bytes(data))
    assert main(["verify-pack", str(pack)]) == 1
    err = capsys.readouterr().err
    assert "verify-pack: Kassenbuch.csv: changed since the pack was written" in err
    # the manifest rewritten to match: the pack agrees with itself, not with the lake
    manifest = json.loads((pack / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["name"] == "Kassenbuch.csv":
            entry["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (pack / "manifest.json").write_text(json.dumps(manifest))
    (pack / "SHA256SUMS").write_text("".join(
        f"{hashlib.sha256((pack / n).read_bytes()).hexdigest()}  {n}\n"
        for n in [*(e["name"] for e in manifest["files"]), "manifest.json"]))
    assert main(["verify-pack", str(pack)]) == 0
    capsys.readouterr()
    assert main(["verify-pack", str(pack), "--config", str(config)]) == 1
    assert "manifest.json: not a manifest close-period recorded for 2026-10 in the lake" in \
        capsys.readouterr().err
    # the pack written again (its folder lost, say): the same files, a manifest on record
    assert main(["pack", "2026-10", "--config", str(config), "-o", str(tmp_path / "again")]) == 0
    assert f"wrote the auditor's pack {tmp_path / 'again' / 'pack_2026-10'}" in \
        capsys.readouterr().out
    assert (tmp_path / "again" / "pack_2026-10" / "Kassenbuch.csv").read_bytes() == \
        first_cash_book  # the cash book as closed
    assert main(["verify-pack", str(tmp_path / "again" / "pack_2026-10"), "--config",
                 str(config)]) == 0
    assert main(["pack", "2026-09", "--config", str(config)]) == 1
    assert "pack: 2026-09 is no closed period (closed: 2026-10)" in capsys.readouterr().err


def test_a_period_closed_by_an_older_pos_etl_still_builds_and_shows_its_days(
        sandbox_url, tmp_path, sandbox_keys):
    """A lake whose ledger was written before the reports' rows were recorded at a close
    (no closed_vat_by_rate..., no suspense or reports_frozen in closed_periods): a build
    reads it, and the period's reports show its days as the data says now (there is
    nothing as closed to show), with no changes listed."""
    import pyarrow as pa

    from pipeline.areas.ledger.tables import LEDGER_TABLES
    from pipeline.lake.open import make_lake

    settings = make_settings(sandbox_url, tmp_path / "data")
    assert run_load(settings, OCT31, OCT31, [1001], catalog=False, progress=Reporter()).ok
    older = pa.schema([f for f in LEDGER_TABLES["closed_periods"]
                       if f.name not in ("suspense", "reports_frozen")])
    make_lake(settings).write("ledger", {
        "closed_periods": pa.Table.from_pylist([{
            "period": "2026-10", "first_date": date(2026, 10, 1), "last_date": OCT31,
            "year_start": date(2026, 1, 1), "closed_at": datetime(2026, 11, 2, tzinfo=UTC),
            "format": "datev", "file_name": "EXTF_Buchungsstapel_2026-10.csv",
            "sha256": hashlib.sha256(b"x").hexdigest(), "content": b"x", "bookings": 0,
            "incomplete": None}], schema=older),
        "closed_bookings": LEDGER_TABLES["closed_bookings"].empty_table()},
        {"period": "2026-10"})
    build_directly(settings)
    for report in ("rpt_vat_by_rate", "rpt_daily_close", "rpt_cash_book"):
        shown = query(settings, f"select * exclude (closed_period) from {report} "
                                "where business_date = '2026-10-31' order by all")
        if report != "rpt_daily_close":  # no correction rows: the period froze nothing
            shown = [row[:-1] for row in shown]
        assert shown and shown == query(settings, f"select * from {report}_current where "
                                                  "business_date = '2026-10-31' order by all")
    assert query(settings, "select reports_frozen, suspense from rpt_closed_periods") == \
        [(False, None)]
    assert query(settings, "select count(*) from rpt_period_changes") == [(0,)]
