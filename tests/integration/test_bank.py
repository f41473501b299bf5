"""Bank statements loaded as an area: from the sandbox's bank and from a folder, each
statement once, a refused file named and nothing else lost."""

from datetime import date, timedelta

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


def test_a_month_without_faults_matches_everything_and_its_transit_nets_to_zero(tmp_path):
    settings, report = october(tmp_path, faults=False)
    assert report.ok, report.summary()
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        reasons = dict(con.execute("select reason, count(*) from rpt_bank_reconciliation "
                                   "group by all").fetchall())
    assert set(reasons) == {"matched", "not yet due", "not loaded"}, reasons
    assert reasons["matched"] > 3 * 60  # two card types and cash, a month of days
    assert transit(settings) == {(loc, kind): (0, 0) for loc in IDS
                                 for kind in ("card", "cash")}


def test_a_month_of_statements_matches_every_payout_and_deposit_but_the_faults(tmp_path):
    """October's statements of the three accounts against the POS's days from a week
    before: every batch and every day's cash is paid as due, but the month's deliberate
    faults (``pos_sandbox.bank.FAULTS``), each named with its reason."""
    first, last = OCTOBER
    ids = IDS
    settings, report = october(tmp_path, faults=True)
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
