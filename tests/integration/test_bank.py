"""Bank statements loaded as an area: from the sandbox's bank and from a folder, each
statement once, a refused file named and nothing else lost."""

import csv
import subprocess
from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

import duckdb
import pytest

from pipeline.core.bank_settings import BankAccount, BankSettings
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.orchestration.configs import sandbox_settings
from pipeline.orchestration.status import Status, bank_unmatched
from pos_sandbox import bank
from pos_sandbox.files import statement_window
from tests.conftest import make_settings, run_load_in_memory

YESTERDAY = date.today() - timedelta(days=1)


def figures(settings) -> tuple:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute("""
            select count(*), sum(entry_count), sum(closing_balance_amount),
                   count(*) filter (where balance_gap_amount <> 0)
            from dim_bank_statements""").fetchone()


def test_the_sandboxs_statements_load_once_however_often_they_are_read(tmp_path):
    settings = sandbox_settings(tmp_path / "data", YESTERDAY)
    report = run_load_in_memory(settings, YESTERDAY, YESTERDAY, progress=Reporter())
    assert report.ok, report.summary()
    first, last = statement_window(date.today(), settings.schedule.start_date)
    made = [s for loc in settings.locations for s in bank.statements(loc.id, first, last)]
    expected = (len(made), sum(len(s.entries) for s in made),
                sum(s.closing for s in made), 0)
    assert figures(settings) == expected
    assert f"bank snapshot: {len(made)} bank_statements" in report.summary()
    # loaded again (the first location's statements read from CAMT and MT940 each time)
    again = run_load_in_memory(settings, YESTERDAY, YESTERDAY, models=True,
                               progress=Reporter())
    assert again.ok and figures(settings) == expected


def test_a_refused_file_is_named_and_the_other_statements_load(tmp_path, sandbox_url,
                                                               sandbox_keys):
    folder = tmp_path / "statements"
    first = YESTERDAY - timedelta(days=14)
    written = bank.write_statements(folder, [1001, 1002], first, YESTERDAY, mt940_for=0)
    broken = written[2]
    broken.write_bytes(broken.read_bytes().replace(b"<Cd>CLBD</Cd>", b"<Cd>CLAV</Cd>"))
    settings = make_settings(sandbox_url, tmp_path / "data").model_copy(update={
        "bank": BankSettings(statements=str(folder), accounts=[
            BankAccount(iban=bank.account_iban(1001), location=1001),
            BankAccount(iban=bank.account_iban(1002), location="SZG01")])})
    report = run_load_in_memory(settings, YESTERDAY, YESTERDAY, [1001], catalog=False,
                                skip=("vouchers",), progress=Reporter())
    assert not report.ok
    name = broken.relative_to(folder)
    assert f"{name}: Stmt 1 ({broken.stem}): Bal: a statement needs its opening" in \
        report.summary()
    count, _, _, gaps = figures(settings)
    assert count == len(written) - 1
    assert gaps == 1  # the statement after the refused one does not chain: named


@pytest.mark.parametrize("bank_section, says", [
    ({"statements": "in"}, "bank.accounts: statements are configured but no account"),
    ({"accounts": [{"iban": "AT022011100000001001", "location": 1001}]},
     "bank.statements: accounts are configured but not where their statements are"),
    ({"statements": "in", "accounts": [{"iban": "AT022011100000001002", "location": 1001}]},
     "is not an IBAN: Invalid checksum digits"),
    ({"statements": "in", "accounts": [{"iban": "AT022011100000001001", "location": 9}]},
     "bank.accounts: AT022011100000001001: location 9 is not configured"),
    ({"statements": "ftp://x/y", "accounts": []}, "a folder or s3://bucket/prefix"),
])
def test_bank_settings_are_checked(bank_section, says, tmp_path):
    raw = make_settings("https://pos.example.com", tmp_path).model_dump(mode="json")
    with pytest.raises(ValueError, match=says):
        Settings.model_validate({**raw, "bank": bank_section})


OCTOBER = (date(2026, 10, 1), date(2026, 10, 31))


IDS = [1001, 1002, 1003]


def october(tmp_path, faults: bool):
    """October's statements of the three accounts loaded with the POS's days from nine
    days before: the settings and the load's report."""
    first, last = OCTOBER
    folder = tmp_path / "statements"
    bank.write_statements(folder, IDS, first, last, faults=faults)
    settings = sandbox_settings(tmp_path / "data", first - timedelta(days=9))
    settings = settings.model_copy(update={
        "bank": settings.bank.model_copy(update={"statements": str(folder)})})
    report = run_load_in_memory(settings, first - timedelta(days=9), last, catalog=False,
                                skip=("vouchers",), progress=Reporter())
    return settings, report


def transit(settings) -> dict:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        rows = con.execute("""
            select location_id, transit_kind, open_amount, open_item_count
            from rpt_bank_transit_monthly where month_start = date '2026-10-01'""").fetchall()
    return {(loc, kind): (amount, n) for loc, kind, amount, n in rows}


@pytest.fixture(scope="module")
def clean_october(tmp_path_factory):
    return october(tmp_path_factory.mktemp("clean"), faults=False)


@pytest.fixture(scope="module")
def faulty_october(tmp_path_factory):
    return october(tmp_path_factory.mktemp("faulty"), faults=True)


def test_a_month_without_faults_matches_everything_and_its_transit_nets_to_zero(
        clean_october):
    settings, report = clean_october
    assert report.ok, report.summary()
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        reasons = dict(con.execute("select reason, count(*) from rpt_bank_reconciliation "
                                   "group by all").fetchall())
    assert set(reasons) == {"matched", "not yet due", "not loaded"}, reasons
    assert reasons["matched"] > 3 * 60  # two card types and cash, a month of days
    assert transit(settings) == {(loc, kind): (0, 0) for loc in IDS
                                 for kind in ("card", "cash")}


def test_a_month_of_statements_matches_every_payout_and_deposit_but_the_faults(
        faulty_october, tmp_path):
    """October's statements of the three accounts against the POS's days from a week
    before: every batch and every day's cash is paid as due, but the month's deliberate
    faults (``pos_sandbox.bank.FAULTS``), each named with its reason."""
    first, last = OCTOBER
    ids = IDS
    settings, report = faulty_october
    assert not report.failed_partitions and not report.snapshot_failures, report.summary()
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        rows = con.execute("""
            select location_id, business_date, payment_type_name, reason, difference_amount
            from rpt_bank_reconciliation
            where reason not in ('matched', 'not yet due')
            order by all""").fetchall()
    faults = bank.fault_days(first)
    expected = []
    for loc in ids:
        expected += [
            (loc, faults["missing payout"], "Kreditkarte", "missing"),
            (loc, faults["chargeback"], None, "chargeback"),
            (loc, faults["unrelated transfer"], None, "unexpected"),
        ]
    named = [(loc, day, kind, reason) for loc, day, kind, reason, _ in rows
             if reason not in ("fee", "short", "not loaded")]
    assert sorted(named, key=str) == sorted(expected, key=str)
    shorts = [(loc, amount) for loc, _, kind, reason, amount in rows if reason == "short"]
    assert sorted(shorts) == [(loc, bank.NOTE) for loc in ids]  # a note short, each
    # the fee went up on the 16th: every credit card batch from then on, not before
    fees = [(loc, day, kind) for loc, day, kind, reason, _ in rows if reason == "fee"]
    assert all(day.day >= 16 and kind == "Kreditkarte" for _, day, kind in fees)
    assert {loc for loc, _, _ in fees} == set(ids) and len(fees) >= 3 * 10
    # what is before the loaded statements is said so, never called missing
    assert all(day < first for loc, day, kind, reason, _ in rows if reason == "not loaded"
               and kind is not None)
    # the matching exported for the accountant, with German headers
    from openpyxl import load_workbook

    from pipeline.outputs.export import Selection, export
    target = tmp_path / "abgleich.xlsx"
    export(settings, Selection("rpt_bank_reconciliation", first, last, [1001]), "xlsx",
           target, locale="de")
    header = [c.value for c in next(load_workbook(target).active.iter_rows(max_row=1))]
    assert {"Geschäftstag", "Zahlungsart", "Betrag Kasse", "Gebühr", "Differenz",
            "Grund"} <= set(header)
    # LibreOffice Calc (headless) opens it: the German headers, every difference a number
    # as the warehouse has it, the totals row their sum
    out = tmp_path / "calc"
    subprocess.run(["soffice", f"-env:UserInstallation=file://{tmp_path / 'profile'}",
                    "--headless", "--convert-to",
                    "csv:Text - txt - csv (StarCalc):59,34,76,1,,0,false,true,false",
                    "--outdir", str(out), str(target)], check=True, capture_output=True,
                   timeout=300)
    calc = list(csv.reader((out / "abgleich.csv").read_text(encoding="utf-8").splitlines(),
                           delimiter=";"))
    assert calc[0] == header
    at = header.index("Differenz")
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        differences = [d for (d,) in con.execute("""
            select difference_amount from rpt_bank_reconciliation
            where location_id = 1001 and business_date between ? and ?""",
            [first, last]).fetchall()]
    assert sorted(Decimal(r[at]) for r in calc[1:-1]) == sorted(differences)
    assert Decimal(calc[-1][at]) == sum(differences)
    # the month's transit: the missing batch and the chargeback (card), the note (cash)
    missing = {loc: amount for loc, day, kind, reason, amount in rows if reason == "missing"}
    assert transit(settings) == {
        **{(loc, "card"): (missing[loc] + bank.CHARGEBACK, 2) for loc in ids},
        **{(loc, "cash"): (bank.NOTE, 1) for loc in ids}}
    # pos-etl status names what is open, by location and reason, with its age
    lines = Status([], [], unmatched=bank_unmatched(settings.warehouse.warehouse_path)).lines()
    assert [line.split(" (")[0] for line in lines if line.startswith("bank:")] == [
        f"bank: location {loc}: 1 {reason}" for loc in ids
        for reason in ("chargeback", "missing", "short", "unexpected")]


def test_the_report_shows_what_is_not_at_the_bank_by_day(faulty_october, tmp_path):
    """The HTML report, rendered by a real headless Chromium, shows per location a bar per
    business date of its window with what is not yet due and what is open, and each open
    item with its reason, as rpt_bank_reconciliation has them (the month's faults)."""
    import re

    from pipeline.outputs.report import location_names, write_report
    from tests.integration.test_report import render

    settings, _ = faulty_october
    page = tmp_path / "report.html"
    write_report(settings.warehouse.warehouse_path, page, location_names(settings),
                 settings=settings)
    dom = render(page, "report_bank")
    sections = re.findall(r'<section class="location" id="location-(\d+)"(.*?)</section>',
                          dom, flags=re.S)
    assert [int(loc) for loc, _ in sections] == IDS
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        for loc, body in sections:
            rows = con.execute("""
                select business_date,
                       sum(difference_amount) filter (where reason = 'not yet due'),
                       sum(difference_amount) filter (where reason <> 'not yet due'),
                       count(*) filter (where reason <> 'not yet due')
                from rpt_bank_reconciliation
                where location_id = ? and is_open and business_date >= date '2026-10-02'
                group by all order by all""", [int(loc)]).fetchall()
            bars = re.findall(r'<g class="bank-bar" data-date="([\d-]+)" data-in-transit="'
                              r'([\d.-]+)" data-open="([\d.-]+)"', body)
            assert bars == [(str(day), str(transit or "0.00"), str(open_ or "0.00"))
                            for day, transit, open_, _ in rows]
            items = re.findall(r'<table class="bank-open">(.*?)</table>', body, re.S)[0]
            shown = re.findall(r"<tr><td>([\d-]+)</td><td>[^<]*</td><td>([a-z ]+)</td>", items)
            assert sorted(shown) == sorted((str(day), reason) for day, reason in con.execute(
                """select business_date, reason from rpt_bank_reconciliation
                   where location_id = ? and is_open and reason <> 'not yet due'
                     and business_date >= date '2026-10-02'""", [int(loc)]).fetchall())
            assert {"missing", "chargeback", "short"} <= {reason for _, reason in shown}
            assert len(shown) == sum(n for *_, n in rows)
            # how far the statements reach is said beside them
            ((reach,),) = con.execute("select max(closing_date) from dim_bank_statements "
                                      "where location_id = ?", [int(loc)]).fetchall()
            assert f'<span class="statements-until">{reach}</span>.' in body


def sandbox_payouts(first: date, last: date) -> dict[str, Decimal]:
    """What the sandbox's own statements of the month hold, per kind, from the sandbox (not
    from the warehouse): payouts net and their batches' gross and fees (from each payout's
    purpose, ``<code> <location> <YYYYMMDD>/<gross>/<fee> ...``), cash deposits."""
    out: dict[str, Decimal] = defaultdict(Decimal)
    for loc in IDS:
        for statement in bank.statements(loc, first, last, faults=False):
            for e in statement.entries:
                if e.code.endswith("CNTR/CDPT"):
                    out["deposits"] += e.amount
                    continue
                out["payouts"] += e.amount
                for batch in e.remittance.split()[2:]:
                    _, gross, fee = batch.split("/")
                    out["gross"] += Decimal(gross)
                    out["fees"] += Decimal(fee)
    return out


def test_the_bank_is_booked_in_the_files_and_moves_the_transit_by_what_arrived(
        clean_october, tmp_path):
    """October's DATEV file books the bank's side beside the daily closes: read by
    mloda-community-german-ledger's EXTF reader (not written here), the bank account
    holds every payout and deposit of the sandbox's statements, card fees every fee it
    kept, and the transit accounts moved by what the POS took less what arrived; each
    bank line traces to its bank entry and ties. The BMD file books them under the bank's
    booking symbol, each document one belegnr."""
    from pipeline.accounting.datev import read_datev
    from pipeline.accounting.trace import trace
    from pipeline.core.accounting_settings import DatevSettings
    from pipeline.outputs.export import Selection, export
    from tests.integration.test_accounting import read_bmd, read_independently

    settings, report = clean_october
    settings = settings.model_copy(update={"accounting": settings.accounting.model_copy(
        update={"datev": DatevSettings(consultant_number=29098, client_number=55003)})})
    first, last = OCTOBER
    sel = Selection("rpt_daily_close", first, last, None)
    done = export(settings, sel, "datev", tmp_path / "datev")
    assert not [w for w in done.warnings if "bank" in w], done.warnings
    totals = {k: Decimal(v) for k, v in read_independently(done.files)["totals"].items()}
    truth = sandbox_payouts(first, last)
    assert truth["payouts"] and truth["deposits"] and truth["fees"]
    assert totals["2800"] == truth["payouts"] + truth["deposits"]
    assert totals["7790"] == truth["fees"]
    assert truth["gross"] - truth["fees"] == truth["payouts"]
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        ((cards,),) = con.execute("""
            select sum(amount) from fct_receipt_payments
            where payment_type_name in ('Bankomat', 'Kreditkarte')
              and business_date between ? and ?""", [first, last]).fetchall()
        ((moved,),) = con.execute("""
            select -sum(amount) from fct_cash_movements
            where movement_kind = 'withdrawal' and fibu_account_nr = '1460'
              and business_date between ? and ?""", [first, last]).fetchall()
    assert totals["2780"] + totals["2790"] == cards - truth["gross"]
    assert totals["2880"] == moved - truth["deposits"]
    # every bank line traces to its bank entry, and ties (a week's documents traced; the
    # data test bank_bookings_book_each_entry_whole holds every entry)
    _, rows = read_datev(done.files[0])
    place: dict[str, int] = defaultdict(int)
    for row in rows:
        document = row["Belegfeld 1"]
        place[document] += 1
        if document[0] in "BG" and "20261005" <= document.split("-")[1] <= "20261011":
            line, *paid = trace(settings.warehouse.warehouse_path,
                                f"{document}/{place[document]}")
            assert line.endswith(", ties"), line
            if " payout " in line:  # the batches it paid, each matched
                assert paid and all(" matched " in x for x in paid if x.startswith("  pays"))
    assert {d[0] for d in place} == {"Z", "B", "G"}
    # by BMD's belegnr too; and a cash book record leads to the line that moved its cash
    (first_b,) = sorted(d for d in place if d.startswith("B1001-"))[:1]
    loc, day = first_b[1:].split("-")
    assert trace(settings.warehouse.warehouse_path, f"9{day}{loc}/1")[0] == \
        trace(settings.warehouse.warehouse_path, f"{first_b}/1")[0]
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        ((record, document, amount),) = con.execute("""
            select transaction_id, document_number, amount from rpt_bank_bookings
            where booking_kind = 'cash_to_bank' order by all limit 1""").fetchall()
    told = trace(settings.warehouse.warehouse_path, record)
    assert told[0].startswith(f"receipt {record}: ") and "Kassabuch" in told[0]
    assert f"{document}/" in told[1] and f" {amount:,.2f} EUR" in told[1]
    # BMD: the bank's lines under BK, every document its own belegnr
    export(settings, sel, "bmd", tmp_path / "bmd.csv")
    bmd = read_bmd((tmp_path / "bmd.csv").read_bytes())
    assert {(r["extbelegnr"][0], r["buchsymbol"]) for r in bmd} == {
        ("Z", "KA"), ("G", "KA"), ("B", "BK")}
    numbers = defaultdict(set)
    for r in bmd:
        numbers[r["belegnr"]].add(r["extbelegnr"])
    assert all(len(held) == 1 for held in numbers.values())
    assert len(numbers) == len({r["extbelegnr"] for r in bmd})


def test_a_close_wants_the_months_statements_whole_and_books_the_bank(clean_october):
    """Closing October is refused while a configured account has no statements for it,
    naming the account; with all of them it closes, and the closed period's bookings
    hold the bank's side. A range past the last statement's bank day lacks it, named."""
    from pipeline.accounting import ledger
    from pipeline.accounting.bookfiles import bank_gaps, close_period
    from pipeline.core.accounting_settings import DatevSettings
    from pipeline.outputs.export import ExportError
    from tests.conftest import build_directly

    settings, _ = clean_october
    settings = settings.model_copy(update={"accounting": settings.accounting.model_copy(
        update={"datev": DatevSettings(consultant_number=29098, client_number=55003)})})
    assert bank_gaps(settings, *OCTOBER) == []  # the last bank day, Friday 30th, is there
    assert bank_gaps(settings, date(2026, 10, 1), date(2026, 11, 3)) == [
        f"bank account {iban} (location {loc}): its statements reach 2026-10-30; the "
        "bank's entries after it are not booked"
        for iban, loc in sorted(settings.bank_accounts.items())]
    extra = BankAccount(iban=bank.account_iban(1004), location=1001)
    more = settings.model_copy(update={"bank": settings.bank.model_copy(update={
        "accounts": [*settings.bank.accounts, extra]})})
    with pytest.raises(ExportError, match=rf"period 2026-10: the bank's side is incomplete: "
                                          rf"bank account {extra.iban} \(location 1001\): no "
                                          "statement in the warehouse"):
        close_period(more, OCTOBER[0], "datev", today=date(2026, 11, 20))
    closed = close_period(settings, OCTOBER[0], "datev", today=date(2026, 11, 20))
    assert closed.incomplete is None
    build_directly(settings)  # the close is in the warehouse after a build
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        booked = ledger.closed_bookings(con, closed)
    kinds = {b.kind for b in booked if b.document[0] in "BG"}
    assert kinds == {"payout", "card_fee", "deposit", "cash_to_bank"}
