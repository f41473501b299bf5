"""Where every field of the spec's resources lands in the lake: ``Resource.wire.path`` ->
``table.column``. The receipt's come from its lake schemas (each column names its wire
path); the catalog's, menu's and voucher's are listed here. A test holds this map to the
spec's pydantic models and the lake's schemas, so a field cannot be dropped silently.
"""

from __future__ import annotations

from pipeline.extract.schemas import REVENUE_TABLES, wire_path

_HOURS = {"days": "days_mask", "startDate": "start_date", "endDate": "end_date",
          "startTime": "start_time", "endTime": "end_time", "exclude": "is_exclude"}


def _hours(prefix: str) -> dict[str, str]:
    """The three kinds of hours of a menu or category: rows of ``menu_hours`` told apart
    by ``owner_level`` and ``kind``."""
    return {f"{prefix}{kind}.{field}": f"menu_hours.{column}"
            for kind in ("orderableHours", "preOrderableHours", "deliverableHours")
            for field, column in _HOURS.items()}


def _fields(resource: str, table: str, pairs: dict[str, str]) -> dict[str, str]:
    return {f"{resource}.{path}": f"{table}.{column}" for path, column in pairs.items()}


_ENTRY = "Menu.categories.menuEntries."
SNAPSHOT_LANDING: dict[str, str] = {
    **_fields("Product", "products", {
        "id": "product_id", "productNr": "product_nr", "gtin": "gtin",
        "externalProductId": "external_product_id", "name": "name",
        "externalName": "external_name", "subtitle": "subtitle", "description": "description",
        "pricing.defaultPrice": "pricing_default_price",
        "pricing.referencePrice": "pricing_reference_price",
        "pricing.taxRateId": "pricing_tax_rate_id",
        "pricing.allowClientPrice": "pricing_allow_client_price",
        "cashbox.cashboxId": "cashbox_id",
        "cashbox.productionPlaceId": "cashbox_production_place_id",
        "cashbox.parentProductId": "cashbox_parent_product_id",
        "media.imageUrl": "media_image_url", "flags.isVisible": "flags_is_visible",
        "flags.isLocked": "flags_is_locked", "flags.queuedForReview": "flags_queued_for_review",
        "nutrition.amount": "nutrition_amount", "nutrition.amountUnit": "nutrition_amount_unit",
        "nutrition.calories": "nutrition_calories", "nutrition.allergens": "nutrition_allergens",
        "nutrition.minimumAge": "nutrition_minimum_age"}),
    "Product.nutrition.ingredients.name": "product_ingredients.name",
    **_fields("Product.nutrition.nutritionalValues", "product_nutritional_values", {
        "name": "name", "unit": "unit", "value": "value", "belongsTo": "belongs_to"}),
    "Product.productGroupExternalIds": "product_category_memberships.category_external_id",
    **_fields("Product.localizations", "product_localizations", {
        "locale": "locale", "name": "name", "subtitle": "subtitle",
        "description": "description", "imageUrl": "image_url"}),
    **_fields("ProductCategory", "product_categories", {
        "id": "category_id", "externalId": "external_id", "name": "name",
        "externalName": "external_name", "cashbox.cashboxId": "cashbox_id",
        "cashbox.supplierId": "supplier_id", "tax.taxRateId": "tax_rate_id",
        "tax.vat": "vat_percent"}),
    **_fields("ProductCategory.localizations", "product_category_localizations", {
        "locale": "locale", "name": "name", "description": "description",
        "imageUrl": "image_url"}),
    **_fields("Spot", "spots", {
        "id": "spot_id", "externalSpotId": "external_spot_id", "number": "number",
        "name": "name", "alternativeName": "alternative_name", "description": "description",
        "qrCode": "qr_code", "type": "type", "capacity": "capacity",
        "location.locationId": "location_location_id",
        "location.locationShortCode": "location_short_code", "area.areaId": "area_id",
        "area.name": "area_name", "area.externalAreaId": "area_external_area_id",
        "geo.latitude": "geo_latitude", "geo.longitude": "geo_longitude",
        "flags.visibleInApp": "flags_visible_in_app",
        "flags.supportsTableOrder": "flags_supports_table_order",
        "flags.supportsCashPayment": "flags_supports_cash_payment",
        "flags.defaultToTakeAway": "flags_default_to_take_away",
        "flags.displayAsButton": "flags_display_as_button"}),
    **_fields("Menu", "menus", {
        "name": "name", "badge": "badge", "imageUrl": "image_url",
        "description": "description", "priceName": "price_name"}),
    **_hours("Menu."),
    **_fields("Menu.categories", "menu_categories", {
        "name": "name", "badge": "badge", "imageUrl": "image_url",
        "description": "description"}),
    **_hours("Menu.categories."),
    **_fields(_ENTRY.rstrip("."), "menu_entries", {
        "menuEntryID": "menu_entry_id", "name": "name", "badge": "badge",
        "imageUrl": "image_url", "subtitle": "subtitle", "description": "description",
        "price": "price"}),
    **_fields(f"{_ENTRY}features", "menu_entry_features", {
        "name": "name", "description": "description", "groupName": "group_name",
        "isDeselectFeature": "is_deselect_feature", "maxValuesAllowed": "max_values_allowed",
        "minValuesRequired": "min_values_required", "valuesForFree": "values_for_free"}),
    **_fields(f"{_ENTRY}features.values", "menu_entry_feature_values", {
        "name": "name", "description": "description", "imageUrl": "image_url",
        "minAmount": "min_amount", "maxAmount": "max_amount", "freeAmount": "free_amount",
        "priceAdjustment": "price_adjustment"}),
    **_fields("Voucher", "vouchers", {
        "id": "voucher_id", "voucherCode": "voucher_code", "gift.amount": "amount_cents",
        "gift.balance": "balance_cents", "gift.maxAmount": "max_amount_cents",
        "codeId": "code_id", "startDate": "starts_at", "expirationDate": "expires_at",
        "enabled": "is_enabled", "comment": "comment", "categoryId": "category_id",
        "categoryName": "category_name",
        "categoryNrOfTimesRedeemablePerUnit": "category_redemption_cap",
        "categoryExternalPaymentProviderId": "category_payment_provider_id",
        "createdAt": "created_at", "discriminator": "discriminator"}),
}


def _receipt_landing() -> dict[str, str]:
    prefixes = {"receipts": "Receipt", "receipt_items": "Receipt.items",
                "item_side_dishes": "Receipt.items.sideDishes",
                "payments": "Receipt.payments"}
    return {f"{prefixes[table]}.{path}": f"{table}.{field.name}"
            for table, schema in REVENUE_TABLES.items() for field in schema
            if (path := wire_path(field)) is not None}


SPEC_LANDING: dict[str, str] = {**_receipt_landing(), **SNAPSHOT_LANDING}
"""Every field of the spec's resources that the pipeline reads, and its lake column."""
