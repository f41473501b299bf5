"""Revenue report pages -> the four deduplicated lake tables of one partition.

The hot path reads decoded JSON dicts directly (validating every receipt with pydantic
would cost 4x the time); when a receipt breaks the contract, the pydantic model of the
spec is asked which field is wrong, so the error names location, date and field.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from pipeline.extract import columns, schemas
from pipeline.pos_api import models
from pipeline.pos_api.client import ClientStats
from pipeline.pos_api.errors import ContractError
from pipeline.pos_api.timestamps import (
    format_pos_datetime,
    parse_pos_datetime,
    to_local_wall_clock,
)

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
TURNOVER_GROUP = "Umsatzwirksam"
TURNOVER_TYPES = frozenset({"Abrechnen", "RechnungZurückholen"})


@dataclass
class RevenuePartition:
    """The four tables of one location and business date, plus what a person checks first."""

    location_id: int
    business_date: date
    tables: dict[str, pa.Table]
    receipts_seen: int = 0
    duplicates_dropped: Counter = field(default_factory=Counter)
    outside_day: int = 0
    unknown_types: Counter = field(default_factory=Counter)
    turnover_net: Decimal = Decimal(0)
    stats: ClientStats | None = None
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: t.num_rows for name, t in self.tables.items()}


def request_window(day: date, tz: ZoneInfo, margin: timedelta) -> tuple[datetime, datetime]:
    """The (after, before) window to ask for: the local day widened by ``margin`` each side.

    Both bounds are exclusive on the server and clocks differ, so the window is wider
    than the day; the day's own receipts are picked out afterwards.
    """
    start = datetime(day.year, day.month, day.day, tzinfo=tz)
    end = start.replace(tzinfo=None) + timedelta(days=1)
    return start - margin, end.replace(tzinfo=tz) + margin


def _pos_stamp(value, tz: ZoneInfo) -> str:
    """A timestamp in the served form; ISO 8601 values are converted to local wall clock."""
    if value.__class__ is str and len(value) == 19 and value[2] == "." and value[5] == ".":
        return value
    return format_pos_datetime(to_local_wall_clock(parse_pos_datetime(value), tz))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cycle collector while a partition's JSON is decoded and flattened.

    Decoded JSON holds no reference cycles, but its many new containers trigger full
    collections that scan everything alive; pausing them doubles decode speed. Only the
    caller that found the collector on switches it back on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def flatten_receipts(
    pages: Iterable[list[dict]], *, location_id: int, business_date: date, tz: ZoneInfo,
) -> RevenuePartition:
    """Flatten and deduplicate receipts into the four tables of one partition.

    Receipts are kept when their local ``dateTime`` falls on ``business_date`` and are
    deduplicated on transactionId; item lines on (transactionId, uniqueId or id); side
    dishes on uniqueId (or id) within their item; payments on payment id within their
    receipt. Money and quantities may arrive as JSON numbers (text or Decimal) or numeric
    strings; they are cast to DECIMAL from their text.
    """
    where = f"location {location_id}, business date {business_date.isoformat()}"
    part = RevenuePartition(location_id, business_date, {})
    seen_pages: list[list[dict]] = []
    try:
        with _gc_paused():
            rows = _select_and_dedupe(pages, seen_pages, part, business_date, tz)
            part.tables = _build_tables(rows, location_id, business_date, tz)
            part.turnover_net = _turnover(part.tables["receipt_items"], rows.item_revenue)
            # Free the decoded JSON while the collector is still paused: the collection it
            # has put off then finds little alive to scan.
            del rows
            seen_pages.clear()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ContractError(f"{where}: {_explain(seen_pages, exc)}",
                            location_id=location_id) from None
    return part


@dataclass
class _Rows:
    receipts: list[dict] = field(default_factory=list)
    stamps: list[str] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    item_txn: list[str] = field(default_factory=list)
    item_key: list[str] = field(default_factory=list)
    item_line: list[int] = field(default_factory=list)
    item_revenue: list[bool] = field(default_factory=list)
    sides: list[dict] = field(default_factory=list)
    side_txn: list[str] = field(default_factory=list)
    side_item: list[str] = field(default_factory=list)
    side_key: list[str] = field(default_factory=list)
    payments: list[dict] = field(default_factory=list)
    payment_txn: list[str] = field(default_factory=list)


def _select_and_dedupe(pages, seen_pages, part: RevenuePartition, business_date: date,
                       tz: ZoneInfo) -> _Rows:
    """One pass over the receipts: keep the day's, drop repeats at every level."""
    day_prefix = business_date.strftime("%d.%m.%Y")
    out = _Rows()
    seen: set = set()
    dropped = part.duplicates_dropped
    keep_receipt, keep_stamp = out.receipts.append, out.stamps.append
    keep_item, item_txn, item_key = out.items.append, out.item_txn.append, out.item_key.append
    item_line, item_revenue = out.item_line.append, out.item_revenue.append
    keep_side, side_txn = out.sides.append, out.side_txn.append
    side_item, side_key_of = out.side_item.append, out.side_key.append
    keep_payment, payment_txn = out.payments.append, out.payment_txn.append
    for page in pages:
        seen_pages.append(page)
        part.receipts_seen += len(page)
        for r in page:
            stamp = r["dateTime"]
            if not (stamp.__class__ is str and stamp.startswith(day_prefix)
                    and len(stamp) == 19):
                stamp = _pos_stamp(stamp, tz)  # another day, or another form (ISO 8601)
                if not stamp.startswith(day_prefix):
                    part.outside_day += 1
                    continue
            txn = r["transactionId"]
            if txn in seen:
                dropped["receipts"] += 1
                continue
            seen.add(txn)
            keep_receipt(r)
            keep_stamp(stamp)
            ttype = r["transactionType"]
            if ttype not in KNOWN_TRANSACTION_TYPES:
                part.unknown_types[ttype] += 1
            group_name = r["paymentGroup"]["name"]
            lines = r["items"]
            if lines:
                revenue = ttype in TURNOVER_TYPES and group_name == TURNOVER_GROUP
                keys: set = set()
                for item in lines:
                    key = item.get("uniqueId") or item["id"]
                    if key in keys:
                        dropped["receipt_items"] += 1
                        continue
                    keys.add(key)
                    keep_item(item)
                    item_txn(txn)
                    item_key(key)
                    item_line(len(keys))
                    item_revenue(revenue)
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
                            side_txn(txn)
                            side_item(key)
                            side_key_of(side_key)
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
                    payment_txn(txn)
    return out


S, I32 = pa.string(), pa.int32()
_REF = pa.struct([("id", S), ("number", I32), ("name", S)])
# Non-decimal fields are converted by Arrow straight from the decoded dicts (extra keys
# ignored, missing ones null); decimals go through ``_text_numbers``. Lake column ->
# path in the wire object.
_RECEIPT_STRUCT = pa.struct([
    ("transactionType", S), ("receiptType", S), ("guestCount", I32),
    ("business", _REF), ("location", _REF), ("staff", _REF), ("table", _REF),
    ("area", _REF), ("customer", _REF), ("paymentGroup", pa.struct([("id", I32), ("name", S)])),
])
_RECEIPT_FIELDS = {
    "transaction_type": "transactionType", "receipt_type": "receiptType",
    "business_id": "business.id", "business_name": "business.name",
    "resolved_location_id": "location.id", "resolved_location_name": "location.name",
    "staff_id": "staff.id", "staff_number": "staff.number", "staff_name": "staff.name",
    "table_id": "table.id", "table_number": "table.number", "table_name": "table.name",
    "area_id": "area.id", "area_number": "area.number", "area_name": "area.name",
    "customer_id": "customer.id", "customer_number": "customer.number",
    "customer_name": "customer.name",
    "payment_group_id": "paymentGroup.id", "payment_group_name": "paymentGroup.name",
    "guest_count": "guestCount",
}
_ITEM_STRUCT = pa.struct([
    ("id", S), ("number", I32), ("name", S), ("uniqueId", S), ("externalId", S),
    ("course", I32), ("tax", pa.struct([("id", S), ("name", S)])), ("category", _REF),
])
_ITEM_FIELDS = {
    "item_id": "id", "unique_id": "uniqueId", "external_id": "externalId",
    "product_number": "number", "name": "name", "course": "course",
    "tax_id": "tax.id", "tax_name": "tax.name", "category_id": "category.id",
    "category_number": "category.number", "category_name": "category.name",
}
_SIDE_STRUCT = pa.struct([("id", S), ("uniqueId", S), ("number", I32), ("name", S)])
_SIDE_FIELDS = {"side_dish_id": "id", "unique_id": "uniqueId", "product_number": "number",
                "name": "name"}
_PAYMENT_STRUCT = pa.struct([
    ("id", S), ("fibuAccountNr", S),
    ("paymentType", pa.struct([("id", I32), ("nr", I32), ("name", S)])),
])
_PAYMENT_FIELDS = {"payment_id": "id", "fibu_account_nr": "fibuAccountNr",
                   "payment_type_id": "paymentType.id", "payment_type_nr": "paymentType.nr",
                   "payment_type_name": "paymentType.name"}


def _build_tables(rows: _Rows, location_id: int, business_date: date,
                  tz: ZoneInfo) -> dict[str, pa.Table]:
    location = pa.scalar(location_id, pa.int32())
    day = pa.scalar(business_date, pa.date32())

    def keys(n: int, txns: list[str]) -> dict:
        return {"location_id": pa.repeat(location, n), "business_date": pa.repeat(day, n),
                "transaction_id": txns}

    rec = rows.receipts
    local = columns.wall_clock(rows.stamps)
    receipt_cols = columns.struct_columns(rec, _RECEIPT_STRUCT, _RECEIPT_FIELDS, "receipt")
    receipt_cols["guest_count"] = pc.fill_null(receipt_cols["guest_count"], 0)
    receipts = columns.table(schemas.RECEIPTS, {
        **keys(len(rec), columns.require(rec, "transactionId")), **receipt_cols,
        "total_amount": columns.require(rec, "totalAmount"),
        "tip": columns.get(rec, "tip"), "discount": columns.get(rec, "discount"),
        "date_time_local": local, "date_time_utc": columns.utc(local, tz),
    })
    it = rows.items
    tax = columns.get(it, "tax")
    books = columns.get(it, "bookDate")
    try:
        book_local = columns.wall_clock(books)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # ISO 8601 among them: convert those
        book_local = columns.wall_clock([_pos_stamp(b, tz) if b else None for b in books])
    items = columns.table(schemas.RECEIPT_ITEMS, {
        **keys(len(it), rows.item_txn),
        **columns.struct_columns(it, _ITEM_STRUCT, _ITEM_FIELDS, "item"),
        "item_key": rows.item_key, "line_number": rows.item_line,
        "book_date_local": book_local,
        "gross_amount": columns.require(it, "grossAmount"),
        "net_amount": columns.require(it, "netAmount"),
        "purchase_price": columns.get(it, "purchasePrice"),
        "quantity": columns.require(it, "quantity"),
        "tax_rate_percent": columns.sub(tax, "value"),
    })
    sd = rows.sides
    sides = columns.table(schemas.ITEM_SIDE_DISHES, {
        **keys(len(sd), rows.side_txn),
        **columns.struct_columns(sd, _SIDE_STRUCT, _SIDE_FIELDS, "side dish"),
        "item_key": rows.side_item, "side_dish_key": rows.side_key,
        "gross_amount": columns.get(sd, "grossAmount"), "net_amount": columns.get(sd, "netAmount"),
        "quantity": columns.get(sd, "quantity"),
    })
    pay = rows.payments
    payments = columns.table(schemas.PAYMENTS, {
        **keys(len(pay), rows.payment_txn),
        **columns.struct_columns(pay, _PAYMENT_STRUCT, _PAYMENT_FIELDS, "payment"),
        "amount": columns.require(pay, "amount"),
    })
    return {"receipts": receipts, "receipt_items": items, "item_side_dishes": sides,
            "payments": payments}


def _turnover(items: pa.Table, revenue: list[bool]) -> Decimal:
    """The spec's revenue-effective turnover of the partition: sum of net * quantity."""
    if not items.num_rows:
        return Decimal(0)
    kept = items.filter(pa.array(revenue, pa.bool_()))
    total = pc.sum(pc.multiply(kept["net_amount"], kept["quantity"])).as_py()
    return Decimal(0) if total is None else Decimal(format(total.normalize(), "f"))


def _explain(pages: list[list[dict]], exc: Exception) -> str:
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


def extract_revenue_partition(source, location_id: int, business_date: date) -> RevenuePartition:
    """Page through one location's revenue report around one business date and flatten it."""
    settings = source.settings
    loc = settings.location(location_id)
    after, before = request_window(business_date, loc.tz,
                                   timedelta(minutes=settings.source.window_margin_minutes))
    with source.client(location_id) as client:
        part = flatten_receipts(client.receipt_pages(after, before), location_id=location_id,
                                business_date=business_date, tz=loc.tz)
        part.stats = client.stats
    return part


def load_revenue_partition(source, location_id: int, business_date: date) -> RevenuePartition:
    """Extract one partition and replace it in the lake (all four tables, atomically)."""
    from pipeline import lake

    part = extract_revenue_partition(source, location_id, business_date)
    part.paths = lake.write_partitions(
        source.settings.warehouse.lake_dir,
        part.tables,
        {"location_id": location_id, "business_date": business_date.isoformat()},
        metadata={"pos_etl.receipts_seen": part.receipts_seen,
                  "pos_etl.turnover_net": part.turnover_net},
    )
    return part
