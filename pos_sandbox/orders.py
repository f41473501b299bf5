"""External order intake of the sandbox (spec 2.4, 4.3).

Choices where the spec says "not shown": an accepted order answers 201 with
``{orderId, guid, locationId, spotId, reservationId, total, transactionIds, status}``; a
repeated guid answers 200 with the first answer and books nothing; no derivable
location is a 400, an unknown product a 400, a grandTotal more than one cent off the
server total a 422. An entry or addon ``price`` counts only for products that allow a
client price (``pricing.allowClientPrice``); otherwise the catalog price stands. An
addon's quantity is per unit of its entry. An accepted order is booked like a POS
would: an order-manager booking at once and, when ``isPaid``, a settlement paid
``Online``, so it appears in later revenue reports of its location.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from threading import Lock
from typing import Any

from pydantic import ValidationError

from pipeline.pos_api import models as m
from pos_sandbox import world
from pos_sandbox.receipts import BUSINESS, NO_AREA, NO_TABLE, guid, transaction_guid
from pos_sandbox.revenue import RevenueBook

TOLERANCE = Decimal("0.01")
ONLINE = world.PAYMENT_TYPES[5]


class OrderRejected(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _all_spots(chain: world.Chain) -> list[tuple[world.SandboxLocation, m.Spot]]:
    return [(loc, s) for loc in chain.locations for s in world.spots(loc.id)]


def route(order: m.OrderRequest,
          chain: world.Chain) -> tuple[world.SandboxLocation, m.Spot | None]:
    """The one location an order addresses: locationId, locationShortCode, spotId, qrCode."""
    if order.location_id is not None:
        loc = chain.by_id(order.location_id)
        if loc is None:
            raise OrderRejected(400, f"locationId {order.location_id} does not resolve")
        return loc, None
    if order.location_short_code:
        loc = chain.by_short_code(order.location_short_code)
        if loc is None:
            raise OrderRejected(400, f"locationShortCode {order.location_short_code!r} "
                                     "does not resolve")
        return loc, None
    if order.spot_id is not None:
        for loc, spot in _all_spots(chain):
            if spot.id == order.spot_id:
                return loc, spot
        raise OrderRejected(400, f"spotId {order.spot_id} does not resolve")
    if order.qr_code:
        for loc, spot in _all_spots(chain):
            if spot.qr_code == order.qr_code:
                return loc, spot
        raise OrderRejected(400, "qrCode does not resolve")
    raise OrderRejected(400, "the order addresses no location (locationId, locationShortCode,"
                             " spotId or qrCode)")


def resolve_spot(order: m.OrderRequest, loc: world.SandboxLocation,
                 routed: m.Spot | None) -> tuple[m.Spot | None, str | None]:
    """The target spot and, for a hotel room, the reservation the order is bound to."""
    spots = world.spots(loc.id)
    spot = None
    if order.spot_id is not None:
        spot = next((s for s in spots if s.id == order.spot_id), None)
    if spot is None and order.spot_number is not None:
        spot = next((s for s in spots if s.number == order.spot_number), None)
    if spot is None and order.spot_name:
        named = [s for s in spots if s.name == order.spot_name]
        spot = next((s for s in named if s.type == "Table"), named[0] if named else None)
    reservation = None
    if order.room_number is not None:
        rooms = [s for s in spots if s.type == "Room"]
        room = next((s for s in rooms
                     if s.number == order.room_number + loc.room_nr_spot_nr_offset), None)
        room = room or next((s for s in rooms if s.alternative_name == str(order.room_number)),
                            None)
        if room is not None:
            spot = spot or room
            reservation = f"RES-{loc.id}-{room.alternative_name or room.number}"
    if spot is None and order.qr_code:
        spot = next((s for s in spots if s.qr_code == order.qr_code), None)
    return spot or routed, reservation


MAX_QUANTITY = Decimal(10_000)
"""The most units of one line the sandbox books (a POS refuses absurd quantities)."""


def check_quantities(order: m.OrderRequest) -> None:
    """An order needs at least one entry, and every quantity is above 0 and sensible."""
    if not order.entries:
        raise OrderRejected(400, "entries: an order needs at least one entry")
    for n, entry in enumerate(order.entries):
        lines = [(f"entries[{n}]", entry.quantity)] + [
            (f"entries[{n}].addons[{k}]", addon.quantity)
            for k, addon in enumerate(entry.addons or [])]
        for where, quantity in lines:
            if not quantity.is_finite() or not 0 < quantity <= MAX_QUANTITY:
                raise OrderRejected(400, f"{where}.quantity: {quantity} is not a quantity "
                                         f"above 0 and at most {MAX_QUANTITY}")


class OrderDesk:
    """Accepts orders and books them into the revenue report."""

    def __init__(self, book: RevenueBook, now: Callable[[], datetime] | None = None,
                 chain: world.Chain | None = None):
        self.book = book
        self.chain = chain or world.chain()
        self.now = now or (lambda: datetime.now(UTC))
        self._accepted: dict[str, dict] = {}
        self._lock = Lock()
        self._count = 0
        self._seq = 0

    def place(self, key_location: world.SandboxLocation, body: Any) -> tuple[int, dict]:
        """(status, answer) for one POSTed order body."""
        try:
            order = m.OrderRequest.model_validate(body)
        except ValidationError as exc:
            raise OrderRejected(400, f"invalid order: {exc.errors(include_url=False)}") \
                from None
        check_quantities(order)
        loc, routed = route(order, self.chain)
        if loc.id != key_location.id:
            raise OrderRejected(403, "the key is not authorised for this location")
        with self._lock:
            if order.guid and order.guid in self._accepted:
                return 200, self._accepted[order.guid]
            spot, reservation = resolve_spot(order, loc, routed)
            lines, total = self._price(order, loc)
            if order.grand_total is None:
                raise OrderRejected(400, "grandTotal is required")
            if abs(order.grand_total - total) > TOLERANCE:
                raise OrderRejected(422, f"grandTotal {order.grand_total} does not match the "
                                         f"server total {total}")
            self._count += 1
            answer = self._book(order, loc, spot, reservation, lines, total)
            if order.guid:
                self._accepted[order.guid] = answer
            return 201, answer

    def _product(self, loc: world.SandboxLocation, product_nr: str, name: str | None):
        primary = [cp for cp in world.catalog(loc.id)[0]
                   if cp.product.cashbox.cashbox_id == loc.primary_cashbox_id]
        wanted = product_nr.casefold()
        found = next((cp for cp in primary if cp.product.product_nr.casefold() == wanted), None)
        if found is None and name:
            found = next((cp for cp in primary
                          if cp.product.name.casefold() == name.casefold()), None)
        return found

    def _unit_price(self, cp: world.CatalogProduct, passed: Decimal | None) -> Decimal:
        if passed is not None and cp.product.pricing.allow_client_price:
            return passed
        return cp.gross

    def _price(self, order: m.OrderRequest, loc: world.SandboxLocation):
        lines, total = [], Decimal(0)
        for n, entry in enumerate(order.entries):
            cp = self._product(loc, entry.product_nr, entry.name)
            if cp is None:
                raise OrderRejected(400, f"entries[{n}]: productNr {entry.product_nr!r} "
                                         "resolves to no product of the primary cashbox")
            addons = []
            for k, addon in enumerate(entry.addons or []):
                acp = self._product(loc, addon.product_nr, addon.name)
                if acp is None:
                    raise OrderRejected(400, f"entries[{n}].addons[{k}]: productNr "
                                             f"{addon.product_nr!r} resolves to no product")
                addons.append((acp, self._unit_price(acp, addon.price), addon.quantity))
            unit = self._unit_price(cp, entry.price) + sum(
                (price * qty for _, price, qty in addons), Decimal(0))
            lines.append((cp, unit, entry.quantity, addons))
            total += unit * entry.quantity
        total += order.tip or Decimal(0)
        return lines, total.quantize(Decimal("0.01"))

    def _book(self, order, loc, spot, reservation, lines, total) -> dict:
        rng = random.Random(f"order:{loc.id}:{order.guid or ''}:{self._count}")
        local = self.now().astimezone(loc.tz).replace(tzinfo=None, microsecond=0)
        ref = order.guid or f"order-{self._count}"
        items = []
        for n, (cp, unit, qty, addons) in enumerate(lines):
            sides = [m.SideDish(id=f"sd-{rng.getrandbits(40):010x}", number=int(
                acp.product.product_nr), name=acp.product.name, unique_id=guid(rng),
                gross_amount=price, net_amount=world.net_of(price, acp.vat), quantity=aq)
                for acp, price, aq in addons]
            items.append(m.Item(
                id=f"it-{rng.getrandbits(48):012x}", number=int(cp.product.product_nr),
                name=cp.product.name,
                unique_id=None if loc.older_configuration else guid(rng),
                external_id=None if loc.older_configuration else f"{ref}:{n}",
                book_date=local, gross_amount=unit, net_amount=world.net_of(unit, cp.vat),
                purchase_price=Decimal(0), quantity=qty,
                tax=m.Tax(id=str(cp.product.pricing.tax_rate_id), value=cp.vat,
                          name=f"{cp.vat} %"),
                category=m.Category(id=cp.category.external_id, number=cp.category.id % 100,
                                    name=cp.category.name),
                side_dishes=(sides or None) if not loc.older_configuration else None,
            ))
        table = m.Table(id=str(spot.id), number=spot.number or 0, name=spot.name) \
            if spot else NO_TABLE
        area = m.Area(id=str(spot.area.area_id), number=spot.area.area_id % 10,
                      name=spot.area.name) if spot and spot.area else NO_AREA
        base = dict(business=BUSINESS, location=m.Location(id=str(loc.id), name=loc.name),
                    staff=m.Staff(id="st-online", number=99, name="Online"), table=table,
                    area=area, payment_group=world.UMSATZWIRKSAM, customer=None)
        receipt_type = "Lieferschein" if order.delivery_info else "Beleg"
        receipts = [m.Receipt(
            transaction_id=self._txn(rng, loc, local), transaction_type="BestellmanagerBestellung",
            receipt_type=receipt_type, total_amount=total - (order.tip or 0), tip=Decimal(0),
            discount=Decimal(0), date_time=local, payments=[], items=items, **base)]
        if order.is_paid:
            tip = order.tip or Decimal(0)
            receipts.append(m.Receipt(
                transaction_id=self._txn(rng, loc, local), transaction_type="Abrechnen",
                receipt_type=receipt_type, total_amount=total, tip=tip, discount=Decimal(0),
                date_time=local + timedelta(seconds=1), items=items,
                payments=[m.Payment(id=f"pay-{rng.getrandbits(48):012x}", amount=total,
                                    payment_type=ONLINE, fibu_account_nr=None)], **base))
        self.book.post(loc.id, receipts)
        return {"orderId": ref, "guid": order.guid, "locationId": loc.id,
                "spotId": spot.id if spot else None, "reservationId": reservation,
                "total": total, "transactionIds": [r.transaction_id for r in receipts],
                "status": "accepted"}

    def _txn(self, rng: random.Random, loc: world.SandboxLocation, local: datetime) -> str:
        self._seq += 1
        return transaction_guid(rng, loc.id, local.date(), 0xE0000 + self._seq)
