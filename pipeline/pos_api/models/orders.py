"""2.4 External order intake: the order request and its entries."""

from __future__ import annotations

from decimal import Decimal

from pipeline.pos_api.models.base import PosModel


class OrderAddon(PosModel):
    product_nr: str
    name: str | None = None
    quantity: Decimal
    price: Decimal | None = None


class OrderEntry(PosModel):
    product_nr: str
    name: str | None = None
    pre_order_time: int | None = None
    quantity: Decimal
    price: Decimal | None = None
    note: str | None = None
    addons: list[OrderAddon] | None = None


class UserInfo(PosModel):
    first_name: str | None = None
    last_name: str | None = None
    email: str
    phone: str | None = None
    locale: str | None = None
    nickname: str | None = None


class DeliveryInfo(PosModel):
    name: str | None = None
    company_name: str | None = None
    city: str | None = None
    zip: str | None = None
    street: str | None = None
    country: str | None = None
    floor: str | None = None
    stairway: str | None = None
    door: str | None = None
    note: str | None = None


class OrderRequest(PosModel):
    guid: str | None = None
    location_id: int | None = None
    location_short_code: str | None = None
    spot_id: int | None = None
    spot_number: int | None = None
    spot_name: str | None = None
    room_number: int | None = None
    room_id: int | None = None
    user_info: UserInfo
    delivery_info: DeliveryInfo | None = None
    takeaway: bool
    note: str | None = None
    qr_code: str | None = None
    entries: list[OrderEntry]
    pre_order_time: int | None = None
    short_code: str | None = None
    tip: Decimal | None = None
    is_paid: bool | None = None
    grand_total: Decimal | None
