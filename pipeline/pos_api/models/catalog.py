"""2.5 The catalog: products, product categories and spots (paged)."""

from __future__ import annotations

from decimal import Decimal

from pipeline.pos_api.models.base import PosModel


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
