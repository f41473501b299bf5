"""External catalog -> daily snapshot tables per location (products, categories, spots).

The catalog is small (hundreds of records), so every record is validated with the
spec's pydantic model; an invalid record fails the snapshot naming location, date,
endpoint, record and field. Nested records become prefixed columns; nested lists
become child tables keyed by the parent id.
"""

from __future__ import annotations

from datetime import date

import pyarrow as pa

from pipeline.extract.schemas import MONEY, PERCENT
from pipeline.extract.snapshots import Snapshot, validate_records, write_snapshot
from pipeline.pos_api import models as m
from pipeline.pos_api.errors import ContractError

_KEYS = [pa.field("location_id", pa.int32(), nullable=False),
         pa.field("snapshot_date", pa.date32(), nullable=False)]


def _schema(*fields: tuple) -> pa.Schema:
    return pa.schema(_KEYS + [pa.field(*f) for f in fields])


S = pa.string()
I32 = pa.int32()
B = pa.bool_()
CATALOG_TABLES: dict[str, pa.Schema] = {
    "products": _schema(
        ("product_id", I32, False), ("product_nr", S), ("gtin", S), ("external_product_id", S),
        ("name", S), ("external_name", S), ("subtitle", S), ("description", S),
        ("pricing_default_price", MONEY), ("pricing_reference_price", MONEY),
        ("pricing_tax_rate_id", I32), ("pricing_allow_client_price", B),
        ("cashbox_id", I32), ("cashbox_production_place_id", I32),
        ("cashbox_parent_product_id", I32), ("media_image_url", S),
        ("flags_is_visible", B), ("flags_is_locked", B), ("flags_queued_for_review", B),
        ("nutrition_amount", MONEY), ("nutrition_amount_unit", S), ("nutrition_calories", MONEY),
        ("nutrition_allergens", pa.int64()), ("nutrition_minimum_age", I32),
    ),
    "product_localizations": _schema(
        ("product_id", I32, False), ("locale", S, False), ("name", S), ("subtitle", S),
        ("description", S), ("image_url", S),
    ),
    "product_ingredients": _schema(
        ("product_id", I32, False), ("position", I32, False), ("name", S),
    ),
    "product_nutritional_values": _schema(
        ("product_id", I32, False), ("position", I32, False), ("name", S), ("unit", S),
        ("value", S), ("belongs_to", I32),
    ),
    "product_category_memberships": _schema(
        ("product_id", I32, False), ("position", I32, False),
        ("category_external_id", S, False),
    ),
    "product_categories": _schema(
        ("category_id", I32, False), ("external_id", S), ("name", S), ("external_name", S),
        ("cashbox_id", I32), ("supplier_id", I32), ("tax_rate_id", I32),
        ("vat_percent", PERCENT),
    ),
    "product_category_localizations": _schema(
        ("category_id", I32, False), ("locale", S, False), ("name", S), ("description", S),
        ("image_url", S),
    ),
    "spots": _schema(
        ("spot_id", I32, False), ("external_spot_id", S), ("number", I32), ("name", S),
        ("alternative_name", S), ("description", S), ("qr_code", S), ("type", S),
        ("capacity", I32), ("location_location_id", I32), ("location_short_code", S),
        ("area_id", I32), ("area_name", S), ("area_external_area_id", S),
        ("geo_latitude", pa.float64()), ("geo_longitude", pa.float64()),
        ("flags_visible_in_app", B), ("flags_supports_table_order", B),
        ("flags_supports_cash_payment", B), ("flags_default_to_take_away", B),
        ("flags_display_as_button", B),
    ),
}
ENDPOINTS = {"product": m.Product, "product-category": m.ProductCategory, "spot": m.Spot}


def _product_rows(products: list[m.Product], out: dict[str, list]) -> None:
    for p in products:
        n = p.nutrition or m.Nutrition()
        out["products"].append({
            "product_id": p.id, "product_nr": p.product_nr, "gtin": p.gtin,
            "external_product_id": p.external_product_id, "name": p.name,
            "external_name": p.external_name, "subtitle": p.subtitle,
            "description": p.description,
            "pricing_default_price": p.pricing.default_price,
            "pricing_reference_price": p.pricing.reference_price,
            "pricing_tax_rate_id": p.pricing.tax_rate_id,
            "pricing_allow_client_price": p.pricing.allow_client_price,
            "cashbox_id": p.cashbox.cashbox_id,
            "cashbox_production_place_id": p.cashbox.production_place_id,
            "cashbox_parent_product_id": p.cashbox.parent_product_id,
            "media_image_url": p.media.image_url if p.media else None,
            "flags_is_visible": p.flags.is_visible, "flags_is_locked": p.flags.is_locked,
            "flags_queued_for_review": p.flags.queued_for_review,
            "nutrition_amount": n.amount, "nutrition_amount_unit": n.amount_unit,
            "nutrition_calories": n.calories, "nutrition_allergens": n.allergens,
            "nutrition_minimum_age": n.minimum_age,
        })
        for loc in p.localizations:
            out["product_localizations"].append({
                "product_id": p.id, "locale": loc.locale, "name": loc.name,
                "subtitle": loc.subtitle, "description": loc.description,
                "image_url": loc.image_url})
        for pos, ing in enumerate(n.ingredients, start=1):
            out["product_ingredients"].append(
                {"product_id": p.id, "position": pos, "name": ing.name})
        for pos, nv in enumerate(n.nutritional_values, start=1):
            out["product_nutritional_values"].append({
                "product_id": p.id, "position": pos, "name": nv.name, "unit": nv.unit,
                "value": nv.value, "belongs_to": nv.belongs_to})
        for pos, ext in enumerate(p.product_group_external_ids, start=1):
            out["product_category_memberships"].append(
                {"product_id": p.id, "position": pos, "category_external_id": ext})


def _category_rows(categories: list[m.ProductCategory], out: dict[str, list]) -> None:
    for c in categories:
        out["product_categories"].append({
            "category_id": c.id, "external_id": c.external_id, "name": c.name,
            "external_name": c.external_name, "cashbox_id": c.cashbox.cashbox_id,
            "supplier_id": c.cashbox.supplier_id, "tax_rate_id": c.tax.tax_rate_id,
            "vat_percent": c.tax.vat})
        for loc in c.localizations:
            out["product_category_localizations"].append({
                "category_id": c.id, "locale": loc.locale, "name": loc.name,
                "description": loc.description, "image_url": loc.image_url})


def _spot_rows(spots: list[m.Spot], out: dict[str, list]) -> None:
    for s in spots:
        out["spots"].append({
            "spot_id": s.id, "external_spot_id": s.external_spot_id, "number": s.number,
            "name": s.name, "alternative_name": s.alternative_name,
            "description": s.description, "qr_code": s.qr_code, "type": s.type,
            "capacity": s.capacity, "location_location_id": s.location.location_id,
            "location_short_code": s.location.location_short_code,
            "area_id": s.area.area_id if s.area else None,
            "area_name": s.area.name if s.area else None,
            "area_external_area_id": s.area.external_area_id if s.area else None,
            "geo_latitude": s.geo.latitude if s.geo else None,
            "geo_longitude": s.geo.longitude if s.geo else None,
            "flags_visible_in_app": s.flags.visible_in_app,
            "flags_supports_table_order": s.flags.supports_table_order,
            "flags_supports_cash_payment": s.flags.supports_cash_payment,
            "flags_default_to_take_away": s.flags.default_to_take_away,
            "flags_display_as_button": s.flags.display_as_button})


def load_catalog_snapshot(source, lake, location_id: int, snapshot_date: date) -> Snapshot:
    """List the three catalog endpoints of one location and replace its snapshot in the lake."""
    where = f"location {location_id}, snapshot {snapshot_date.isoformat()}"
    out: dict[str, list] = {name: [] for name in CATALOG_TABLES}
    with source.client(location_id) as client:
        for endpoint, model in ENDPOINTS.items():
            try:
                rows = client.catalog_listing(endpoint)
            except ContractError as exc:
                raise ContractError(f"{where}: {exc}", location_id=location_id) from None
            records = validate_records(rows, model, f"{where}: {endpoint}")
            {"product": _product_rows, "product-category": _category_rows,
             "spot": _spot_rows}[endpoint](records, out)
    return write_snapshot(lake, "catalog", CATALOG_TABLES, out, snapshot_date, where, location_id,
                          client.stats)
