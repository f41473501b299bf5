"""Charts of accounts as data: the roles a daily close's bookings play, the account ranges
each role may use in a chart, and the accounts a config starts from.

The charts we ship are TOML files in ``pipeline/core/charts`` (``ekr``, ``skr03``,
``skr04``); a client's own chart is a file of the same form (``[accounting.accounts]
chart_file``). A booking file never holds an account outside its chart's ranges for its
role (``pipeline.accounting.bookings.check_chart``).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

SHIPPED = Path(__file__).with_name("charts")
"""The folder of the charts we ship, one ``<id>.toml`` each."""

ROLES = {
    "revenue": "revenue per VAT rate (gross; DATEV: automatic accounts)",
    "tip": "tips, owed to the staff",
    "voucher": "multi-purpose vouchers sold and redeemed (a liability)",
    "pass_through": "collected for others (a tourist tax)",
    "non_revenue": "other non-revenue payment groups (staff meals, say)",
    "cash": "cash in the till",
    "card_transit": "card and online payments on their way to the bank",
    "bank": "the bank account",
    "cash_transit": "cash on its way to the bank (Geldtransit)",
    "receivable": "receivables (a room charge, an invoice)",
    "clearing": "the daily close's clearing account (nets to 0 per day)",
    "suspense": "what needs clearing up (Klärungskonto)",
    "card_fees": "card and bank fees",
}
"""Every role a chart declares, with what it is for."""

PAYMENT_ROLES = ("cash", "card_transit", "bank", "cash_transit", "receivable")
"""Where a payment type's money may be debited: a payment type that is neither cash nor a
voucher (role ``payment``) may post to any of these roles' ranges."""

SINGLE_ACCOUNT_ROLES = ("tip", "voucher", "cash", "card_transit", "bank", "cash_transit",
                        "receivable", "clearing", "suspense", "card_fees")
"""The roles with one account of their own (revenue has one per VAT rate; pass-through
and non-revenue groups name theirs in the config)."""

_RANGE = re.compile(r"([0-9]{4,5})-([0-9]{4,5})")


class ChartError(ValueError):
    """A chart file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class AccountRange:
    first: str
    last: str

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"

    def holds(self, account: str, account_length: int) -> bool:
        """A four-digit range holds general ledger accounts (of ``account_length``
        digits, compared by their first four), a five-digit one personal accounts (one
        digit longer, compared by their first five)."""
        width = len(self.first)
        length = account_length if width == 4 else account_length + 1
        return len(account) == length and self.first <= account[:width] <= self.last

    def sql(self, account: str, account_length: int) -> str:
        """``holds`` as a DuckDB condition on the SQL expression ``account``."""
        width = len(self.first)
        length = account_length if width == 4 else account_length + 1
        return (f"(length({account}) = {length} and left({account}, {width}) between "
                f"'{self.first}' and '{self.last}')")


@dataclass(frozen=True)
class Chart:
    """A chart of accounts: per role its ranges, its label and its default account(s)."""

    id: str
    name: str
    country: str
    datev_chart: str
    """DATEV's Sachkontenrahmen in a Buchungsstapel header (``03``, ``04``; else empty)."""
    ranges: dict[str, tuple[AccountRange, ...]]
    labels: dict[str, str]
    accounts: dict[str, str]
    """The default account of each role that has one."""
    revenue_accounts: dict[str, str]
    """The default revenue account per VAT rate (percent)."""
    source: str
    """Where it was read: the file."""

    def fits(self, role: str, account: str, account_length: int = 4) -> bool:
        """Whether ``account`` lies in the chart's ranges for ``role`` (``payment``: any
        of ``PAYMENT_ROLES``)."""
        roles = PAYMENT_ROLES if role == "payment" else (role,)
        return any(r.holds(account, account_length) for name in roles
                   for r in self.ranges.get(name, ()))

    def ranges_text(self, role: str) -> str:
        roles = PAYMENT_ROLES if role == "payment" else (role,)
        return ", ".join(dict.fromkeys(str(r) for name in roles
                                       for r in self.ranges.get(name, ())))


def shipped_charts() -> list[str]:
    """The ids of the charts we ship."""
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


@functools.cache
def _read(path: Path, mtime_ns: int) -> Chart:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ChartError(f"{path}: chart file not found") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ChartError(f"{path}: not a TOML chart file ({exc})") from None
    return parse_chart(raw, str(path))


def parse_chart(raw: dict, source: str) -> Chart:
    """A chart from its TOML table; ``ChartError`` naming ``source`` and the field."""
    def need(table: dict, key: str, where: str) -> object:
        if key not in table:
            raise ChartError(f"{source}: {where}{key} is missing")
        return table[key]

    roles = need(raw, "roles", "")
    if not isinstance(roles, dict):
        raise ChartError(f"{source}: roles must be a table of roles")
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise ChartError(f"{source}: roles.{unknown[0]} is not a role (the roles: "
                         f"{', '.join(ROLES)})")
    missing = [role for role in ROLES if role not in roles]
    if missing:
        raise ChartError(f"{source}: roles.{missing[0]} is missing (every role needs its "
                         "ranges)")
    ranges, labels, accounts = {}, {}, {}
    for role, table in roles.items():
        where = f"roles.{role}."
        parsed = []
        for text in need(table, "ranges", where):
            match = _RANGE.fullmatch(str(text))
            if not match or len(match[1]) != len(match[2]) or match[1] > match[2]:
                raise ChartError(f"{source}: {where}ranges: {text!r} is not a range of "
                                 "accounts such as \"1600-1699\"")
            parsed.append(AccountRange(match[1], match[2]))
        if not parsed:
            raise ChartError(f"{source}: {where}ranges is empty")
        ranges[role], labels[role] = tuple(parsed), str(table.get("label", ROLES[role]))
        if role in SINGLE_ACCOUNT_ROLES:
            account = str(need(table, "account", where))
            accounts[role] = account
    chart = Chart(str(need(raw, "id", "")), str(need(raw, "name", "")),
                  str(raw.get("country", "")), str(raw.get("datev_chart", "")), ranges,
                  labels, accounts, {str(k): str(v) for k, v in
                                     need(roles["revenue"], "accounts", "roles.revenue.")
                                     .items()}, source)
    for role, account in [*accounts.items(),
                          *(("revenue", a) for a in chart.revenue_accounts.values())]:
        if not chart.fits(role, account):
            raise ChartError(f"{source}: roles.{role}: account {account} lies outside the "
                             f"role's ranges ({chart.ranges_text(role)})")
    return chart


def load_chart(chart: str, chart_file: Path | None = None) -> Chart:
    """The chart ``chart`` (a shipped id), or the client's own ``chart_file``."""
    path = chart_file if chart_file is not None else SHIPPED / f"{chart}.toml"
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        raise ChartError(f"{path}: chart file not found") from None
    return _read(path, mtime)
