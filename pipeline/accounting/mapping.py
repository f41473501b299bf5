"""The accounts in force (``pos-etl accounts``): each role's account and ranges in the
chart, each revenue rate, non-revenue group, pass-through item, bank account and payment
type with the account it books to and where that comes from (the config, the POS, the
chart), and what an export or a close would refuse."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.accounting.bookings import rate_key
from pipeline.core.accounting_settings import AccountingSettings, ChartOfAccounts
from pipeline.core.charts import SINGLE_ACCOUNT_ROLES
from pipeline.warehouse.config_sql import config_macros


@dataclass(frozen=True)
class Line:
    what: str
    """What is booked: a role, a tax rate, a payment group, a payment type."""
    role: str
    account: str | None
    source: str
    """config, chart, pos; or what is missing."""
    problem: str | None = None


@dataclass
class Mapping:
    chart: ChartOfAccounts
    lines: list[Line] = field(default_factory=list)
    seen_payments: bool = False
    """Whether the payment types come from a warehouse (else only the config's)."""

    @property
    def problems(self) -> list[Line]:
        return [line for line in self.lines if line.problem]


@dataclass(frozen=True)
class Seen:
    """What the warehouse's daily closes book: payment types (id, name, fibuAccountNr) and
    tax rates."""

    payments: list[tuple[int, str, str | None]] = field(default_factory=list)
    rates: list[str] = field(default_factory=list)


def seen_in(warehouse: Path) -> Seen:
    """The payment types and tax rates the warehouse's daily closes have."""
    if not warehouse.is_file():
        return Seen()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        try:
            payments = con.execute("select distinct payment_type_id, payment_type_name, "
                                   "fibu_account_nr from rpt_daily_close_payments "
                                   "order by 2, 1, 3").fetchall()
            rates = [rate_key(r) for (r,) in con.execute(
                "select distinct tax_rate_percent from rpt_vat_by_rate order by 1").fetchall()]
        except duckdb.Error:
            return Seen()
    return Seen(payments, rates)


def mapping(accounting: AccountingSettings, timezone: str, found: Seen,
            bank_accounts: list[tuple[str, int, str | None]] = ()) -> Mapping:
    """The mapping in force for ``accounting``, the payment types and tax rates ``found``
    in the warehouse resolved by the warehouse's own macros (run in memory: the rule is
    the one the bookings use), and the ledger account of each bank account whose side
    the files book (``bank_accounts``: IBAN, location, its own account or None)."""
    accounts = accounting.chart_of_accounts
    chart = accounts.definition
    length = accounts.account_length
    seen = found.payments
    out = Mapping(accounts, seen_payments=bool(seen))
    overridden = {name for section in (accounting.datev, accounting.accounts)
                  for name, value in section if value is not None and name.endswith("account")}

    def line(what: str, role: str, account: str | None, source: str) -> Line:
        problem = None
        if account is None:
            problem = "no account"
        elif not chart.fits(role, account, length):
            problem = f"outside {chart.name}'s ranges for {role} ({chart.ranges_text(role)})"
        return Line(what, role, account, source, problem)

    for role in SINGLE_ACCOUNT_ROLES:
        name = "transit_account" if role == "cash_transit" else f"{role}_account"
        out.lines.append(line(chart.labels[role], role, accounts.role_account(role),
                              "config" if name in overridden else "chart"))
    revenue_set = accounting.accounts.revenue_accounts or accounting.datev.revenue_accounts
    rates = {rate_key(Decimal(rate)): account
             for rate, account in accounts.revenue_accounts.items()}
    for rate in found.rates:
        rates.setdefault(rate, None)
    for rate, account in rates.items():
        got = line(f"Erlöse {rate} %", "revenue", account,
                   "config" if revenue_set else "chart")
        if account is None:
            got = Line(got.what, "revenue", None, "unmapped",
                       "the warehouse has revenue at this rate: add it to "
                       "[accounting.accounts] revenue_accounts")
        out.lines.append(got)
    for group, account in accounts.non_revenue_accounts.items():
        role = "voucher" if group in accounting.voucher_sale_groups else "non_revenue"
        configured = group in (accounting.accounts.non_revenue_accounts or {})
        out.lines.append(line(f"payment group {group!r}", role, account,
                              "config" if configured else "chart"))
    for item in accounting.pass_through:
        out.lines.append(line(item.name, "pass_through", item.account, "config"))
    for iban, location_id, own in bank_accounts:
        out.lines.append(line(f"bank account {iban} (location {location_id})", "bank",
                              own or accounts.role_account("bank"),
                              "config" if own else "chart"))
    con = duckdb.connect()
    for macro in config_macros(accounting, timezone):
        con.execute(macro)
    names = {name for _, name, _ in seen}
    for type_id, name, fibu in seen:
        account, source, role = con.execute(
            "select payment_account($1, $2, $3), payment_account_source($1, $2, $3), "
            "payment_role($2)", [type_id, name, fibu]).fetchone()
        got = line(f"payment type {name!r} (id {type_id}, POS account {fibu or 'none'})",
                   role, account, source or "unmapped")
        if account is None:
            got = Line(got.what, role, None, "unmapped",
                       f"the POS's account {fibu or '(none)'} is no account of "
                       f"{chart.name}'s ranges for payments ({chart.ranges_text('payment')}): "
                       "add it to [accounting.accounts] payment_accounts")
        out.lines.append(got)
    for key, account in accounting.accounts.payment_accounts.items():
        if key not in names and not any(f"id:{i}" == key for i, _, _ in seen):
            out.lines.append(line(f"payment type {key!r} (config; not in the warehouse)",
                                  "payment", account, "config"))
    con.close()
    return out


def render(found: Mapping) -> str:
    """The mapping as text for a terminal: the roles, then what books to which account."""
    chart = found.chart.definition
    rows = [f"chart of accounts: {chart.name} ({chart.id}, {chart.source}); general ledger "
            f"accounts of {found.chart.account_length} digits", "",
            f"  {'role':<12}  {'account':>9}  {'from':<8}  ranges / what it is"]
    roles = [line for line in found.lines if line.role in SINGLE_ACCOUNT_ROLES
             and line.what == chart.labels.get(line.role)]
    for line in roles:
        rows.append(f"  {line.role:<12}  {line.account or '-':>9}  {line.source:<8}  "
                    f"{chart.ranges_text(line.role)}: {line.what}"
                    + (f"  <- {line.problem}" if line.problem else ""))
    rest = [line for line in found.lines if line not in roles]
    width = max(len(line.what) for line in rest)
    rows += ["", f"  {'booked':<{width}}  {'role':<12}  {'account':>9}  from"]
    for line in rest:
        mark = f"  <- {line.problem}" if line.problem else ""
        rows.append(f"  {line.what:<{width}}  {line.role:<12}  {line.account or '-':>9}  "
                    f"{line.source}{mark}")
    if not found.seen_payments:
        rows.append("  (no warehouse with daily closes yet: the payment types the POS sends "
                    "are shown after a load)")
    return "\n".join(rows)
