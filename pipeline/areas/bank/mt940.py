"""SWIFT MT940 (the older statement format many banks still send beside CAMT.053) ->
``Statement``s, by the ``mt-940`` library (every fix of its 5.x options on: a reversal of
a credit is a debit, ``?31`` is the counterparty's IBAN, details of any length, a
byte-order mark dropped). The German structured ``:86:`` (``?20``-``?29`` the purpose,
``?32``/``?33`` the name, ``?31`` the IBAN) is read as its processor reads it; an
unstructured one is the purpose as it is."""

from __future__ import annotations

from datetime import date

import mt940
from mt940.options import Options

from pipeline.areas.bank.statements import Entry, Statement, StatementError

OPTIONS = Options(applicant_iban=True, reversal_sign=True, case_insensitive_marks=True,
                  unbounded_details=True, non_swift_free_text=True, strip_bom=True,
                  merge_keeps_values=True, gvc_leading_text=True)


def read_mt940(data: bytes, where: str) -> list[Statement]:
    """Each statement (``:20:`` block) of an MT940 file."""
    try:
        blocks = mt940.parse_statements(data, options=OPTIONS)
    except Exception as exc:  # the library's errors are plain ones; all refuse the file
        raise StatementError(f"{where}: not an MT940 statement: {exc}") from None
    blocks = [b for b in blocks if b.data.get("transaction_reference")]
    if not blocks:
        raise StatementError(f"{where}: not an MT940 statement (no :20: block)")
    return [_statement(b, f"{where}: statement {n + 1}") for n, b in enumerate(blocks)]


def _statement(block, where: str) -> Statement:
    data = block.data
    statement_id = data["transaction_reference"]
    where = f"{where} ({statement_id})"
    opening = data.get("final_opening_balance") or data.get("intermediate_opening_balance")
    closing = data.get("final_closing_balance") or data.get("intermediate_closing_balance")
    if opening is None or closing is None:
        raise StatementError(f"{where}: :60F: and :62F: (the opening and closing balance) "
                             "are both needed")
    account = (data.get("account_identification") or "").replace(" ", "").upper()
    if not account or not account[:2].isalpha():
        raise StatementError(f"{where}: :25: {account!r} is no IBAN (only IBAN accounts "
                             "are mapped to locations)")
    number = data.get("statement_number")
    return Statement(
        statement_id=statement_id, iban=account, currency=opening.amount.currency,
        opening_balance=opening.amount.amount, opening_date=_day(opening.date),
        closing_balance=closing.amount.amount, closing_date=_day(closing.date),
        format="mt940", sequence_number=int(number) if number and number.isdigit() else None,
        entries=[_entry(t.data, f"{where}: :61: {n + 1}") for n, t in enumerate(block)])


def _entry(data: dict, where: str) -> Entry:
    booked_on = data.get("guessed_entry_date") or data.get("entry_date") or data.get("date")
    if booked_on is None:
        raise StatementError(f"{where}: no date")
    purpose = data.get("purpose")
    if isinstance(purpose, list):
        purpose = "".join(p for p in purpose if p)
    text = purpose or data.get("transaction_details")
    return Entry(
        booking_date=_day(booked_on), value_date=_day(data["date"]) if data.get("date") else None,
        amount=data["amount"].amount, currency=data["amount"].currency,
        reversal=str(data.get("status", "")).upper().startswith("R"),
        bank_reference=data.get("bank_reference"),
        end_to_end_id=data.get("end_to_end_reference"),
        counterparty_name=data.get("applicant_name"),
        counterparty_iban=data.get("applicant_iban"),
        remittance=(text or "").replace("\n", "") or None,
        transaction_code=data.get("transaction_code") or data.get("id"))


def _day(value) -> date:
    return date(value.year, value.month, value.day)
