"""Deterministic receipts of one location and one service day.

A service day's receipts are made on demand from ``(seed, location, day)`` alone,
so any date works, nothing is held for a long window, and the same request gives
the same bytes. The generator's receipts are the truth (one line per item, one
entry per payment); ``wire_receipt`` then adds the quirks a real server shows and
that the spec's dedupe keys exist for.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal

from pipeline.pos_api import models as m
from pos_sandbox import world
from pos_sandbox.world import SandboxLocation

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
BUSINESS = m.Business(id="b-4711", name="Alpenküche Gastro GmbH")
NO_TABLE = m.Table(id="0", number=0, name="")
NO_AREA = m.Area(id="0", number=0, name="")

# Operational and legal events that carry no items; a third of them occur each day in
# rotation, so every type of the spec shows up within any three days.
ROTATING_EVENTS = (
    "Verschieben", "ARPreview", "ARNachdruck", "ARNachdruckOriginal", "TagesabschlussPreview",
    "KellnerabschlagPreview", "KellnerabschlagUndo", "Kelleruebergabe", "Startbeleg",
    "Schlussbeleg", "Nacherfassungssammelbeleg", "GaesteanzahlAendern",
    "GaesteanzahlKorrigieren", "BestellmanagerBestellungNextState",
    "BestellmanagerBestellungSetFinaleState", "BestellmanagerBestellungUndo",
    "BestellmanagerBestellungStornieren", "BestellmanagerBestellungVerschieben",
    "BestellmanagerBestellungNaechsterGang", "BestellmanagerBestellungStatistik",
    "WarenkorbErstellen", "WarenkorbUpdate", "WarenkorbVerwerfen", "DatenExport",
    "UndoDatenExport", "Lieferantabschlag", "LieferantabschlagVorschau", "Ansehen", "Information",
    "SchankanlageQrCode",
)
# The cash book's records (spec 2.2 names the types, not their fields; docs/source-api.md
# says how they are read): every service day a count (Bargeldzählung) after its last
# settlement, the takings beyond the till's float moved to the bank (Kassabuch), the card
# terminal's cut (TerminalKassenschnitt); on some days a withdrawal or deposit in between.
CASH_FLOAT = Decimal("300.00")
"""The change a till keeps overnight: each day opens with it."""
CASH = world.PAYMENT_TYPES[0]  # Bar
CARD_TYPES = ("Bankomat", "Kreditkarte")
CASH_ACCOUNTS = {"transit": "1460", "purchase": "7600", "deposit": "9600"}
"""The counter accounts a cash-book record's payment posts to (its fibuAccountNr)."""
# Types that carry item lines and a revenue payment group but are not settlements: the
# turnover rule must leave them out even though their names look close.
LOOKALIKE_SETTLEMENTS = ("Abrechnen HSK", "Abrechnen AR", "AbrechnenNachdruck", "ARAusstellen")


@dataclass(frozen=True)
class Correction:
    """The POS corrects a receipt after the fact: it moves to ``date_time`` (and so perhaps
    to another business date) with its last ``drop_lines`` lines gone, same transactionId.
    The discount is taken again on what is left (at the original rate), and the total
    and the last payment shrink accordingly: the receipt stays consistent."""

    location_id: int
    transaction_id: str
    date_time: datetime
    drop_lines: int = 1


@dataclass(frozen=True)
class SandboxData:
    """Shape of the generated data: seed, volume, quirks, and corrections made since."""

    seed: int = 20240601
    transactions_per_day: int = 300
    quirks: bool = True
    corrections: tuple[Correction, ...] = ()
    same_second: bool = False
    """Receipts come in pairs stamped with the same second (so page boundaries fall
    between receipts of one second)."""
    voided_per_day: int = 0
    """The first N revenue-effective settlements of every service day are deleted at the
    source (voided entirely): served no more, and not in the truth."""
    cent_short_per_day: int = 0
    """A till's bug: the first N revenue-effective settlements with a payment of every
    service day book their last payment one cent short of the total (the revenue is
    right, the day's payments miss N cents)."""
    extra_fields: bool = False
    """Every receipt and line carries a field the spec does not name."""
    drop_optional: bool = False
    """Optional fields are left out of the wire instead of sent as null (``customer``,
    ``uniqueId``, ``externalId``, ``course``, ``sideDishes`` where empty)."""
    omitted: tuple[tuple[int, date, str], ...] = ()
    """Legal fiscal receipts the till did not make: (location id, service day,
    ``Monatsbeleg`` or ``JahresBeleg``), as a till that missed its RKSV duty."""
    cash_short_every: int = 9
    """On one service day in this many (by date and location) the night's count finds
    ``CASH_SHORT`` less than the cash book says: a deliberate cash difference. 0: never."""


CASH_SHORT = Decimal("5.00")


def cash_short(location_id: int, day: date, data: SandboxData) -> bool:
    """Whether the count of this service day is ``CASH_SHORT`` short (deliberately)."""
    return bool(data.cash_short_every) and \
        (day.toordinal() + location_id) % data.cash_short_every == 0


def guid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def transaction_guid(rng: random.Random, location_id: int, day: date, seq: int) -> str:
    """A GUID that also names its service day, so a cursor finds its day at once."""
    r = rng.getrandbits(44)
    s = rng.getrandbits(12)
    return (f"{r >> 12:08x}-{location_id & 0xFFFF:04x}-4{r & 0xFFF:03x}-"
            f"a{s:03x}-{day.toordinal():06x}{seq & 0xFFFFF:05x}{r >> 40:x}")


def service_day_of(transaction_id: str) -> date | None:
    """The service day a sandbox transaction GUID was made for, or None if it is not one."""
    try:
        return date.fromordinal(int(transaction_id[24:30], 16))
    except (ValueError, IndexError, OverflowError):
        return None


def _money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


class _DayBuilder:
    """Builds the receipts of one location and service day."""

    def __init__(self, loc: SandboxLocation, day: date, data: SandboxData):
        self.loc = loc
        self.day = day
        self.data = data
        self.rng = random.Random(f"{data.seed}:{loc.id}:{day.isoformat()}")
        self.products, _ = world.catalog(loc.id)
        self.sellable = [p for p in self.products if p.gross > 0]
        self.food = [p for p in self.sellable if p.product.cashbox.production_place_id == 1
                     and p.category.external_id in {"PG-VOR", "PG-SUP", "PG-HPT", "PG-DES"}]
        self.drinks = [p for p in self.sellable if p.category.external_id in
                       {"PG-ANT", "PG-BIE", "PG-WEI", "PG-SPI", "PG-KAF"}]
        self.hotel = [p for p in self.sellable if p.category.external_id in
                      {"PG-NAE", "PG-WEL", "PG-FRU"}]
        all_spots = world.spots(loc.id)
        self.tables = [s for s in all_spots if s.type == "Table"]
        self.rooms = [s for s in all_spots if s.type == "Room"]
        self.delivery = [s for s in all_spots if s.type in {"Delivery", "Pickup"}]
        self.staff = world.staff(loc.id)
        self.location = m.Location(id=str(loc.id),
                                   name=None if loc.older_configuration else loc.name)
        self.receipts: list[m.Receipt] = []
        self.seq = 0

    # --- helpers ----------------------------------------------------------------------------

    def at(self, minutes: float) -> datetime:
        """Wall-clock time ``minutes`` after the service day's midnight, whole seconds."""
        return datetime.combine(self.day, time()) + timedelta(seconds=int(minutes * 60))

    def shown(self, when: datetime) -> datetime:
        """What the till's clock shows: a time in the spring-forward gap is an hour later."""
        tz = self.loc.tz
        return when.replace(tzinfo=tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None)

    def receipt(self, when: datetime, ttype: str, *, items=(), payments=(), group=None,
                table=None, staff=None, receipt_type="Beleg", tip=ZERO, discount=ZERO,
                guests=0, total=None) -> m.Receipt:
        self.seq += 1
        when = self.shown(when)
        spot = table
        gross = sum((i.gross_amount * i.quantity for i in items), ZERO)
        r = m.Receipt(
            transaction_id=transaction_guid(self.rng, self.loc.id, self.day, self.seq),
            transaction_type=ttype,
            receipt_type=receipt_type,
            total_amount=_money(gross - discount + tip) if total is None else total,
            tip=tip,
            discount=discount,
            date_time=when,
            business=BUSINESS,
            location=self.location,
            staff=staff or self.staff[0],
            table=m.Table(id=str(spot.id), number=spot.number or 0, name=spot.name)
            if spot else NO_TABLE,
            area=m.Area(id=str(spot.area.area_id), number=spot.area.area_id % 10,
                        name=spot.area.name) if spot and spot.area else NO_AREA,
            customer=None,
            payment_group=group or world.NO_GROUP,
            payments=list(payments),
            items=list(items),
            guest_count=guests,
        )
        self.receipts.append(r)
        return r

    def line(self, product: world.CatalogProduct, booked: datetime, quantity: Decimal,
             external_id: str | None = None) -> m.Item:
        rng = self.rng
        sides: list[m.SideDish] = []
        surcharge = ZERO
        if product.side_dishes and rng.random() < 0.35:
            for name, price in rng.sample(product.side_dishes, k=1 + (rng.random() < 0.3)
                                          if len(product.side_dishes) > 1 else 1):
                sides.append(m.SideDish(
                    id=f"sd-{rng.getrandbits(40):010x}", number=9000 + len(name), name=name,
                    unique_id=guid(rng), gross_amount=price,
                    net_amount=world.net_of(price, product.vat), quantity=Decimal(1),
                ))
                surcharge += price
        gross = product.gross + surcharge
        net = world.net_of(gross, product.vat)
        cat = product.category
        course = {"PG-VOR": 1, "PG-SUP": 1, "PG-HPT": 2, "PG-DES": 3}.get(cat.external_id)
        older = self.loc.older_configuration
        return m.Item(
            id=f"it-{rng.getrandbits(48):012x}",
            number=int(product.product.product_nr),
            name=product.product.name,
            unique_id=None if older else guid(rng),
            external_id=None if older else external_id,
            book_date=booked,
            gross_amount=gross,
            net_amount=net,
            purchase_price=ZERO if older else _money(net * Decimal("0.31")),
            quantity=quantity,
            course=course,
            tax=m.Tax(id=str(product.product.pricing.tax_rate_id), value=product.vat,
                      name=f"{product.vat} %"),
            category=m.Category(id=cat.external_id, number=cat.id % 100, name=cat.name),
            side_dishes=None if older or not sides else sides,
        )

    def payments(self, total: Decimal, tip: Decimal, hotel_guest: bool) -> list[m.Payment]:
        rng = self.rng
        kinds = [1, 2, 3] + ([5] if hotel_guest else []) + ([4] if rng.random() < 0.04 else [])
        parts = 2 if rng.random() < 0.2 and total > 2 else 1
        amounts = [total] if parts == 1 else [_money(total * Decimal("0.5")), None]
        if parts == 2:
            amounts[1] = total - amounts[0]
        result = []
        for amount in amounts:
            ptype = world.PAYMENT_TYPES[rng.choice(kinds) - 1]
            result.append(m.Payment(id=f"pay-{rng.getrandbits(48):012x}", amount=amount,
                                    payment_type=ptype,
                                    fibu_account_nr=world.FIBU_ACCOUNTS[ptype.id]))
        return result

    def negate(self, items: list[m.Item], when: datetime) -> list[m.Item]:
        return [i.model_copy(update={
            "id": f"it-{self.rng.getrandbits(48):012x}",
            "unique_id": None if i.unique_id is None else guid(self.rng),
            "quantity": -i.quantity, "book_date": when,
        }) for i in items]

    # --- the day ----------------------------------------------------------------------------

    def build(self) -> list[m.Receipt]:
        rng, loc = self.rng, self.loc
        self.receipt(self.at(0), "Nullbeleg")
        checks = max(1, self.data.transactions_per_day // 4)
        closing = (24 + loc.closes_after_midnight) * 60
        for n in range(checks):
            if loc.kind == "hotel" and n % 6 == 0:
                start = rng.uniform(6.5 * 60, 10.5 * 60)
            else:
                start = rng.choice((rng.gauss(12.5 * 60, 50), rng.gauss(19.5 * 60, 80)))
            start = min(max(start, 10 * 60), closing - 30)
            self.check(start, closing, last=n == checks - 1)
        self.day_end_events()
        self.cash_book()
        return sorted(self.receipts, key=lambda r: (r.date_time, r.transaction_id))

    def check(self, start: float, closing: float, last: bool) -> None:
        """One party: open table, bookings, maybe a reversal, settlement, maybe a re-open."""
        rng = self.rng
        table = rng.choice(self.tables)
        waiter = rng.choice(self.staff)
        guests = rng.randint(1, 6)
        online = rng.random() < 0.08
        group = world.UMSATZWIRKSAM
        if rng.random() < 0.02:
            group = world.NOT_REVENUE  # staff meal
        self.receipt(self.at(start), "TischOeffnen", table=table, staff=waiter, group=group)
        lines: list[m.Item] = []
        t = start
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            t += rng.uniform(2, 25)
            booked = self.at(t)
            batch = []
            for _ in range(rng.randint(1, 4)):
                pool = self.hotel if (self.hotel and rng.random() < 0.1) else (
                    self.food if rng.random() < 0.5 else self.drinks)
                qty = Decimal(rng.choice((1, 1, 1, 1, 2, 2, 3))) if rng.random() > 0.03 \
                    else Decimal("0.5")
                ext = f"ext-{rng.getrandbits(32):08x}" if online else None
                batch.append(self.line(rng.choice(pool), booked, qty, ext))
            ttype = "BestellmanagerBestellung" if online else (
                "DebitBonieren" if rng.random() < 0.03 else "Bonieren")
            self.receipt(booked, ttype, items=batch, group=group, table=table, staff=waiter)
            lines.extend(batch)
        if rng.random() < 0.1 and len(lines) > 1:
            t += rng.uniform(1, 10)
            voided = lines.pop(rng.randrange(len(lines)))
            self.receipt(self.at(t), "Stornieren", items=self.negate([voided], self.at(t)),
                         group=group, table=table, staff=waiter)
        settle = self.at(min(t + rng.uniform(20, 90), closing + 60))
        if last:  # the day's last party pays exactly at midnight, on the next day
            settle = datetime.combine(self.day + timedelta(days=1), time())
        settlement = self.settle(lines, settle, group, table, waiter, guests, online)
        if rng.random() < 0.03:
            back = settle + timedelta(minutes=rng.uniform(1, 5))
            self.receipt(back, "RechnungZurückholen", items=self.negate(lines, back),
                         payments=[p.model_copy(update={
                             "id": f"pay-{rng.getrandbits(48):012x}", "amount": -p.amount})
                             for p in settlement.payments],
                         group=group, table=table, staff=waiter,
                         tip=-settlement.tip, discount=-settlement.discount,
                         total=-settlement.total_amount)
            extra = self.line(rng.choice(self.drinks), back, Decimal(1))
            self.settle(lines + [extra], back + timedelta(minutes=2), group, table, waiter,
                        guests, online)
        if rng.random() < 0.04:
            kind = rng.choice(LOOKALIKE_SETTLEMENTS)
            self.receipt(settle + timedelta(seconds=30), kind, items=lines, group=group,
                         table=table, staff=waiter,
                         receipt_type="Ausgangsrechnung" if "AR" in kind else "Beleg")
        self.receipt(settle + timedelta(seconds=5), "TischSchliessen", table=table, staff=waiter)
        if rng.random() < 0.01:
            self.voucher_sale(settle + timedelta(minutes=3), waiter)

    def settle(self, lines, when, group, table, waiter, guests, online) -> m.Receipt:
        rng = self.rng
        gross = sum((i.gross_amount * i.quantity for i in lines), ZERO)
        discount = _money(gross * Decimal("0.1")) if rng.random() < 0.08 else ZERO
        tip = ZERO
        if rng.random() < 0.4:
            due = gross - discount
            tip = _money((due / 5).to_integral_value(rounding="ROUND_CEILING") * 5 - due) \
                or Decimal("1.00")
        total = _money(gross - discount + tip)
        payments = self.payments(total, tip, hotel_guest=bool(self.rooms) and rng.random() < .2)
        return self.receipt(when, "Abrechnen", items=lines, payments=payments, group=group,
                            table=table, staff=waiter, tip=tip, discount=discount,
                            guests=guests,
                            receipt_type="Lieferschein" if online else "Beleg")

    def voucher_sale(self, when: datetime, waiter: m.Staff) -> None:
        """A gift voucher sold over the counter: paid, but not revenue-effective."""
        value = Decimal(self.rng.choice((25, 50, 100)))
        item = m.Item(
            id=f"it-{self.rng.getrandbits(48):012x}", number=9901, name=f"Gutschein {value} €",
            unique_id=None if self.loc.older_configuration else guid(self.rng),
            book_date=when, gross_amount=value, net_amount=value, quantity=Decimal(1),
            tax=m.Tax(id="0", value=Decimal(0), name="0 %"),
            category=m.Category(id="PG-GUT", number=99, name="Gutscheine"),
        )
        pay = self.payments(value, ZERO, hotel_guest=False)
        self.receipt(when, "Abrechnen", items=[item], payments=pay, group=world.VOUCHER_SALE,
                     staff=waiter)

    def day_end_events(self) -> None:
        rng, day = self.rng, self.day
        ordinal = day.toordinal()
        for i, ttype in enumerate(ROTATING_EVENTS):
            if (i + ordinal) % 3 == 0:
                self.receipt(self.at(rng.uniform(9 * 60, 22 * 60)), ttype,
                             staff=rng.choice(self.staff))
        close = self.at((24 + self.loc.closes_after_midnight) * 60 - 30)
        for waiter in self.staff[:3]:
            self.receipt(close - timedelta(minutes=5), "Kellnerabschlag", staff=waiter)
        self.receipt(close, "Tagesabschluss")
        omitted = {kind for loc, when, kind in self.data.omitted
                   if loc == self.loc.id and when == day}
        if (day + timedelta(days=1)).day == 1 and "Monatsbeleg" not in omitted:
            self.receipt(close + timedelta(seconds=10), "Monatsbeleg")
        if day.month == 12 and day.day == 31 and "JahresBeleg" not in omitted:
            self.receipt(close + timedelta(seconds=20), "JahresBeleg")


    def cash_book(self) -> None:
        """The day's cash records, drawn from a generator of their own (the other receipts
        stay as they were before the cash book existed): maybe a withdrawal for a purchase
        or a deposit of change during the day; after the last settlement the count of the
        drawer (float + cash takings + movements, ``CASH_SHORT`` less on a deliberate
        day), the takings beyond the float moved out to the bank, and the card terminal's
        cut. So every day opens with ``CASH_FLOAT``."""
        rng, saved = random.Random(f"{self.data.seed}:{self.loc.id}:{self.day}:cash"), self.rng
        self.rng = rng  # the receipts' GUIDs come from it too
        try:
            movements = []
            if rng.random() < 0.3:
                amount = -_money(Decimal(rng.uniform(8, 60)))
                movements.append((self.at(rng.uniform(11 * 60, 16 * 60)), amount,
                                  "Entnahme Einkauf Markt", "purchase"))
            if rng.random() < 0.1:
                movements.append((self.at(rng.uniform(10 * 60, 11 * 60)), Decimal("100.00"),
                                  "Einlage Wechselgeld", "deposit"))
            for when, amount, text, account in movements:
                self.cash_record(when, amount, text, account)
            settlements = [r for r in self.receipts
                           if r.transaction_type in ("Abrechnen", "RechnungZurückholen")]
            takings = sum((p.amount for r in settlements for p in r.payments
                           if p.payment_type.name == CASH.name), ZERO)
            cards = sum((p.amount for r in settlements for p in r.payments
                         if p.payment_type.name in CARD_TYPES), ZERO)
            last = max((r.date_time for r in self.receipts), default=self.at(23 * 60))
            counted = CASH_FLOAT + takings + sum((a for _, a, _, _ in movements), ZERO)
            if cash_short(self.loc.id, self.day, self.data):
                counted -= CASH_SHORT
            counted_at = last + timedelta(minutes=2)
            self.receipt(counted_at, "Bargeldzählung", total=counted,
                         staff=self.staff[0])
            self.cash_record(counted_at + timedelta(minutes=1), CASH_FLOAT - counted,
                             "Geldtransit Bank", "transit")
            self.receipt(counted_at + timedelta(minutes=2), "TerminalKassenschnitt",
                         total=cards, staff=self.staff[0])
        finally:
            self.rng = saved

    def cash_record(self, when: datetime, amount: Decimal, text: str, account: str) -> None:
        """A Kassabuch record: the signed amount (in: positive) as its total and as a cash
        payment posting to the counter account, its purpose as the one line's name."""
        item = m.Item(
            id=f"it-{self.rng.getrandbits(48):012x}", number=0, name=text,
            unique_id=None if self.loc.older_configuration else guid(self.rng),
            book_date=self.shown(when), gross_amount=amount, net_amount=amount,
            quantity=Decimal(1), tax=m.Tax(id="0", value=Decimal(0), name="0 %"),
            category=m.Category(id="KASSA", number=0, name="Kassabuch"))
        pay = m.Payment(id=f"pay-{self.rng.getrandbits(48):012x}", amount=amount,
                        payment_type=CASH, fibu_account_nr=CASH_ACCOUNTS[account])
        self.receipt(when, "Kassabuch", items=[item], payments=[pay], total=amount,
                     staff=self.staff[0])


def service_day(location_id: int, day: date, data: SandboxData) -> list[m.Receipt]:
    """The truth: every receipt made on one location's service day, sorted as served.

    A service day's receipts are stamped from its own midnight until after the next
    one, so the receipts of a calendar date come from that day and the day before.
    """
    loc = world.location(location_id)
    assert loc is not None, location_id
    receipts = _DayBuilder(loc, day, data).build()
    if data.voided_per_day:
        voided = {r.transaction_id for r in [
            r for r in receipts if r.transaction_type == "Abrechnen" and r.items
            and r.payment_group.name == "Umsatzwirksam"][:data.voided_per_day]}
        receipts = [r for r in receipts if r.transaction_id not in voided]
    if data.cent_short_per_day:
        short = {r.transaction_id for r in [
            r for r in receipts if r.transaction_type == "Abrechnen" and r.items and r.payments
            and r.payment_group.name == "Umsatzwirksam"][:data.cent_short_per_day]}
        receipts = [_cent_short(r) if r.transaction_id in short else r for r in receipts]
    if data.same_second:
        receipts = [r if n % 2 == 0 else r.model_copy(update={"date_time": receipts[n - 1]
                                                               .date_time})
                    for n, r in enumerate(receipts)]
    corrections = [c for c in data.corrections if c.location_id == location_id]
    if not corrections:
        return receipts
    moved = {c.transaction_id for c in corrections}
    receipts = [r for r in receipts if r.transaction_id not in moved]
    for c in corrections:
        if c.date_time.date() == day:
            receipts.append(_corrected(loc, c, data))
    return sorted(receipts, key=lambda r: (r.date_time, r.transaction_id))


def _cent_short(receipt: m.Receipt) -> m.Receipt:
    payments = list(receipt.payments)
    payments[-1] = payments[-1].model_copy(update={"amount": payments[-1].amount
                                                   - Decimal("0.01")})
    return receipt.model_copy(update={"payments": payments})


def _corrected(loc: SandboxLocation, correction: Correction, data: SandboxData) -> m.Receipt:
    made_on = service_day_of(correction.transaction_id)
    original = next((r for r in _DayBuilder(loc, made_on, data).build()
                     if r.transaction_id == correction.transaction_id), None) if made_on else None
    if original is None:
        raise ValueError(f"no receipt {correction.transaction_id} at location {loc.id}")
    kept = original.items[:len(original.items) - correction.drop_lines]
    gross = sum((i.gross_amount * i.quantity for i in kept), ZERO)
    discount = _money(gross * Decimal("0.1")) if original.discount else ZERO
    total = _money(gross - discount + original.tip)
    payments = list(original.payments)
    less = original.total_amount - total
    payments[-1] = payments[-1].model_copy(update={"amount": payments[-1].amount - less})
    return original.model_copy(update={"date_time": correction.date_time, "items": kept,
                                       "discount": discount, "total_amount": total,
                                       "payments": payments})


def receipts_on(location_id: int, day: date, data: SandboxData,
                starts: time = time(0)) -> list[m.Receipt]:
    """The truth for a business date: receipts whose local ``dateTime`` falls on ``day``,
    or, for a business day that starts at ``starts`` (wall clock), from ``starts`` on
    ``day`` until ``starts`` the next day."""
    if starts == time(0):
        candidates = service_day(location_id, day - timedelta(days=1), data) + service_day(
            location_id, day, data)
        kept = (r for r in candidates if r.date_time.date() == day)
    else:
        candidates = [r for d in (-1, 0, 1)
                      for r in service_day(location_id, day + timedelta(days=d), data)]
        begin = datetime.combine(day, starts)
        end = datetime.combine(day + timedelta(days=1), starts)
        kept = (r for r in candidates if begin <= r.date_time < end)
    return sorted(kept, key=lambda r: (r.date_time, r.transaction_id))


def wire_receipt(receipt: m.Receipt, data: SandboxData) -> dict:
    """The receipt as the server sends it, with the fan-out quirks when ``data.quirks`` is on,
    and the fields ``data`` adds or leaves out.

    With several payments every line is listed once per payment (same id and uniqueId),
    some payments are listed twice, and some side dishes twice inside their item.
    """
    body = receipt.model_dump(mode="python", by_alias=True, exclude_unset=False)
    if data.extra_fields:
        body["loyaltyPoints"] = len(body["items"])
        for n, item in enumerate(body["items"]):
            item["kitchenNote"] = {"station": "grill" if n % 2 else "bar", "printed": True}
    if data.drop_optional:
        body.pop("customer", None)
        for item in body["items"]:
            for key in ("uniqueId", "externalId", "course"):
                item.pop(key, None)
            if not item.get("sideDishes"):
                item.pop("sideDishes", None)
    if not data.quirks:
        return body
    salt = int(receipt.transaction_id[:8], 16)
    fan_out = len(body["payments"])
    if fan_out > 1:
        body["items"] = [item for item in body["items"] for _ in range(fan_out)]
    if body["payments"] and salt % 19 == 0:
        body["payments"] = body["payments"] + body["payments"][:1]
    for n, item in enumerate(body["items"]):
        sides = item.get("sideDishes")
        if sides and (salt + n) % 5 == 0:
            item["sideDishes"] = sides + sides[:1]
    return body
