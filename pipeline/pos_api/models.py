"""Pydantic models of every resource in the POS integration spec (sections 2.1-2.6).

One source of truth: the sandbox builds its responses from these models and the
pipeline's tests validate what the client receives against them. Wire names are
aliases (camelCase, ``nr``); Python names are snake_case. Money of the revenue,
order and catalog areas is ``Decimal``; voucher amounts are ``int`` minor units.
Unknown extra fields sent by a server are kept, not rejected.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from enum import IntEnum
from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from pipeline.pos_api.timestamps import format_pos_datetime, parse_pos_datetime

PosDateTime = Annotated[
    datetime,
    BeforeValidator(parse_pos_datetime),
    PlainSerializer(format_pos_datetime, return_type=str),
]
"""A receipt timestamp: served as ``dd.MM.yyyy HH:mm:ss`` (local time), ISO 8601 accepted."""


class PosModel(BaseModel):
    """Base of every spec resource: camelCase aliases, extra fields tolerated."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )


# --- 2.1 Receipt -------------------------------------------------------------------------


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


# --- 2.3 Menu tree -----------------------------------------------------------------------


class Badge(IntEnum):
    NEW = 1
    RECOMMENDED = 2
    REDUCED = 3
    COMING_SOON = 4
    OUR_TIP = 5
    SPECIAL = 6
    BESTSELLER = 7
    HOT = 8
    SALE = 9


class Weekday(IntEnum):
    """Weekday bits of ``Hours.days``: bit n = 1 << n, Monday is bit 1."""

    MONDAY = 2
    TUESDAY = 4
    WEDNESDAY = 8
    THURSDAY = 16
    FRIDAY = 32
    SATURDAY = 64
    SUNDAY = 128


def weekday_mask(*days: Weekday) -> int:
    """The ``days`` bitmask for the given weekdays (Monday to Friday is 62)."""
    return sum({int(d) for d in days})


def weekdays_in_mask(mask: int) -> list[Weekday]:
    """The weekdays a ``days`` bitmask selects, Monday first."""
    return [d for d in Weekday if mask & d]


class Hours(PosModel):
    days: int | None = None
    start_date: date | None = None
    end_date: date | None = None
    start_time: str | None = Field(default=None, pattern=r"^\d{2}:\d{2}$")
    end_time: str | None = Field(default=None, pattern=r"^\d{2}:\d{2}$")
    exclude: bool = False


class MenuEntryFeatureValue(PosModel):
    name: str | None = None
    description: str | None = None
    image_url: str | None = None
    min_amount: Decimal | None = None
    max_amount: Decimal | None = None
    free_amount: Decimal | None = None
    price_adjustment: Decimal | None = None


class MenuEntryFeature(PosModel):
    name: str | None = None
    description: str | None = None
    group_name: str | None = None
    is_deselect_feature: bool | None = None
    max_values_allowed: int | None = None
    min_values_required: int | None = None
    values_for_free: int | None = None
    values: list[MenuEntryFeatureValue] | None = None


class MenuEntry(PosModel):
    menu_entry_id: int | None = Field(default=None, alias="menuEntryID")
    name: str | None = None
    badge: int | None = None
    image_url: str | None = None
    subtitle: str | None = None
    description: str | None = None
    features: list[MenuEntryFeature] | None = None
    price: Decimal | None = None


class MenuCategory(PosModel):
    name: str | None = None
    badge: int | None = None
    image_url: str | None = None
    description: str | None = None
    menu_entries: list[MenuEntry] | None = None
    orderable_hours: list[Hours] | None = None
    pre_orderable_hours: list[Hours] | None = None
    deliverable_hours: list[Hours] | None = None


class Menu(PosModel):
    name: str | None = None
    badge: int | None = None
    image_url: str | None = None
    description: str | None = None
    categories: list[MenuCategory] | None = None
    orderable_hours: list[Hours] | None = None
    pre_orderable_hours: list[Hours] | None = None
    deliverable_hours: list[Hours] | None = None
    price_name: str | None = None


# --- 2.4 Order request -------------------------------------------------------------------


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


# --- 2.5 Catalog -------------------------------------------------------------------------

T = TypeVar("T")


class PageInfo(PosModel):
    offset: int
    limit: int
    total: int


class Paged(PosModel, Generic[T]):
    """The paged envelope of every catalog list response."""

    page: PageInfo
    data: list[T]


class Pricing(PosModel):
    default_price: Decimal | None = None
    reference_price: Decimal | None = None
    tax_rate_id: int | None = None
    allow_client_price: bool = False


class ProductCashbox(PosModel):
    cashbox_id: int
    production_place_id: int | None = None
    parent_product_id: int | None = None


class Media(PosModel):
    image_url: str | None = None


class ProductFlags(PosModel):
    is_visible: bool
    is_locked: bool
    queued_for_review: bool


class Ingredient(PosModel):
    name: str


class NutritionalValue(PosModel):
    name: str
    unit: str | None = None
    value: str | None = None
    belongs_to: int | None = None


class Nutrition(PosModel):
    amount: Decimal | None = None
    amount_unit: str | None = None
    calories: Decimal | None = None
    allergens: int = 0
    minimum_age: int = 0
    ingredients: list[Ingredient] = []
    nutritional_values: list[NutritionalValue] = []


class ProductLocalization(PosModel):
    locale: str
    name: str | None = None
    subtitle: str | None = None
    description: str | None = None
    image_url: str | None = None


class Product(PosModel):
    id: int
    product_nr: str
    gtin: str | None = None
    external_product_id: str | None = None
    name: str
    external_name: str | None = None
    subtitle: str | None = None
    description: str | None = None
    pricing: Pricing
    cashbox: ProductCashbox
    media: Media | None = None
    flags: ProductFlags
    nutrition: Nutrition | None = None
    product_group_external_ids: list[str] = []
    localizations: list[ProductLocalization] = []


class CategoryCashbox(PosModel):
    cashbox_id: int | None = None
    supplier_id: int | None = None


class CategoryTax(PosModel):
    tax_rate_id: int | None = None
    vat: Decimal


class CategoryLocalization(PosModel):
    locale: str
    name: str | None = None
    description: str | None = None
    image_url: str | None = None


class ProductCategory(PosModel):
    id: int
    external_id: str
    name: str
    external_name: str | None = None
    cashbox: CategoryCashbox
    tax: CategoryTax
    localizations: list[CategoryLocalization] = []


class SpotLocation(PosModel):
    location_id: int
    location_short_code: str


class SpotArea(PosModel):
    area_id: int
    name: str
    external_area_id: str | None = None


class SpotGeo(PosModel):
    latitude: float | None = None
    longitude: float | None = None


class SpotFlags(PosModel):
    visible_in_app: bool
    supports_table_order: bool
    supports_cash_payment: bool
    default_to_take_away: bool
    display_as_button: bool


class Spot(PosModel):
    id: int
    external_spot_id: str | None = None
    number: int | None = None
    name: str
    alternative_name: str | None = None
    description: str | None = None
    qr_code: str | None = None
    type: str
    """Raw value: the spec names Spot, Table, Room, Pickup, Delivery but not the full list."""
    capacity: int | None = None
    location: SpotLocation
    area: SpotArea | None = None
    geo: SpotGeo | None = None
    flags: SpotFlags


# --- 2.6 Voucher -------------------------------------------------------------------------


class Gift(PosModel):
    amount: int
    balance: int | None = None
    max_amount: int | None = None


class Voucher(PosModel):
    """A gift voucher; amounts are integer minor units. Operation responses may omit fields."""

    id: str
    voucher_code: str | None = None
    gift: Gift | None = None
    code_id: str | None = None
    start_date: datetime | None = None
    expiration_date: datetime | None = None
    enabled: bool | None = None
    comment: str | None = None
    category_id: int | None = None
    category_name: str | None = None
    category_nr_of_times_redeemable_per_unit: int | None = None
    category_external_payment_provider_id: str | None = None
    created_at: datetime | None = None
    discriminator: str | None = None


class ValidityResponse(PosModel):
    voucher: Voucher | None = None
    errors: list = []
    is_valid: bool


class GiftRequest(PosModel):
    amount: int
    max_amount: int | None = None


class IssueRequest(PosModel):
    category_id: int
    voucher_code: str
    comment: str | None = None
    gift: GiftRequest
    client_type: str
    client_context: str | None = None
    start_date: datetime | None = None
    expiration_date: datetime | None = None


class RedemptionAmount(PosModel):
    amount: int
    items: list = []


class RedemptionRequest(PosModel):
    redemption: RedemptionAmount
    client_reference: str | None = None
    client_context: str | None = None
    comment: str | None = None
    client_type: str


class TopUpRequest(PosModel):
    amount: int
    client_reference: str | None = None
    client_type: str
    client_context: str | None = None
    comment: str | None = None


class RedemptionResult(PosModel):
    redemption: RedemptionAmount | None = None
    success: bool
    errors: list = []
    transaction_id: int | None = None
    voucher: Voucher | None = None


class TopUpResult(PosModel):
    new_amount: int | None = None
    success: bool
    errors: list = []
    transaction_id: int | None = None
    voucher: Voucher | None = None


class DataEnvelope(PosModel, Generic[T]):
    """``{ data: ... }`` wrapper of voucher operation responses."""

    data: T
