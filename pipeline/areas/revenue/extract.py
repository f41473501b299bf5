"""Revenue report pages -> the four deduplicated lake tables of one partition.

A partition's answers are read column-wise (``columnar``) where they are plain, else
receipt by receipt (``by_receipt``), which names what is wrong with them; both make the
same tables. Then the checks that hold for either: the lines' total, keys in the data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.areas.revenue import columnar
from pipeline.areas.revenue.by_receipt import (
    KNOWN_TRANSACTION_TYPES,
    MIDNIGHT,
    build_tables,
    explain,
    select_and_dedupe,
)
from pipeline.areas.revenue.contract import Rejected
from pipeline.extract.keys import may_carry_keys, refuse_keys
from pipeline.pos_api.answers import ReceiptPage
from pipeline.pos_api.client import ClientStats
from pipeline.pos_api.errors import ContractError

TABLES_TOGETHER = 16
"""Partitions read whose tables a load makes at once (``make_tables``): a partition's
fixed cost of some hundred Arrow calls is paid once for them all, and what waits for it
(the parsed receipts and their pages) stays small (32 held some 30 MB more at a 365-day
backfill's peak)."""
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
    at once (``pipeline.areas.revenue.commits.with_turnovers``), not by the extraction."""
    stats: ClientStats | None = None
    provisional: bool = False
    """Fetched before the business day was over at its location (its day under way): the
    lake marks it, the books leave it out, and the next load once it is over replaces it."""
    pending: _Pending | None = None
    """Read column-wise, its tables (and counts) not made yet: ``make_tables``."""

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: t.num_rows for name, t in self.tables.items()}


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


def flatten_receipts(
    pages: Iterable[list[dict] | ReceiptPage], *, location_id: int, business_date: date,
    tz: ZoneInfo, short_code: str | None = None, day_starts: time = MIDNIGHT,
    window: tuple[datetime, datetime] | None = None, defer: bool = False,
) -> RevenuePartition:
    """Flatten and deduplicate receipts into the four tables of one partition.

    ``pages`` as the client gives them (``ReceiptPage``) are read column-wise
    (``columnar``) when they are plain, else receipt by receipt, as pages of decoded dicts
    are; both make the same tables. With ``defer``, a partition read column-wise is
    selected and checked here, and its tables (and counts) are made later together with
    other partitions' (``make_tables``).

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
    where = dict(location_id=location_id, business_date=business_date, tz=tz,
                 short_code=short_code, day_starts=day_starts, window=window)
    own = {str(location_id), short_code} - {None}
    pages = list(pages)
    if pages and all(isinstance(p, ReceiptPage) and p.receipts is not None for p in pages):
        try:
            selected = columnar.select_pages(
                [p.receipts for p in pages], location_id=location_id, own=own,
                known_types=KNOWN_TRANSACTION_TYPES, business_date=business_date, tz=tz,
                day_starts=day_starts, window=window)
        except columnar.NotPlain:
            selected = None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # as either reading's
            raise ContractError(f"{_where(location_id, business_date)}: {explain([], exc)}",
                                location_id=location_id) from None
        if selected is not None:
            part = RevenuePartition(location_id, business_date, {})
            part.pending = _Pending(selected, lambda: _by_receipt(pages, own, **where))
            if not defer:
                _made(part, columnar.flatten_many([selected])[0])
            return part
    return _by_receipt(pages, own, **where)


def _by_receipt(pages: list[list[dict] | ReceiptPage], own: set[str], *, location_id: int,
                business_date: date, tz: ZoneInfo, short_code: str | None,
                day_starts: time, window) -> RevenuePartition:
    """The partition receipt by receipt, from the pages decoded."""
    part = RevenuePartition(location_id, business_date, {})
    seen_pages: list[list[dict]] = []
    try:
        pages = [p.rows() if isinstance(p, ReceiptPage) else p for p in pages]
        rows = select_and_dedupe(pages, seen_pages, part, business_date, tz, own,
                                  day_starts, window)
        part.tables = build_tables(rows, location_id, business_date, tz, part.unknown_fields)
        _checked(part.tables)
    except Rejected as exc:
        raise ContractError(f"{_where(location_id, business_date)}: {exc}",
                            location_id=location_id) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ContractError(f"{_where(location_id, business_date)}: {explain(seen_pages, exc)}",
                            location_id=location_id) from None
    return part


@dataclass
class _Pending:
    """A partition read column-wise whose tables are not made yet."""

    selected: columnar.Selected
    by_receipt: Callable[[], RevenuePartition]
    """The same pages flattened receipt by receipt: where its tables cannot be made
    column-wise, that path makes them or names what is wrong."""


def _where(location_id: int, business_date: date) -> str:
    return f"location {location_id}, business date {business_date.isoformat()}"


def _checked(tables: dict[str, pa.Table]) -> None:
    """The checks either reading's tables pass (and guestCount's default)."""
    _guests_default(tables)
    _check_line_total(tables["receipt_items"])  # no sum of the warehouse wraps


def _made(part: RevenuePartition, made: columnar.Flattened | Exception) -> None:
    """``part``'s tables and counts from what ``columnar.flatten_many`` made of it; when it
    could not, from its pages receipt by receipt (a ``ContractError`` naming the field)."""
    pending, part.pending = part.pending, None
    if isinstance(made, columnar.NotPlain):
        again = pending.by_receipt()
        for name in ("tables", "receipts_seen", "duplicates_dropped", "outside_day",
                     "unknown_types", "unknown_fields"):
            setattr(part, name, getattr(again, name))
        return
    try:
        if isinstance(made, Exception):
            raise made
        _checked(made.tables)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ContractError(f"{_where(part.location_id, part.business_date)}: "
                            f"{explain([], exc)}",
                            location_id=part.location_id) from None
    part.tables, part.receipts_seen = made.tables, made.receipts_seen
    part.outside_day = made.outside_day
    part.duplicates_dropped.update(+made.dropped)  # the counts above 0
    part.unknown_types.update(made.unknown_types)


def tables_due(parts: list[RevenuePartition]) -> bool:
    """Whether ``TABLES_TOGETHER`` of ``parts`` wait for their tables (``make_tables``)."""
    return sum(part.pending is not None for part in parts) >= TABLES_TOGETHER


def make_tables(source, parts: list[RevenuePartition]) -> list[ContractError | None]:
    """The tables of the partitions among ``parts`` whose making ``flatten_receipts(defer=
    True)`` left for later, made at once (``columnar.flatten_many``), each then checked
    as every partition is (``refuse_keys``: no key in them; one pass over all partitions
    of a key, each asked alone only where that finds one). Each partition's error, or
    None: a partition that fails fails alone."""
    pending = [part for part in parts if part.pending is not None]
    made = dict(zip(map(id, pending), columnar.flatten_many(
        [part.pending.selected for part in pending]), strict=True))
    errors: list[ContractError | None] = []
    checked: dict[str | None, list[int]] = {}  # key pattern -> the made partitions
    for n, part in enumerate(parts):
        try:
            if id(part) in made:
                _made(part, made[id(part)])
                checked.setdefault(source.key_pattern(part.location_id), []).append(n)
            errors.append(None)
        except ContractError as exc:
            errors.append(exc)
    for pattern, members in checked.items():  # one pass over each key's partitions
        if not may_carry_keys([parts[n].tables for n in members], pattern):
            continue  # (none, mostly)
        for n in members:
            try:
                _refuse_keys(source, parts[n])
            except ContractError as exc:
                errors[n] = exc
    return errors


def _refuse_keys(source, part: RevenuePartition) -> None:
    refuse_keys(source, part.tables, f"location {part.location_id} business date "
                f"{part.business_date}", part.location_id)


def _guests_default(tables: dict[str, pa.Table]) -> None:
    """Spec 2.1: guestCount is 0 when not recorded."""
    receipts = tables["receipts"]
    at = receipts.schema.get_field_index("guest_count")
    tables["receipts"] = receipts.set_column(at, receipts.schema.field(at),
                                             pc.fill_null(receipts["guest_count"], 0))


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


def extract_revenue_partition(source, location_id: int, business_date: date,
                              defer: bool = False) -> RevenuePartition:
    """Page through one location's revenue report around one business date and flatten it
    (with ``defer``, its tables are made later: ``flatten_receipts``, ``make_tables``)."""
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
                                window=(after, before), defer=defer)
        part.stats = client.stats
    part.provisional = under_way
    if part.pending is None:
        _refuse_keys(source, part)
    return part
