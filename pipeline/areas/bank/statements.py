"""A bank statement as both formats deliver it: its account, its balances, its entries.

``pipeline.areas.bank.camt`` and ``pipeline.areas.bank.mt940`` read a file into these;
``check`` holds a statement to its own balances. Amounts are exact (``Decimal``), an
entry's amount signed as the account sees it (a credit positive).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal


class StatementError(ValueError):
    """A file that is no statement this reader takes, or one that contradicts itself: the
    message names the file and what is wrong; nothing of the file is loaded."""


@dataclass
class Entry:
    booking_date: date
    value_date: date | None
    amount: Decimal
    """Signed: a credit (money in) positive, a debit negative."""
    currency: str
    booked: bool = True
    """Booked (``BOOK``); a pending or informational entry is kept but not in the balance."""
    reversal: bool = False
    bank_reference: str | None = None
    end_to_end_id: str | None = None
    counterparty_name: str | None = None
    counterparty_iban: str | None = None
    remittance: str | None = None
    """The unstructured remittance information (the purpose line), its parts joined by a
    space."""
    transaction_code: str | None = None
    transactions: int | None = None
    """How many payments a batch entry holds (``NtryDtls/Btch/NbOfTxs``), where sent."""


@dataclass
class Statement:
    statement_id: str
    iban: str
    currency: str
    opening_balance: Decimal
    opening_date: date
    closing_balance: Decimal
    closing_date: date
    format: str
    """``camt.053.001.NN`` or ``mt940``."""
    sequence_number: int | None = None
    created_at: datetime | None = None
    entries: list[Entry] = field(default_factory=list)


CURRENCY = "EUR"
"""The books' currency: an account in another is not reconciled with them."""


def check(statement: Statement, where: str) -> Statement:
    """The statement, where it is a euro account's, every amount to the cent, and its
    opening balance and booked entries make its closing balance; else a
    ``StatementError``."""
    currencies = sorted({e.currency for e in statement.entries} | {statement.currency})
    if currencies != [CURRENCY]:
        raise StatementError(f"{where}: amounts in {', '.join(currencies)}: only accounts "
                             f"in {CURRENCY} are read (the books are kept in it)")
    amounts = [statement.opening_balance, statement.closing_balance,
               *(e.amount for e in statement.entries)]
    fine = [a for a in amounts if a != a.quantize(Decimal("0.01"))]
    if fine:
        raise StatementError(f"{where}: amount {fine[0]} is finer than a cent")
    booked = sum((e.amount for e in statement.entries if e.booked), Decimal(0))
    if statement.opening_balance + booked != statement.closing_balance:
        raise StatementError(
            f"{where}: opening balance {statement.opening_balance} and the booked entries "
            f"({booked:+}) make {statement.opening_balance + booked}, but the closing "
            f"balance says {statement.closing_balance}")
    return statement
