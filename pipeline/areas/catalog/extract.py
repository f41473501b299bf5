"""External catalog -> daily snapshot tables per location (products, categories, spots).

The catalog is small (hundreds of records), so every record is validated with the
spec's pydantic model; an invalid record fails the snapshot naming location, date,
endpoint, record and field. Nested records become prefixed columns; nested lists
become child tables keyed by the parent id.
"""

from __future__ import annotations

from datetime import date

import pyarrow as pa
from pydantic import BaseModel

from pipeline.extract.schemas import MONEY, PERCENT, SELF, lake_schema, sources_of, value_at, wired
from pipeline.extract.snapshots import Snapshot, row_of, snapshot_of, validate_records
from pipeline.pos_api import models as m
from pipeline.pos_api.errors import ContractError

_KEYS = [wired("location_id", pa.int32(), False), wired("snapshot_date", pa.date32(), False)]


def _table(source: str, *fields: tuple) -> pa.Schema:
    """A snapshot table of the spec's ``source`` objects: (column, type, nullable, wire
    path in the object) per field (``lake_schema``)."""
    return lake_schema((source,), _KEYS + [wired(*f) for f in fields])


S, I32, B = pa.string(), pa.int32(), pa.bool_()
_LOCALIZED = (("locale", S, False, "locale"), ("name", S, True, "name"),
              ("description", S, True, "description"), ("image_url", S, True, "imageUrl"))
CATALOG_TABLES: dict[str, pa.Schema] = {
    "products": _table(
        "Product",
        ("product_id", I32, False, "id"), ("product_nr", S, True, "productNr"),
        ("gtin", S, True, "gtin"), ("external_product_id", S, True, "externalProductId"),
        ("name", S, True, "name"), ("external_name", S, True, "externalName"),
        ("subtitle", S, True, "subtitle"), ("description", S, True, "description"),
        ("pricing_default_price", MONEY, True, "pricing.defaultPrice"),
        ("pricing_reference_price", MONEY, True, "pricing.referencePrice"),
        ("pricing_tax_rate_id", I32, True, "pricing.taxRateId"),
        ("pricing_allow_client_price", B, True, "pricing.allowClientPrice"),
        ("cashbox_id", I32, True, "cashbox.cashboxId"),
        ("cashbox_production_place_id", I32, True, "cashbox.productionPlaceId"),
        ("cashbox_parent_product_id", I32, True, "cashbox.parentProductId"),
        ("media_image_url", S, True, "media.imageUrl"),
        ("flags_is_visible", B, True, "flags.isVisible"),
        ("flags_is_locked", B, True, "flags.isLocked"),
        ("flags_queued_for_review", B, True, "flags.queuedForReview"),
        ("nutrition_amount", MONEY, True, "nutrition.amount"),
        ("nutrition_amount_unit", S, True, "nutrition.amountUnit"),
        ("nutrition_calories", MONEY, True, "nutrition.calories"),
        ("nutrition_allergens", pa.int64(), True, "nutrition.allergens"),
        ("nutrition_minimum_age", I32, True, "nutrition.minimumAge"),
    ),
    "product_localizations": _table(
        "Product.localizations", ("product_id", I32, False), *_LOCALIZED[:2],
        ("subtitle", S, True, "subtitle"), *_LOCALIZED[2:],
    ),
    "product_ingredients": _table(
        "Product.nutrition.ingredients", ("product_id", I32, False), ("position", I32, False),
        ("name", S, True, "name"),
    ),
    "product_nutritional_values": _table(
        "Product.nutrition.nutritionalValues", ("product_id", I32, False),
        ("position", I32, False), ("name", S, True, "name"), ("unit", S, True, "unit"),
        ("value", S, True, "value"), ("belongs_to", I32, True, "belongsTo"),
    ),
    "product_category_memberships": _table(
        "Product.productGroupExternalIds", ("product_id", I32, False),
        ("position", I32, False), ("category_external_id", S, False, SELF),
    ),
    "product_categories": _table(
        "ProductCategory",
        ("category_id", I32, False, "id"), ("external_id", S, True, "externalId"),
        ("name", S, True, "name"), ("external_name", S, True, "externalName"),
        ("cashbox_id", I32, True, "cashbox.cashboxId"),
        ("supplier_id", I32, True, "cashbox.supplierId"),
        ("tax_rate_id", I32, True, "tax.taxRateId"), ("vat_percent", PERCENT, True, "tax.vat"),
    ),
    "product_category_localizations": _table(
        "ProductCategory.localizations", ("category_id", I32, False), *_LOCALIZED,
    ),
    "spots": _table(
        "Spot",
        ("spot_id", I32, False, "id"), ("external_spot_id", S, True, "externalSpotId"),
        ("number", I32, True, "number"), ("name", S, True, "name"),
        ("alternative_name", S, True, "alternativeName"),
        ("description", S, True, "description"), ("qr_code", S, True, "qrCode"),
        ("type", S, True, "type"), ("capacity", I32, True, "capacity"),
        ("location_location_id", I32, True, "location.locationId"),
        ("location_short_code", S, True, "location.locationShortCode"),
        ("area_id", I32, True, "area.areaId"), ("area_name", S, True, "area.name"),
        ("area_external_area_id", S, True, "area.externalAreaId"),
        ("geo_latitude", pa.float64(), True, "geo.latitude"),
        ("geo_longitude", pa.float64(), True, "geo.longitude"),
        ("flags_visible_in_app", B, True, "flags.visibleInApp"),
        ("flags_supports_table_order", B, True, "flags.supportsTableOrder"),
        ("flags_supports_cash_payment", B, True, "flags.supportsCashPayment"),
        ("flags_default_to_take_away", B, True, "flags.defaultToTakeAway"),
        ("flags_display_as_button", B, True, "flags.displayAsButton"),
    ),
}
ENDPOINTS = {"product": m.Product, "product-category": m.ProductCategory, "spot": m.Spot}
TOP = {"product": "products", "product-category": "product_categories", "spot": "spots"}
"""Per endpoint, the table of its records; their child tables are those whose source is
below the record's (``Product.localizations``), keyed by the record's ``id``."""


def _children(top: str) -> list[tuple[str, str]]:
    """The child tables of a top table and the path of their list in its record: the
    tables whose source lies below its source (``Product.localizations``)."""
    source = sources_of(CATALOG_TABLES[top])[0] + "."
    return [(table, below.removeprefix(source)) for table, schema in CATALOG_TABLES.items()
            if (below := sources_of(schema)[0]).startswith(source)]


def _rows(endpoint: str, records: list[BaseModel], out: dict[str, list]) -> None:
    """Each record's row, and its child tables' rows keyed by its id (and positioned where
    the table has a ``position``): every value from its column's wire path."""
    top = TOP[endpoint]
    key = CATALOG_TABLES[top].field(2).name  # the record's id column, after the keys
    children = _children(top)
    for record in records:
        wire = record.model_dump(by_alias=True)
        out[top].append(row_of(CATALOG_TABLES[top], wire))
        for table, path in children:
            schema = CATALOG_TABLES[table]
            positioned = "position" in schema.names
            for n, item in enumerate(value_at(wire, path) or [], start=1):
                made = {key: wire["id"]} | ({"position": n} if positioned else {})
                out[table].append(row_of(schema, item, **made))


def extract_catalog_snapshot(source, location_id: int, snapshot_date: date) -> Snapshot:
    """The three catalog endpoints of one location listed: its snapshot's tables."""
    where = f"location {location_id}, snapshot {snapshot_date.isoformat()}"
    out: dict[str, list] = {name: [] for name in CATALOG_TABLES}
    with source.client(location_id) as client:
        for endpoint, model in ENDPOINTS.items():
            try:
                rows = client.catalog_listing(endpoint)
            except ContractError as exc:
                raise ContractError(f"{where}: {exc}", location_id=location_id) from None
            _rows(endpoint, validate_records(rows, model, f"{where}: {endpoint}"), out)
    return snapshot_of(CATALOG_TABLES, out, snapshot_date, where, location_id, client.stats)
