"""From a booking line to its receipts and back (``pos-etl trace``), read from the
warehouse's ``rpt_booking_receipts``: GoBD's progressive and retrograde audit trail.

A booking is named by its document number as the files carry it: DATEV's Belegfeld 1
``Z1001-20261015`` (BMD's extbelegnr) or BMD's belegnr ``202610151001``, optionally with
its line (``Z1001-20261015/4``); a receipt by its transactionId.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb

DOCUMENT = re.compile(r"Z(?P<loc>\d+)-(?P<day>\d{8})(?:/(?P<line>\d+))?")
BMD_NUMBER = re.compile(r"(?P<day>\d{8})(?P<loc>\d+)(?:/(?P<line>\d+))?")


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
        from rpt_daily_close_bookings where {where}
        order by location_id, business_date, booking_number""", args).fetchall()]


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
            return _booking(con, name, int(match["loc"]),
                            date.fromisoformat(f"{match['day'][:4]}-{match['day'][4:6]}-"
                                               f"{match['day'][6:]}"),
                            int(match["line"]) if match["line"] else None)
        if name.startswith("K") and DOCUMENT.fullmatch("Z" + name[1:]):
            raise TraceError(f"{name} is a correction's document: its lines are in "
                             "rpt_period_corrections (what changed of a closed date) and "
                             "rpt_closed_bookings (as booked)")
        return _receipt(con, name)


def _booking(con, name: str, loc: int, day: date, number: int | None) -> list[str]:
    where, args = "location_id = ? and business_date = ?", [loc, day]
    if number is not None:
        where, args = where + " and booking_number = ?", [*args, number]
    lines = _lines(con, where, args)
    if not lines:
        raise TraceError(f"no booking {name} in the warehouse (location {loc}, business "
                         f"date {day}{f', line {number}' if number else ''})")
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


def _receipt(con, transaction_id: str) -> list[str]:
    rows = con.execute("""
        select location_id, business_date, booking_number, receipted_at_local,
               transaction_type, receipt_total_amount, amount
        from rpt_booking_receipts where transaction_id = ?
        order by location_id, business_date, booking_number""", [transaction_id]).fetchall()
    if not rows:
        known = con.execute("select location_id, business_date, transaction_type from "
                            "fct_receipts where transaction_id = ?",
                            [transaction_id]).fetchall()
        if known:
            loc, day, kind = known[0]
            raise TraceError(f"receipt {transaction_id} (location {loc}, {day}, {kind}) is "
                             "in no booking line: it moves no money the daily close books")
        raise TraceError(f"{transaction_id!r} is no document number (Z<location>-<YYYYMMDD>"
                         "[/<line>], or BMD's <YYYYMMDD><location>) and no receipt's "
                         "transactionId in the warehouse")
    loc, day, _, at, kind, total, _ = rows[0]
    out = [f"receipt {transaction_id}: location {loc}, business date {day}, "
           f"{at:%Y-%m-%d %H:%M:%S}, {kind}, total {total:,.2f} EUR"]
    for loc, day, number, *_, share in rows:
        (line,) = _lines(con, "location_id = ? and business_date = ? and booking_number = ?",
                         [loc, day, number])
        out.append(f"  share {share:>10,.2f} EUR of {_line_text(line)}")
    return out
