"""Accounting outputs against independent Python: VAT after discounts, the daily close, the
payment bridge, voucher movements by business date, one rounding rule."""

import csv
import json
import math
import re
import shutil
import subprocess
import zipfile
from collections import defaultdict
from datetime import date
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from pipeline.areas.revenue.macros import macro_sql
from pipeline.core.charts import SINGLE_ACCOUNT_ROLES
from pipeline.core.money import CENT, round_cent
from pos_sandbox.receipts import SandboxData, receipts_on
from tests.conftest import loaded_warehouse

DAYS = [date(2026, 3, 27), date(2026, 3, 28), date(2026, 3, 29)]  # 29 March: DST starts
LOCATIONS = (1001, 1002, 1003)
TRUTH = SandboxData()
SETTLEMENTS = ("Abrechnen", "RechnungZurückholen")


@pytest.fixture(scope="module")
def built(sandbox_url, tmp_path_factory):
    return loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("acc") / "data", DAYS[0],
                            DAYS[-1])


def query(settings, sql):
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def truth():
    for loc in LOCATIONS:
        for day in DAYS:
            yield loc, day, receipts_on(loc, day, TRUTH)


def allocate(amount: Decimal, weights: list[Decimal]) -> list[Decimal]:
    """The allocation rpt_vat_by_rate does in SQL, written independently: ``amount`` (whole
    cents) split in proportion to ``weights`` in whole cents that add up to it, each share
    rounded down and the cents left to the largest remainders (ties to the earlier
    weight); with weights adding up to 0 the first share takes all."""
    units = int(round_cent(amount) / CENT)
    total = sum(weights, Decimal(0))
    if total == 0:
        return [round_cent(amount)] + [Decimal("0.00")] * (len(weights) - 1)
    exact = [units * Fraction(w) / Fraction(total) for w in weights]
    floors = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:units - sum(floors)]:
        floors[i] += 1
    return [Decimal(n) * CENT for n in floors]


def is_revenue(r) -> bool:
    return r.payment_group.name == "Umsatzwirksam" and r.transaction_type in SETTLEMENTS


def collected_for_others(r) -> Decimal:
    """What a receipt's lines collected for someone else: the hotel's tourist tax, which
    the tests' config (as the sandbox's) names in [[accounting.pass_through]]."""
    return sum((i.gross_amount * i.quantity for i in r.items if i.name == "Ortstaxe"),
               Decimal(0))


def test_vat_after_discounts_equals_the_rule_computed_in_python(built):
    expected = defaultdict(lambda: [Decimal(0)] * 2)
    paid = defaultdict(Decimal)
    for loc, day, receipts in truth():
        for r in (r for r in receipts if is_revenue(r)):
            gross = defaultdict(Decimal)
            for item in r.items:
                if item.name != "Ortstaxe":
                    gross[item.tax.value] += item.gross_amount * item.quantity
            rates = sorted(gross)
            weights = [gross[rate] for rate in rates]
            paid[(loc, day)] += r.total_amount - r.tip - collected_for_others(r)
            if not weights:  # only collected for others: no revenue
                continue
            shares = zip(rates, allocate(round_cent(sum(weights)), weights),
                         allocate(r.discount, weights), strict=True)
            for rate, gross_cents, discount in shares:
                expected[(loc, day, rate)][0] += gross_cents
                expected[(loc, day, rate)][1] += discount
    rows = query(built, "select location_id, business_date, tax_rate_percent, gross_amount, "
                        "discount_amount, gross_after_discount, net_after_discount, "
                        "vat_after_discount from rpt_vat_by_rate")
    got = {(r[0], r[1], r[2]): r[3:] for r in rows}
    assert got.keys() == expected.keys()
    for key, (gross, discount) in expected.items():
        after = gross - discount
        net = round_cent(after * 100 / (100 + key[2]))
        assert got[key] == (gross, discount, after, net, after - net), key
    by_day = defaultdict(Decimal)
    for (loc, day, _), row in got.items():
        by_day[(loc, day)] += row[2]
    assert by_day == paid  # the VAT base is what was paid, net of tips
    # the issue's finding: the discount makes the base smaller than the items' gross
    assert sum(row[1] for row in got.values()) > 0


def test_daily_close_equals_the_receipts_and_closes(built):
    expected = {}
    for loc, day, receipts in truth():
        settled = [r for r in receipts if r.transaction_type in SETTLEMENTS]
        revenue = [r for r in settled if is_revenue(r)]
        other = [r for r in settled if not is_revenue(r)]
        payments = [p for r in settled for p in r.payments]
        expected[(loc, day)] = (
            len(revenue),
            round_cent(sum((r.total_amount - r.tip - collected_for_others(r)
                            for r in revenue), Decimal(0))),
            round_cent(sum((r.tip for r in revenue), Decimal(0))),
            round_cent(sum((r.total_amount for r in other), Decimal(0))),
            round_cent(sum((r.total_amount for r in other
                       if r.payment_group.name == "Gutscheinverkauf"), Decimal(0))),
            round_cent(sum((p.amount for p in payments if p.payment_type.name == "Gutschein"),
                      Decimal(0))),
            round_cent(sum((p.amount for p in payments), Decimal(0))),
            sum(1 for r in revenue if r.transaction_type == "RechnungZurückholen"),
        )
    rows = query(built, "select location_id, business_date, revenue_receipt_count, revenue_amount, "
                        "tip_amount, non_revenue_amount, voucher_sold_amount, "
                        "voucher_redeemed_amount, payment_amount, reversal_count, "
                        "difference_amount, is_closed, net_amount + vat_amount = revenue_amount "
                        "from rpt_daily_close")
    assert {(r[0], r[1]): tuple(r[2:10]) for r in rows} == expected
    assert all(r[10] == 0 and r[11] and r[12] for r in rows)
    # one row per day: a day's totals are never repeated
    assert len(rows) == len(expected)
    # the sandbox has each kind of figure somewhere, so none of the columns is vacuous
    for column in range(3, 8):
        assert any(v[column - 2] for v in expected.values()), column


def test_payment_bridge_lines_add_up_to_the_payments(built):
    rows = query(built, "select location_id, business_date, line_number, line, amount "
                        "from rpt_payment_reconciliation order by all")
    days = defaultdict(dict)
    for loc, day, number, line, amount in rows:
        days[(loc, day)][line] = (number, amount)
    assert len(days) == len(LOCATIONS) * len(DAYS)
    for lines in days.values():
        payments = lines.pop("payments")[1]
        spec = lines.pop("spec turnover net (before discounts, not in the sum)")[1]
        assert sum(amount for _, amount in lines.values()) == payments
        assert lines["difference"][1] == 0
        assert spec >= lines["revenue net after discounts"][1]
    groups = {line for lines in days.values() for line in lines if line.startswith("non-")}
    assert groups == {"non-revenue: Gutscheinverkauf", "non-revenue: Nicht umsatzwirksam"}


def test_payments_per_type_and_account_cover_every_settlement(built):
    rows = query(built, "select payment_type_name, fibu_account_nr, sum(payment_amount), "
                        "bool_or(is_voucher_payment) from rpt_daily_close_payments group by all")
    expected = defaultdict(Decimal)
    for _, _, receipts in truth():
        for r in receipts:
            if r.transaction_type in SETTLEMENTS:
                for p in r.payments:
                    expected[(p.payment_type.name, p.fibu_account_nr)] += p.amount
    assert {(r[0], r[1]): r[2] for r in rows} == expected
    assert {r[0] for r in rows if r[3]} == {"Gutschein"}


def test_voucher_movements_fall_on_the_ledgers_local_business_date(built):
    moves = query(built, "select created_at, transaction_type, amount "
                         "from fct_voucher_transactions")
    vienna = ZoneInfo("Europe/Vienna")
    expected = defaultdict(Decimal)
    for created_at, kind, amount in moves:
        if kind == "Redemption":
            expected[created_at.astimezone(vienna).date()] += amount
    rows = query(built, "select business_date, sum(redeemed_amount) "
                        "from fct_voucher_movements_daily group by all")
    assert {r[0]: r[1] for r in rows if r[1]} == expected


@pytest.mark.parametrize(("value", "rounded"), [
    ("0.125", "0.13"), ("-0.125", "-0.13"), ("2.345", "2.35"), ("-2.345", "-2.35"),
    ("0.005", "0.01"), ("-0.005", "-0.01"), ("1234.5650", "1234.57"), ("-99.995", "-100.00"),
    ("0.0049", "0.00"), ("7", "7.00")])
def test_python_and_the_warehouse_round_half_away_from_zero(value, rounded):
    with duckdb.connect() as con:
        for sql in macro_sql():
            con.execute(sql)
        in_sql = con.execute(f"select round_cent(cast('{value}' as decimal(38, 8)))").fetchone()[0]
    assert in_sql == round_cent(value) == Decimal(rounded)


# --- exports -----------------------------------------------------------------------------

def _datev_settings(built, **datev):
    from pipeline.core.accounting_settings import DatevSettings

    return built.model_copy(update={"accounting": built.accounting.model_copy(update={
        "datev": DatevSettings(consultant_number=29098, client_number=55003, **datev)})})


def test_datev_file_parses_back_to_the_daily_closes(built, tmp_path):
    from pipeline.accounting.datev import read_datev
    from pipeline.outputs.export import Selection, export

    settings = _datev_settings(built, fiscal_year_start="03-01")
    target = tmp_path / "EXTF_Buchungsstapel.csv"
    n = export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
               target).rows
    header, rows = read_datev(target)
    assert header[:5] == ["EXTF", "700", "21", "Buchungsstapel", "13"]
    assert header[10:16] == ["29098", "55003", "20260301", "4", "20260327", "20260329"]
    assert len(header) == 31 and len(rows) == n
    assert all(len(row) == 125 and None not in row for row in rows)
    balance = defaultdict(Decimal)  # debit positive
    for row in rows:
        amount = Decimal(row["Umsatz (ohne Soll/Haben-Kz)"].replace(",", "."))
        sign = 1 if row["Soll/Haben-Kennzeichen"] == "S" else -1
        balance[row["Konto"]] += sign * amount
        balance[row["Gegenkonto (ohne BU-Schlüssel)"]] -= sign * amount
        assert row["Belegdatum"] in {f"{d:%d%m}" for d in DAYS}
    revenue = dict(query(built, "select tax_rate_percent, sum(gross_after_discount) "
                                "from rpt_vat_by_rate group by all"))
    accounts = settings.accounting.chart_of_accounts.revenue_accounts
    for rate, amount in revenue.items():
        assert balance[accounts[format(rate.normalize(), "f")]] == -amount
    ((tips, paid),) = query(built, "select sum(tip_amount), sum(payment_amount) "
                                   "from rpt_daily_close")
    assert balance["3790"] == -tips
    by_account = dict(query(built, "select coalesce(fibu_account_nr, '2700'), "
                                   "sum(payment_amount) from rpt_daily_close_payments "
                                   "group by all"))
    assert sum(by_account.values()) == paid
    # a voucher sold credits the liability account its redemptions debit
    ((sold,),) = query(built, "select sum(voucher_sold_amount) from rpt_daily_close")
    assert sold and by_account["3600"]
    by_account["3600"] -= sold
    assert {a: balance[a] for a in by_account} == by_account
    assert balance["2890"] == 0  # the clearing account nets out: every day is closed
    assert sum(balance.values()) == 0


def test_one_booking_file_per_period_a_zip_of_them_and_unmapped_rates_refused(built,
                                                                             tmp_path):
    from pipeline.accounting.datev import read_datev
    from pipeline.outputs.export import ExportError, Selection, export

    sel = Selection("rpt_daily_close", DAYS[0], DAYS[-1], None)
    cut = _datev_settings(built, fiscal_year_start="03-28")  # a fiscal year starts within
    done = export(cut, sel, "datev", tmp_path / "datev")
    names = ["EXTF_Buchungsstapel_2026-03-01_2026-03-27.csv",
             "EXTF_Buchungsstapel_2026-03-28_2026-03-31.csv"]
    assert [f.name for f in done.files] == names
    headers = [read_datev(tmp_path / "datev" / name)[0] for name in names]
    assert [h[12:16] for h in headers] == [["20250328", "4", "20260327", "20260327"],
                                           ["20260328", "4", "20260328", "20260329"]]
    days = [{r["Belegdatum"] for r in read_datev(tmp_path / "datev" / n)[1]} for n in names]
    assert days == [{"2703"}, {"2803", "2903"}]
    assert sum(len(read_datev(tmp_path / "datev" / n)[1]) for n in names) == done.rows
    with pytest.raises(ExportError, match="spans 2 booking periods"):
        export(cut, sel, "datev", tmp_path / "one.csv")
    zipped = export(cut, sel, "bmd", tmp_path / "bmd.zip")
    with zipfile.ZipFile(tmp_path / "bmd.zip") as z:
        assert z.namelist() == [n.replace("EXTF_Buchungsstapel", "BMD_Buchungen")
                                for n in names]
        assert sum(z.read(n).count(b"\r\n") - 1 for n in z.namelist()) == zipped.rows
    # The accounts are the build's: a changed account takes a build first, then a rate
    # without an account is refused naming where it is needed.
    unmapped = _datev_settings(built, revenue_accounts={"20": "4000"})
    with pytest.raises(ExportError, match=r"built with other accounts .*revenue_account 10: "
                                          r"4010 -> None.*run `pos-etl build` first"):
        export(unmapped, sel, "datev", tmp_path / "x.csv")
    assert not (tmp_path / "one.csv").exists() and not (tmp_path / "x.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bmd.zip", "datev"]
    data_dir = tmp_path / "copy" / "data"
    shutil.copytree(built.warehouse.data_dir, data_dir,
                    ignore=shutil.ignore_patterns("dagster_home"))
    unmapped = unmapped.model_copy(update={"warehouse": unmapped.warehouse.model_copy(
        update={"data_dir": data_dir})})
    from tests.conftest import build_directly

    assert build_directly(unmapped).path
    with pytest.raises(ExportError, match=r"location 1001, business date 2026-03-27: no "
                                          r"revenue account for tax rate 10 %"):
        export(unmapped, sel, "datev", tmp_path / "x.csv")


def warehouse_balance(built, settings, start: date | None = None,
                      end: date | None = None) -> dict[str, Decimal]:
    """Each account's balance (Soll positive) of the daily closes as the warehouse has
    them, computed from its reports, not from a booking file: revenue per rate, tips, the
    voucher liability, the payments per account; the clearing account nets to 0."""
    accounts = settings.accounting.chart_of_accounts
    days = f"where business_date between '{start or date.min}' and '{end or date.max}'"
    balance: dict[str, Decimal] = defaultdict(Decimal)
    for rate, gross in query(built, "select tax_rate_percent, sum(gross_after_discount) "
                                    f"from rpt_vat_by_rate_current {days} group by all"):
        balance[accounts.revenue_accounts[format(rate.normalize(), "f")]] -= gross
    table = chart_table(accounts.chart)
    for type_id, name, fibu, paid in query(
            built, "select payment_type_id, payment_type_name, fibu_account_nr, "
                   f"sum(payment_amount) from rpt_daily_close_payments {days} group by all"):
        balance[expected_payment_account(accounts, table, type_id, name, fibu)] += paid
    ((tips, difference),) = query(built, "select sum(tip_amount), sum(difference_amount) "
                                         f"from rpt_daily_close_current {days}")
    balance[accounts.tip_account] -= tips or 0
    for account, collected in query(built, "select pass_through_account, sum(amount) from "
                                           f"fct_pass_through {days} group by all"):
        balance[account] -= collected
    for group, amount in query(built, "select payment_group_name, sum(amount) from "
                                      f"rpt_payment_reconciliation {days} and line_number "
                                      "between 401 and 799 group by all"):
        balance[accounts.non_revenue_accounts.get(group, accounts.suspense_account)] -= amount
    # a single-purpose voucher's redemption moves no money: not booked, on the account
    # each redeeming payment itself posted to (from the payments, not the bookings' SQL)
    redeeming = [c.payment_types for c in settings.accounting.voucher_categories
                 if c.purpose == "single"]
    names = ", ".join(f"'{name}'" for types in redeeming for name in types) or "null"
    for type_id, name, fibu, redeemed in query(built, f"""
            select payment_type_id, payment_type_name, fibu_account_nr, sum(amount)
            from fct_payments
            {days} and payment_type_name in ({names})
                and payment_group_name = 'Umsatzwirksam'
                and transaction_type in ('Abrechnen', 'RechnungZurückholen')
            group by all"""):
        balance[expected_payment_account(accounts, table, type_id, name, fibu)] -= redeemed
    assert not difference  # every day closed: no difference on the suspense account
    return {k: v for k, v in balance.items() if v}


def read_independently(files: list[Path]) -> dict:
    """DATEV files read by mloda-community-german-ledger's EXTF reader (not written here),
    in a virtual environment of its own: their headers, legs and totals per account."""
    from tests.venvs import tool_env

    python = tool_env("datev-reader", ["mloda-community-german-ledger==0.11.0"]) / "bin/python"
    probe = Path(__file__).parents[1] / "datev_probe.py"
    return json.loads(subprocess.run([str(python), str(probe), *map(str, files)], check=True,
                                     capture_output=True, text=True, timeout=300).stdout)


def test_an_independent_datev_reader_finds_the_warehouses_totals(built, tmp_path):
    """mloda-community-german-ledger's EXTF reader (not written here, in its own virtual
    environment) reads the files and finds each account's total the warehouse has."""
    from pipeline.outputs.export import Selection, export

    settings = _datev_settings(built, fiscal_year_start="03-28")  # two files
    done = export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
                  tmp_path / "datev")
    read = read_independently(done.files)
    assert [(h["berater"], h["mandant"]) for h in read["headers"]] == [("29098", "55003")] * 2
    assert read["legs"] == 2 * done.rows
    totals = {k: Decimal(v) for k, v in read["totals"].items() if Decimal(v)}
    assert totals == warehouse_balance(built, settings)


SANDBOX_RATES = {"skr03": {"20": "8400", "13": "8300", "10": "8310", "0": "8200"},
                 "skr04": {"20": "4400", "13": "4300", "10": "4310", "0": "4200"}}
"""The sandbox sells at Austrian rates: a German chart maps them to its revenue accounts."""
GERMAN_PAYMENTS = {
    "skr03": {"Bankomat": "1360", "Kreditkarte": "1361", "Online": "1362",
              "Zimmerrechnung": "1400"},
    "skr04": {"Bankomat": "1460", "Kreditkarte": "1461", "Online": "1462",
              "Zimmerrechnung": "1200"}}
"""What a German client maps its payment types to: cards and online payments to money in
transit, the room charge to receivables (the POS's accounts are Austrian)."""
GERMAN_GROUPS = {"skr03": {"Nicht umsatzwirksam": "4140"},
                 "skr04": {"Nicht umsatzwirksam": "6130"}}
"""Staff meals: freiwillige soziale Aufwendungen."""


def chart_table(chart: str) -> dict:
    """The chart's own table, read as a file (not through the exporter's code)."""
    import tomllib

    from pipeline.core.charts import SHIPPED

    return tomllib.loads((SHIPPED / f"{chart}.toml").read_text(encoding="utf-8"))


def in_ranges(table: dict, roles: tuple[str, ...], account: str) -> bool:
    return any(len(first) == len(account) and first <= account <= last
               for role in roles for first, last in
               (r.split("-") for r in table["roles"][role]["ranges"]))


def expected_payment_account(accounts, table: dict, type_id: int, name: str,
                             fibu: str | None, cash_types=("Bar",),
                             voucher_types=("Gutschein",)) -> str | None:
    """The rule, written from docs/accounting.md: the config's account (by id, then
    name), else a cash type's POS account where it is a cash account (else the chart's
    cash account), a voucher type's the voucher account, else the POS's account where it
    fits the payment roles' ranges, else none."""
    mapped = accounts.payment_accounts
    if f"id:{type_id}" in mapped or name in mapped:
        return mapped.get(f"id:{type_id}", mapped.get(name))
    if name in cash_types:
        return fibu if fibu and in_ranges(table, ("cash",), fibu) else accounts.cash_account
    if name in voucher_types:
        return accounts.voucher_account
    money = ("cash", "card_transit", "bank", "cash_transit", "receivable")
    return fibu if fibu and in_ranges(table, money, fibu) else None


GERMAN_TOURIST_TAX = {"skr03": "1701", "skr04": "3501"}
"""The Kurtaxe owed to the municipality: an other liability of its own."""


def german(settings, chart: str, payments: bool = True, groups: bool = True):
    from pipeline.core.accounting_settings import AccountsSettings

    return settings.model_copy(update={
        "accounting": settings.accounting.model_copy(update={"accounts": AccountsSettings(
            chart=chart, revenue_accounts=SANDBOX_RATES.get(chart),
            payment_accounts=GERMAN_PAYMENTS[chart] if payments else {},
            non_revenue_accounts=GERMAN_GROUPS[chart] if groups else None),
            "pass_through": [item.model_copy(update={"account": GERMAN_TOURIST_TAX[chart]})
                             for item in settings.accounting.pass_through]})})


def rebuilt(built, settings, tmp_path):
    """``settings`` over a copy of the built warehouse, built again with them."""
    from tests.conftest import build_directly

    data_dir = tmp_path / "copy" / "data"
    shutil.copytree(built.warehouse.data_dir, data_dir,
                    ignore=shutil.ignore_patterns("dagster_home"))
    settings = settings.model_copy(update={
        "warehouse": built.warehouse.model_copy(update={"data_dir": data_dir})})
    build_directly(settings)
    return settings


@pytest.mark.parametrize("chart", ["ekr", "skr03", "skr04"])
def test_each_chart_of_accounts_books_only_accounts_in_its_ranges(built, tmp_path, chart):
    """[accounting.accounts] chart = ekr, skr03 or skr04: every account of the DATEV file
    lies in the chart's ranges for what it books (the ranges read from the chart's own
    table), the header names the chart, the payments post where the documented rule
    says, and the independent reader finds the warehouse's totals."""
    from pipeline.accounting.datev import read_datev
    from pipeline.outputs.export import Selection, export

    plain = _datev_settings(built)
    settings = plain if chart == "ekr" else rebuilt(built, german(plain, chart), tmp_path)
    accounts = settings.accounting.chart_of_accounts
    table = chart_table(chart)
    assert accounts.clearing_account == table["roles"]["clearing"]["account"]
    # the warehouse holds the chart in force as rows, which its booking rules read
    assert dict(query(settings, "select chart_role, chart_account from chart_accounts()")) \
        == {role: accounts.role_account(role) for role in SINGLE_ACCOUNT_ROLES}
    assert sorted(query(settings, "select chart_role, first_account, last_account "
                                  "from chart_ranges()")) == sorted(
        (role, r.first, r.last) for role, found in accounts.definition.ranges.items()
        for r in found)
    done = export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
                  tmp_path / "datev")
    header, rows = read_datev(done.files[0])
    assert header[26] == table["datev_chart"]  # Sachkontenrahmen
    role_of_text = {"Trinkgeld": ("tip",), "Gutscheinverkauf": ("voucher",),
                    "Ortstaxe": ("pass_through",), "Nicht umsatzwirksam": ("non_revenue",),
                    "Kassendifferenz": ("suspense",), "Bar": ("cash",),
                    "Gutschein": ("voucher",)}
    money = ("cash", "card_transit", "bank", "cash_transit", "receivable")
    seen = set()
    for row in rows:
        konto, gegen = row["Konto"], row["Gegenkonto (ohne BU-Schlüssel)"]
        assert accounts.clearing_account in (konto, gegen)
        assert in_ranges(table, ("clearing",), accounts.clearing_account)
        other = gegen if konto == accounts.clearing_account else konto
        what = row["Buchungstext"].rsplit(" ", 1)[0]
        roles = ("revenue",) if what.startswith("Erlöse") else role_of_text.get(what, money)
        assert in_ranges(table, roles, other), (what, other, roles)
        seen.add(what)
    assert {"Bar", "Bankomat", "Kreditkarte", "Gutschein", "Zimmerrechnung", "Trinkgeld",
            "Nicht umsatzwirksam"} <= seen
    payments = query(settings, "select distinct payment_type_id, payment_type_name, "
                               "fibu_account_nr from rpt_daily_close_payments")
    posted = {r["Konto"] for r in rows} | {r["Gegenkonto (ohne BU-Schlüssel)"] for r in rows}
    for type_id, name, fibu in payments:
        assert expected_payment_account(accounts, table, type_id, name, fibu) in posted
    read = read_independently(done.files)
    assert {k: Decimal(v) for k, v in read["totals"].items() if Decimal(v)} == \
        warehouse_balance(settings, settings)
    assert not [w for w in done.warnings if "suspense account" in w]


def test_a_german_chart_without_payment_accounts_is_refused_by_name(built, tmp_path):
    """SKR 04 over the sandbox's Austrian POS accounts, no payment_accounts: the export
    refuses (a config error, exit 2) naming each payment type whose account does not fit
    the chart, with the line to add; nothing is written. Cash and vouchers take the
    chart's own accounts; an account outside its role's ranges is refused too."""
    from pipeline.core.outcomes import ConfigError
    from pipeline.outputs.export import ExportError, Selection, export

    settings = rebuilt(built, german(_datev_settings(built), "skr04", payments=False),
                       tmp_path)
    sel = Selection("rpt_daily_close", DAYS[0], DAYS[-1], None)
    with pytest.raises(ExportError) as refused:
        export(settings, sel, "datev", tmp_path / "datev")
    message = str(refused.value)
    assert isinstance(refused.value, ConfigError)
    for name, pos in (("Bankomat", "2780"), ("Kreditkarte", "2790"),
                      ("Zimmerrechnung", "2000")):
        assert f"'{name}' (the POS's account {pos};" in message
    assert "'Bar'" not in message and "'Gutschein'" not in message
    assert "[accounting.accounts] payment_accounts = { Bankomat = \"1460\"" in message
    assert not (tmp_path / "datev").exists() or not any((tmp_path / "datev").iterdir())
    # mapped, but the staff meals' group to an account of another role's range (SKR 04's
    # 3100-3899 are liabilities; 2000 is equity): refused naming account, group and line
    wrong = german(_datev_settings(built), "skr04")
    wrong = wrong.model_copy(update={"accounting": wrong.accounting.model_copy(update={
        "accounts": wrong.accounting.accounts.model_copy(update={
            "non_revenue_accounts": {"Nicht umsatzwirksam": "2000"}})})})
    wrong = rebuilt(built, wrong, tmp_path / "w")
    with pytest.raises(ExportError, match=r"account 2000 \(location 100\d, business date "
                                          r"2026-03-2\d, payment group 'Nicht umsatzwirksam'"
                                          r"\) lies outside SKR 04's ranges for non_revenue"):
        export(wrong, sel, "datev", tmp_path / "datev2")


def test_a_tourist_tax_is_collected_for_others_not_revenue(built, tmp_path):
    """[[accounting.pass_through]] names the hotel's Ortstaxe (0 % VAT at the till; the
    tests' config has it, as the sandbox's): its lines leave the VAT base and the revenue,
    the daily close shows them apart and stays closed, the bookings credit its own
    account, and the independent DATEV reader finds every account's total. Without it
    the Ortstaxe is revenue at 0 %. The spec's turnover keeps it either way."""
    from pipeline.outputs.export import Selection, export
    from tests.conftest import build_directly

    settings = _datev_settings(built)
    (item,) = settings.accounting.pass_through
    data_dir = tmp_path / "copy" / "data"
    shutil.copytree(built.warehouse.data_dir, data_dir,
                    ignore=shutil.ignore_patterns("dagster_home"))
    untaxed = settings.model_copy(update={
        "warehouse": built.warehouse.model_copy(update={"data_dir": data_dir}),
        "accounting": settings.accounting.model_copy(update={"pass_through": []})})
    build_directly(untaxed)
    collected = dict(query(built, "select business_date, sum(line_gross_amount) from "
                                  "fct_receipt_items where is_revenue_effective and "
                                  f"product_nr = '{item.products[0]}' group by all"))
    assert item.name == "Ortstaxe" and collected and set(collected.values()) != {0}
    close = query(built, "select business_date, revenue_amount, pass_through_amount, "
                         "difference_amount from rpt_daily_close where location_id = 1002")
    before = dict(query(untaxed, "select business_date, revenue_amount from rpt_daily_close "
                                 "where location_id = 1002"))
    for day, revenue, through, difference in close:
        assert through == collected.get(day, 0) and difference == 0
        assert revenue == before[day] - through  # revenue at 0 % without the setting
    assert query(built, "select count(*) from rpt_vat_by_rate where tax_rate_percent = 0"
                        " and location_id = 1002") == [(0,)]
    assert query(untaxed, "select count(*) > 0 from rpt_vat_by_rate where "
                          "tax_rate_percent = 0 and location_id = 1002") == [(True,)]
    assert query(untaxed, "select sum(turnover_net) from fct_turnover_daily") == \
        query(built, "select sum(turnover_net) from fct_turnover_daily")
    done = export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
                  tmp_path / "datev")
    totals = {k: Decimal(v) for k, v in read_independently(done.files)["totals"].items()
              if Decimal(v)}
    assert totals[item.account] == -sum(collected.values())
    assert totals == warehouse_balance(built, settings)


def test_placeholder_datev_numbers_are_a_warning_on_export(built, tmp_path):
    from pipeline.outputs.export import Selection, export

    done = export(built, Selection("rpt_daily_close", DAYS[0], DAYS[0], [1001]), "datev",
                  tmp_path / "datev")
    assert any("consultant_number and client_number are the placeholders 1001 and 1" in w
               for w in done.warnings)


def test_single_purpose_vouchers_are_revenue_when_sold_and_not_when_redeemed(built,
                                                                           tmp_path):
    """A voucher category configured single-purpose (the sandbox's 9901 vouchers, redeemed
    with "Gutschein", at 20 %): its sales move from non-revenue into the 20 % VAT base, its
    redemptions out of it; every day stays closed, the bookings balance, and the DATEV
    file read back independently agrees."""
    from pipeline.core.accounting_settings import VoucherCategory
    from pipeline.outputs.export import Selection, export
    from tests.conftest import build_directly

    data_dir = tmp_path / "copy" / "data"
    shutil.copytree(built.warehouse.data_dir, data_dir,
                    ignore=shutil.ignore_patterns("dagster_home"))
    plain = _datev_settings(built)
    single = plain.model_copy(update={
        "warehouse": built.warehouse.model_copy(update={"data_dir": data_dir}),
        "accounting": plain.accounting.model_copy(update={"voucher_categories": [
            VoucherCategory(name="Restaurant-Gutschein", purpose="single",
                            tax_rate=Decimal(20), sale_products=[9901],
                            payment_types=["Gutschein"])]})})
    build_directly(single)

    def per_day(settings, sql):
        return {(loc, day): rest for loc, day, *rest in query(settings, sql)}

    sold = per_day(single, "select location_id, business_date, sum(sold_amount), "
                           "sum(redeemed_amount) from fct_prepaid_vouchers group by all")
    till = per_day(built, "select location_id, business_date, voucher_sold_amount, "
                          "voucher_redeemed_amount from rpt_daily_close")
    assert sum(s for s, _ in sold.values()) > 0 and sum(r for _, r in sold.values()) > 0
    assert {k: v for k, v in sold.items()} == {k: v for k, v in till.items() if any(v)}
    base = "select location_id, business_date, gross_after_discount, vat_after_discount " \
           "from rpt_vat_by_rate where tax_rate_percent = 20"
    before, after = per_day(built, base), per_day(single, base)
    for key, (s, r) in sold.items():
        assert after[key][0] == before[key][0] + s - r
        assert after[key][1] == round_cent(after[key][0] - after[key][0] / Decimal("1.2"))
    close = "select location_id, business_date, non_revenue_amount, difference_amount " \
            "from rpt_daily_close"
    before, after = per_day(built, close), per_day(single, close)
    assert all(after[k][0] == before[k][0] - sold.get(k, (0, 0))[0] for k in after)
    assert all(d == 0 for _, d in after.values())  # every day still closed
    done = export(single, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
                  tmp_path / "spv.csv")
    totals = _totals_of(read_independently(done.files))
    assert totals == warehouse_balance(single, single)
    assert totals != warehouse_balance(built, built)


def _totals_of(read: dict) -> dict[str, Decimal]:
    return {k: Decimal(v) for k, v in read["totals"].items() if Decimal(v)}


def _with_cost_centres(settings):
    return settings.model_copy(update={"locations": [
        loc.model_copy(update={"cost_center": str(100 + n)})
        for n, loc in enumerate(settings.locations)]})


def test_the_datev_file_carries_each_locations_cost_centre(built, tmp_path):
    from pipeline.accounting.datev import read_datev
    from pipeline.outputs.export import Selection, export

    settings = _with_cost_centres(_datev_settings(built))
    export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "datev",
           tmp_path / "f.csv")
    centre = {f"Z{loc.id}": loc.cost_center for loc in settings.locations}
    rows = read_datev(tmp_path / "f.csv")[1]
    assert {r["KOST1 - Kostenstelle"] for r in rows} == set(centre.values())
    assert all(r["KOST1 - Kostenstelle"] == centre[r["Belegfeld 1"].split("-")[0]]
               for r in rows)


BMD_FIELDS = ["satzart", "konto", "gkonto", "belegnr", "belegdatum", "buchsymbol", "buchcode",
              "prozent", "steuercode", "betrag", "steuer", "text", "kost", "extbelegnr"]


def read_bmd(raw: bytes) -> list[dict[str, str]]:
    """A reader of BMD's booking import written from its description (not from our
    writer): Windows-1252, ``;``-separated, CRLF, field names in the first line, ``"``
    around a text holding ``;``, amounts with a decimal comma."""
    lines = raw.decode("cp1252").split("\r\n")
    assert lines[-1] == "" and lines[0].split(";") == BMD_FIELDS
    rows = []
    for row in csv.reader(lines[1:-1], delimiter=";", quotechar='"', strict=True):
        assert len(row) == len(BMD_FIELDS), row
        rec = dict(zip(BMD_FIELDS, row, strict=True))
        assert rec["satzart"] == "0" and rec["buchcode"] in ("1", "2")
        assert re.fullmatch(r"\d{1,9}", rec["konto"]) and re.fullmatch(r"\d{1,9}", rec["gkonto"])
        assert re.fullmatch(r"\d{2}\.\d{2}\.\d{4}", rec["belegdatum"])
        assert re.fullmatch(r"-?\d+,\d{2}", rec["betrag"])
        if rec["prozent"]:
            assert rec["steuercode"] and re.fullmatch(r"-?\d+,\d{2}", rec["steuer"])
        else:
            assert rec["steuercode"] == rec["steuer"] == ""
        rows.append(rec)
    return rows


def test_the_bmd_file_parses_back_to_the_warehouses_accounts_tax_and_cost_centres(
        built, tmp_path):
    from pipeline.outputs.export import Selection, export

    settings = _with_cost_centres(_datev_settings(built))
    done = export(settings, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "bmd",
                  tmp_path / "bmd.csv")
    rows = read_bmd((tmp_path / "bmd.csv").read_bytes())
    assert len(rows) == done.rows
    number = lambda text: Decimal(text.replace(",", "."))  # noqa: E731
    balance = defaultdict(Decimal)  # Soll positive
    tax = defaultdict(Decimal)
    for r in rows:
        side = 1 if r["buchcode"] == "1" else -1  # buchcode: the side of konto
        balance[r["konto"]] += side * number(r["betrag"])
        balance[r["gkonto"]] -= side * number(r["betrag"])
        if r["prozent"]:
            tax[number(r["prozent"].replace(",", "."))] -= number(r["steuer"])
        loc = int(r["extbelegnr"][1:5])
        assert r["kost"] == str(100 + [x.id for x in settings.locations].index(loc))
        assert r["belegnr"] == r["belegdatum"][6:] + r["belegdatum"][3:5] + r["belegdatum"][:2] \
            + str(loc)
    documents = defaultdict(set)  # a document number is one location's day, never two
    for r in rows:
        documents[r["belegnr"]].add((r["extbelegnr"], r["belegdatum"]))
    assert all(len(held) == 1 for held in documents.values()), documents
    assert len(documents) == len({(r["extbelegnr"], r["belegdatum"]) for r in rows}) > len(
        {r["belegdatum"] for r in rows})
    accounts = settings.accounting.chart_of_accounts.revenue_accounts
    for rate, gross, vat in query(built, "select tax_rate_percent, sum(gross_after_discount), "
                                         "sum(vat_after_discount) from rpt_vat_by_rate "
                                         "group by all"):
        assert balance[accounts[format(rate.normalize(), "f")]] == -gross
        assert tax[rate] == vat
    assert {k: v for k, v in balance.items() if v} == warehouse_balance(built, settings)
    assert balance["2890"] == 0 and sum(balance.values()) == 0


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "parquet"])
def test_exports_hold_the_warehouse_rows_exactly(built, tmp_path, fmt):
    import pyarrow.parquet as pq
    from openpyxl import load_workbook

    from pipeline.outputs.export import Selection, export

    target = tmp_path / f"close.{fmt}"
    sel = Selection("rpt_daily_close", DAYS[1], DAYS[2], [1002])
    assert export(built, sel, fmt, target).rows == 2
    expected = query(built, "select business_date, revenue_amount, vat_amount "
                            "from rpt_daily_close where location_id = 1002 "
                            f"and business_date >= '{DAYS[1]}' order by 1")
    if fmt == "parquet":
        table = pq.read_table(target)
        assert str(table.schema.field("revenue_amount").type) == "decimal128(18, 2)"
        got = [(r["business_date"], r["revenue_amount"], r["vat_amount"])
               for r in table.to_pylist()]
    elif fmt == "csv":
        import csv
        with open(target, newline="") as fh:
            got = [(date.fromisoformat(r["business_date"]), Decimal(r["revenue_amount"]),
                    Decimal(r["vat_amount"])) for r in csv.DictReader(fh)]
    else:
        ws = load_workbook(target).active
        names = [c.value for c in ws[1]]
        rows = [dict(zip(names, (c.value for c in row), strict=True))
                for row in ws.iter_rows(min_row=2)]
        # the location named beside its id; a totals row under the rows
        assert names[:4] == ["location_id", "short_code", "location_name", "business_date"]
        code = built.location(1002).short_code  # no name configured: its short code
        assert [(r["short_code"], r["location_name"]) for r in rows[:-1]] == [(code, code)] * 2
        total = rows.pop()
        assert total["location_id"] == "Total"
        letter = ws.cell(1, names.index("revenue_amount") + 1).column_letter
        assert total["revenue_amount"] == f"=SUBTOTAL(109,{letter}2:{letter}3)"
        assert ws[f"{letter}2"].number_format == "#,##0.00"
        assert ws.auto_filter.ref == f"A1:{ws.cell(3, len(names)).column_letter}3"
        assert ws.freeze_panes == "A2"
        got = [(r["business_date"].date(), round_cent(str(r["revenue_amount"])),
                round_cent(str(r["vat_amount"]))) for r in rows]
    assert got == expected


def test_a_german_csv_opens_in_libreoffice_with_numbers_as_numbers(built, tmp_path):
    """--locale de: ';' between fields, a decimal comma, German headers, UTF-8 with its
    byte order mark; LibreOffice Calc (headless, German) reads every amount as a number
    equal to the warehouse's, every date as a date."""
    from openpyxl import load_workbook

    from pipeline.outputs.export import Selection, export

    target = tmp_path / "tagesabschluss.csv"
    assert export(built, Selection("rpt_daily_close", DAYS[0], DAYS[-1], None), "csv",
                  target, locale="de").rows == 9
    raw = target.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    header = raw[3:].decode("utf-8").splitlines()[0].split(";")
    assert header[:3] == ["Standort", "Geschäftstag", "Belege umsatzwirksam"]
    assert "Umsatz brutto nach Rabatt" in header and "Abgeschlossen" in header
    out = tmp_path / "calc"
    subprocess.run(["soffice", f"-env:UserInstallation=file://{tmp_path / 'profile'}",
                    "--headless", "--infilter=CSV:59,34,76,1,,1031", "--convert-to", "xlsx",
                    "--outdir", str(out), str(target)], check=True, capture_output=True,
                   timeout=300)
    rows = list(load_workbook(out / "tagesabschluss.xlsx").active.iter_rows(values_only=True))
    assert list(rows[0]) == header
    expected = query(built, "select location_id, business_date, revenue_amount, vat_amount, "
                            "difference_amount from rpt_daily_close order by 1, 2")
    at = [header.index(h) for h in ("Umsatz brutto nach Rabatt", "USt", "Differenz")]
    got = [(r[0], r[1].date(), *(round_cent(str(r[i])) for i in at)) for r in rows[1:]]
    assert got == expected
    assert all(isinstance(r[i], int | float) for r in rows[1:] for i in at)


def test_a_german_xlsx_has_a_label_for_every_column_of_every_mart(built, tmp_path):
    from openpyxl import load_workbook

    from pipeline.outputs.export import Selection, export
    from pipeline.sqlrunner.dictionary import load_dictionary
    from pipeline.warehouse import MODELS_DIR, STAGES

    labels = load_dictionary(MODELS_DIR, STAGES).labels["de"]
    columns = {c for (c,) in query(built, "select distinct column_name from duckdb_columns() "
                                          "where schema_name = 'main' and not internal "
                                          "and database_name = current_database()")}
    assert sorted(columns - set(labels)) == []
    target = tmp_path / "ust.xlsx"
    export(built, Selection("rpt_vat_by_rate", DAYS[0], DAYS[0], [1001]), "xlsx", target,
           locale="de")
    ws = load_workbook(target).active
    assert [c.value for c in ws[1]][:5] == ["Standort", "Kürzel", "Standortname",
                                            "Geschäftstag", "Steuersatz %"]
    assert ws.cell(ws.max_row, 1).value == "Summe"


def test_export_command_names_what_to_fix(built, tmp_path, monkeypatch, capsys):
    from pipeline.cli import main

    monkeypatch.setenv("POS_ETL_DATA_DIR", str(built.warehouse.data_dir))
    assert main(["export", "rpt_daily_closes", "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "no model 'rpt_daily_closes'" in err and "did you mean 'rpt_daily_close'" in err
    assert main(["export", "dim_vouchers", "--location", "1001"]) == 1
    assert "tenant-wide" in capsys.readouterr().err
    assert main(["export", "rpt_daily_close", "-o", str(tmp_path / "x.txt")]) == 2
    assert "give --format" in capsys.readouterr().err
    staged = tmp_path / "staged.csv"
    assert main(["export", "stg_pos__payments", "--location", "1003", "-o", str(staged)]) == 2
    err = capsys.readouterr().err
    assert "stg_pos__payments is a staging model" in err and "fct_payments" in err
    notice, error = err.split("\n", 1)  # the sandbox's notice, then the one-line error
    assert notice.startswith("no config (--config or $POS_ETL_CONFIG): using the built-in "
                             "sandbox")
    assert error.count("\n") == 1 and not staged.exists()
    assert main(["export", "fct_payments", "--location", "1003", "-o", str(staged)]) == 0
    assert staged.read_text().startswith("location_id,business_date,transaction_id")
    out = tmp_path / "close.xlsx"
    assert main(["export", "rpt_daily_close", "--location", "VIE01", "-o", str(out)]) == 0
    assert f"wrote 3 rows of rpt_daily_close to {out} (xlsx)" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)  # the booking files' default folder is named by the range
    assert main(["export", "rpt_daily_close", "--format", "bmd", "--start", "2026-03-27",
                 "--end", "2026-03-29"]) == 0
    assert "to bmd_2026-03-27_2026-03-29 (bmd) (1 file(s): BMD_Buchungen_2026-03.csv)" in \
        capsys.readouterr().out
    assert (tmp_path / "bmd_2026-03-27_2026-03-29" / "BMD_Buchungen_2026-03.csv").is_file()


def test_the_file_holds_the_marts_and_reports_and_no_staging(built):
    from pipeline.warehouse import discover_models

    schemas = dict(query(built, "select table_name, table_schema from information_schema.tables"))
    assert {name: schemas.get(name) for name, model in discover_models().items()} == {
        name: "main" if model.stored else None for name, model in discover_models().items()}
    # a view reads the models it names by their qualified names: no search path needed
    assert query(built, "select count(*) from rpt_unmatched_items")[0][0] > 0


def test_accounting_reports_carry_cents(built):
    rows = query(built, "select table_name, column_name, data_type "
                        "from information_schema.columns where table_name in "
                        "('rpt_vat_by_rate', 'rpt_daily_close', 'rpt_daily_close_payments', "
                        "'rpt_payment_reconciliation') and data_type like 'DECIMAL%'")
    assert len(rows) >= 20
    assert {r[2] for r in rows if r[1] != "tax_rate_percent"} == {"DECIMAL(18,2)"}, rows


def test_a_redemption_paid_to_two_accounts_on_one_day_leaves_each_account_once(
        sandbox_url, tmp_path, sandbox_keys):
    """The single-purpose voucher's payment type posts to two ledger accounts on one day
    (3600 and 3601): each redemption comes off the account it was paid to, once; the
    DATEV file read back independently agrees (issue 40, item 13)."""
    from pipeline.core.accounting_settings import VoucherCategory
    from pipeline.core.reporting import Reporter
    from pipeline.outputs.export import Selection, export
    from tests.conftest import make_settings, run_load_in_memory
    from tests.hostile import altered_sandbox

    day = DAYS[1]  # three redemptions at 1001

    def two_accounts(location, rows):
        flip = False
        for receipt in rows:
            if not receipt["dateTime"].startswith(day.strftime("%d.%m.%Y")):
                continue
            for payment in receipt.get("payments") or []:
                if payment["paymentType"]["name"] == "Gutschein":
                    payment["fibuAccountNr"] = "3601" if flip else "3600"
                    flip = not flip
        return rows

    with altered_sandbox(two_accounts) as url:
        loaded = make_settings(url, tmp_path / "data")
        plain = _datev_settings(loaded)
        single = plain.model_copy(update={
            "accounting": plain.accounting.model_copy(update={"voucher_categories": [
                VoucherCategory(name="Restaurant-Gutschein", purpose="single",
                                tax_rate=Decimal(20), sale_products=[9901],
                                payment_types=["Gutschein"])]})})
        report = run_load_in_memory(single, day, day, [1001], catalog=False,
                                    progress=Reporter())
    assert report.ok, report.summary()
    accounts = dict(query(single, "select fibu_account_nr, count(*) from fct_prepaid_vouchers "
                                  "where redeemed_amount <> 0 group by all"))
    assert set(accounts) == {"3600", "3601"}  # the case: one type, two accounts, one day
    done = export(single, Selection("rpt_daily_close", day, day, None), "datev",
                  tmp_path / "two.csv")
    totals = _totals_of(read_independently(done.files))
    assert totals == warehouse_balance(single, single)


def test_pos_etl_accounts_prints_the_mapping_in_force(built, monkeypatch, capsys):
    """`pos-etl accounts` shows each payment type of the warehouse with its account and
    where it comes from (exit 0: nothing refused); `--chart skr04` shows what SKR 04
    would need: the Austrian POS accounts and rates marked, exit 2."""
    from pipeline.cli import main

    monkeypatch.setenv("POS_ETL_DATA_DIR", str(built.warehouse.data_dir))
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    assert main(["accounts"]) == 0
    shown = capsys.readouterr().out
    assert "chart of accounts: EKR" in shown
    assert re.search(r"payment type 'Bankomat' \(id 2, POS account 2780\)\s+payment\s+"
                     r"2780\s+pos\n", shown)
    assert re.search(r"payment type 'Online' \(config; not in the warehouse\)\s+payment\s+"
                     r"2795\s+config\n", shown)
    assert re.search(r"payment type 'Gutschein' \(id 4, POS account 3600\)\s+voucher\s+"
                     r"3600\s+chart\n", shown)
    # the sandbox's bank accounts, whose payouts and deposits the files book
    assert len(re.findall(r"bank account AT\d{18} \(location 100[123]\)\s+bank\s+2800\s+"
                          r"chart\n", shown)) == 3
    assert "<-" not in shown
    assert main(["accounts", "--chart", "skr04"]) == 2
    out, err = capsys.readouterr()
    assert re.search(r"payment type 'Bankomat' \(id 2, POS account 2780\)\s+payment\s+-\s+"
                     r"unmapped  <- the POS's account 2780 is no account of SKR 04's", out)
    assert re.search(r"payment type 'Bar' \(id 1, POS account 2700\)\s+cash\s+1600\s+chart\n",
                     out)
    assert re.search(r"Erlöse 20 %\s+revenue\s+-\s+unmapped  <- the warehouse has revenue", out)
    assert re.search(r"bank account AT\d{18} \(location 1001\)\s+bank\s+1800\s+chart\n", out)
    assert "line(s) an export or close would refuse" in err


def test_every_booking_line_traces_to_receipts_that_tie_and_back(built, tmp_path, capsys,
                                                                  monkeypatch):
    """GoBD's audit trail: each line of the DATEV file, named by its Belegfeld 1 and its
    place in it, traces to receipts whose shares add up to the line's amount; each
    receipt of the sandbox traces back to lines whose payment shares are what it was paid
    (from the sandbox's own receipts, not from the warehouse)."""
    from pipeline.accounting.datev import read_datev
    from pipeline.accounting.trace import trace
    from pipeline.cli import main
    from pipeline.outputs.export import Selection, export

    done = export(_datev_settings(built), Selection("rpt_daily_close", DAYS[0], DAYS[-1],
                                                    None), "datev", tmp_path / "datev")
    _, rows = read_datev(done.files[0])
    place: dict[str, int] = defaultdict(int)
    warehouse = built.warehouse.warehouse_path
    for row in rows:
        document = row["Belegfeld 1"]
        place[document] += 1
        (line,) = trace(warehouse, f"{document}/{place[document]}")[:1]
        amount = Decimal(row["Umsatz (ohne Soll/Haben-Kz)"].replace(",", "."))
        assert f" {amount:,.2f} EUR" in line.replace("-", ""), (line, amount)
        assert line.endswith(", ties"), line
    assert len(place) == len(LOCATIONS) * len(DAYS)
    paid = defaultdict(Decimal)
    for _loc, _day, receipts in truth():
        for r in receipts:
            if r.transaction_type in SETTLEMENTS:
                paid[r.transaction_id] += sum((p.amount for p in r.payments), Decimal(0))
    checked = 0
    for transaction_id, amount in list(paid.items())[::25]:
        lines = trace(warehouse, transaction_id)
        shares = [Decimal(re.search(r"share +(-?[\d,]+\.\d\d) EUR of", x)[1].replace(",", ""))
                  for x in lines[1:] if " payment " in x]
        assert sum(shares, Decimal(0)) == amount, (transaction_id, lines)
        checked += 1
    assert checked > 10
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(built.warehouse.data_dir))
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    assert main(["trace", f"Z1001-{DAYS[0]:%Y%m%d}/1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"Z1001-{DAYS[0]:%Y%m%d}/1  revenue") and out[0].endswith("ties")
    assert len(out) > 2 and all(" share " in x for x in out[1:])
    assert main(["trace", "nothing-like-this"]) == 1
    assert "is no document number" in capsys.readouterr().err
