"""2.1 The revenue report: a receipt with its items, side dishes and payments, and the
request that asks for a window of them."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from pydantic import Field

from pipeline.pos_api.models.base import PosDateTime, PosModel


class Tax(PosModel):
    id: str
    value: Decimal
    name: str


class Category(PosModel):
    id: str
    number: int
    name: str


class PaymentType(PosModel):
    id: int | None = None
    nr: int | None = None
    name: str


class Payment(PosModel):
    id: str
    amount: Decimal
    payment_type: PaymentType
    fibu_account_nr: str | None = None


class Business(PosModel):
    id: str
    name: str


class Staff(PosModel):
    id: str
    number: int
    name: str


class Table(PosModel):
    id: str
    number: int
    name: str


class Location(PosModel):
    id: str
    name: str | None = None


class Area(PosModel):
    id: str
    number: int
    name: str


class PaymentGroup(PosModel):
    id: int = 0
    name: str


class Customer(PosModel):
    id: str
    number: int
    name: str


class SideDish(PosModel):
    """A modifier booked under an item line; only these fields are populated."""

    id: str
    number: int = 0
    name: str
    unique_id: str | None = None
    gross_amount: Decimal
    net_amount: Decimal
    quantity: Decimal


class Item(PosModel):
    id: str
    number: int = 0
    name: str
    unique_id: str | None = None
    external_id: str | None = None
    book_date: PosDateTime
    gross_amount: Decimal
    net_amount: Decimal
    purchase_price: Decimal = Decimal(0)
    quantity: Decimal
    course: int | None = None
    tax: Tax
    category: Category
    side_dishes: list[SideDish] | None = None


class Receipt(PosModel):
    transaction_id: str
    transaction_type: str
    receipt_type: str
    total_amount: Decimal
    tip: Decimal
    discount: Decimal
    date_time: PosDateTime
    business: Business
    location: Location
    staff: Staff
    table: Table
    area: Area
    customer: Customer | None = None
    payment_group: PaymentGroup
    payments: list[Payment]
    items: list[Item]
    guest_count: int = 0


class RevenueRequest(PosModel):
    """Body of POST /reports/receipts (4.1). ``after`` and ``before`` are exclusive."""

    after: datetime
    before: datetime
    limit: int | None = Field(default=None, ge=1)
    after_transaction_id: str | None = Field(default=None, alias="afterTransactionID")
