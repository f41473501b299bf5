"""From a booking line to its receipts and back (``pos-etl trace``), read from the
warehouse's ``rpt_booking_receipts``: GoBD's progressive and retrograde audit trail.

A booking is named by its document number as the files carry it: DATEV's Belegfeld 1
``Z1001-20261015`` (BMD's extbelegnr) or BMD's belegnr ``202610151001``, optionally with
its line (``Z1001-20261015/4``); a receipt by its transactionId. A daily close's line
(``Z``) leads to its receipts, a bank's line (``B``, BMD ``9…``) to its bank entry and the
batches or cash it paid, the cash moved to the bank (``G``, BMD ``8…``) to its cash book
record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb

DOCUMENT = re.compile(r"(?P<kind>[ZBG])(?P<loc>\d+)-(?P<day>\d{8})(?:/(?P<line>\d+))?")
BMD_NUMBER = re.compile(r"(?P<kind>[89])?(?P<day>[12]\d{7})(?P<loc>\d+)(?:/(?P<line>\d+))?")
BMD_KIND = {"8": "G", "9": "B", None: "Z"}
"""The document a BMD belegnr's first digit names (``pipeline.accounting.bmd``)."""


class TraceError(Exception):
    """Nothing to trace by that name; the message says what was looked for."""


@dataclass(frozen=True)
class Line:
    location_id: int
    business_date: date
    booking_number: int
    document: str
    kind: str
    debit: str
    credit: str
    amount: Decimal
    text: str


def _lines(con, where: str, args: list) -> list[Line]:
    return [Line(*row) for row in con.execute(f"""
        select location_id, business_date, booking_number, document_number, booking_kind,
               debit_account, credit_account, amount, booking_text
        from rpt_bookings as b where {where}
        order by location_id, business_date, document_number, booking_number""",
        args).fetchall()]


def _line_text(line: Line) -> str:
    return (f"{line.document}/{line.booking_number}  {line.kind:<12} Soll {line.debit:>6}  "
            f"Haben {line.credit:>6}  {line.amount:>12,.2f} EUR  {line.text}")


def trace(warehouse: Path, name: str) -> list[str]:
    """What ``name`` (a document number, with or without its line, or a receipt's
    transactionId) leads to, as lines of text; ``TraceError`` if nothing."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        try:
            con.execute("select 1 from rpt_booking_receipts limit 0")
        except duckdb.CatalogException:
            raise TraceError("the warehouse was built by an older pos-etl (it has no "
                             "rpt_booking_receipts): run `pos-etl build` first") from None
        match = DOCUMENT.fullmatch(name) or BMD_NUMBER.fullmatch(name)
        if match:
            kind = match["kind"] if name[0].isalpha() else BMD_KIND[match["kind"]]
            return _booking(con, name, f"{kind}{match['loc']}-{match['day']}",
                            int(match["line"]) if match["line"] else None)
        if name.startswith("K") and DOCUMENT.fullmatch("Z" + name[1:]):
            raise TraceError(f"{name} is a correction's document: its lines are in "
                             "rpt_period_corrections (what changed of a closed date) and "
                             "rpt_closed_bookings (as booked)")
        return _receipt(con, name)


def _booking(con, name: str, document: str, number: int | None) -> list[str]:
    where, args = "document_number = ?", [document]
    if number is not None:
        where, args = where + " and booking_number = ?", [*args, number]
    lines = _lines(con, where, args)
    if not lines:
        raise TraceError(f"no booking {name} in the warehouse (document {document}"
                         f"{f', line {number}' if number else ''})")
    if not document.startswith("Z"):
        return [x for line in lines for x in _bank_line(con, line, number is not None)]
    out = []
    for line in lines:
        receipts = con.execute("""
            select transaction_id, receipted_at_local, transaction_type,
                   receipt_total_amount, amount
            from rpt_booking_receipts
            where location_id = ? and business_date = ? and booking_number = ?
            order by receipted_at_local, transaction_id""",
            [line.location_id, line.business_date, line.booking_number]).fetchall()
        total = sum((r[4] for r in receipts), Decimal(0))
        ties = "ties" if total == line.amount else f"DOES NOT TIE: {total:,.2f}"
        out.append(f"{_line_text(line)}  <- {len(receipts)} receipt(s), {ties}")
        if number is not None:
            out += [f"  {tx}  {at:%Y-%m-%d %H:%M:%S}  {kind:<20} total {total_:>10,.2f}  "
                    f"share {share:>10,.2f}" for tx, at, kind, total_, share in receipts]
    return out


def _bank_line(con, line: Line, whole: bool) -> list[str]:
    """A line of the bank's side: the bank entry it books (and, asked for the line, the
    batches or cash it paid, from ``rpt_bank_reconciliation``), or the cash book record
    that moved the cash to the bank; it ties where the entry's (the record's) bookings
    move the bank (the cash) by its amount."""
    entry, record = con.execute(
        "select bank_entry, transaction_id from rpt_bank_bookings where document_number = ?"
        " and booking_number = ?", [line.document, line.booking_number]).fetchone()
    if record is not None:
        found = con.execute("select -amount, receipted_at_local from fct_cash_movements "
                            "inner join fct_receipts using (location_id, business_date, "
                            "transaction_id) where transaction_id = ?", [record]).fetchall()
        ties = "ties" if found and found[0][0] == line.amount else "DOES NOT TIE"
        at = f" of {found[0][1]:%Y-%m-%d %H:%M:%S}" if found else ""
        return [f"{_line_text(line)}  <- cash book record {record}{at}, {ties}"]
    (iban, booked_on, amount, payer, purpose, booked), = con.execute("""
        select e.iban, e.booking_date, e.amount, e.counterparty_name, e.remittance,
               (select sum(case when b.debit_role = 'bank' then b.amount
                                when b.credit_role = 'bank' then -b.amount else 0 end)
                from rpt_bank_bookings as b where b.bank_entry = ?)
        from fct_bank_entries as e where e.statement_id || '/' || e.entry_number = ?""",
        [entry, entry]).fetchall() or [(None,) * 6]
    ties = "ties" if booked is not None and booked == amount else "DOES NOT TIE"
    out = [f"{_line_text(line)}  <- bank entry {entry} ({iban}, booked {booked_on}, "
           f"{amount:,.2f} EUR, {payer or ''}), {ties}" if iban else
           f"{_line_text(line)}  <- bank entry {entry}, DOES NOT TIE: not in the warehouse"]
    if whole:
        out += [f"  pays {day}  {kind or '':<12} {reason:<14} sales {sales:>10,.2f}  fee "
                f"{fee or 0:>8,.2f}  open {open_:>10,.2f}"
                for day, kind, reason, sales, fee, open_ in con.execute("""
                    select business_date, payment_type_name, reason, pos_amount, fee_amount,
                           difference_amount
                    from rpt_bank_reconciliation where bank_entry = ?
                    order by business_date, payment_type_name""", [entry]).fetchall()]
        out += [f"  purpose {purpose}"] if purpose else []
    return out


def _receipt(con, transaction_id: str) -> list[str]:
    rows = con.execute("""
        select location_id, business_date, booking_number, receipted_at_local,
               transaction_type, receipt_total_amount, amount
        from rpt_booking_receipts where transaction_id = ?
        order by location_id, business_date, booking_number""", [transaction_id]).fetchall()
    if not rows:
        known = con.execute("select location_id, business_date, transaction_type, "
                            "receipted_at_local from fct_receipts where transaction_id = ?",
                            [transaction_id]).fetchall()
        if known:
            loc, day, kind, at = known[0]
            moved = _lines(con, "transaction_id = ?", [transaction_id])
            if moved:  # a cash book record that moved cash to the bank
                return [f"receipt {transaction_id}: location {loc}, business date {day}, "
                        f"{at:%Y-%m-%d %H:%M:%S}, {kind}",
                        *(f"  {_line_text(line)}" for line in moved)]
            raise TraceError(f"receipt {transaction_id} (location {loc}, {day}, {kind}) is "
                             "in no booking line: it moves no money the bookings book")
        raise TraceError(f"{transaction_id!r} is no document number (Z, B or G<location>-"
                         "<YYYYMMDD>[/<line>], or BMD's [8|9]<YYYYMMDD><location>) and no "
                         "receipt's transactionId in the warehouse")
    loc, day, _, at, kind, total, _ = rows[0]
    out = [f"receipt {transaction_id}: location {loc}, business date {day}, "
           f"{at:%Y-%m-%d %H:%M:%S}, {kind}, total {total:,.2f} EUR"]
    for loc, day, number, *_, share in rows:
        (line,) = _lines(con, "location_id = ? and business_date = ? and booking_number = ? "
                              "and document_number like 'Z%'", [loc, day, number])
        out.append(f"  share {share:>10,.2f} EUR of {_line_text(line)}")
    return out
