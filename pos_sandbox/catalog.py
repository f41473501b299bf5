"""The external catalog of the sandbox (spec 4.4): filters per endpoint over the world data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.pos_api import models as m
from pos_sandbox import world
from pos_sandbox.filters import BadRequest, CatalogQuery
from pos_sandbox.world import SandboxLocation


def resolve_location(query: CatalogQuery, chain: world.Chain) -> SandboxLocation:
    """The location of ``chain`` a catalog request addresses: locationId first, then
    locationShortCode."""
    loc = None
    location_id = query.text("locationId")
    if location_id is not None and location_id.lstrip("-").isdigit():
        loc = chain.by_id(int(location_id))
    if loc is None and query.text("locationShortCode"):
        loc = chain.by_short_code(query.text("locationShortCode"))
    if loc is None:
        raise BadRequest("neither locationId nor locationShortCode resolves to a location")
    return loc


def _contains(needle: str | None, *haystack: str | None) -> bool:
    if needle is None:
        return True
    needle = needle.lower()
    return any(needle in (h or "").lower() for h in haystack)


def _member(values: list | None, value: Any) -> bool:
    return values is None or value in values


def _equals(wanted: Any, value: Any) -> bool:
    return wanted is None or wanted == value


def _cashbox(query: CatalogQuery, loc: SandboxLocation) -> int | None:
    cashbox_id = query.integer("cashboxId")
    if cashbox_id is not None and cashbox_id not in (loc.primary_cashbox_id, loc.bar_cashbox_id):
        raise BadRequest(f"cashboxId {cashbox_id} does not belong to location {loc.id}")
    return cashbox_id


def products(query: CatalogQuery, loc: SandboxLocation) -> list[m.Product]:
    cashbox_id = _cashbox(query, loc)
    search = query.text("search")
    ids, nrs = query.integers("productIds"), query.strings("productNrs")
    gtins, ext_ids = query.strings("gtins"), query.strings("externalProductIds")
    visible, locked = query.boolean("isVisible"), query.boolean("isLocked")
    return [
        p for p in (cp.product for cp in world.catalog(loc.id)[0])
        if _equals(cashbox_id, p.cashbox.cashbox_id)
        and _contains(search, p.name, p.external_name, p.product_nr, p.gtin,
                      p.external_product_id)
        and _member(ids, p.id) and _member(nrs, p.product_nr) and _member(gtins, p.gtin)
        and _member(ext_ids, p.external_product_id)
        and _equals(visible, p.flags.is_visible) and _equals(locked, p.flags.is_locked)
    ]


def product_categories(query: CatalogQuery, loc: SandboxLocation) -> list[m.ProductCategory]:
    cashbox_id = _cashbox(query, loc)
    search = query.text("search")
    ids, ext_ids = query.integers("categoryIds"), query.strings("externalIds")
    return [
        c for c in world.catalog(loc.id)[1]
        if _equals(cashbox_id, c.cashbox.cashbox_id)
        and _contains(search, c.name, c.external_name, c.external_id)
        and _member(ids, c.id) and _member(ext_ids, c.external_id)
    ]


def spots(query: CatalogQuery, loc: SandboxLocation) -> list[m.Spot]:
    area_id = query.integer("areaId")
    search = query.text("search")
    ids, ext_ids = query.integers("spotIds"), query.strings("externalSpotIds")
    spot_type = query.text("type")
    visible, table_order = query.boolean("visibleInApp"), query.boolean("supportsTableOrder")
    return [
        s for s in world.spots(loc.id)
        if _equals(area_id, s.area.area_id if s.area else None)
        and _contains(search, s.name, s.alternative_name, s.external_spot_id, s.qr_code)
        and _member(ids, s.id) and _member(ext_ids, s.external_spot_id)
        and (spot_type is None or spot_type.lower() == s.type.lower())
        and _equals(visible, s.flags.visible_in_app)
        and _equals(table_order, s.flags.supports_table_order)
    ]


ENDPOINTS: dict[str, Callable[[CatalogQuery, SandboxLocation], list]] = {
    "product": products,
    "product-category": product_categories,
    "spot": spots,
}
