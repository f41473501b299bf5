"""The revenue report read receipt by receipt: the path for answers the column-wise
reading (``columnar``) hands on, and the one that names what is wrong with an answer.

It reads decoded JSON dicts directly (validating every receipt with pydantic would cost
4x the time); when a receipt breaks the contract, the pydantic model of the spec is asked
which field is wrong, so the error names location, date and field.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pyarrow as pa
from pydantic import ValidationError

from pipeline.areas.revenue.contract import Rejected, check_neighbour, difference, extra_fields
from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.extract import columns, schemas
from pipeline.pos_api import models
from pipeline.pos_api.timestamps import (
    format_pos_datetime,
    parse_pos_datetime,
    to_local_wall_clock,
)

if TYPE_CHECKING:
    from pipeline.areas.revenue.extract import RevenuePartition

MIDNIGHT = time(0)


ORDER_MANAGER = "BestellmanagerBestellung"
KNOWN_TRANSACTION_TYPES = frozenset({
    "Bonieren", "Verschieben", "Abrechnen", "Stornieren", "RechnungZurückholen",
    "DebitBonieren", "ARAusstellen", "ARPreview", "ARNachdruck", "ARNachdruckOriginal",
    "Tagesabschluss", "TagesabschlussPreview", "Kellnerabschlag", "KellnerabschlagPreview",
    "KellnerabschlagUndo", "Kelleruebergabe", "Startbeleg", "Schlussbeleg", "Nullbeleg",
    "Monatsbeleg", "JahresBeleg", "Nacherfassungssammelbeleg", "TischOeffnen",
    "TischSchliessen", "GaesteanzahlAendern", "GaesteanzahlKorrigieren", "WarenkorbErstellen",
    "WarenkorbUpdate", "WarenkorbVerwerfen", "DatenExport", "UndoDatenExport", "Kassabuch",
    "Bargeldzählung", "TerminalKassenschnitt", "Lieferantabschlag",
    "LieferantabschlagVorschau", "Ansehen", "Information", "SchankanlageQrCode",
    "AbrechnenNachdruck",
}) | {"Abrechnen HSK", "Abrechnen AR"} | {
    ORDER_MANAGER + s for s in ("", "NextState", "SetFinaleState", "Undo", "Stornieren",
                                "Verschieben", "NaechsterGang", "Statistik")}
def _pos_stamp(value, tz: ZoneInfo) -> str:
    """A timestamp in the served form; ISO 8601 values are converted to local wall clock."""
    if value.__class__ is str and len(value) == 19 and value[2] == "." and value[5] == ".":
        return value
    return format_pos_datetime(to_local_wall_clock(parse_pos_datetime(value), tz))


@dataclass
class _Rows:
    """The columns of each table's rows, in served order, each kept as a list of its own
    (appended in the one pass; no transposing of row records afterwards).

    receipts: the receipt, its local stamp; items: the item, its transaction id, item key
    and line number; sides: the side dish, its transaction id, item key and side dish key;
    payments: the payment, its transaction id.
    """

    receipts: list = field(default_factory=list)
    stamps: list = field(default_factory=list)
    items: list = field(default_factory=list)
    item_txn: list = field(default_factory=list)
    item_key: list = field(default_factory=list)
    item_line: list = field(default_factory=list)
    sides: list = field(default_factory=list)
    side_txn: list = field(default_factory=list)
    side_item: list = field(default_factory=list)
    side_key: list = field(default_factory=list)
    payments: list = field(default_factory=list)
    payment_txn: list = field(default_factory=list)


def select_and_dedupe(pages, seen_pages, part: RevenuePartition, business_date: date,
                       tz: ZoneInfo, own: set[str], day_starts: time = MIDNIGHT,
                       window: tuple[datetime, datetime] | None = None) -> _Rows:
    """One pass over the receipts: keep the day's, drop repeats at every level."""
    day_prefix = business_date.strftime("%d.%m.%Y")
    # A business day that starts after midnight: the day's stamps from the cut-off on,
    # and the next day's before it (a served stamp is "dd.MM.yyyy HH:mm:ss").
    cut = day_starts.strftime("%H:%M:%S") if day_starts != MIDNIGHT else None
    next_prefix = (business_date + timedelta(days=1)).strftime("%d.%m.%Y")
    out = _Rows()
    seen: dict = {}
    dropped = part.duplicates_dropped
    keep_receipt, keep_stamp = out.receipts.append, out.stamps.append
    keep_item, keep_item_txn = out.items.append, out.item_txn.append
    keep_item_key, keep_item_line = out.item_key.append, out.item_line.append
    keep_side, keep_side_txn = out.sides.append, out.side_txn.append
    keep_side_item, keep_side_key = out.side_item.append, out.side_key.append
    keep_payment, keep_payment_txn = out.payments.append, out.payment_txn.append
    for page in pages:
        seen_pages.append(page)
        part.receipts_seen += len(page)
        for r in page:
            stamp = r["dateTime"]
            if cut is not None:
                stamp = _pos_stamp(stamp, tz)
                clock = stamp[11:]
                if not (clock >= cut and stamp.startswith(day_prefix)
                        or clock < cut and stamp.startswith(next_prefix)):
                    check_neighbour(r, stamp, tz, window)
                    part.outside_day += 1
                    continue
            elif not (stamp.__class__ is str and stamp.startswith(day_prefix)
                      and len(stamp) == 19):
                stamp = _pos_stamp(stamp, tz)  # another day, or another form (ISO 8601)
                if not stamp.startswith(day_prefix):
                    check_neighbour(r, stamp, tz, window)
                    part.outside_day += 1
                    continue
            txn = r["transactionId"]
            served_for = r["location"]["id"]
            if served_for not in own and str(served_for).strip() not in own:
                raise Rejected(
                    f"receipt {txn}: field location.id is {served_for!r}, another location "
                    f"than {part.location_id}, the one this key is bound to; the partition "
                    "is rejected")
            if txn in seen:
                if r != seen[txn]:
                    raise Rejected(f"receipt {txn}: two different versions of this "
                                   f"transactionId in one answer{difference(seen[txn], r)}; "
                                   "the partition is rejected")
                dropped["receipts"] += 1
                continue
            seen[txn] = r
            keep_receipt(r)
            keep_stamp(stamp)
            ttype = r["transactionType"]
            if ttype not in KNOWN_TRANSACTION_TYPES:
                part.unknown_types[ttype] += 1
            lines = r["items"]
            if lines is None or r["payments"] is None:  # Item[], Payment[]: not nullable
                field_name = "items" if lines is None else "payments"
                raise Rejected(f"receipt {txn}: field {field_name} is null, where the spec has "
                               "an array (an empty one for none); the partition is rejected")
            if lines:
                keys: set = set()
                for item in lines:
                    key = item.get("uniqueId") or item["id"]
                    if key in keys:
                        dropped["receipt_items"] += 1
                        continue
                    keys.add(key)
                    keep_item(item)
                    keep_item_txn(txn)
                    keep_item_key(key)
                    keep_item_line(len(keys))
                    side_dishes = item.get("sideDishes")
                    if side_dishes:
                        side_keys: set = set()
                        for side in side_dishes:
                            side_key = side.get("uniqueId") or side["id"]
                            if side_key in side_keys:
                                dropped["item_side_dishes"] += 1
                                continue
                            side_keys.add(side_key)
                            keep_side(side)
                            keep_side_txn(txn)
                            keep_side_item(key)
                            keep_side_key(side_key)
            payments = r["payments"]
            if payments:
                payment_ids: set = set()
                for payment in payments:
                    pid = payment["id"]
                    if pid in payment_ids:
                        dropped["payments"] += 1
                        continue
                    payment_ids.add(pid)
                    keep_payment(payment)
                    keep_payment_txn(txn)
    return out


def _struct_paths(schema: pa.Schema) -> dict[str, tuple[str, pa.DataType]]:
    """Columns Arrow takes straight out of the wire objects: not decimals, not timestamps."""
    return {f.name: (path, f.type) for f in schema
            if (path := schemas.wire_path(f))
            and not pa.types.is_decimal(f.type) and not pa.types.is_timestamp(f.type)}


_STRUCT_COLUMNS = {name: _struct_paths(schema)
                   for name, schema in REVENUE_TABLES.items()}
_STRUCTS = {name: columns.wire_struct(paths) for name, paths in _STRUCT_COLUMNS.items()}


def _table(name: str, wire_rows: list[dict], derived: dict, what: str) -> pa.Table:
    """One lake table: derived columns as given, the rest read from the wire at its path.

    Decimals are read as their exact text (``at_path``), everything else by Arrow's
    struct conversion in one pass.
    """
    schema = REVENUE_TABLES[name]
    paths = _STRUCT_COLUMNS[name]
    try:
        values = columns.struct_columns(wire_rows, _STRUCTS[name],
                                        {col: path for col, (path, _) in paths.items()}, what)
        for f in schema:
            if f.name not in derived and f.name not in values:
                values[f.name] = columns.at_path(wire_rows, schemas.wire_path(f),
                                                 required=not f.nullable)
        values.update(derived)
        return columns.table(schema, values)
    except columns.BadValue as exc:
        if exc.index is None:
            raise
        owner = "" if what == "receipt" else f"{what} of "
        raise Rejected(f"{owner}receipt {derived['transaction_id'][exc.index]}: "
                       f"{_wire_name(schema, exc)}") from None


def _wire_name(schema: pa.Schema, exc: columns.BadValue) -> str:
    """A column's message with the field named as the POS sends it (``netAmount``)."""
    text = str(exc)
    for f in schema:
        wire = schemas.wire_path(f)
        if wire and text.startswith(f"field {f.name}:"):
            return f"field {wire}" + text[len(f"field {f.name}"):]
    return text


def build_tables(rows: _Rows, location_id: int, business_date: date,
                  tz: ZoneInfo, unknown: Counter) -> dict[str, pa.Table]:
    location = pa.scalar(location_id, pa.int32())
    day = pa.scalar(business_date, pa.date32())

    def keys(n: int, txns: list[str]) -> dict:
        return {"location_id": pa.repeat(location, n), "business_date": pa.repeat(day, n),
                "transaction_id": txns}

    rec, stamps = rows.receipts, rows.stamps
    columns.require(columns.require(rec, "paymentGroup"), "name")  # the revenue rule's (2.2)
    local = columns.wall_clock(stamps)
    receipts = _table("receipts", rec, {
        **keys(len(rec), columns.require(rec, "transactionId")),
        "date_time_local": local, "date_time_utc": columns.utc(local, tz),
        "extra_fields": extra_fields(rec, "receipts", unknown),
    }, "receipt")
    it, item_txn, item_key, item_line = rows.items, rows.item_txn, rows.item_key, rows.item_line
    books = columns.get(it, "bookDate")
    try:
        book_local = columns.wall_clock(books)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # ISO 8601 among them: convert those
        book_local = columns.wall_clock([_pos_stamp(b, tz) if b else None for b in books])
    items = _table("receipt_items", it, {
        **keys(len(it), item_txn), "item_key": item_key, "line_number": item_line,
        "book_date_local": book_local, "extra_fields": extra_fields(it, "receipt_items", unknown),
    }, "item")
    sd, side_txn, side_item, side_key = rows.sides, rows.side_txn, rows.side_item, rows.side_key
    sides = _table("item_side_dishes", sd, {
        **keys(len(sd), side_txn), "item_key": side_item, "side_dish_key": side_key,
        "extra_fields": extra_fields(sd, "item_side_dishes", unknown),
    }, "side dish")
    pay, payment_txn = rows.payments, rows.payment_txn
    payments = _table("payments", pay, {**keys(len(pay), payment_txn),
                                        "extra_fields": extra_fields(pay, "payments", unknown)},
                      "payment")
    return {"receipts": receipts, "receipt_items": items, "item_side_dishes": sides,
            "payments": payments}


def explain(pages: list[list[dict]], exc: Exception) -> str:
    """Name the receipt and the field that breaks the contract, asking the spec's model."""
    for page in pages:
        for index, receipt in enumerate(page):
            if not isinstance(receipt, dict):
                return f"receipt #{index} of its page: expected an object, got " \
                       f"{type(receipt).__name__}"
            try:
                models.Receipt.model_validate(receipt)
            except ValidationError as err:
                txn = receipt.get("transactionId")
                who = f"receipt {txn}" if isinstance(txn, str) and txn else \
                    f"receipt #{index} of its page"
                first = err.errors(include_url=False)[0]
                path = ".".join(str(p) for p in first["loc"])
                return f"{who}: field {path}: {first['msg']}"
    return f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
