"""Revenue report pages -> the four deduplicated lake tables of one partition.

The hot path reads decoded JSON dicts directly (validating every receipt with pydantic
would cost 4x the time); when a receipt breaks the contract, the pydantic model of the
spec is asked which field is wrong, so the error names location, date and field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from pipeline.extract import columnar, columns, schemas
from pipeline.extract.contract import (
    Rejected,
    check_neighbour,
    difference,
    extra_fields,
    refuse_keys,
)
from pipeline.pos_api import models
from pipeline.pos_api.client import ClientStats, ReceiptPage
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
LINE_TOTAL_LIMIT = Decimal(10) ** 26
"""A partition's lines (net and gross times quantity) must add up to less: the warehouse
sums lines as DECIMAL(38,8), which then holds any sum over 10,000 location-days."""


@dataclass
class RevenuePartition:
    """The four tables of one location and business date, plus what a person checks first."""

    location_id: int
    business_date: date
    tables: dict[str, pa.Table]
    receipts_seen: int = 0
    duplicates_dropped: Counter = field(default_factory=Counter)
    outside_day: int = 0
    """Receipts of the window's margin, the neighbouring business days': skipped."""
    unknown_types: Counter = field(default_factory=Counter)
    unknown_fields: Counter = field(default_factory=Counter)
    """Fields the spec does not name, as ``table.field``: rows that carried each (kept in
    the table's ``extra_fields``)."""
    turnover_net: Decimal | None = None
    """Its revenue-effective turnover, by the revenue macros: set for a commit's partitions
    at once (``pipeline.load.commits.with_turnovers``), not by the extraction."""
    stats: ClientStats | None = None
    provisional: bool = False
    """Fetched before the business day was over at its location (its day under way): the
    lake marks it, the books leave it out, and the next load once it is over replaces it."""

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: t.num_rows for name, t in self.tables.items()}


MIDNIGHT = time(0)


def request_window(day: date, tz: ZoneInfo, margin: timedelta,
                   starts: time = MIDNIGHT) -> tuple[datetime, datetime]:
    """The (after, before) window to ask for: the business day (from ``starts`` on ``day``
    to ``starts`` the next day, local wall clock) widened by ``margin`` each side.

    Both bounds are exclusive on the server and clocks differ, so the window is wider
    than the day; the day's own receipts are picked out afterwards. The margin also
    covers a cut-off that falls into a skipped or repeated hour.
    """
    start = datetime.combine(day, starts, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), starts, tzinfo=tz)
    return start - margin, end + margin


def _pos_stamp(value, tz: ZoneInfo) -> str:
    """A timestamp in the served form; ISO 8601 values are converted to local wall clock."""
    if value.__class__ is str and len(value) == 19 and value[2] == "." and value[5] == ".":
        return value
    return format_pos_datetime(to_local_wall_clock(parse_pos_datetime(value), tz))


def flatten_receipts(
    pages: Iterable[list[dict] | ReceiptPage], *, location_id: int, business_date: date,
    tz: ZoneInfo, short_code: str | None = None, day_starts: time = MIDNIGHT,
    window: tuple[datetime, datetime] | None = None,
) -> RevenuePartition:
    """Flatten and deduplicate receipts into the four tables of one partition.

    ``pages`` as the client gives them (``ReceiptPage``) are read column-wise
    (``columnar.flatten_pages``) when they are plain, else receipt by receipt, as pages
    of decoded dicts are; both make the same tables.

    Receipts are kept when their local ``dateTime`` falls into the business day: from
    ``day_starts`` on ``business_date`` (wall clock) until ``day_starts`` the next day, so
    with the default midnight the calendar date. They are deduplicated on transactionId;
    item lines on (transactionId, uniqueId or id); side dishes on uniqueId (or id) within
    their item; payments on payment id within their receipt. Money and quantities may
    arrive as JSON numbers (text or Decimal) or numeric strings; they are cast to DECIMAL
    from their text, checked (a value that does not fit fails, it never wraps).

    Nothing vanishes in silence; these reject the partition, naming the receipt and field:
    a ``location.id`` that is neither the location's id nor its short code (the key is
    bound to one location, so it is another location's data); two different versions of
    one ``transactionId`` (identical repeats are dropped and counted); a stamp of another
    day that is no real date or lies outside the requested ``window`` (more than
    ``NEIGHBOUR_SLACK`` beyond it). Receipts of the neighbouring days from the window's
    margin are skipped and counted (``outside_day``).
    """
    where = f"location {location_id}, business date {business_date.isoformat()}"
    part = RevenuePartition(location_id, business_date, {})
    seen_pages: list[list[dict]] = []
    try:
        own = {str(location_id), short_code} - {None}
        pages = list(pages)
        if pages and all(isinstance(p, ReceiptPage) for p in pages):
            part.tables = _columnar(pages, part, own, tz, day_starts, window)
            if not part.tables:  # receipt by receipt, from the pages decoded
                pages = [p.rows() for p in pages]
        if not part.tables:
            rows = _select_and_dedupe(pages, seen_pages, part, business_date, tz, own,
                                      day_starts, window)
            part.tables = _build_tables(rows, location_id, business_date, tz,
                                        part.unknown_fields)
        _guests_default(part.tables)
        _check_line_total(part.tables["receipt_items"])  # no sum of the warehouse wraps
    except Rejected as exc:
        raise ContractError(f"{where}: {exc}", location_id=location_id) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ContractError(f"{where}: {_explain(seen_pages, exc)}",
                            location_id=location_id) from None
    return part


def _columnar(pages: list[ReceiptPage], part: RevenuePartition, own: set[str],
              tz: ZoneInfo, day_starts: time, window) -> dict[str, pa.Table]:
    """The partition's tables read column-wise, its counts set; empty when the pages are
    not plain (``columnar.NotPlain``)."""
    if any(p.receipts is None for p in pages):
        return {}
    try:
        done = columnar.flatten_pages(
            [p.receipts for p in pages], location_id=part.location_id, own=own,
            known_types=KNOWN_TRANSACTION_TYPES, business_date=part.business_date, tz=tz,
            day_starts=day_starts, window=window)
    except columnar.NotPlain:
        return {}
    part.receipts_seen, part.outside_day = done.receipts_seen, done.outside_day
    part.duplicates_dropped.update(+done.dropped)  # the counts above 0
    part.unknown_types.update(done.unknown_types)
    return done.tables


def _guests_default(tables: dict[str, pa.Table]) -> None:
    """Spec 2.1: guestCount is 0 when not recorded."""
    receipts = tables["receipts"]
    at = receipts.schema.get_field_index("guest_count")
    tables["receipts"] = receipts.set_column(at, receipts.schema.field(at),
                                             pc.fill_null(receipts["guest_count"], 0))


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


def _select_and_dedupe(pages, seen_pages, part: RevenuePartition, business_date: date,
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
                   for name, schema in schemas.REVENUE_TABLES.items()}
_STRUCTS = {name: columns.wire_struct(paths) for name, paths in _STRUCT_COLUMNS.items()}


def _table(name: str, wire_rows: list[dict], derived: dict, what: str) -> pa.Table:
    """One lake table: derived columns as given, the rest read from the wire at its path.

    Decimals are read as their exact text (``at_path``), everything else by Arrow's
    struct conversion in one pass.
    """
    schema = schemas.REVENUE_TABLES[name]
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


def _build_tables(rows: _Rows, location_id: int, business_date: date,
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


def _largest(column: pa.ChunkedArray) -> Decimal:
    low, high = pc.min_max(column).values()
    return max(abs(low.as_py() or 0), abs(high.as_py() or 0))


def _check_line_total(items: pa.Table) -> None:
    """Refuse a partition whose lines add up to ``LINE_TOTAL_LIMIT`` or more.

    The bound rows x largest amount x largest quantity decides almost always at no cost;
    only above it are the lines summed exactly.
    """
    quantity = _largest(items["quantity"])
    amount = max(_largest(items["net_amount"]), _largest(items["gross_amount"]))
    if items.num_rows * amount * quantity < LINE_TOTAL_LIMIT:
        return
    lines = items.select(["transaction_id", "net_amount", "gross_amount", "quantity"])
    total, worst = Decimal(0), (Decimal(-1), "", "")
    for row in lines.to_pylist():
        for name in ("net_amount", "gross_amount"):
            line = abs(row[name] * row["quantity"])
            total += line
            worst = max(worst, (line, row["transaction_id"], name))
    if total >= LINE_TOTAL_LIMIT:
        raise ValueError(f"item of receipt {worst[1]}: field {worst[2]} x quantity = "
                         f"{worst[0]}: the day's lines add up to {total:.4E}, more than the "
                         f"warehouse can sum ({LINE_TOTAL_LIMIT:.0E})")


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
    under_way = loc.business_date_at(datetime.now(UTC)) <= business_date
    after, before = request_window(business_date, loc.tz,
                                   timedelta(minutes=settings.source.window_margin_minutes),
                                   loc.day_starts)
    with source.client(location_id) as client:
        part = flatten_receipts(client.receipt_answers(after, before), location_id=location_id,
                                business_date=business_date, tz=loc.tz,
                                short_code=loc.short_code, day_starts=loc.day_starts,
                                window=(after, before))
        part.stats = client.stats
    part.provisional = under_way
    refuse_keys(source, part.tables, f"location {location_id} business date {business_date}",
                location_id)
    return part
