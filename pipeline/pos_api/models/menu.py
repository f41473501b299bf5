"""2.3 The public menu tree: menus, their hours, categories, entries and features."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from enum import IntEnum

from pydantic import Field

from pipeline.pos_api.models.base import PosModel


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
