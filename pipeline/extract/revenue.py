"""Revenue report pages -> the four deduplicated lake tables of one partition.

The hot path reads decoded JSON dicts directly (validating every receipt with pydantic
would cost 4x the time); when a receipt breaks the contract, the pydantic model of the
spec is asked which field is wrong, so the error names location, date and field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
from pydantic import ValidationError

from pipeline.extract import schemas
from pipeline.pos_api import models
from pipeline.pos_api.client import ClientStats
from pipeline.pos_api.errors import ContractError
from pipeline.pos_api.timestamps import local_to_utc, parse_pos_datetime, to_local_wall_clock

ORDER_MANAGER = "BestellmanagerBestellung"
KNOWN_TRANSACTION_TYPES = frozenset(
    """Bonieren Verschieben Abrechnen Stornieren RechnungZurückholen DebitBonieren ARAusstellen
    ARPreview ARNachdruck ARNachdruckOriginal Tagesabschluss TagesabschlussPreview
    Kellnerabschlag KellnerabschlagPreview KellnerabschlagUndo Kelleruebergabe Startbeleg
    Schlussbeleg Nullbeleg Monatsbeleg JahresBeleg Nacherfassungssammelbeleg TischOeffnen
    TischSchliessen GaesteanzahlAendern GaesteanzahlKorrigieren WarenkorbErstellen
    WarenkorbUpdate WarenkorbVerwerfen DatenExport UndoDatenExport Kassabuch Bargeldzählung
    TerminalKassenschnitt Lieferantabschlag LieferantabschlagVorschau Ansehen Information
    SchankanlageQrCode AbrechnenNachdruck""".split()
) | {"Abrechnen HSK", "Abrechnen AR"} | {
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


def _decimal(value) -> Decimal | int:
    """A money value as sent: JSON number (Decimal/int) or a numeric string."""
    t = type(value)
    if t is Decimal or t is int:
        return value
    if t is str:
        try:
            return Decimal(value)
        except InvalidOperation:
            raise ValueError(f"not a decimal: {value!r}") from None
    if value is None:
        return None
    raise ValueError(f"not a decimal: {value!r}")


class _Columns:
    """Column lists of one table, filled row by row."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.names = schema.names
        self.data: dict[str, list] = {n: [] for n in self.names}

    def table(self, where: str) -> pa.Table:
        arrays = []
        for f in self.schema:
            values = self.data[f.name]
            try:
                arrays.append(pa.array(values, type=f.type))
            except pa.ArrowTypeError:
                arrays.append(pa.array([_decimal(v) for v in values], type=f.type))
            except pa.ArrowInvalid as exc:
                raise ValueError(f"{where}: field {f.name}: {exc}") from None
        return pa.Table.from_arrays(arrays, schema=self.schema)


def flatten_receipts(
    pages: Iterable[list[dict]], *, location_id: int, business_date: date, tz: ZoneInfo,
) -> RevenuePartition:
    """Flatten and deduplicate receipts into the four tables of one partition.

    Receipts are kept when their local ``dateTime`` falls on ``business_date`` and are
    deduplicated on transactionId; item lines on (transactionId, uniqueId or id); side
    dishes on uniqueId (or id) within their item; payments on payment id.
    """
    where = f"location {location_id}, business date {business_date.isoformat()}"
    part = RevenuePartition(location_id, business_date, {})
    receipts = _Columns(schemas.RECEIPTS)
    items = _Columns(schemas.RECEIPT_ITEMS)
    sides = _Columns(schemas.ITEM_SIDE_DISHES)
    payments = _Columns(schemas.PAYMENTS)
    R, I, S, P = receipts.data, items.data, sides.data, payments.data
    seen_receipts: set[str] = set()
    dropped = part.duplicates_dropped
    turnover = Decimal(0)
    for page in pages:
        for index, r in enumerate(page):
            part.receipts_seen += 1
            try:
                txn = r["transactionId"]
                local = parse_pos_datetime(r["dateTime"])
                if local.tzinfo is not None:
                    local = to_local_wall_clock(local, tz)
                if local.date() != business_date:
                    part.outside_day += 1
                    continue
                if txn in seen_receipts:
                    dropped["receipts"] += 1
                    continue
                if not isinstance(txn, str) or not txn:
                    raise ValueError("transactionId must be a non-empty string")
                seen_receipts.add(txn)
                ttype = r["transactionType"]
                if ttype not in KNOWN_TRANSACTION_TYPES:
                    part.unknown_types[ttype] += 1
                group = r["paymentGroup"]
                counts_for_turnover = ttype in TURNOVER_TYPES and group["name"] == TURNOVER_GROUP
                _receipt_row(R, r, location_id, business_date, txn, ttype, local, tz, group)
                receipt_net = _item_rows(I, S, r, location_id, business_date, txn, dropped)
                if counts_for_turnover:
                    turnover += receipt_net
                seen_payments: set[str] = set()
                for pay in r["payments"] or ():
                    pid = pay["id"]
                    if pid in seen_payments:
                        dropped["payments"] += 1
                        continue
                    seen_payments.add(pid)
                    ptype = pay["paymentType"]
                    P["location_id"].append(location_id)
                    P["business_date"].append(business_date)
                    P["transaction_id"].append(txn)
                    P["payment_id"].append(pid)
                    P["amount"].append(_decimal(pay["amount"]))
                    P["payment_type_id"].append(ptype.get("id"))
                    P["payment_type_nr"].append(ptype.get("nr"))
                    P["payment_type_name"].append(ptype.get("name"))
                    P["fibu_account_nr"].append(pay.get("fibuAccountNr"))
            except (KeyError, TypeError, ValueError, AttributeError, InvalidOperation) as exc:
                raise ContractError(f"{where}: {_explain(r, index, exc)}",
                                    location_id=location_id) from None
    part.turnover_net = turnover
    try:
        part.tables = {
            "receipts": receipts.table(where),
            "receipt_items": items.table(where),
            "item_side_dishes": sides.table(where),
            "payments": payments.table(where),
        }
    except ValueError as exc:
        raise ContractError(str(exc), location_id=location_id) from None
    return part


def _receipt_row(R, r, location_id, business_date, txn, ttype, local, tz, group) -> None:
    business, loc, staff = r["business"] or {}, r["location"] or {}, r["staff"] or {}
    table, area, customer = r["table"] or {}, r["area"] or {}, r.get("customer") or {}
    R["location_id"].append(location_id)
    R["business_date"].append(business_date)
    R["transaction_id"].append(txn)
    R["transaction_type"].append(ttype)
    R["receipt_type"].append(r.get("receiptType"))
    R["total_amount"].append(_decimal(r["totalAmount"]))
    R["tip"].append(_decimal(r.get("tip")))
    R["discount"].append(_decimal(r.get("discount")))
    R["date_time_local"].append(local)
    R["date_time_utc"].append(local_to_utc(local, tz))
    R["business_id"].append(business.get("id"))
    R["business_name"].append(business.get("name"))
    R["resolved_location_id"].append(loc.get("id"))
    R["resolved_location_name"].append(loc.get("name"))
    R["staff_id"].append(staff.get("id"))
    R["staff_number"].append(staff.get("number"))
    R["staff_name"].append(staff.get("name"))
    R["table_id"].append(table.get("id"))
    R["table_number"].append(table.get("number"))
    R["table_name"].append(table.get("name"))
    R["area_id"].append(area.get("id"))
    R["area_number"].append(area.get("number"))
    R["area_name"].append(area.get("name"))
    R["customer_id"].append(customer.get("id"))
    R["customer_number"].append(customer.get("number"))
    R["customer_name"].append(customer.get("name"))
    R["payment_group_id"].append(group.get("id"))
    R["payment_group_name"].append(group.get("name"))
    R["guest_count"].append(r.get("guestCount") or 0)


def _item_rows(I, S, r, location_id, business_date, txn, dropped) -> Decimal:
    """Append the receipt's distinct item lines and side dishes; return sum(net * quantity)."""
    seen: set[str] = set()
    receipt_net = Decimal(0)
    for item in r["items"] or ():
        key = item.get("uniqueId") or item["id"]
        if key in seen:
            dropped["receipt_items"] += 1
            continue
        seen.add(key)
        net, qty = _decimal(item["netAmount"]), _decimal(item["quantity"])
        receipt_net += net * qty
        tax, cat = item.get("tax") or {}, item.get("category") or {}
        book = item.get("bookDate")
        I["location_id"].append(location_id)
        I["business_date"].append(business_date)
        I["transaction_id"].append(txn)
        I["item_key"].append(key)
        I["line_number"].append(len(seen))
        I["item_id"].append(item["id"])
        I["unique_id"].append(item.get("uniqueId"))
        I["external_id"].append(item.get("externalId"))
        I["product_number"].append(item.get("number"))
        I["name"].append(item.get("name"))
        I["book_date_local"].append(parse_pos_datetime(book) if book else None)
        I["gross_amount"].append(_decimal(item["grossAmount"]))
        I["net_amount"].append(net)
        I["purchase_price"].append(_decimal(item.get("purchasePrice")))
        I["quantity"].append(qty)
        I["course"].append(item.get("course"))
        I["tax_id"].append(tax.get("id"))
        I["tax_rate_percent"].append(_decimal(tax.get("value")))
        I["tax_name"].append(tax.get("name"))
        I["category_id"].append(cat.get("id"))
        I["category_number"].append(cat.get("number"))
        I["category_name"].append(cat.get("name"))
        side_seen: set[str] = set()
        for side in item.get("sideDishes") or ():
            side_key = side.get("uniqueId") or side["id"]
            if side_key in side_seen:
                dropped["item_side_dishes"] += 1
                continue
            side_seen.add(side_key)
            S["location_id"].append(location_id)
            S["business_date"].append(business_date)
            S["transaction_id"].append(txn)
            S["item_key"].append(key)
            S["side_dish_key"].append(side_key)
            S["side_dish_id"].append(side.get("id"))
            S["unique_id"].append(side.get("uniqueId"))
            S["product_number"].append(side.get("number"))
            S["name"].append(side.get("name"))
            S["gross_amount"].append(_decimal(side.get("grossAmount")))
            S["net_amount"].append(_decimal(side.get("netAmount")))
            S["quantity"].append(_decimal(side.get("quantity")))
    return receipt_net


def _explain(receipt, index: int, exc: Exception) -> str:
    """Name the receipt and the field that breaks the contract, asking the spec's model."""
    txn = receipt.get("transactionId") if isinstance(receipt, dict) else None
    who = f"receipt {txn}" if txn else f"receipt #{index} of its page"
    if not isinstance(receipt, dict):
        return f"{who}: expected an object, got {type(receipt).__name__}"
    try:
        models.Receipt.model_validate(receipt)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        path = ".".join(str(p) for p in first["loc"])
        return f"{who}: field {path}: {first['msg']}"
    detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
    return f"{who}: {detail}"


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
