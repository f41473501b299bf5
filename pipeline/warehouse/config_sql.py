"""What the config file gives the warehouse's SQL: its locations as the table macro
``configured_locations()`` and its ``[accounting]`` as scalar macros (the voucher and
cash payment types, the ledger's time zone, the chart of accounts and the payment
accounts, single-purpose vouchers, what is collected for others), created after the
project's own ``macros/``."""

from __future__ import annotations

from decimal import Decimal

from pipeline.core.accounting_settings import AccountingSettings, ChartOfAccounts
from pipeline.core.bank_settings import BankSettings
from pipeline.core.charts import PAYMENT_ROLES, SINGLE_ACCOUNT_ROLES
from pipeline.core.settings import Settings


def _sql_list(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "null"


CONFIG_TABLES = ("configured_locations",)
"""Table macros of the config file that only models of ``materialized: table`` may read:
they are not part of the partitioned models' versions (``config_tables``)."""


def config_tables(settings: Settings | None = None) -> tuple[str, ...]:
    """The configured locations as the table macro ``configured_locations()``: each one's
    id, short code, name, cost centre, time zone, business-day start, first and last
    business date (the
    defaults resolved: ``pipeline.warehouse.coverage``) and the freshness deadline. Changing them
    changes no partitioned model, so they are not part of the versions (``CONFIG_TABLES``)."""
    rows = []
    for loc in settings.locations if settings else ():
        first = max(filter(None, (loc.first_business_date, settings.schedule.start_date)))
        last = f"DATE '{loc.last_business_date}'" if loc.last_business_date else \
            "cast(null as date)"
        cost_center = _sql_list([loc.cost_center]) if loc.cost_center else "null"
        rows.append(f"({loc.id}, {_sql_list([loc.short_code])}, "
                    f"{_sql_list([loc.name or loc.short_code])}, {cost_center}, "
                    f"{_sql_list([loc.timezone])}, "
                    f"TIME '{loc.business_day_starts}', DATE '{first}', {last}, "
                    f"TIME '{settings.freshness.deadline}')")
    values = ", ".join(rows) if rows else (
        "(null, null, null, null, null, null, null, null, null)")
    return (
        "-- the configured locations and the business dates each should have (pos-etl's\n"
        "-- config: [[locations]], [schedule] start_date, [freshness] deadline)\n"
        "create or replace macro configured_locations() as table\n"
        "select cast(location_id as integer) as location_id,\n"
        "    cast(short_code as varchar) as short_code,\n"
        "    cast(location_name as varchar) as location_name,\n"
        "    cast(cost_center as varchar) as cost_center,\n"
        "    cast(timezone as varchar) as timezone,\n"
        "    cast(business_day_starts as time) as business_day_starts,\n"
        "    cast(first_business_date as date) as first_business_date,\n"
        "    cast(last_business_date as date) as last_business_date,\n"
        "    cast(due_at as time) as due_at\n"
        f"from (values {values}) as t (location_id, short_code, location_name,\n"
        "    cost_center, timezone,\n"
        "    business_day_starts, first_business_date, last_business_date, due_at)\n"
        "where location_id is not null;",
        *_bank_sql(settings),
    )


def _bank_sql(settings: Settings | None) -> tuple[str, ...]:
    """What the bank reconciliation reads of the config ([bank]): the acquirers as the
    table macro ``configured_acquirers()`` (a row per payment type each pays out), which
    cash book records move cash to the bank, which bank entries are cash deposits."""
    bank = settings.bank if settings else None
    rows = [f"({_sql_list([a.name])}, {_sql_list([t])}, {_sql_list([a.name])}, "
            f"{a.pays_after_days}, {a.fee_percent})"
            for a in (bank.acquirers if bank else ()) for t in a.payment_types]
    values = ", ".join(rows) or "(null, null, null, null, null)"
    chart = (settings.accounting if settings else AccountingSettings()).chart_of_accounts
    to_bank = _sql_list((bank.deposit_accounts if bank else []) or [chart.transit_account])
    texts = bank.deposit_texts if bank else BankSettings().deposit_texts
    starts = " or ".join(f"starts_with(upper(text), {_sql_list([t.upper()])})" for t in texts)
    ledger = " ".join(f"when iban = {_sql_list([a.iban])} then {_sql_list([a.account])}"
                      for a in (bank.accounts if bank else ()) if a.account)
    bank_account = _sql_list([chart.bank_account])
    return (
        "-- the acquirers that pay out card sales ([[bank.acquirers]]): one row per payment\n"
        "-- type each pays\n"
        "create or replace macro configured_acquirers() as table\n"
        "select cast(acquirer_name as varchar) as acquirer_name,\n"
        "    cast(payment_type_name as varchar) as payment_type_name,\n"
        "    cast(counterparty_pattern as varchar) as counterparty_pattern,\n"
        "    cast(pays_after_days as integer) as pays_after_days,\n"
        "    cast(fee_percent as decimal(9, 4)) as fee_percent\n"
        f"from (values {values}) as t (acquirer_name, payment_type_name,\n"
        "    counterparty_pattern, pays_after_days, fee_percent)\n"
        "where acquirer_name is not null;",
        "-- whether a cash book record's counter account moves the cash to the bank\n"
        "-- ([bank] deposit_accounts, else the chart's cash transit account)\n"
        f"create or replace macro is_cash_to_bank(fibu) as coalesce(fibu in ({to_bank}), false);",
        "-- whether a bank entry is a cash deposit: ISO's code for one, or a purpose that\n"
        "-- starts with one of [bank] deposit_texts\n"
        "create or replace macro is_cash_deposit(code, text) as\n"
        f"    coalesce(code like '%CNTR/CDPT', false) or coalesce({starts or 'false'}, false);",
        "-- a bank account's account in the general ledger ([[bank.accounts]] account, else\n"
        "-- the chart's bank account)\n"
        "create or replace macro bank_ledger_account(iban) as\n"
        f"    {f'case {ledger} else {bank_account} end' if ledger else bank_account};",
        "-- whether the booking files book the bank's side ([bank] book)\n"
        f"create or replace macro books_bank() as {str(bank.book if bank else True).lower()};",
    )


def config_macros(accounting: AccountingSettings | None = None,
                  default_timezone: str = "Europe/Vienna") -> tuple[str, ...]:
    """The macros the config file defines (``[accounting]``), created after ``macros/``:
    part of every partitioned model's version, so changing them recomputes the reports."""
    accounting = accounting or AccountingSettings()
    tz = accounting.ledger_timezone or default_timezone
    return (
        "-- a settlement of this payment group sells vouchers ([accounting] voucher_sale_groups)\n"
        "create or replace macro is_voucher_sale(payment_group_name) as\n"
        f"    payment_group_name in ({_sql_list(accounting.voucher_sale_groups)});",
        "-- a payment of this type redeems a voucher ([accounting] voucher_payment_types)\n"
        "create or replace macro is_voucher_payment(payment_type_name) as\n"
        f"    payment_type_name in ({_sql_list(accounting.voucher_payment_types)});",
        "-- a payment of this type is cash, in the till's drawer ([accounting] "
        "cash_payment_types)\n"
        "create or replace macro is_cash_payment(payment_type_name) as\n"
        f"    payment_type_name in ({_sql_list(accounting.cash_payment_types)});",
        "-- the voucher ledger's business date of an instant ([accounting] ledger_timezone)\n"
        "create or replace macro ledger_date(instant) as\n"
        f"    cast(timezone({_sql_list([tz])}, instant) as date);",
        *_account_macros(accounting.chart_of_accounts),
        *_voucher_macros(accounting),
        *_pass_through_macros(accounting),
    )


def _pass_through_macros(accounting: AccountingSettings) -> tuple[str, ...]:
    """``[[accounting.pass_through]]`` as macros: the account and the name of what a
    product collects for someone else, else null."""
    def case(pick: str) -> str:
        whens = " ".join(f"when product_nr = {_sql_list([str(p)])} then "
                         f"{_sql_list([getattr(item, pick)])}"
                         for item in accounting.pass_through for p in item.products)
        return f"case {whens} else cast(null as varchar) end" if whens \
            else "cast(null as varchar)"

    return (
        "-- the account of what a product collects for someone else (a tourist tax), else\n"
        "-- null ([[accounting.pass_through]])\n"
        f"create or replace macro pass_through_account(product_nr) as\n    {case('account')};",
        "-- the name of what a product collects for someone else, else null\n"
        f"create or replace macro pass_through_name(product_nr) as\n    {case('name')};",
    )


def _voucher_macros(accounting: AccountingSettings) -> tuple[str, ...]:
    """The single-purpose vouchers of ``[[accounting.voucher_categories]]`` as macros: the
    VAT rate of a product that sells one, and of a payment type that redeems one."""
    single = [c for c in accounting.voucher_categories if c.purpose == "single"]

    def rates(value: str, pairs: dict[str, Decimal]) -> str:
        whens = " ".join(f"when {value} = {key} then cast({rate} as decimal(9, 4))"
                         for key, rate in pairs.items())
        return f"case {whens} else cast(null as decimal(9, 4)) end" if whens \
            else "cast(null as decimal(9, 4))"

    sales = {_sql_list([str(p)]): c.tax_rate for c in single for p in c.sale_products}
    redeems = {_sql_list([t]): c.tax_rate for c in single for t in c.payment_types}
    return (
        "-- the VAT rate of the single-purpose voucher a product sells, else null\n"
        "-- ([[accounting.voucher_categories]])\n"
        "create or replace macro prepaid_sale_rate(product_nr) as\n"
        f"    {rates('product_nr', sales)};",
        "-- the VAT rate of the single-purpose voucher a payment type redeems, else null\n"
        "create or replace macro prepaid_payment_rate(payment_type_name) as\n"
        f"    {rates('payment_type_name', redeems)};",
    )


def _rows(columns: str, types: tuple[str, ...], rows: list[tuple], name: str) -> str:
    """The table macro ``name()`` of ``rows`` (``columns``, each cast to its type): none
    is no row."""
    def literal(value: object) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, (int, Decimal)):
            return str(value)
        return _sql_list([str(value)])

    names = [c.strip() for c in columns.split(",")]
    values = ", ".join("(" + ", ".join(map(literal, row)) + ")" for row in rows) or \
        "(" + ", ".join(["null"] * len(names)) + ")"
    casts = ", ".join(f"cast({c} as {t}) as {c}" for c, t in zip(names, types, strict=True))
    return (f"create or replace macro {name}() as table\n"
            f"select {casts}\nfrom (values {values}) as t ({columns})"
            f"{'' if rows else ' where false'};")


ACCOUNT_RULES = (
    "-- the revenue account of a tax rate, null where none (chart_revenue_accounts)\n"
    "create or replace macro revenue_account(rate) as\n"
    "    (select min(chart_account) from chart_revenue_accounts() where chart_rate = rate);",
    "-- the account of a single-account role: clearing, tip, suspense, cash, ...\n"
    "create or replace macro booking_account(role) as\n"
    "    (select min(chart_account) from chart_accounts() where chart_role = role);",
    "-- the account of a non-revenue payment group, else the suspense account\n"
    "create or replace macro non_revenue_account(group_name) as\n"
    "    coalesce((select min(chart_account) from chart_group_accounts()\n"
    "              where chart_group = group_name), booking_account('suspense'));",
    "-- the role of a non-revenue payment group's account: voucher, non_revenue, or\n"
    "-- suspense (no account of its own)\n"
    "create or replace macro non_revenue_role(group_name) as\n"
    "    case when exists (select 1 from chart_group_accounts() where chart_group = group_name)\n"
    "    then case when is_voucher_sale(group_name) then 'voucher' else 'non_revenue' end\n"
    "    else 'suspense' end;",
    "-- whether an account lies in the chart's ranges for a role (chart_ranges; 'payment':\n"
    "-- any of the cash, transit, bank and receivable ranges)\n"
    "create or replace macro account_fits(role, account) as\n"
    "    exists (select 1 from chart_ranges()\n"
    "            where (chart_role = role or (role = 'payment' and for_payment))\n"
    "              and length(account) = account_digits\n"
    "              and left(account, prefix_digits) between first_account and last_account);",
    "-- the role of a payment type's account: cash, voucher, or payment (a card, a room\n"
    "-- charge: any of the chart's cash, transit, bank and receivable ranges)\n"
    "create or replace macro payment_role(type_name) as\n"
    "    case when is_cash_payment(type_name) then 'cash' when "
    "is_voucher_payment(type_name) then 'voucher' else 'payment' end;",
    "-- the account a payment type's payments are debited to: the config's\n"
    "-- (chart_payment_accounts, by id before name), else the POS's fibuAccountNr where it\n"
    "-- fits the chart for the payment's role, else the cash or voucher account, else null\n"
    "-- (refused)\n"
    "create or replace macro payment_account(type_id, type_name, fibu) as\n"
    "    coalesce(\n"
    "        (select min(chart_account) from chart_payment_accounts()\n"
    "         where chart_type_id = type_id),\n"
    "        (select min(chart_account) from chart_payment_accounts()\n"
    "         where chart_type_name = type_name),\n"
    "        case when is_cash_payment(type_name) then case when account_fits('cash', fibu)\n"
    "             then fibu else booking_account('cash') end\n"
    "        when is_voucher_payment(type_name) then booking_account('voucher')\n"
    "        when account_fits('payment', fibu) then fibu end);",
    "-- where payment_account's account comes from: config, pos or chart (null: none)\n"
    "create or replace macro payment_account_source(type_id, type_name, fibu) as\n"
    "    case when exists (select 1 from chart_payment_accounts()\n"
    "                      where chart_type_id = type_id or chart_type_name = type_name)\n"
    "    then 'config'\n"
    "    when is_cash_payment(type_name) then case when account_fits('cash', fibu)\n"
    "         then 'pos' else 'chart' end\n"
    "    when is_voucher_payment(type_name) then 'chart'\n"
    "    when account_fits('payment', fibu) then 'pos' end;",
)
"""How the bookings find their accounts: fixed rules over the chart's rows
(``_account_macros``), the same for every config."""


def _account_macros(accounts: ChartOfAccounts) -> tuple[str, ...]:
    """The accounts of the bookings ([accounting.accounts]) and the chart's ranges
    (``pipeline.core.charts``) as rows the models read (``chart_accounts()``,
    ``chart_revenue_accounts()``, ``chart_group_accounts()``, ``chart_ranges()``,
    ``chart_payment_accounts()``), then the rules that read them (``ACCOUNT_RULES``)."""
    chart = accounts.definition
    title = " ".join(chart.name.split())  # a client's chart file names it: one line
    length = accounts.account_length
    ranges = [(role, r.first, r.last, length if len(r.first) == 4 else length + 1,
               len(r.first), role in PAYMENT_ROLES)
              for role, found in sorted(chart.ranges.items()) for r in found]
    payments = [(int(key[3:]), None, account) if key.startswith("id:") else
                (None, key, account) for key, account in accounts.payment_accounts.items()]
    return (
        f"-- the chart's single-account roles and their accounts ({title}, "
        "[accounting.accounts])\n" + _rows(
            "chart_role, chart_account", ("varchar", "varchar"),
            [(role, accounts.role_account(role)) for role in SINGLE_ACCOUNT_ROLES],
            "chart_accounts"),
        "-- the revenue account per tax rate in percent ([accounting.accounts])\n" + _rows(
            "chart_rate, chart_account", ("decimal(9, 4)", "varchar"),
            [(Decimal(rate), account) for rate, account in accounts.revenue_accounts.items()],
            "chart_revenue_accounts"),
        "-- the account per non-revenue payment group ([accounting.accounts])\n" + _rows(
            "chart_group, chart_account", ("varchar", "varchar"),
            list(accounts.non_revenue_accounts.items()), "chart_group_accounts"),
        f"-- the chart's account ranges per role ({title}: pipeline/core/charts): an\n"
        "-- account fits where it has account_digits digits and its first prefix_digits lie\n"
        "-- in the range; for_payment: a payment type's account may use it\n" + _rows(
            "chart_role, first_account, last_account, account_digits, prefix_digits, "
            "for_payment", ("varchar", "varchar", "varchar", "integer", "integer", "boolean"),
            ranges, "chart_ranges"),
        "-- the config's account per payment type, by id or by name "
        "([accounting.accounts] payment_accounts)\n" + _rows(
            "chart_type_id, chart_type_name, chart_account", ("integer", "varchar", "varchar"),
            payments, "chart_payment_accounts"),
        *ACCOUNT_RULES,
        "-- what the accounts above were made from (the export checks it is the config's)\n"
        "create or replace macro chart_fingerprint() as\n"
        f"    {_sql_list([accounts.fingerprint])};",
    )
